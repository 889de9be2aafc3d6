"""Bodies crawlyx would not read are not downloaded.

A page request answered with what crawlyx names from its headers alone (an image, an
archive, a video: not one of CRAWLYX_DOCUMENTS) is not downloaded past them: its body
would be the site's bandwidth spent for nothing. The response goes on without it, and
is recorded as no page. Not the start URL's when it may be a sitemap or a feed.

Only a body its headers say is longer than :data:`STOP_AT_HEADERS_OVER` is stopped: a
shorter one (or one of no stated length) may have come in the same read as its headers,
its connection back in the pool when Scrapy closes it. The next request sent on that
connection then gets no answer, and Twisted sends it again: the site sees a page
fetched twice.

Stats: ``crawlyx/download/stopped_at_headers``.
"""

from __future__ import annotations

from scrapy import signals
from scrapy.exceptions import StopDownload

from crawlyx.content.documents import document_types, media_type, told_by_headers
from crawlyx.content.sitemap import SITEMAP_TYPES

# Twisted's read size: a body longer than this cannot come with its headers.
STOP_AT_HEADERS_OVER = 1 << 16


class UnreadBodies:
    def __init__(self, crawler):
        self.crawler = crawler
        self.documents = document_types(crawler.settings)
        crawler.signals.connect(self.headers_received, signal=signals.headers_received)

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    def headers_received(self, headers, body_length, request, spider):
        if not isinstance(body_length, int) or body_length <= STOP_AT_HEADERS_OVER:
            return
        ctype = media_type(headers)
        if request.meta.get("crawlyx_anchor") and ctype in SITEMAP_TYPES:
            return
        if request.callback == spider.parse and told_by_headers(ctype, self.documents):
            self.crawler.stats.inc_value("crawlyx/download/stopped_at_headers")
            raise StopDownload(fail=False)
