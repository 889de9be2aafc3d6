"""Requests in the Redis queue: data with a fixed schema, never code.

A queued request is a JSON object with the URL, the method (GET or HEAD, no body), the
Referer and conditional headers, priority, ``dont_filter``, the names of its callback
and errback, and the meta keys crawlyx and Scrapy's retry and redirect middlewares
read. Anyone who can write to a shared Redis can queue a URL, but not make a crawler
run code (as a pickled request would), call a spider method that is not a callback, or
set a meta key that changes how a request is fetched (a proxy, ``dont_obey_robotstxt``).
On the way in, other meta keys (downloader state copied onto a redirect: the slot, the
latency) and other headers (set again by the downloader middlewares) are left out. On
the way out, an entry that does not fit the schema is refused whole.
"""

from __future__ import annotations

import json

from scrapy import Request

from crawlyx.render import HTTP_PAGE_META, RENDER_FAILED_META, RENDER_META

METHODS = frozenset({"GET", "HEAD"})
# Referer: set by Scrapy's RefererMiddleware from the spider's output; the conditional
# headers: a refresh run's (crawlyx.demand.recrawl).
HEADERS = frozenset({"Referer", "If-None-Match", "If-Modified-Since"})
# The spider's methods a queued request may name, as callback or errback.
CALLBACKS = frozenset({"parse", "parse_sitemap", "on_error"})
META = frozenset(
    {
        # the spider's
        "depth",
        "crawlyx_referrer",
        "crawlyx_anchor",
        "crawlyx_pattern_hops",  # crawlyx.urls.traps.HOPS_META
        "download_maxsize",  # sitemaps
        # rendering (crawlyx.render.browser_meta)
        RENDER_META,
        RENDER_FAILED_META,
        HTTP_PAGE_META,
        "playwright",
        "playwright_page_goto_kwargs",
        # Scrapy's RetryMiddleware and RedirectMiddleware: their limits hold across the queue
        "retry_times",
        "redirect_times",
        "redirect_ttl",
        "redirect_urls",
        "redirect_reasons",
    }
)
FIELDS = frozenset(
    {"url", "method", "headers", "priority", "dont_filter", "callback", "errback", "meta"}
)


class Refused(ValueError):
    """A request that cannot be queued, or a queue entry that is not a crawlyx request."""


def encode(request: Request, spider) -> bytes:
    """``request`` as a queue entry; :class:`Refused` (or TypeError, for meta that is not
    plain data) if it cannot be one."""
    if request.method not in METHODS or request.body or request.cb_kwargs:
        raise Refused(f"only {'/'.join(sorted(METHODS))} requests without a body are queued")
    headers = {
        name: [value.decode("latin-1") for value in request.headers.getlist(name)]
        for name in HEADERS
        if name in request.headers
    }
    data = {
        "url": request.url,
        "method": request.method,
        "headers": headers,
        "priority": request.priority,
        "dont_filter": request.dont_filter,
        "callback": _name(spider, request.callback),
        "errback": _name(spider, request.errback),
        "meta": {key: value for key, value in request.meta.items() if key in META},
    }
    return json.dumps(data, separators=(",", ":"), allow_nan=False).encode()


def decode(payload: bytes, spider) -> Request:
    """The request a queue entry holds; :class:`Refused` for anything else."""
    try:
        data = json.loads(payload)
    except ValueError:  # UnicodeDecodeError included: a pickle, say
        raise Refused("not JSON") from None
    if not isinstance(data, dict) or set(data) != FIELDS:
        raise Refused("not a crawlyx request")
    url, method, headers, meta = data["url"], data["method"], data["headers"], data["meta"]
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise Refused("not an http(s) URL")
    if method not in METHODS:
        raise Refused(f"method {method!r}")
    if not isinstance(headers, dict) or not set(headers) <= HEADERS:
        raise Refused("headers")
    for values in headers.values():
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise Refused("header values")
    if not isinstance(meta, dict) or not set(meta) <= META:
        raise Refused(f"meta keys {sorted(set(meta) - META) if isinstance(meta, dict) else ''}")
    priority, dont_filter = data["priority"], data["dont_filter"]
    if type(priority) is not int or type(dont_filter) is not bool:
        raise Refused("priority or dont_filter")
    return Request(
        url,
        method=method,
        headers=headers,
        priority=priority,
        dont_filter=dont_filter,
        callback=_method(spider, data["callback"]),
        errback=_method(spider, data["errback"]),
        meta=meta,
    )


def _name(spider, func) -> str | None:
    if func is None:
        return None
    name = getattr(func, "__name__", None)
    if name in CALLBACKS and getattr(func, "__self__", None) is spider:
        return name
    raise Refused(f"callback {func!r} is not one of the spider's {sorted(CALLBACKS)}")


def _method(spider, name):
    if name is None:
        return None
    method = getattr(spider, name, None) if name in CALLBACKS else None
    if not callable(method):
        raise Refused(f"callback {name!r}")
    return method
