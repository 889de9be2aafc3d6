"""The one spider: crawl a site from a start URL, one item per HTML page.

Thin on purpose: it fixes the scope, extracts links and builds items. Dedup lives in
the scheduler (the visited table), markdown in a pipeline, politeness in downloader
middlewares.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime
from functools import cached_property, partial
from itertools import islice
from urllib.parse import urlsplit

from scrapy import Request, Spider, signals
from scrapy.exceptions import CloseSpider, StopDownload
from scrapy.http import HtmlResponse
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.python.failure import Failure

from crawlyx import render
from crawlyx.arguments import CrawlArgs
from crawlyx.content.canonical import Canonicals, header_canonical
from crawlyx.content.documents import (
    as_page,
    binary,
    document_body,
    document_types,
    kind_of,
    media_type,
    told_by_headers,
)
from crawlyx.content.documents.errors import Unreadable
from crawlyx.content.encoding import page_text
from crawlyx.content.notfound import NotFound
from crawlyx.content.outline import read_outline
from crawlyx.content.sitemap import SITEMAP_TYPES
from crawlyx.content.workers import ReadTimeout
from crawlyx.demand.recrawl import Recrawl
from crawlyx.errors import ErrorLog, classify, describe, record_error
from crawlyx.frontier.fingerprint import normalized_fingerprint
from crawlyx.frontier.jobs import JobRun, generated_name
from crawlyx.frontier.quota import PageQuota
from crawlyx.frontier.visited import frontier_shards
from crawlyx.items import PageItem
from crawlyx.middlewares.robots import RobotsUnavailable, cached_robots
from crawlyx.middlewares.window import HeldAtStop
from crawlyx.parts import crawl_parts
from crawlyx.policy.optout import OptOut
from crawlyx.render.fallback import through_browser
from crawlyx.urls.normalize import normalize_url
from crawlyx.urls.scope import Scope, root_of
from crawlyx.urls.traps import HOPS_META, PatternTraps, TrapRules

# Twisted's read size: a body longer than this cannot come with its headers.
STOP_AT_HEADERS_OVER = 1 << 16


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
        self.frames_met: set[str] = set()  # tables of contents in noscript frames, read or not

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
            spider.not_found = NotFound(crawler, spider._read)
        start_root = root_of(spider.args.start, spider.args.scope)
        spider.job_run = JobRun.from_crawler(crawler, spider.job, start_root)
        spider.recrawl = Recrawl(crawler, spider.args.refresh, spider.args.emit == "all")
        crawler.signals.connect(spider.recrawl.close, signal=signals.spider_closed)
        spider.error_log = ErrorLog(crawler, spider.args.errors, append=spider.args.job is not None)
        spider.record_error = partial(record_error, crawler)
        crawler.signals.connect(spider.headers_received, signal=signals.headers_received)
        crawler.signals.connect(spider.idle, signal=signals.spider_idle)
        crawler.signals.connect(spider.closed_quota, signal=signals.spider_closed)
        crawler.signals.connect(spider.closed_start, signal=signals.spider_closed)
        return spider

    def headers_received(self, headers, body_length, request, spider):
        """A page request answered with what crawlyx names from its headers alone (an
        image, an archive, a video) is not downloaded past them: its body would be the
        site's bandwidth spent for nothing. The response goes on without it. Not the
        start URL's when it may be a sitemap or a feed.

        Only a body its headers say is longer than :data:`STOP_AT_HEADERS_OVER` is
        stopped: a shorter one (or one of no stated length) may have come in the same
        read as its headers, its connection back in the pool when Scrapy closes it. The
        next request sent on that connection then gets no answer, and Twisted sends it
        again: the site sees a page fetched twice."""
        if not isinstance(body_length, int) or body_length <= STOP_AT_HEADERS_OVER:
            return
        ctype = media_type(headers)
        if request.meta.get("crawlyx_anchor") and ctype in SITEMAP_TYPES:
            return
        if request.callback == self.parse and told_by_headers(ctype, self.documents):
            self.crawler.stats.inc_value("crawlyx/download/stopped_at_headers")
            raise StopDownload(fail=False)

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
        return crawl_parts(self.crawler)

    @property
    def visited(self):
        return self.parts.visited

    @property
    def workers(self):
        return self.parts.workers

    @property
    def graph(self):
        return self.parts.graph  # None: CRAWLYX_GRAPH_ENABLED off

    async def start(self):
        headers = self.recrawl.start_headers(normalize_url(self.args.start))
        yield self._request(self.args.start, depth=0, referrer=None, anchor=True, headers=headers)

    def _request(self, url, depth, referrer, anchor=False, callback=None, headers=None, meta=None):
        meta = {"depth": depth, "crawlyx_referrer": referrer, **(meta or {})}
        if anchor:
            meta["crawlyx_anchor"] = True
        if callback is None and self.render_mode == "always":  # pages, not sitemaps
            meta.update(self.browser_meta)
        callback = callback or self.parse
        return Request(url, callback, headers=headers, errback=self.on_error, meta=meta)

    # -- scope (crawlyx/urls/scope.py) ---------------------------------------------------

    def _anchor(self, response) -> str:
        """The start URL's response: it fixes the crawl's scope. Returns the origin."""
        self.job_run.anchored(self.scope.fix(response.url))
        if self.graph is not None:
            self.graph.anchor(response)
        return self.scope.origin

    # -- pages ------------------------------------------------------------------------

    async def parse(self, response):
        if self.closing:
            # max_pages is reached: a page still in flight is not read, and stays for a
            # resumed job to fetch.
            self.visited.unlease(response.request)
            return
        if response.meta.get("crawlyx_anchor"):
            origin = self._anchor(response)
            if self.args.refresh:
                for request in self._due(origin):
                    yield request
            if self.args.sitemap:
                for request in self._sitemap_seeds(origin):
                    yield request
        url = normalize_url(response.url)
        if response.status == 304:
            if not _conditional(response.request):  # no page, and nothing was asked
                detail = "HTTP 304 Not Modified, to a request that was not conditional"
                referrer = response.meta.get("crawlyx_referrer")
                depth = response.meta.get("depth")
                self.record_error(url, "http_3xx", detail, referrer, status=304, depth=depth)
                return
            # A refresh run's conditional request: unchanged.
            self.recrawl.not_modified(url, _facts(response))
            if self.graph is not None:  # not read again: its links are not known this run
                self.graph.outcome(url, status=304, depth=response.meta.get("depth"))
            return
        response = as_page(response)
        if not isinstance(response, HtmlResponse) or binary(response):
            # A document (a PDF, however labelled), or no page; a start URL may be a
            # sitemap or a feed, whose pages are the crawl's start.
            outputs = await self._start_sitemap(response)
            if outputs is None:
                outputs = await self._document(response, url)
            for output in outputs:
                yield output
            return
        depth = response.meta.get("depth", 0)
        referrer = response.meta.get("crawlyx_referrer")
        browser = render.from_browser(response)
        if browser and url != normalize_url(response.request.url):
            # The browser followed a redirect (or the page's scripts changed its URL)
            # out of the scheduler's sight, within the scope (crawlyx.render.fallback):
            # the page is the one it ended on, if no one else has it.
            if not self.visited.settle(normalized_fingerprint(url)):
                self.crawler.stats.inc_value("crawlyx/frontier/duplicates")
                return
        try:
            page = await self._read(response)
        except ReadTimeout as exc:  # its worker was killed: the page is done, not retried
            self.record_error(url, "read_timeout", str(exc), referrer)
            return
        except Exception as exc:  # undecodable or pathological markup: this page only
            self.record_error(url, "parse", f"{type(exc).__name__}: {exc}", referrer)
            return
        self._cap_links(page)
        page["canonical"] = page["canonical"] or header_canonical(response)
        directives = self.opt_out.directives(response.headers, page["robots"])
        facts = _facts(response)
        if not browser and self._wants_render(response, page, directives):
            self.crawler.stats.inc_value("crawlyx/render/requested")
            yield through_browser(response, self.browser_meta)
            return
        if await self._soft_404(response, page):
            detail = "HTTP 200 with the site's not-found page (a soft 404)"
            self.record_error(url, "http_4xx", detail, referrer, status=200, depth=depth)
            self.crawler.stats.inc_value("crawlyx/soft404/pages")
            return
        if page.get("frames") and self._follows(depth, directives):
            for request in await self._frame_requests(page["frames"], url, depth):
                yield request
        kind = "browser" if browser else "http"
        if browser:
            self.crawler.stats.inc_value("crawlyx/render/rendered")
        holder = await self._holder(url, depth, page, directives, facts["status"])
        for output in self._emit(
            response.request, url, depth, referrer, page, directives, facts, kind, holder
        ):
            yield output

    async def _read(self, response) -> dict:
        """The HTML page of ``response``, read in a worker."""
        return await self.workers.read(page_text(response), response.url, self.scope.origin)

    async def _soft_404(self, response, page) -> bool:
        """The page is the site's not-found page under an unknown URL answered 200
        (crawlyx/content/notfound.py). Never the start page, nor an empty app shell."""
        if self.not_found is None or response.meta.get("crawlyx_anchor") or page["shell"]:
            return False
        return await self.not_found.matches(self.scope.origin, page)

    async def _holder(self, url, depth, page, directives, status) -> str | None:
        """The URL whose item holds the page at ``url``'s document when its canonical
        names another page of the site that confirms it (crawlyx/content/canonical.py),
        else None. Only for a page whose links are followed: its canonical is requested
        as one of them, so it is crawled."""
        if self.canonicals is None:
            return None
        self.canonicals.read(url, status, page["canonical"])
        if not page["canonical"] or not self._follows(depth, directives):
            return None
        if self.opt_out.refused(directives):
            return None
        holder = await self.canonicals.holder(url, page["canonical"])
        if holder is not None and self.scope.traps.reason(holder) is not None:
            return None  # never crawled: the page keeps its document
        return holder

    async def _document(self, response, url: str) -> list:
        """A response that is no HTML page: a document of CRAWLYX_DOCUMENTS read into a
        page, else recorded under the one class that says why it is none
        (crawlyx/content/documents/)."""
        depth = response.meta.get("depth", 0)
        referrer = response.meta.get("crawlyx_referrer")
        kind, what = kind_of(response, self.documents)
        record = partial(self.record_error, url, referrer=referrer, status=response.status)
        if kind is None:
            record("not_a_page", what, depth=depth)
            return []
        try:
            page = await self.workers.read_document(
                kind, document_body(kind, response), response.url, self.scope.origin
            )
        except ReadTimeout as exc:
            record("read_timeout", str(exc), depth=depth)
            return []
        except Unreadable as exc:  # encrypted, broken, no text
            record("unreadable", str(exc), depth=depth)
            return []
        except Exception as exc:  # it killed its worker, or the reader failed
            record("parse", f"{type(exc).__name__}: {exc}", depth=depth)
            return []
        self.crawler.stats.inc_value(f"crawlyx/documents/{kind}")
        self._cap_links(page)
        page["canonical"] = header_canonical(response)  # a document's only way to name one
        directives = self.opt_out.directives(response.headers, page["robots"])
        facts = _facts(response)
        holder = await self._holder(url, depth, page, directives, facts["status"])
        request = response.request
        return list(
            self._emit(request, url, depth, referrer, page, directives, facts, "http", holder)
        )

    def _emit(self, request, url, depth, referrer, page, directives, facts, kind, holder=None):
        """Follow a read page's links and emit its item, within the crawl's limits; a
        page whose document ``holder`` holds is recorded as its alias instead."""
        if self._follows(depth, directives):
            yield from self._follow(page, depth + 1, url, request.meta.get(HOPS_META, 0))
        if holder is not None:
            # The holder is crawled as a link of this page, if no one has it yet.
            offered = self._offered({holder: (holder, normalized_fingerprint(holder))})
            yield from self._requests(offered, depth + 1, url)
            self.record_error(url, "alias", f"canonical {holder}", referrer, holder=holder)
            if self.graph is not None:  # read: the audit knows it as the page it is
                self.graph.page(url, depth, page, directives, facts["status"])
            return
        refused = self.opt_out.refused(directives)
        if refused:
            self.record_error(url, "opted_out", f"robots directive {refused}", referrer)
            if self.graph is not None:  # read, and kept out of the output
                self.graph.page(url, depth, page, directives, facts["status"])
            return
        fits, full = self._page_slot()
        if fits:
            if self.graph is not None:
                self.graph.page(url, depth, page, directives, facts["status"])
            changed = self.recrawl.fetched(url, page.get("digest", ""), facts)
            if self.recrawl.emit(changed):
                yield self._item(url, depth, referrer, page, facts, kind, changed)
            elif self.quota is not None:  # a refresh run's unchanged page: done, slot unused
                self.quota.put_back()
                full = False
        else:
            # Fetched while the crawl was closing: not emitted, so not done either;
            # resuming the job crawls it.
            self.visited.unlease(request)
        if full:
            # Nothing more is handed out; what is in flight drains, then the crawl
            # closes (raising here would cancel this very item in the pipelines).
            self.closing = True

    def _follows(self, depth: int, directives: set[str]) -> bool:
        """The links of a page read at ``depth`` with robots ``directives`` are followed."""
        if self.args.max_depth is not None and depth >= self.args.max_depth:
            return False
        return not (self.opt_out.nofollow and "nofollow" in directives)

    def _page_slot(self) -> tuple[bool, bool]:
        """A slot of max_pages for a page: (it fits, no slot is left for this process)."""
        if self.args.max_pages is None:
            return True, False
        if self.quota is None:
            state = self.parts.state
            self.quota = PageQuota(state.client, state.key("meta"), self.args.max_pages)
        return self.quota.take()

    def _cap_links(self, page: dict) -> None:
        """A page's first CRAWLYX_MAX_LINKS_PER_PAGE links, in page order, are followed,
        recorded and listed in its item; the rest are counted (by the page's reader, which
        stops at the cap: the link elements after it)."""
        links, capped = page["links"], page.pop("links_capped", 0)
        if len(links) > self.max_links:
            page["links"] = dict(islice(links.items(), self.max_links))
            capped += len(links) - self.max_links
        if capped:
            self.crawler.stats.inc_value("crawlyx/links/capped", capped)

    def _follow(self, page: dict, depth: int, referrer: str, hops=0):
        """Offer the links of the page at ``referrer`` that the trap rules let through,
        reached along its URL pattern after ``hops`` pages (crawlyx/urls/traps.py)."""
        offered = self._offered(page["links"])
        state, signature = self.parts.state, page.get("signature")
        chain = self.pattern_traps.page(state, referrer, signature, hops, offered)
        yield from self._requests(offered, depth, referrer, chain)

    def _offered(self, links: dict) -> dict:
        """Of ``links`` (normalized URL -> (URL to fetch, fingerprint)), those to offer
        the scheduler: in the crawl (allow/deny, a refresh run's due), not known to this
        process already."""
        seen, offered, skipped = self.visited, {}, 0
        new = self.recrawl.new(list(links))  # a refresh run fetches known pages when due
        for link, (raw, fp) in links.items():
            if link not in new or not self.scope.allowed(link):
                continue
            # Links this process already offered (navigation on every page) stop
            # here; the scheduler's claim decides the rest.
            if seen.known(fp):
                skipped += 1
                continue
            offered[link] = raw, fp
        self.crawler.stats.inc_value("crawlyx/frontier/duplicates", skipped)
        return offered

    def _requests(self, offered: dict, depth: int, referrer: str, chain=None):
        """Requests for the ``offered`` links of the page at ``referrer``, but for those
        the trap rules refuse (recorded)."""
        for link, (raw, fp) in offered.items():
            trap = self.scope.traps.reason(link) or self.pattern_traps.reason(link, chain)
            if trap is not None:
                self.visited.remember(fp)  # reported once, not from every page linking it
                self.record_error(link, "trap", trap, referrer)
                continue
            meta = self.pattern_traps.meta(link, chain)
            yield self._request(raw, depth=depth, referrer=referrer, meta=meta)

    # -- tables of contents in a noscript frame (see crawlyx/graph/outline.py) ---------------
    #
    # A page's <noscript><iframe src> on the crawl's origin is its table of contents, as
    # mdBook offers it to readers without scripts; an iframe outside noscript is content,
    # not navigation, and is not read. The table is one document shared by every page:
    # each process reads it once (not at all when another process or run of the job
    # has recorded its outline), the first time a page it reads embeds it, and follows
    # its entries from there: a top-level entry as a link of that page, a nested one
    # as a link of its parent entry's page, one hop further (the graph's model). It is
    # fetched outside the frontier (the downloader middlewares apply: robots.txt,
    # politeness, redirects held to the scope), never emitted, never a page of the
    # graph. Its failure is recorded in the error log under its URL.

    async def _frame_requests(self, frames: list, url: str, depth: int) -> list[Request]:
        """Requests for the entries of the tables of contents the page at ``url`` loads
        in noscript ``frames`` ([URL, URL to fetch]) that this process has not met yet."""
        requests = []
        for frame, raw in frames:
            if frame in self.frames_met:
                continue
            if len(self.frames_met) >= MAX_FRAMES:
                self.crawler.stats.inc_value("crawlyx/frames/capped")
                continue
            self.frames_met.add(frame)
            outline = self.graph.outline(frame) if self.graph is not None else None
            if outline is None:
                outline = await self._read_frame(frame, raw, url)
            if outline is not None and outline["follow"]:
                requests += self._outline_requests(outline["entries"], depth, url)
        return requests

    async def _read_frame(self, frame: str, raw: str, referrer: str) -> dict | None:
        """The outline of the table of contents at ``frame``, fetched and read (and
        recorded in the graph); None if it failed (recorded in the error log)."""
        stats = self.crawler.stats
        request = Request(raw, meta={"crawlyx_referrer": referrer}, dont_filter=True)
        try:
            response = await self.crawler.engine.download_async(request)
            if response.status >= 300:
                raise HttpError(response, "Ignoring non-200 response")
        except Exception as exc:
            failure = Failure(exc)
            status = getattr(getattr(exc, "response", None), "status", None)
            self.record_error(frame, classify(failure), describe(failure), referrer, status=status)
            stats.inc_value("crawlyx/frames/failed")
            return None
        if not isinstance(response, HtmlResponse) or binary(response):
            stats.inc_value("crawlyx/frames/not_html")
            return None
        try:
            read = await self.workers.run(
                read_outline, page_text(response), response.url, self.scope.origin,
                timeout=self.workers.timeout,
            )  # fmt: skip
        except Exception as exc:
            error_class = "read_timeout" if isinstance(exc, ReadTimeout) else "parse"
            self.record_error(frame, error_class, f"{type(exc).__name__}: {exc}", referrer)
            stats.inc_value("crawlyx/frames/failed")
            return None
        directives = self.opt_out.directives(response.headers, read["robots"])
        follow = not (self.opt_out.nofollow and "nofollow" in directives)
        outline = {"entries": read["entries"][: self.max_links], "follow": follow}
        if self.graph is not None:
            self.graph.set_outline(frame, outline)
        stats.inc_value("crawlyx/frames/read")
        stats.inc_value("crawlyx/frames/entries", len(outline["entries"]))
        return outline

    def _outline_requests(self, entries: list, depth: int, url: str) -> list[Request]:
        """Requests for a table's ``entries``, met on the page at ``url`` read at
        ``depth``: a top-level entry one hop from it, a nested one a hop from its parent
        entry (within max_depth)."""
        levels: dict[str, int] = {}
        groups: dict[tuple[int, str], dict] = defaultdict(dict)  # (depth, referrer) -> links
        for link, raw, fp, parent, _ in entries:
            level = levels[link] = levels.get(parent, depth) + 1
            groups[level, parent or url][link] = raw, fp
        requests = []
        for (level, referrer), links in groups.items():
            if self.args.max_depth is None or level <= self.args.max_depth:
                requests += self._requests(self._offered(links), level, referrer)
        return requests

    def _item(self, url, depth, referrer, page, facts, kind, changed) -> PageItem:
        return PageItem(
            url=url,
            final_url=facts["final_url"],
            status=facts["status"],
            fetched_at=datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
            depth=depth,
            referrer=referrer,
            title=page["title"],
            description=page["description"],
            lang=page["lang"],
            canonical=page["canonical"],
            markdown=page["markdown"],
            links=sorted(page["links"]),
            content_hash=None,
            etag=facts["etag"],
            last_modified=facts["last_modified"],
            render=kind,
            elapsed_ms=facts["elapsed_ms"],
            bytes=facts["bytes"],
            changed=changed,
        )

    # -- rendering (see crawlyx/render/__init__.py) ----------------------------------------------

    def _wants_render(self, response, page: dict, directives: set[str]) -> bool:
        """A page fetched over HTTP goes to the browser: render=auto and it is an empty
        JavaScript shell, or render=always (a request queued by an earlier run)."""
        if self.render_mode == "never" or response.meta.get(render.RENDER_META):
            return False  # a render marker: it was sent to the browser already
        if self.opt_out.refused(directives):
            return False  # kept out of the output whatever the browser would show
        return self.render_mode == "always" or page["shell"]

    # -- refresh runs (see crawlyx/demand/recrawl.py) ---------------------------------

    def _due(self, origin):
        """The site's pages due now (the registry of the crawl's origin: all in scope),
        asked for with their conditional headers."""
        for url, headers in self.recrawl.due(origin):
            if self.scope.allowed(url):
                yield self._request(url, depth=1, referrer=None, headers=headers)

    # -- sitemaps ---------------------------------------------------------------------

    def _sitemap_seeds(self, origin):
        robots = cached_robots(self.parts.state, origin)
        urls = [url for url in (robots.sitemaps if robots else []) if self.scope.normalized(url)]
        urls.append(origin + "/sitemap.xml")
        for url in urls:
            yield self._sitemap_request(url)

    def _sitemap_request(self, url):
        request = self._request(url, depth=1, referrer=None, callback=self.parse_sitemap)
        request.meta["download_maxsize"] = self.sitemap_max_bytes
        return request

    def _sitemap_failed(self, failure, detail: str) -> None:
        """A sitemap crawlyx asked for (``/sitemap.xml``, one robots.txt or an index
        names) did not come: no page of the site failed, so it is no error of the crawl
        (not in the errors file, the error counts or the success rate). Counted apart:
        ``crawlyx/sitemap/missing`` for a 404 or 410 (a site without a sitemap), logged at
        INFO; ``crawlyx/sitemap/failed`` for anything else (as an unreadable one), logged
        as a warning."""
        request = failure.request
        if failure.check(HttpError) and failure.value.response.status in (404, 410):
            self.crawler.stats.inc_value("crawlyx/sitemap/missing")
            self.logger.info("No sitemap at %s (%s)", request.url, detail)
        else:
            self.crawler.stats.inc_value("crawlyx/sitemap/failed")
            self.logger.warning("Skipping sitemap %s: %s", request.url, detail)
        if failure.check(RobotsUnavailable):
            self.visited.park(request)  # not fetched, so not done: the next run fetches it
        else:
            self.visited.release(request)

    async def parse_sitemap(self, response):
        try:
            kind, locs = await self.workers.read_sitemap(response.body, self.sitemap_max_bytes)
        except Exception as exc:  # bad gzip, not a sitemap, or it killed a worker
            self.crawler.stats.inc_value("crawlyx/sitemap/failed")
            self.logger.warning("Skipping sitemap %s: %s", response.url, exc)
            return
        for request in self._listed(kind, locs):
            yield request

    async def _start_sitemap(self, response) -> list | None:
        """The requests of a start URL that is a sitemap, a text one or a feed (listing
        one URL at least), else None: pages of the site are the crawl's start, and it is
        no page that failed."""
        if not response.meta.get("crawlyx_anchor"):
            return None
        if kind_of(response, self.documents)[0] not in (None, "text"):
            return None  # a PDF, a Word or markdown document
        try:
            kind, locs = await self.workers.read_sitemap(response.body, self.sitemap_max_bytes)
        except Exception:  # no sitemap: the response is judged as any other
            return None
        if not locs:
            return None
        self.logger.info("The start URL is a sitemap listing %d URLs", len(locs))
        if not any(self.scope.normalized(loc) for loc in locs):
            self.logger.warning(
                "The start sitemap lists no URL of the crawl's scope %s (it lists %s...)",
                self.scope.origin,
                locs[0],
            )
        return list(self._listed(kind, locs))

    def _listed(self, kind: str, locs: list[str]):
        """The requests for what a sitemap lists: the sitemaps of an index, else pages."""
        scoped = {loc: self.scope.normalized(loc) for loc in locs}
        if kind == "sitemapindex":
            for loc, url in scoped.items():
                if url is not None:
                    yield self._sitemap_request(loc)
            return
        # What it lists outside the crawl's folder is another part of the site's.
        listed = [url for url in scoped.values() if url is not None and self.scope.inside(url)]
        if self.graph is not None:
            self.graph.sitemap(listed)
        new = self.recrawl.new(listed)
        for loc, url in scoped.items():
            if url in new and self.scope.allowed(url):
                yield self._request(loc, depth=1, referrer=None)

    # -- failures ---------------------------------------------------------------------

    def on_error(self, failure):
        request = failure.request
        if failure.check(HeldAtStop):  # never sent: the page stays for the next run
            self.visited.unlease(request)
            return None
        detail = describe(failure)
        if request.callback == self.parse_sitemap:
            return self._sitemap_failed(failure, detail)
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


def _conditional(request) -> bool:
    """The request asks for the page only if it changed (a refresh run's)."""
    headers = request.headers
    return b"If-None-Match" in headers or b"If-Modified-Since" in headers


def _facts(response) -> dict:
    """What a page's item takes from its response (plain data: it may be queued)."""

    def header(name):
        value = response.headers.get(name)
        return value.decode("latin-1") if value else None

    latency = response.meta.get("download_latency")
    return {
        "final_url": response.url,
        "status": response.status,
        "etag": header(b"ETag"),
        "last_modified": header(b"Last-Modified"),
        "elapsed_ms": round(latency * 1000, 1) if latency is not None else None,
        "bytes": len(response.body),
    }


# Tables of contents in noscript frames a process reads at most (a site whose pages each
# load a frame of their own gets no fetch per page).
MAX_FRAMES = 16


def max_links(settings) -> int:
    """CRAWLYX_MAX_LINKS_PER_PAGE; ValueError unless 1 or more."""
    value = settings.getint("CRAWLYX_MAX_LINKS_PER_PAGE")
    if value < 1:
        raise ValueError(f"CRAWLYX_MAX_LINKS_PER_PAGE ({value}) must be 1 or more")
    return value
