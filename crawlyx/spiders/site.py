"""The one spider: crawl a site from a start URL, one item per HTML page.

Thin on purpose: it fixes the scope, extracts links and builds items. Dedup lives in
the scheduler (the visited table), markdown in a pipeline, politeness in downloader
middlewares.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from scrapy import Request, Spider, signals
from scrapy.exceptions import CloseSpider
from scrapy.http import HtmlResponse
from scrapy.utils.gz import gunzip, gzip_magic_number
from scrapy.utils.sitemap import Sitemap

from crawlyx.arguments import CrawlArgs
from crawlyx.errors import ErrorLog, classify
from crawlyx.fingerprint import normalized_fingerprint
from crawlyx.items import PageItem
from crawlyx.middlewares.robots import cached_robots
from crawlyx.normalize import normalize_url, url_origin
from crawlyx.optout import OptOut
from crawlyx.state import crawl_state
from crawlyx.traps import TrapRules
from crawlyx.visited import visited_table
from crawlyx.workers import page_workers


class SiteSpider(Spider):
    name = "site"

    def __init__(self, *args, **kwargs):
        self.args = CrawlArgs.parse(**kwargs)
        super().__init__(*args)
        # Without a job name a crawl is a one-off: a fresh name, and keys removed at the end.
        self.ephemeral = self.args.job is None
        self.job = self.args.job or f"run-{uuid.uuid4().hex[:12]}"
        self.origin: str | None = None
        self.sitemap_max_bytes = 0
        self.closing = False

    @classmethod
    def check_arguments(cls, arguments: dict) -> None:
        """Raise :class:`ArgumentError` for a bad argument, before anything starts."""
        CrawlArgs.parse(**arguments)

    @classmethod
    def from_crawler(cls, crawler, *args, **kwargs):
        spider = super().from_crawler(crawler, *args, **kwargs)
        settings = crawler.settings
        spider.sitemap_max_bytes = settings.getint("CRAWLYX_SITEMAP_MAX_BYTES")
        spider.workers = page_workers(crawler)  # settings checked before the crawl starts
        spider.traps = TrapRules.from_settings(settings)
        spider.opt_out = OptOut.from_settings(settings)
        spider.errors = ErrorLog(crawler, spider.args.errors, append=not spider.ephemeral)
        crawler.signals.connect(spider.idle, signal=signals.spider_idle)
        crawler.signals.connect(spider.errors.close, signal=signals.spider_closed)
        return spider

    def idle(self):
        if self.closing:
            raise CloseSpider("max_pages")

    @property
    def visited(self):
        return visited_table(self.crawler)

    async def start(self):
        yield self._request(self.args.start, depth=0, referrer=None, anchor=True)

    def _request(self, url, depth, referrer, anchor=False, callback=None):
        meta = {"depth": depth, "crawlyx_referrer": referrer}
        if anchor:
            meta["crawlyx_anchor"] = True
        return Request(url, callback=callback or self.parse, errback=self.on_error, meta=meta)

    # -- scope ------------------------------------------------------------------------

    def _scope(self) -> str | None:
        """The origin the crawl is confined to: the start URL's, after its redirects.
        Fixed once per job, by whichever process fetched the start URL."""
        if self.origin is None:
            raw = crawl_state(self.crawler).client.hget(self._meta_key, "origin")
            self.origin = raw.decode() if raw else None
        return self.origin

    @property
    def _meta_key(self) -> str:
        return crawl_state(self.crawler).key("meta")

    def _anchor(self, response) -> str:
        origin = url_origin(normalize_url(response.url))
        client = crawl_state(self.crawler).client
        client.hsetnx(self._meta_key, "origin", origin)
        self.origin = None
        origin = self._scope()
        self.logger.info("Crawl scope: %s (start %s)", origin, self.args.start)
        return origin

    def in_scope(self, url: str) -> bool:
        """``url`` (normalized) is on the crawl's origin."""
        scope = self._scope()
        return scope is not None and url.startswith(scope + "/")

    def allowed(self, url: str) -> bool:
        """Allowed by allow/deny (regexes on the normalized URL)."""
        if self.args.allow is not None and not self.args.allow.search(url):
            return False
        return self.args.deny is None or not self.args.deny.search(url)

    # -- pages ------------------------------------------------------------------------

    async def parse(self, response):
        if response.meta.get("crawlyx_anchor"):
            origin = self._anchor(response)
            if self.args.sitemap:
                for request in self._sitemap_seeds(origin):
                    yield request
        if not isinstance(response, HtmlResponse):
            return
        depth = response.meta.get("depth", 0)
        url = normalize_url(response.url)
        referrer = response.meta.get("crawlyx_referrer")
        try:
            page = await self.workers.read(response.text, response.url, self._scope())
        except Exception as exc:  # undecodable or pathological markup: this page only
            self.errors.record(url, "parse", f"{type(exc).__name__}: {exc}", referrer)
            return
        directives = self.opt_out.directives(response.headers, page["robots"])
        follow = self.args.max_depth is None or depth < self.args.max_depth
        if follow and not (self.opt_out.nofollow and "nofollow" in directives):
            for request in self._follow(page["links"], depth + 1, url):
                yield request
        refused = self.opt_out.refused(directives)
        if refused:
            self.errors.record(url, "opted_out", f"robots directive {refused}", referrer)
            return
        if self.args.max_pages is None:
            yield self._item(response, url, depth, page)
            return
        fits, full = self._page_quota()
        if fits:
            yield self._item(response, url, depth, page)
        else:
            # Fetched while the crawl was closing: not emitted, so not done either;
            # resuming the job crawls it.
            self.visited.unlease(response.request)
        if full:
            # Nothing more is handed out; what is in flight drains, then the crawl
            # closes (raising here would cancel this very item in the pipelines).
            self.closing = True

    def _follow(self, links: dict[str, str], depth: int, referrer: str):
        seen, skipped = self.visited, 0
        for link, raw in links.items():
            if not self.allowed(link):
                continue
            fp = normalized_fingerprint(link)
            # Links this process already offered (navigation on every page) stop
            # here; the scheduler's claim decides the rest.
            if seen.known(fp):
                skipped += 1
                continue
            trap = self.traps.reason(link)
            if trap is not None:
                seen.remember(fp)  # reported once, not from every page linking it
                self.errors.record(link, "trap", trap, referrer)
                continue
            yield self._request(raw, depth=depth, referrer=referrer)
        self.crawler.stats.inc_value("crawlyx/frontier/duplicates", skipped)

    def _page_quota(self) -> tuple[bool, bool]:
        """Counts a page against max_pages for the whole job: (it fits, the crawl is full)."""
        count = crawl_state(self.crawler).client.hincrby(self._meta_key, "pages", 1)
        return count <= self.args.max_pages, count >= self.args.max_pages

    def _item(self, response, url: str, depth: int, page: dict) -> PageItem:
        headers = response.headers

        def header(name):
            value = headers.get(name)
            return value.decode("latin-1") if value else None

        latency = response.meta.get("download_latency")
        return PageItem(
            url=url,
            final_url=response.url,
            status=response.status,
            fetched_at=datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
            depth=depth,
            referrer=response.meta.get("crawlyx_referrer"),
            title=page["title"],
            description=page["description"],
            lang=page["lang"],
            canonical=page["canonical"],
            markdown=page["markdown"],
            links=sorted(page["links"]),
            content_hash=None,
            etag=header(b"ETag"),
            last_modified=header(b"Last-Modified"),
            render="http",
            elapsed_ms=round(latency * 1000, 1) if latency is not None else None,
            bytes=len(response.body),
        )

    # -- sitemaps ---------------------------------------------------------------------

    def _sitemap_seeds(self, origin):
        robots = cached_robots(crawl_state(self.crawler), origin)
        urls = [url for url in (robots.sitemaps if robots else []) if _same_origin(url, origin)]
        urls.append(origin + "/sitemap.xml")
        for url in urls:
            yield self._sitemap_request(url)

    def _sitemap_request(self, url):
        request = self._request(url, depth=1, referrer=None, callback=self.parse_sitemap)
        request.meta["download_maxsize"] = self.sitemap_max_bytes
        return request

    def parse_sitemap(self, response):
        body = response.body
        if gzip_magic_number(response):
            try:
                body = gunzip(body, max_size=self.sitemap_max_bytes)
            except Exception:
                self.logger.warning("Skipping sitemap %s: bad or oversized gzip", response.url)
                return
        try:
            sitemap = Sitemap(body)
        except Exception:
            self.logger.warning("Skipping sitemap %s: not a sitemap document", response.url)
            return
        for entry in sitemap:
            loc = entry.get("loc", "").strip()
            try:
                url = normalize_url(loc)
            except ValueError:
                continue
            if not self.in_scope(url):
                continue
            if sitemap.type == "sitemapindex":
                yield self._sitemap_request(loc)
            elif self.allowed(url):
                yield self._request(loc, depth=1, referrer=None)

    # -- failures ---------------------------------------------------------------------

    def on_error(self, failure):
        request = failure.request
        self.errors.record(
            request.url,
            classify(failure),
            f"{type(failure.value).__name__}: {failure.value}",
            request.meta.get("crawlyx_referrer"),
        )
        self.visited.release(request)


def _same_origin(url: str, origin: str) -> bool:
    try:
        return url_origin(normalize_url(url)) == origin
    except ValueError:
        return False
