"""Marks a page done in the visited table once what it produced is out.

A page with an item is done once the item is: written by the feed exporter
(``item_scraped``, whose earlier handlers include the exporter's), or dropped or
failed in a pipeline. So a crawl process killed outright never leaves a page done
whose item was not written; at worst a written item's page is fetched again on
resume. A page without an item is done once its callback's whole output has been
consumed, or when the callback raises (given back instead, to be fetched again, when
what raised is Redis being unreachable). Failed downloads are released by the spider's
errback. Together they move every leased URL to done, which is what lets the crawl end:
"queue empty and nothing leased".

The requests a page yields are scheduled here, as they come, rather than by Scrapy's
scraper, which schedules them from parallel tasks that may run after the output has
ended. So a page's release always comes after the claims of the URLs it found, and goes
to Redis in the same round trip: a process killed in between loses none of them. This
middleware must stay the outermost (the lowest order), so that it sees the final output.
"""

from __future__ import annotations

from itemadapter import is_item
from scrapy import Request, signals

from crawlyx.frontier.state import REDIS_DOWN
from crawlyx.frontier.visited import LEASE_META
from crawlyx.parts import shared_parts


class LeaseMiddleware:
    def __init__(self, crawler, parts):
        self.crawler = crawler
        self.parts = parts  # the crawl's shared parts (crawlyx/parts.py)
        # id(item) -> the lease it carries, until the item is written, dropped or failed.
        self._carried: dict[int, str] = {}
        crawler.signals.connect(self._item_written, signal=signals.item_scraped)
        for signal in (signals.item_dropped, signals.item_error):
            crawler.signals.connect(self._item_out, signal=signal)

    @classmethod
    def from_crawler(cls, crawler):
        """The crawl's one instance, a shared part (the LeaseCheck pipeline uses it too)."""
        parts = shared_parts(crawler)
        if parts.leases is None:
            parts.leases = cls(crawler, parts)
        return parts.leases

    async def process_spider_output_async(self, response, result):
        async for output in result:
            if self._passed_on(response.request, output):
                yield output
        self.parts.visited.release(response.request)

    def process_spider_output(self, response, result):
        for output in result:
            if self._passed_on(response.request, output):
                yield output
        self.parts.visited.release(response.request)

    def process_spider_exception(self, response, exception):
        table = self.parts.visited
        if isinstance(exception, REDIS_DOWN):
            # Redis failed the page's reading (its quota, its origin, its claims): the
            # page is not handled, so it is not done. Given back, it is fetched again.
            table.unlease(response.request)
        else:
            table.release(response.request)

    def _passed_on(self, request, output) -> bool:
        """Schedule a request now; the page's first item takes its lease over from the
        request. False for what need not go on to the scraper."""
        if isinstance(output, Request):
            self.crawler.engine.crawl(output)
            return False
        if is_item(output) and LEASE_META in request.meta:
            self._carried[id(output)] = request.meta.pop(LEASE_META)
        return True

    def lease_of(self, item) -> str | None:
        """The lease ``item`` carries, until it is written, dropped or failed."""
        return self._carried.get(id(item))

    def _item_written(self, item, **kwargs):
        """Its page is done and counts in the job's pages, in one step."""
        self._item_out(item, written=True)

    def _item_out(self, item, written=False, **kwargs):
        fp = self._carried.pop(id(item), None)
        if fp is not None:
            self.parts.visited.finish(fp, written)
