"""The one spider: crawl a site from a start URL, one item per page.

It reads a page (crawlyx/spiders/pages.py), follows its links (links.py) and writes its
item. A page that loads a table of contents in a frame leads to its entries too
(frames.py). The start page's response fixes the crawl's scope and seeds the crawl
first, in a spider middleware (start.py): the site's sitemaps (sitemaps.py), a refresh
run's due pages. Around it, on Scrapy's seams:
dedup and leases in the scheduler (crawlyx/frontier/), politeness, robots.txt, redirects
and the render fallback in downloader middlewares, markdown and copies in item
pipelines, and what the crawl meets (a page read, a URL failed) sent as crawlyx's own
signals (crawlyx/signals.py) to the graph, the error log and the metrics.
"""

from __future__ import annotations

from functools import cached_property, partial
from urllib.parse import urlsplit

from scrapy import Spider, signals
from scrapy.exceptions import CloseSpider
from scrapy.spidermiddlewares.httperror import HttpError

from crawlyx import render
from crawlyx.arguments import CrawlArgs
from crawlyx.content.canonical import Canonicals
from crawlyx.content.documents import document_types
from crawlyx.content.notfound import NotFound
from crawlyx.demand.recrawl import Recrawl
from crawlyx.errors import ErrorLog, classify, describe, record_error
from crawlyx.frontier.jobs import JobRun, generated_name
from crawlyx.frontier.quota import PageQuota
from crawlyx.frontier.shards import frontier_shards
from crawlyx.middlewares.robots import RobotsUnavailable
from crawlyx.middlewares.window import HeldAtStop
from crawlyx.parts import shared_parts
from crawlyx.policy.optout import OptOut
from crawlyx.spiders.frames import Frames
from crawlyx.spiders.links import Links
from crawlyx.spiders.pages import Pages, Read
from crawlyx.spiders.sitemaps import Sitemaps
from crawlyx.urls.normalize import normalize_url
from crawlyx.urls.scope import Scope, root_of
from crawlyx.urls.traps import PatternTraps, TrapRules


