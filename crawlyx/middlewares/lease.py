"""Marks a page done in the visited table once its callback has run to the end.

A response's lease is released after the callback's whole output (items and new
requests) has been consumed, or when the callback raises. Failed downloads are
released by the spider's errback. Together they move every leased URL to done,
which is what lets the crawl end: "queue empty and nothing leased".
"""

from __future__ import annotations

from crawlyx.visited import visited_table


class LeaseMiddleware:
    def __init__(self, crawler):
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    async def process_spider_output_async(self, response, result):
        async for item_or_request in result:
            yield item_or_request
        visited_table(self.crawler).release(response.request)

    def process_spider_output(self, response, result):
        yield from result
        visited_table(self.crawler).release(response.request)

    def process_spider_exception(self, response, exception):
        visited_table(self.crawler).release(response.request)
