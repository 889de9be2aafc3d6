"""Requests in the Redis queue: data with a fixed schema, never code, nothing taken on trust.

Anyone who can write to a shared Redis can queue an entry; what it makes a crawler do is
at most what crawlyx would have done itself:

- An entry is a JSON object with the URL, the method (GET or HEAD, no body), the Referer
  and conditional headers, priority, ``dont_filter``, the names of its callback and
  errback, and meta: never code (as a pickled request would be), a spider method that is
  not a callback, or a meta key that changes how a request is fetched (a proxy,
  ``dont_obey_robotstxt``).
- The meta carried is what crawlyx decided about the request and cannot find out again:
  its depth and referrer, the render markers, Scrapy's retry and redirect counts and
  trail. Each value is checked against what crawlyx writes (type, range, which markers
  go together).
- What crawlyx can find out again is not carried but computed on the way out, from this
  run's settings: a sitemap's size cap (``download_maxsize``; 0 would lift it) and the
  browser's meta (scrapy-playwright's navigation options). Nor is a page's HTTP version
  carried to the browser: when a render fails, the page is fetched again over plain HTTP
  (one more request on a failure, instead of up to 64 KB of page in Redis, twice, for
  every render, which a planted entry could fill with any markdown and links).
- The URL is in the crawl's scope (:class:`crawlyx.urls.scope.Scope`): on its origin,
  as is every hop of its redirect trail and its referrer, and in its folder and allowed
  by allow/deny (pages; sitemaps are queued without it). The start URL's request and its redirect
  hops fix the origin: theirs is the trail that begins at the start URL.

An entry that fails any of this is refused whole. Entries of the earlier format (with a
sitemap's size cap, the browser's meta or a page's HTTP version) are read: those keys are
checked like the rest, then dropped.
"""

from __future__ import annotations

import json

from scrapy import Request

from crawlyx.render import HTTP_PAGE_META, RENDER_FAILED_META, RENDER_META, WAIT_UNTIL
from crawlyx.urls.normalize import normalize_url
from crawlyx.urls.traps import HOPS_META

METHODS = frozenset({"GET", "HEAD"})
# Referer: set by Scrapy's RefererMiddleware from the spider's output; the conditional
# headers: a refresh run's (crawlyx.demand.recrawl).
HEADERS = frozenset({"Referer", "If-None-Match", "If-Modified-Since"})
# The spider's methods a queued request may name, as callback or errback.
CALLBACKS = frozenset({"parse", "parse_sitemap", "on_error"})
FIELDS = frozenset(
    {"url", "method", "headers", "priority", "dont_filter", "callback", "errback", "meta"}
)
FAILED_DETAIL_MAX = 500  # characters of why the browser failed (crawlyx.spiders.site)


def _count(value) -> bool:
    return type(value) is int and value >= 0


