"""Tables of contents in a noscript frame (see crawlyx/graph/outline.py).

A page's <noscript><iframe src> on the crawl's origin is its table of contents, as
mdBook offers it to readers without scripts; an iframe outside noscript is content, not
navigation, and is not read. The table is one document shared by every page: each
process reads it once (not at all when another process or run of the job has recorded
its outline), the first time a page it reads embeds it, and follows its entries from
there: a top-level entry as a link of that page, a nested one as a link of its parent
entry's page, one hop further (the graph's model). It is fetched outside the frontier
(the downloader middlewares apply: robots.txt, politeness, redirects held to the scope),
never emitted, never a page of the graph. Its failure is recorded in the error log
under its URL.
"""

from __future__ import annotations

from collections import defaultdict

from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.python.failure import Failure

from crawlyx.content.documents import binary
from crawlyx.content.encoding import page_text
from crawlyx.content.outline import read_outline
from crawlyx.content.workers import ReadTimeout
from crawlyx.errors import classify, describe

# Tables of contents in noscript frames a process reads at most (a site whose pages each
# load a frame of their own gets no fetch per page).
MAX_FRAMES = 16


class Frames:
    """The tables of contents a crawl process has met, read or not."""

    def __init__(self, spider):
        self.spider = spider
        self.met: set[str] = set()

    async def requests(self, frames: list, url: str, depth: int) -> list[Request]:
        """Requests for the entries of the tables of contents the page at ``url`` loads
        in noscript ``frames`` ([URL, URL to fetch]) that this process has not met yet."""
        graph, requests = self.spider.parts.graph, []
        for frame, raw in frames:
            if frame in self.met:
                continue
            if len(self.met) >= MAX_FRAMES:
                self.spider.crawler.stats.inc_value("crawlyx/frames/capped")
                continue
            self.met.add(frame)
            outline = graph.outline(frame) if graph is not None else None
            if outline is None:
                outline = await self._read(frame, raw, url)
            if outline is not None and outline["follow"]:
                requests += self._entries(outline["entries"], depth, url)
        return requests

    async def _read(self, frame: str, raw: str, referrer: str) -> dict | None:
        """The outline of the table of contents at ``frame``, fetched and read (and
        recorded in the graph); None if it failed (recorded in the error log)."""
        spider = self.spider
        stats, workers = spider.crawler.stats, spider.parts.workers
        request = Request(raw, meta={"crawlyx_referrer": referrer}, dont_filter=True)
        try:
            response = await spider.crawler.engine.download_async(request)
            if response.status >= 300:
                raise HttpError(response, "Ignoring non-200 response")
        except Exception as exc:
            failure = Failure(exc)
            status = getattr(getattr(exc, "response", None), "status", None)
            spider.record_error(
                frame, classify(failure), describe(failure), referrer, status=status
            )
            stats.inc_value("crawlyx/frames/failed")
            return None
        if not isinstance(response, HtmlResponse) or binary(response):
            stats.inc_value("crawlyx/frames/not_html")
            return None
        try:
            read = await workers.run(
                read_outline, page_text(response), response.url, spider.scope.origin,
                timeout=workers.timeout,
            )  # fmt: skip
        except Exception as exc:
            error_class = "read_timeout" if isinstance(exc, ReadTimeout) else "parse"
            spider.record_error(frame, error_class, f"{type(exc).__name__}: {exc}", referrer)
            stats.inc_value("crawlyx/frames/failed")
            return None
        opt_out = spider.opt_out
        directives = opt_out.directives(response.headers, read["robots"])
        follow = not (opt_out.nofollow and "nofollow" in directives)
        outline = {"entries": read["entries"][: spider.max_links], "follow": follow}
        if spider.parts.graph is not None:
            spider.parts.graph.set_outline(frame, outline)
        stats.inc_value("crawlyx/frames/read")
        stats.inc_value("crawlyx/frames/entries", len(outline["entries"]))
        return outline

    def _entries(self, entries: list, depth: int, url: str) -> list[Request]:
        """Requests for a table's ``entries``, met on the page at ``url`` read at
        ``depth``: a top-level entry one hop from it, a nested one a hop from its parent
        entry (within max_depth)."""
        levels: dict[str, int] = {}
        groups: dict[tuple[int, str], dict] = defaultdict(dict)  # (depth, referrer) -> links
        for link, raw, fp, parent, _ in entries:
            level = levels[link] = levels.get(parent, depth) + 1
            groups[level, parent or url][link] = raw, fp
        requests, max_depth = [], self.spider.args.max_depth
        for (level, referrer), links in groups.items():
            if max_depth is None or level <= max_depth:
                requests += self.spider.links.requests(links, level, referrer)
        return requests
