"""crawlyx's settings. Profiles in ``settings/`` override these for other setups."""

from crawlyx.items import PAGE_FIELDS

BOT_NAME = "crawlyx"
SPIDER_MODULES = ["crawlyx.spiders"]
NEWSPIDER_MODULE = "crawlyx.spiders"
COMMANDS_MODULE = "crawlyx.commands"

USER_AGENT = "crawlyx/0.1 (+markdown for LLMs; respects robots.txt)"

# --- crawlyx -------------------------------------------------------------------------
CRAWLYX_REDIS_URL = ""  # empty: the embedded redis-server, data under CRAWLYX_DATA_DIR
CRAWLYX_DATA_DIR = ".crawlyx"
# Seconds a Redis call (or connecting) may take; it is retried 3 times with backoff, and
# the crawl pauses while Redis stays unreachable (crawlyx/frontier/state.py).
CRAWLYX_REDIS_TIMEOUT = 5.0
# Shards of a job's frontier (visited table, queue, leases), a power of two, each its own
# hash tag: a Redis Cluster spreads them over its nodes. 0: 64 on a cluster, 1 on one
# server. Fixed when a job starts; a resumed job keeps its own.
CRAWLYX_FRONTIER_SHARDS = 0
CRAWLYX_BOT_NAME = "crawlyx"  # the robots.txt user-agent token
CRAWLYX_ROBOTS_ENABLED = True
# Seconds an origin's pages wait for its unreachable robots.txt (5xx, 429, no answer) before
# they are given up as robots_unavailable, left queued for the job's next run.
CRAWLYX_ROBOTS_RETRY_FOR = 120.0
# Seconds: a robots.txt Crawl-delay longer than this is applied as this (logged, counted in
# crawlyx/robots/crawl_delay_capped); a site asking for a day per page is not waited on.
CRAWLYX_MAX_CRAWL_DELAY = 60.0
CRAWLYX_SITEMAP_MAX_BYTES = 10 * 1024 * 1024  # per sitemap document; larger ones are skipped
# Links of a page followed, recorded in the graph and listed in its item: the first ones,
# in page order. The rest are counted (crawlyx/links/capped).
CRAWLYX_MAX_LINKS_PER_PAGE = 10_000
CRAWLYX_MARKDOWN_WORKERS = 0  # 0: one per core
CRAWLYX_MARKDOWN_MAIN_CONTENT = True  # false: convert the whole page
CRAWLYX_MARKDOWN_LINKS = "inline"  # inline | reference | none
# Each document once: a page whose markdown is byte for byte an earlier page's of the job is
# not written, but recorded as a `duplicate` of it (crawlyx/pipelines/copies.py).
CRAWLYX_COPIES_ENABLED = True
# A page whose rel=canonical names another page of the site that confirms it is written
# once, under the canonical, and recorded as its `alias` (crawlyx/content/canonical.py).
CRAWLYX_CANONICAL_ENABLED = True
# Ask each origin once for a URL it has not: its answer, if 200, is its not-found page.
CRAWLYX_SOFT404_PROBE = True
# Seconds a page's read (parse, links, main content, markdown) may take in a worker; past
# it the worker is killed and replaced, and the page recorded as read_timeout. 0: no limit.
CRAWLYX_READ_TIMEOUT = 10.0
# Document types read into pages like HTML ones (crawlyx/content/documents/): "pdf",
# "docx" (Word), "markdown" (text/markdown, a .md file) and "text" (text/plain). A response
# of a type not read (an image, an archive, a document type left out) is recorded as
# not_a_page.
CRAWLYX_DOCUMENTS = ["pdf", "docx", "markdown", "text"]
CRAWLYX_PROGRESS_INTERVAL = 10.0  # seconds; 0 turns the progress line off
# Prometheus metrics on http://127.0.0.1:PORT/metrics while the crawl runs (0: off;
# crawlyx/extensions/metrics.py). The first METRICS_HOSTS hosts fetched get their own
# `host` label value, the rest share `other`.
CRAWLYX_METRICS_PORT = 0
CRAWLYX_METRICS_HOSTS = 20
# The cost model (crawlyx/cost/model.py): prices in one currency, per CPU-second of the
# crawl's processes, per GB received, per GB written to the output, and per request and GB
# of the proxy tier the crawl's traffic goes through ("none": no proxy). The defaults are
# a public cloud's list prices; put yours. The report's objective: cost per page emitted.
CRAWLYX_COST_CPU_SECOND = 0.0000125  # a vCPU-hour at 0.045
CRAWLYX_COST_EGRESS_GB = 0.09
CRAWLYX_COST_STORAGE_GB = 0.023  # a GB-month
CRAWLYX_COST_PROXY_TIER = "none"
CRAWLYX_COST_PROXY_PRICES = {  # tier -> [per request, per GB]
    "none": [0, 0],
    "datacenter": [0, 0.6],
    "residential": [0, 4.0],
    "mobile": [0, 8.0],
}
CRAWLYX_COST_TARGET_PER_URL = 0.00001  # 10 per million pages
# The log: "text" (Scrapy's lines) or "json" (one object per record; a record about a
# URL carries the URL's fingerprint as its trace_id). See crawlyx/log.py.
CRAWLYX_LOG_FORMAT = "text"
# Days a job (its state in Redis) is kept after its last process stops, when it is
# finished or unnamed (to resume it with -a job=NAME, or refresh it with -a refresh=1);
# 0 keeps every job until `jobs --drop`. A paused named job stays until dropped.
CRAWLYX_JOB_TTL_DAYS = 7.0
# The site's link graph, kept per job in Redis as the crawl goes (crawlyx/graph/store.py):
# each page's out-links with anchor text, every URL's outcome, redirect hops, sitemaps.
CRAWLYX_GRAPH_ENABLED = True
# Edges kept at most; past it the graph says truncated. An edge is about 24 bytes in
# Redis, a page about 2.4 KB with its 50 links (bench/graph.py): 2 M edges are some 40,000
# pages, about 95 MB, and a few seconds to load; larger sites get a truncated graph
# rather than a Redis that outgrows the crawl.
CRAWLYX_GRAPH_MAX_EDGES = 2_000_000
# The SSRF guard (crawlyx/policy/ssrf.py): only public addresses are fetched, plus the
# start host's own when it is not public; no HTTP(S) proxy. True turns the guard off.
CRAWLYX_ALLOW_PRIVATE = False
# The adaptive concurrency window per host (crawlyx/middlewares/window.py): AIMD
# between MIN and MAX, +1 after GROW_AFTER clean fetches, halved on trouble (429, 502,
# 503, 504, a connection error or timeout, a response slower than SLOW_SECONDS, a body
# of LARGE_BYTES or more). Retry-After on a 429/503 pauses the host (at most
# RETRY_AFTER_MAX seconds); robots.txt Crawl-delay is a floor on the host's delay.
CRAWLYX_WINDOW_ENABLED = True
CRAWLYX_WINDOW_MIN = 5
CRAWLYX_WINDOW_MAX = 40
CRAWLYX_WINDOW_START = 8  # a new host's window
CRAWLYX_WINDOW_GROW_AFTER = 10  # clean fetches in a row per +1
CRAWLYX_WINDOW_SLOW_SECONDS = 5.0  # time to the response headers
CRAWLYX_WINDOW_LARGE_BYTES = 4 * 1024 * 1024
CRAWLYX_WINDOW_RETRY_AFTER_MAX = 600.0  # seconds; longer Retry-After values are capped
# Robots directives (X-Robots-Tag, meta robots) that keep a page out of the output.
CRAWLYX_OPT_OUT_DIRECTIVES = ["noai", "noindex"]
CRAWLYX_HONOR_NOFOLLOW = True  # nofollow stops link following from the page
# Trap rules: URLs refused without a request (see crawlyx/urls/traps.py).
CRAWLYX_TRAP_MAX_URL_LENGTH = 2048
CRAWLYX_TRAP_MAX_SEGMENT_REPEATS = 3
CRAWLYX_TRAP_MAX_QUERY_PARAMS = 24
CRAWLYX_TRAP_FUTURE_YEARS = 3  # a date further ahead than this is a calendar trap
# URL patterns (path + query, values with digits masked: /cal?month=*): after this many
# near-duplicate pages in a row, a page of the pattern no longer leads to the pattern's
# other URLs (a counter calendar ends; pagination whose pages differ does not). 0: off.
CRAWLYX_TRAP_PATTERN_DUPLICATES = 5
CRAWLYX_TRAP_PATTERN_SIMILARITY = 0.9  # estimated Jaccard of word 3-shingles: near-duplicate
# Pages of a pattern in a row, each linked from the one before, whose links held nothing
# new outside the pattern (a calendar's months past its events): then a page of the
# pattern no longer leads to its other URLs. A listing linking new items never counts
# (pagination runs to its end). 0: off.
CRAWLYX_TRAP_PATTERN_HOPS = 40
# Pages per pattern, then its links are refused everywhere; 0: off. A site whose every
# page is one pattern (/?p=123) needs more.
CRAWLYX_TRAP_PATTERN_BUDGET = 10_000
# Rendering (-a render=never|auto|always; crawlyx/render/__init__.py): Debian's Chromium through
# scrapy-playwright, whose download handlers are installed only when a crawl may render.
CRAWLYX_RENDER = "auto"  # the render mode of a crawl run without -a render=
CRAWLYX_CHROMIUM_PATH = "/usr/lib/chromium/chromium"
CRAWLYX_RENDER_MAX_PAGES = 4  # browser pages open at once (one browser context)
# Seconds for a page's navigation in the browser; a connection of the browser's that moves
# no byte this long is closed.
CRAWLYX_RENDER_TIMEOUT = 30.0
CRAWLYX_RENDER_WAIT_UNTIL = "load"  # load | domcontentloaded | networkidle
# Hosts (names or addresses) the browser's pages may connect to; any other is refused
# before it is looked up, so no DNS query leaves for it. Empty: any host the SSRF guard allows.
CRAWLYX_RENDER_ALLOWED_HOSTS = []