def _strings(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


# The meta keys queued, each with the values crawlyx writes.
META = {
    # the spider's
    "depth": _count,
    "crawlyx_referrer": lambda v: v is None or isinstance(v, str),  # on the origin: below
    "crawlyx_anchor": lambda v: v is True,
    HOPS_META: _count,
    # rendering (crawlyx.render): "browser" or "fallback", why the browser failed, and
    # whether the page's HTTP version was fine (it was a dict, the page, before)
    RENDER_META: lambda v: v in ("browser", "fallback"),
    RENDER_FAILED_META: lambda v: isinstance(v, str) and len(v) <= FAILED_DETAIL_MAX,
    HTTP_PAGE_META: lambda v: v is True or isinstance(v, dict),
    # Scrapy's RetryMiddleware and RedirectMiddleware: their limits hold across the queue
    "retry_times": _count,
    "redirect_times": _count,
    "redirect_ttl": _count,
    "redirect_urls": _strings,
    "redirect_reasons": lambda v: isinstance(v, list) and all(type(r) in (int, str) for r in v),
}
# Keys of the earlier format, computed again on the way out: checked, then dropped.
COMPUTED = {
    "download_maxsize": lambda v: type(v) is int and v > 0,
    "playwright": lambda v: v is True,
    "playwright_page_goto_kwargs": lambda v: (
        isinstance(v, dict) and list(v) == ["wait_until"] and v["wait_until"] in WAIT_UNTIL
    ),
}


class Refused(ValueError):
    """A request that cannot be queued, or a queue entry crawlyx would not have written."""


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
    """The request a queue entry holds, with the meta computed again for this run;
    :class:`Refused` for an entry crawlyx would not have written."""
    try:
        data = json.loads(payload)
    except ValueError:  # UnicodeDecodeError included: a pickle, say
        raise Refused("not JSON") from None
    if not isinstance(data, dict) or set(data) != FIELDS:
        raise Refused("not a crawlyx request")
    url, method, headers, meta = data["url"], data["method"], data["headers"], data["meta"]
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise Refused("not an http(s) URL")
    shown = url[:200]
    if method not in METHODS:
        raise Refused(f"{shown}: method {str(method)[:20]!r}")
    if not isinstance(headers, dict) or not set(headers) <= HEADERS:
        raise Refused(f"{shown}: headers")
    for values in headers.values():
        if not _strings(values):
            raise Refused(f"{shown}: header values")
    priority, dont_filter = data["priority"], data["dont_filter"]
    if type(priority) is not int or type(dont_filter) is not bool:
        raise Refused(f"{shown}: priority or dont_filter")
    callback = _method(spider, data["callback"])
    errback = _method(spider, data["errback"])
    sitemap = callback == spider.parse_sitemap
    meta = _meta(meta, sitemap, shown)
    _in_scope(spider, url, meta, sitemap, shown)
    # Computed again: a sitemap's size cap, the browser's meta, from this run's settings.
    if sitemap:
        meta["download_maxsize"] = spider.sitemap_max_bytes
    if meta.get(RENDER_META) == "browser":
        meta.update(spider.browser_meta)
    return Request(
        url,
        method=method,
        headers=headers,
        priority=priority,
        dont_filter=dont_filter,
        callback=callback,
        errback=errback,
        meta=meta,
    )


def _meta(meta, sitemap: bool, shown: str) -> dict:
    """The queued meta that is kept, each key checked; Refused for any other."""
    if not isinstance(meta, dict):
        raise Refused(f"{shown}: meta")
    kept = {}
    for key, value in meta.items():
        check = META.get(key) or COMPUTED.get(key)
        try:
            fits = check is not None and check(value)
        except TypeError:  # an unhashable value compared with a set's members
            fits = False
        if not fits:
            raise Refused(f"{shown}: meta {key[:40]!r}")
        if key in META:
            kept[key] = value
    render = kept.get(RENDER_META)
    if HTTP_PAGE_META in kept:
        kept[HTTP_PAGE_META] = True  # the page itself, from the earlier format: not read
    # What crawlyx writes together, and only together.
    if (
        (RENDER_FAILED_META in kept and render != "fallback")
        or (HTTP_PAGE_META in kept and render != "browser")
        or ("download_maxsize" in meta and not sitemap)
        or (("playwright" in meta or "playwright_page_goto_kwargs" in meta) and render != "browser")
    ):
        raise Refused(f"{shown}: meta that crawlyx does not write together")
    return kept


def _in_scope(spider, url: str, meta: dict, sitemap: bool, shown: str) -> None:
    """Refused unless the request is in the crawl's scope (see the module's docstring)."""
    scope = spider.scope
    trail = [*meta.get("redirect_urls", ()), url]
    if meta.get("crawlyx_anchor"):
        # The start URL's request or a hop of its redirects: before they are answered
        # the origin is not fixed; once it is, the page must be on it like any other.
        if _normalized(trail[0]) != _normalized(spider.args.start):
            raise Refused(f"{shown}: a start request that does not begin at the start URL")
        if scope.origin is not None and scope.normalized(url) is None:
            raise Refused(f"{shown}: outside the crawl's origin")
        return
    if not all(scope.normalized(hop) for hop in trail):
        raise Refused(f"{shown}: outside the crawl's origin")
    referrer = meta.get("crawlyx_referrer")
    if referrer is not None and not scope.contains(referrer):
        raise Refused(f"{shown}: a referrer outside the crawl's origin")
    if not sitemap and not scope.allowed(normalized := scope.normalized(url)):
        raise Refused(f"{shown}: {scope.refusal(normalized)}")


def _normalized(url: str) -> str | None:
    try:
        return normalize_url(url)
    except ValueError:
        return None


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
    method = getattr(spider, name, None) if isinstance(name, str) and name in CALLBACKS else None
    if not callable(method):
        raise Refused(f"callback {str(name)[:40]!r}")
    return method