class SiteSpider(Spider):
    name = "site"
    # A refresh run's conditional requests: 304 Not Modified is an answer, not an error.
    handle_httpstatus_list = [304]

    def __init__(self, *args, **kwargs):
        self.args = CrawlArgs.parse(**kwargs)
        super().__init__(*args)
        # Every crawl is a job, resumable by name (see crawlyx.frontier.jobs).
        self.job = self.args.job or generated_name(self.args.start)
        self.sitemap_max_bytes = 0
        self.closing = False
        self.render_mode = "never"  # as run, from -a render or CRAWLYX_RENDER (from_crawler)
        self.browser_meta: dict = {}
        self.quota: PageQuota | None = None
        self.start_failure: tuple[str, str] | None = None  # (class, detail)
        self.pages = Pages(self)
        self.links = Links(self)
        self.frames = Frames(self)  # tables of contents in noscript frames
        self.sitemaps = Sitemaps(self)

    @classmethod
    def check_arguments(cls, arguments: dict) -> None:
        """Raise :class:`ArgumentError` for a bad argument, before anything starts."""
        CrawlArgs.parse(**arguments)

    @classmethod
    def check_settings(cls, arguments: dict, settings) -> None:
        """Raise ``ValueError`` for arguments that cannot run with these settings
        (render=always without a browser), before anything starts."""
        render.check(render.requested(arguments, settings), settings)
        max_links(settings)
        frontier_shards(settings, cluster=False)

    @classmethod
    def from_crawler(cls, crawler, *args, **kwargs):
        spider = super().from_crawler(crawler, *args, **kwargs)
        settings = crawler.settings
        # The add-on (crawlyx/addon.py) installs the browser's handlers unless "never".
        spider.render_mode = render.run_mode(render.requested(kwargs, settings), settings)
        spider.browser_meta = render.browser_meta(settings)
        if spider.args.credentials and not settings.get("HTTPAUTH_USER"):
            # The start URL's user and password: HTTP Basic auth to its host and port (as
            # Scrapy's HttpAuthMiddleware, which sends them, matches a domain), and never
            # in a URL crawlyx writes.
            user, password = spider.args.credentials
            settings.set("HTTPAUTH_USER", user, priority="spider")
            settings.set("HTTPAUTH_PASS", password, priority="spider")
            settings.set("HTTPAUTH_DOMAIN", urlsplit(spider.args.start).netloc.lower(), "spider")
        spider.sitemap_max_bytes = settings.getint("CRAWLYX_SITEMAP_MAX_BYTES")
        spider.max_links = max_links(settings)
        spider.documents = document_types(settings)
        spider.scope = Scope(
            TrapRules.from_settings(settings),
            spider.args.allow,
            spider.args.deny,
            state=lambda: spider.parts.state,
            within=spider.args.scope,
        )
        spider.pattern_traps = PatternTraps.from_crawler(crawler)
        spider.canonicals = None  # CRAWLYX_CANONICAL_ENABLED off: every page its own
        if settings.getbool("CRAWLYX_CANONICAL_ENABLED"):
            spider.canonicals = Canonicals(crawler, spider.scope)
        spider.opt_out = OptOut.from_settings(settings)
        spider.not_found = None  # CRAWLYX_SOFT404_PROBE off: a 200 is a page
        if settings.getbool("CRAWLYX_SOFT404_PROBE"):
            spider.not_found = NotFound(crawler, spider.pages.read_html)
        start_root = root_of(spider.args.start, spider.args.scope)
        spider.job_run = JobRun.from_crawler(crawler, spider.job, start_root)
        spider.recrawl = Recrawl(crawler, spider.args.refresh, spider.args.emit == "all")
        crawler.signals.connect(spider.recrawl.close, signal=signals.spider_closed)
        spider.error_log = ErrorLog(crawler, spider.args.errors, append=spider.args.job is not None)
        spider.record_error = partial(record_error, crawler)
        crawler.signals.connect(spider.idle, signal=signals.spider_idle)
        crawler.signals.connect(spider.closed_quota, signal=signals.spider_closed)
        crawler.signals.connect(spider.closed_start, signal=signals.spider_closed)
        return spider

    def idle(self):
        if self.closing:
            raise CloseSpider("max_pages")
        if self.visited.dead:  # its work is other processes' now (VisitedTable.heartbeat)
            raise CloseSpider("taken_for_dead")

    def closed_quota(self):
        if self.quota is not None:
            self.quota.release()

    def start_failed(self) -> bool:
        """Whether the crawl emitted nothing because its start URL failed."""
        stats = self.crawler.stats
        return self.start_failure is not None and not stats.get_value("item_scraped_count")

    def closed_start(self):
        """A crawl that emitted nothing because its start URL failed says so, and the
        crawl command exits with status 1."""
        if not self.start_failed():
            return
        error_class, detail = self.start_failure
        self.logger.error("crawlyx: nothing crawled, the start URL failed: %s", detail)
        self.crawler.stats.set_value("crawlyx/start_failed", error_class)

    # The parts the crawl's components share, owned by the add-on (crawlyx/parts.py),
    # which Scrapy builds after the spider.
    @cached_property
    def parts(self):
        return shared_parts(self.crawler)

    @property
    def visited(self):
        return self.parts.visited

    async def start(self):
        headers = self.recrawl.start_headers(normalize_url(self.args.start))
        yield self.links.request(
            self.args.start, depth=0, referrer=None, anchor=True, headers=headers
        )

    # -- pages (crawlyx/spiders/pages.py, links.py) ---------------------------------

    async def parse(self, response):
        read = await self.pages.read(response)
        if not isinstance(read, Read):  # what stands for the page: none, or requests
            for request in read:
                yield request
            return
        for request in self.links.follow(read):
            yield request
        item = self.pages.item(read)
        if item is not None:
            yield item

    # -- sitemaps (crawlyx/spiders/sitemaps.py) ---------------------------------------

    def parse_sitemap(self, response):
        return self.sitemaps.parse(response)  # a coroutine: its requests, once read

    # -- failures ---------------------------------------------------------------------

    def on_error(self, failure):
        request = failure.request
        if failure.check(HeldAtStop):  # never sent: the page stays for the next run
            self.visited.unlease(request)
            return None
        detail = describe(failure)
        if request.callback == self.parse_sitemap:
            return self.sitemaps.failed(failure, detail)
        error_class = classify(failure)
        if failure.check(HttpError) and self.recrawl.gone(
            normalize_url(request.url), failure.value.response.status
        ):
            error_class = "gone"  # a page the registry knew, 404 or 410 now
        referrer = request.meta.get("crawlyx_referrer")
        if request.meta.get(render.RENDER_FAILED_META):
            detail += f" (after the browser failed: {request.meta[render.RENDER_FAILED_META]})"
        response = getattr(failure.value, "response", None)  # an HTTP error's
        status, depth = getattr(response, "status", None), request.meta.get("depth")
        # A refused redirect names the URLs it leaves unaccounted for (a loop's, all).
        for url in getattr(failure.value, "urls", None) or [request.url]:
            self.record_error(url, error_class, detail, referrer, status=status, depth=depth)
        if request.meta.get("crawlyx_anchor"):
            self.start_failure = (error_class, f"{request.url} ({error_class}): {detail}")
        if failure.check(RobotsUnavailable):
            self.visited.park(request)  # not fetched, so not done: the next run fetches it
        else:
            self.visited.release(request)


def max_links(settings) -> int:
    """CRAWLYX_MAX_LINKS_PER_PAGE; ValueError unless 1 or more."""
    value = settings.getint("CRAWLYX_MAX_LINKS_PER_PAGE")
    if value < 1:
        raise ValueError(f"CRAWLYX_MAX_LINKS_PER_PAGE ({value}) must be 1 or more")
    return value