# The site audit (-a audit=, `scrapy audit JOB`; crawlyx/graph/audit.py): pages more links
# than this away from the start are listed as too deep.
CRAWLYX_AUDIT_MAX_DEPTH = 4

# Crawl breadth (crawlyx/breadth): distinct URLs per bot per UTC day, in HLL++ sketches
# merged into Redis under crawlyx:_breadth:{site}:...; `scrapy visits`, `scrapy breadth`.
CRAWLYX_BREADTH_ENABLED = True  # the crawl records its own fetches and the site's corpus
CRAWLYX_BREADTH_FLUSH_INTERVAL = 300.0  # seconds between merges into Redis
CRAWLYX_BREADTH_RETENTION_DAYS = 90  # a day's rows expire this long after the day ends
CRAWLYX_BREADTH_MAX_BOTS = 64  # sketches per process per day; more bots share ~overflow
CRAWLYX_BREADTH_READ_CAP = 4096  # rows `scrapy breadth` reads before saying truncated
CRAWLYX_BREADTH_BOTS = None  # None: crawlyx.breadth.bots.DEFAULT_BOTS; {name: regex}

# Demand (crawlyx/demand): which URLs bots visited, per time slice, in a ring of Bloom
# filters merged into Redis under crawlyx:_demand:{site}:...; fed by `scrapy visits` and
# crawlyx.demand.DemandTracker.record, asked by its visited_within. Durations are written
# 90s, 30m, 6h, 2d or as plain seconds.
CRAWLYX_DEMAND_ENABLED = False  # the crawl's extension, and `scrapy visits` feeding the ring
CRAWLYX_DEMAND_SLICE = "1h"  # one Bloom filter per slice of this length
# Slices in the ring: 192 × 1h = 8 days, so 4 windows of the slowest default rung (48h)
# fit in it.
CRAWLYX_DEMAND_SLICES = 192
# Distinct URLs per slice the filters are sized for, at FP_RATE false positives: 250,000
# at 1 % is 293 KiB a slice (55 MiB for a full ring's read). 10 M bot requests a day are
# ~420,000 an hour; past this many distinct URLs the rate rises (~9 % at 420,000).
CRAWLYX_DEMAND_SLICE_URLS = 250_000
CRAWLYX_DEMAND_FP_RATE = 0.01
CRAWLYX_DEMAND_FLUSH_INTERVAL = "1m"  # between merges of a process's visits into Redis
CRAWLYX_DEMAND_REFRESH_INTERVAL = "1m"  # a merged read is reused this long
# --- demand: the rung ladder (crawlyx/demand/ladder.py) ------------------------------
# Durations in every CRAWLYX_DEMAND_* setting: 90s, 30m, 6h, 2d, or plain seconds.
# A known page's recrawl interval sits on these rungs (a list, or comma-separated text;
# normalized: finite, positive, each once, ascending). Each rung is a staleness budget.
CRAWLYX_DEMAND_RUNGS = "6h,12h,24h,48h"
# Where a page starts, and its ceiling: only rungs below it are used, plus itself.
CRAWLYX_DEMAND_BASE_INTERVAL = "24h"
# Promote one rung only when the page was visited in each of the last N windows of the
# faster rung's length (demote when not visited within its current interval).
CRAWLYX_DEMAND_PROMOTE_WINDOWS = 2
# Compute and log the counterfactual rung histogram, change no page's real interval.
CRAWLYX_DEMAND_DRY_RUN = True
# Backstop: no promotion into the fastest rung while it holds this share of the site's
# pages (the hot set is ~0.5 % of a corpus before bot traffic ramps up).
CRAWLYX_DEMAND_MAX_FAST_FRACTION = 0.05
CRAWLYX_DEMAND_STATS_INTERVAL = "1h"  # the rung histogram is logged this often
# The site's page registry (crawlyx/demand/registry.py: last fetch, content hash, ETag,
# Last-Modified, interval, next due) outlives jobs; a page not fetched this long is forgotten.
CRAWLYX_DEMAND_RETENTION = "90d"

