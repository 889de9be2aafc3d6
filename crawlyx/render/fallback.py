"""A page the browser cannot show is fetched again over plain HTTP.

A request sent to the browser (render=always, or a JavaScript shell under render=auto)
fails as a render when the browser fails on it: an exception once the retries are
spent, an HTTP error where the page's plain HTTP version was fine, a navigation that
ends outside the crawl's scope, or a document shown in the browser's viewer (a PDF).
The page is then fetched again over plain HTTP, under the same lease (the scheduler
queues a ``dont_filter`` request carrying a lease without a new claim), and read from
what that gives. The browser's failure is recorded with it, so a URL has one error
class: as ``render`` beside the page read over HTTP, or in the detail of that fetch's
own error (:meth:`crawlyx.spiders.site.SiteSpider.on_error`).

A refusal (robots.txt, the scope, a trap) is no failure of the browser: it would refuse
the HTTP fetch all the same.

Placed below RetryMiddleware (550) and the redirect middlewares (580, 600), it sees
what they give up on.
"""

from __future__ import annotations

from scrapy import Request
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import HtmlResponse
from scrapy.spidermiddlewares.httperror import HttpError, HttpErrorMiddleware
from twisted.python.failure import Failure

from crawlyx import render
from crawlyx.content.documents import html_type
from crawlyx.errors import CrawlyxIgnore, describe, record_error
from crawlyx.frontier.visited import LEASE_META
from crawlyx.urls.normalize import normalize_url
from crawlyx.urls.traps import HOPS_META


class RenderFallback:
    def __init__(self, crawler):
        self.crawler = crawler
        self.stats = crawler.stats
        # What keeps an HTTP error from the spider, as the spider middleware decides it
        # (the spider's and a request's own allowed statuses, HTTPERROR_ALLOWED_CODES).
        self.http_errors = HttpErrorMiddleware.from_crawler(crawler)

    @classmethod
    def from_crawler(cls, crawler):
        if getattr(crawler.spider, "render_mode", "never") == "never":
            raise NotConfigured
        return cls(crawler)

    def process_response(self, request, response):
        mode = request.meta.get(render.RENDER_META)
        if mode == "fallback":
            failed = request.meta.get(render.RENDER_FAILED_META)
            if failed and self._http_error(response) is None:
                # The page is read from plain HTTP; the browser's failure is beside it.
                url, referrer = normalize_url(response.url), request.meta.get("crawlyx_referrer")
                record_error(self.crawler, url, "render", failed, referrer)
            return response
        if mode != "browser" or not render.from_browser(response):
            return response
        error = self._http_error(response)
        if error is not None:
            if render.HTTP_PAGE_META not in request.meta:
                return response  # the page's own error: recorded as it is
            return self._failed(request, describe(Failure(error)))
        if isinstance(response, HtmlResponse) and not html_type(response):
            # A document in the browser's viewer: read as what it is, no failure.
            self.stats.inc_value("crawlyx/render/not_html")
            return over_http(request)
        url = normalize_url(response.url)
        if url != normalize_url(request.url) and not self.crawler.spider.scope.contains(url):
            # The browser followed a redirect (or the page's scripts changed its URL)
            # out of the crawl's scope.
            return self._failed(request, f"navigated to {url}")
        return response

    def process_exception(self, request, exception):
        if request.meta.get(render.RENDER_META) != "browser":
            return None
        if isinstance(exception, (IgnoreRequest, CrawlyxIgnore)):
            return None
        return self._failed(request, describe(Failure(exception)))

    def _failed(self, request, detail: str) -> Request:
        self.stats.inc_value("crawlyx/render/failed")
        return over_http(request, detail)

    def _http_error(self, response) -> HttpError | None:
        """The error Scrapy's HttpErrorMiddleware keeps ``response`` from the spider
        with, or None."""
        try:
            self.http_errors.process_spider_input(response)
        except HttpError as error:
            return error
        return None


def over_http(request, failed: str | None = None) -> Request:
    """``request``'s page again, over plain HTTP, under the same lease; ``failed``: why
    the browser failed, recorded with what that fetch gives."""
    meta = {render.RENDER_META: "fallback"}
    if failed is not None:
        meta[render.RENDER_FAILED_META] = failed[:500]
    return _again(request.url, request, meta, ("crawlyx_anchor", HOPS_META, LEASE_META))


def through_browser(response, browser_meta: dict) -> Request:
    """The page of ``response``, fetched over plain HTTP, again through the browser,
    under the same lease. It is marked as a page whose HTTP version was fine: if the
    browser fails, that version is fetched again (the queue carries no page:
    crawlyx.frontier.queued)."""
    meta = {**browser_meta, render.HTTP_PAGE_META: True}
    return _again(response.url, response.request, meta, (HOPS_META, LEASE_META))


def _again(url: str, request, meta: dict, carried: tuple) -> Request:
    """The page at ``url`` fetched again for ``request``, with ``meta`` and the keys
    ``carried`` over from its meta. The lease moves (so that the lease middleware does
    not close it) and stays until the new request is handled: the scheduler queues a
    ``dont_filter`` request with a lease without a new claim."""
    depth, referrer = request.meta.get("depth", 0), request.meta.get("crawlyx_referrer")
    meta = {"depth": depth, "crawlyx_referrer": referrer, **meta}
    for key in carried:
        if key in request.meta:
            meta[key] = request.meta.pop(key)
    return Request(
        url, callback=request.callback, errback=request.errback, meta=meta, dont_filter=True
    )
