"""Redirects held to the crawl's rules on every hop.

Scrapy's redirect middlewares (``Location`` and meta refresh) follow any hop. A hop is
a URL the crawl did not choose, so it gets the rules a link gets: the crawl's origin,
its folder and allow/deny (class ``out_of_scope``, also for a hop to another scheme than http(s),
which Scrapy does not follow) and the trap rules (class ``trap``). A hop back
to a URL its own chain already requested is a loop (class ``trap``). A refused hop is
never requested: the request that redirected fails with :class:`RedirectRefused`, and
the spider's errback records it. A loop through pages fetched apart (each redirecting to
a page already known) is found by the scheduler (:mod:`crawlyx.frontier.visited`).

The start URL's hops are the anchor: they decide the crawl's origin (apex -> www), so
only the trap rules and loops apply to them. Requests the spider does not handle
(robots.txt, fetched with ``NO_CALLBACK``) follow their redirects unchecked.

Every hop is recorded in the job's link graph (:mod:`crawlyx.graph.recorder`) where it
happens, refused or followed, its target claimed already or not.

A redirect that is followed needs no error: the redirecting URL is accounted for by
its target (the target's item or error, or the target being a page already crawled),
and counted in ``crawlyx/frontier/redirected`` (:mod:`crawlyx.frontier.scheduler`).
"""

from __future__ import annotations

from urllib.parse import urljoin, urlsplit

from scrapy.downloadermiddlewares import redirect
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.response import get_meta_refresh
from w3lib.url import safe_url_string

from crawlyx.errors import CrawlyxIgnore
from crawlyx.parts import shared_parts
from crawlyx.urls.normalize import normalize_url


class RedirectRefused(CrawlyxIgnore, IgnoreRequest):
    """A redirect hop the crawl does not follow. ``urls``: the URLs it leaves with no
    other account (the redirecting one; every URL of a loop)."""

    def __init__(self, error_class: str, detail: str, urls: list[str]):
        super().__init__(detail)
        self.error_class = error_class
        self.urls = urls


class HopRules:
    """Checks each hop of the Scrapy redirect middleware it is mixed into."""

    @classmethod
    def from_crawler(cls, crawler):
        # Scrapy's from_crawler builds the middleware from the settings alone and hands
        # it the crawler after; the crawl's shared parts are handed over the same way.
        middleware = super().from_crawler(crawler)
        middleware.parts = shared_parts(crawler)
        return middleware

    def _redirect(self, redirected, request, reason):
        spider = self.crawler.spider
        checked = _checked(spider, request)
        graph = self.parts.graph if checked else None
        if graph is not None:
            # Every hop is in the link graph, followed or not, its target known or not.
            graph.hop(request.url, redirected.url, reason, request.meta.get("depth"))
        redirected = super()._redirect(redirected, request, reason)  # the hop limit first
        if checked:
            _check_hop(spider, request, redirected.url)
        return redirected


class RedirectMiddleware(HopRules, redirect.RedirectMiddleware):
    def process_response(self, request, response, spider=None):
        # Checked before Scrapy sees it: building the hop's request, Scrapy fails on a URL
        # without "//" (mailto:, javascript:).
        target = _other_scheme(request, response)
        if target is None:
            return super().process_response(request, response)
        if _checked(self.crawler.spider, request):
            detail = f"redirects to {target}, not an http(s) URL"
            raise RedirectRefused("out_of_scope", detail, [request.url])
        return response


class MetaRefreshMiddleware(HopRules, redirect.MetaRefreshMiddleware):
    def process_response(self, request, response, spider=None):
        # A refresh to javascript:, mailto: or the like leads nowhere a crawler goes (a
        # browser refuses a javascript: one): the page is read as it is. Scrapy means the
        # same, but fails first building a request for a URL without "//".
        if isinstance(response, HtmlResponse):
            url = get_meta_refresh(response, ignore_tags=self._ignore_tags)[1]
            if url and _scheme(url) not in ("http", "https"):
                return response
        return super().process_response(request, response)


_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


def _checked(spider, request) -> bool:
    """The request's hops are held to the crawl's rules (the spider's own requests)."""
    return request.callback is not NO_CALLBACK and hasattr(spider, "scope")


def _other_scheme(request, response) -> str | None:
    """The target of a redirect to another scheme than http(s) (file:, ftp:, data:...):
    Scrapy does not follow it and would pass the 3xx on as an HTTP error."""
    location = response.headers.get("Location")
    if response.status not in _REDIRECT_STATUSES or not location:
        return None
    if request.meta.get("dont_redirect"):
        return None
    target = urljoin(request.url, safe_url_string(location))
    return None if urlsplit(target).scheme in ("http", "https") else target


def _scheme(url: str) -> str:
    try:
        return urlsplit(url).scheme
    except ValueError:  # "http://[::1": no URL to go to either
        return ""


def _check_hop(spider, request, target: str) -> None:
    """Raise :class:`RedirectRefused` if ``request`` may not redirect to ``target``."""
    try:
        url = normalize_url(target)
    except ValueError:
        raise RedirectRefused("out_of_scope", f"redirects to {target}", [request.url]) from None
    chain = [*request.meta.get("redirect_urls", ()), request.url]
    loop = _loop(chain, target, url)
    if loop:
        path = " -> ".join([*chain[chain.index(loop[0]) :], target])
        raise RedirectRefused("trap", f"redirect loop: {path}", loop)
    scope = spider.scope
    trap = scope.traps.reason(url)
    if trap is not None:
        raise RedirectRefused("trap", f"redirects to {target}: {trap}", [request.url])
    if request.meta.get("crawlyx_anchor"):
        return
    if not scope.contains(url):
        detail = f"redirects to {target}, outside {scope.origin}"
        raise RedirectRefused("out_of_scope", detail, [request.url])
    if not scope.allowed(url):
        detail = f"redirects to {target}, {scope.refusal(url)}"
        raise RedirectRefused("out_of_scope", detail, [request.url])


def _loop(chain: list[str], target: str, url: str) -> list[str]:
    """The URLs of the loop ``target`` (normalized: ``url``) closes in ``chain``, one per
    page, or []. A hop to another spelling of the page being redirected is no loop
    (/docs -> /docs/) unless that very spelling was requested already."""
    pages = [_normalized(link) for link in chain]
    if target in chain:
        start = chain.index(target)
    elif url in pages[:-1] and url != pages[-1]:
        start = pages.index(url)
    else:
        return []
    loop, seen = [], set()
    for link, page in zip(chain[start:], pages[start:], strict=True):
        if page not in seen:
            seen.add(page)
            loop.append(link)
    return loop


def _normalized(url: str) -> str | None:
    try:
        return normalize_url(url)
    except ValueError:
        return None
