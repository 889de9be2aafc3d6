"""The start URL's response: it fixes the crawl's scope and seeds the crawl.

A spider middleware, the nearest the spider, so that the scope is fixed before the
spider reads the start page, and what the crawl starts from beside the page's links is
asked for at once, while the page is read: the pages due on a refresh run (the registry
of the crawl's origin, asked for conditionally) and the site's sitemaps
(crawlyx/spiders/sitemaps.py). A start URL answered with an error (HttpErrorMiddleware
keeps it from the spider) fixes nothing: the crawl has no page to start from.
"""

from __future__ import annotations

from crawlyx.signals import start_fixed


class StartPage:
    def __init__(self, crawler):
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    async def process_spider_output_async(self, response, result):
        if response.meta.get("crawlyx_anchor"):
            for request in self._seeds(response):
                yield request
        async for output in result:
            yield output

    def process_spider_output(self, response, result):
        if response.meta.get("crawlyx_anchor"):
            yield from self._seeds(response)
        yield from result

    def _seeds(self, response):
        spider = self.crawler.spider
        spider.job_run.anchored(spider.scope.fix(response.url))
        self.crawler.signals.send_catch_log(start_fixed, response=response)
        origin, scope = spider.scope.origin, spider.scope
        if spider.args.refresh:
            for due, headers in spider.recrawl.due(origin):
                if scope.allowed(due):
                    yield spider.links.request(due, depth=1, referrer=None, headers=headers)
        if spider.args.sitemap:
            yield from spider.sitemaps.seeds(origin)
