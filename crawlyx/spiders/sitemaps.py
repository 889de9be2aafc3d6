"""Sitemaps: where a crawl learns the pages no link leads to.

With ``-a sitemap`` (the default) the start page's origin is asked for the sitemaps its
robots.txt names and for ``/sitemap.xml``; an index's sitemaps are asked for in turn
(each at most CRAWLYX_SITEMAP_MAX_BYTES, read in a page worker). A start URL that is a
sitemap, a text one or a feed starts the crawl from the pages it lists. What a sitemap
lists outside the crawl's folder is another part of the site's, and is not crawled.
"""

from __future__ import annotations

from scrapy.spidermiddlewares.httperror import HttpError

from crawlyx.content.documents import kind_of
from crawlyx.middlewares.robots import RobotsUnavailable, cached_robots
from crawlyx.signals import sitemap_listed


class Sitemaps:
    def __init__(self, spider):
        self.spider = spider

    def seeds(self, origin: str):
        """Requests for the sitemaps of ``origin``: those its robots.txt names, and
        ``/sitemap.xml``."""
        spider = self.spider
        robots = cached_robots(spider.parts.state, origin)
        sitemaps = robots.sitemaps if robots else []
        urls = [url for url in sitemaps if spider.scope.normalized(url)]
        urls.append(origin + "/sitemap.xml")
        for url in urls:
            yield self._request(url)

    def _request(self, url: str):
        spider = self.spider
        request = spider.links.request(url, depth=1, referrer=None, callback=spider.parse_sitemap)
        request.meta["download_maxsize"] = spider.sitemap_max_bytes
        return request

    async def parse(self, response):
        """The requests for what the sitemap of ``response`` lists."""
        spider = self.spider
        try:
            kind, locs = await spider.parts.workers.read_sitemap(
                response.body, spider.sitemap_max_bytes
            )
        except Exception as exc:  # bad gzip, not a sitemap, or it killed a worker
            spider.crawler.stats.inc_value("crawlyx/sitemap/failed")
            spider.logger.warning("Skipping sitemap %s: %s", response.url, exc)
            return []
        return list(self._listed(kind, locs))

    async def start(self, response) -> list | None:
        """The requests of a start URL that is a sitemap, a text one or a feed (listing
        one URL at least), else None: pages of the site are the crawl's start, and it is
        no page that failed."""
        spider = self.spider
        if not response.meta.get("crawlyx_anchor"):
            return None
        if kind_of(response, spider.documents)[0] not in (None, "text"):
            return None  # a PDF, a Word or markdown document
        try:
            kind, locs = await spider.parts.workers.read_sitemap(
                response.body, spider.sitemap_max_bytes
            )
        except Exception:  # no sitemap: the response is judged as any other
            return None
        if not locs:
            return None
        spider.logger.info("The start URL is a sitemap listing %d URLs", len(locs))
        if not any(spider.scope.normalized(loc) for loc in locs):
            spider.logger.warning(
                "The start sitemap lists no URL of the crawl's scope %s (it lists %s...)",
                spider.scope.origin,
                locs[0],
            )
        return list(self._listed(kind, locs))

    def _listed(self, kind: str, locs: list[str]):
        """The requests for what a sitemap lists: the sitemaps of an index, else pages."""
        spider, scope = self.spider, self.spider.scope
        scoped = {loc: scope.normalized(loc) for loc in locs}
        if kind == "sitemapindex":
            for loc, url in scoped.items():
                if url is not None:
                    yield self._request(loc)
            return
        # What it lists outside the crawl's folder is another part of the site's.
        listed = [url for url in scoped.values() if url is not None and scope.inside(url)]
        spider.crawler.signals.send_catch_log(sitemap_listed, urls=listed)
        new = spider.recrawl.new(listed)
        for loc, url in scoped.items():
            if url in new and scope.allowed(url):
                yield spider.links.request(loc, depth=1, referrer=None)

    def failed(self, failure, detail: str) -> None:
        """A sitemap crawlyx asked for (``/sitemap.xml``, one robots.txt or an index
        names) did not come: no page of the site failed, so it is no error of the crawl
        (not in the errors file, the error counts or the success rate). Counted apart:
        ``crawlyx/sitemap/missing`` for a 404 or 410 (a site without a sitemap), logged at
        INFO; ``crawlyx/sitemap/failed`` for anything else (as an unreadable one), logged
        as a warning."""
        spider, request = self.spider, failure.request
        if failure.check(HttpError) and failure.value.response.status in (404, 410):
            spider.crawler.stats.inc_value("crawlyx/sitemap/missing")
            spider.logger.info("No sitemap at %s (%s)", request.url, detail)
        else:
            spider.crawler.stats.inc_value("crawlyx/sitemap/failed")
            spider.logger.warning("Skipping sitemap %s: %s", request.url, detail)
        if failure.check(RobotsUnavailable):
            spider.visited.park(request)  # not fetched, so not done: the next run fetches it
        else:
            spider.visited.release(request)