# The components (scheduler, middlewares, pipeline, extensions, the SSRF guard's DNS
# resolver, the asyncio reactor...) are wired by the add-on, below these settings.
ADDONS = {"crawlyx.addon.Addon": 0}

# --- fetching ------------------------------------------------------------------------
# No CONCURRENT_REQUESTS / CONCURRENT_REQUESTS_PER_DOMAIN: the window (CRAWLYX_WINDOW_*)
# sets both, per host and in total; with it off, Scrapy's own limits (16 and 8) apply.
DOWNLOAD_DELAY = 0
DOWNLOAD_TIMEOUT = 30
DOWNLOAD_MAXSIZE = 16 * 1024 * 1024
DOWNLOAD_WARNSIZE = 4 * 1024 * 1024
# A page's callback passes one item on to the scraper (its requests are scheduled by the
# lease middleware as they come), and Scrapy starts one task per slot of this for every
# response: one slot (16 cost 7 % of the crawl process's CPU).
CONCURRENT_ITEMS = 1
RETRY_TIMES = 2
REDIRECT_MAX_TIMES = 10
COOKIES_ENABLED = False

FEED_EXPORT_ENCODING = "utf-8"
FEED_EXPORT_FIELDS = list(PAGE_FIELDS)
LOG_LEVEL = "INFO"
