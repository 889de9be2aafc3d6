"""Baseline: the plain Scrapy spider a typical user writes to turn a site into markdown.

Follows every ``<a href>`` on the start URL's host with ``response.follow`` (Scrapy's default
dupefilter only) and yields ``{"url", "markdown"}`` with ``markdownify`` of the whole page.

    scrapy runspider bench/baseline_spider.py -a start=http://127.0.0.1:PORT/ -O out.jsonl \
        [-a max_pages=N]

With ``max_pages`` the spider stops after exactly N items (CLOSESPIDER_ITEMCOUNT plus a counter,
since in-flight responses would otherwise overshoot), so crawlers compare at equal page counts.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import markdownify
import scrapy
from scrapy.exceptions import CloseSpider
from scrapy.http import HtmlResponse


class BaselineSpider(scrapy.Spider):
    name = "baseline"
    custom_settings = {
        "ROBOTSTXT_OBEY": True,
        "CONCURRENT_REQUESTS": 32,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
        "DOWNLOAD_DELAY": 0,
        "AUTOTHROTTLE_ENABLED": False,
        "LOG_LEVEL": "INFO",
        "TELNETCONSOLE_ENABLED": False,
    }

    def __init__(self, start: str | None = None, max_pages: str | int = 0, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not start:
            raise ValueError("pass the start URL with -a start=http://host:port/")
        self.start_urls = [start]
        parts = urlsplit(start)
        self.origin = (parts.scheme, parts.netloc)
        self.allowed_domains = [parts.hostname]
        self.max_pages = int(max_pages or 0)
        self.items = 0

    @classmethod
    def from_crawler(cls, crawler, *args, **kwargs):
        spider = super().from_crawler(crawler, *args, **kwargs)
        if spider.max_pages:
            # Settings are applied after the spider is created, so this still takes effect.
            crawler.settings.set("CLOSESPIDER_ITEMCOUNT", spider.max_pages, priority="spider")
        return spider

    def parse(self, response):
        if not isinstance(response, HtmlResponse):
            return
        if self.max_pages and self.items >= self.max_pages:
            raise CloseSpider("max_pages")
        self.items += 1
        yield {"url": response.url, "markdown": markdownify.markdownify(response.text)}

        for href in response.css("a::attr(href)").getall():
            url = response.urljoin(href)
            parts = urlsplit(url)
            if (parts.scheme, parts.netloc) == self.origin:
                yield response.follow(url, callback=self.parse)
