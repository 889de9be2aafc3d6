"""The SSRF guard's downloader middleware and its start-up checks.

The policy, the address classification and the resolver are in :mod:`crawlyx.policy.ssrf`; this
middleware refuses early, with the error class ``ssrf_blocked``: IP-literal hosts without a
lookup, host names by asking the same resolver, and requests with a proxy. It runs before
the robots.txt middleware, so a refused host does not even get its robots.txt requested.
"""

from __future__ import annotations

import logging
import os
from urllib.parse import urlsplit

from scrapy import signals
from scrapy.exceptions import CannotResolveHostError, NotConfigured
from scrapy.settings import SETTINGS_PRIORITIES
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import load_object
from twisted.internet import threads
from twisted.internet.error import DNSLookupError

from crawlyx.policy.ssrf import (
    ALLOW_SETTING,
    PROXY_VARIABLES,
    Guard,
    SSRFBlocked,
    SSRFGuardError,
    SSRFResolver,
    guard_off_hint,
    lookup_all,
    numeric_host,
    refused_name,
    register_guard,
    start_allowed,
)

logger = logging.getLogger(__name__)


class SSRFMiddleware:
    """Refuses requests for blocked hosts before they are downloaded (see the module doc)."""

    def __init__(self, crawler):
        self.crawler = crawler
        self.guard = Guard(enabled=not crawler.settings.getbool(ALLOW_SETTING))
        # Registered even when off: the resolver then knows this crawler opted out.
        register_guard(crawler, self.guard)
        if not self.guard.enabled:
            logger.warning("SSRF guard off (%s): private addresses may be fetched", ALLOW_SETTING)
            raise NotConfigured
        check_configuration(crawler.settings)
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    async def spider_opened(self, spider):
        start = getattr(getattr(spider, "args", None), "start", None) or ""
        host = urlsplit(start).hostname or ""
        literal = numeric_host(host)
        if literal is not None:
            addresses = [literal]
        elif host:
            try:
                d = threads.deferToThread(lookup_all, host)
                addresses = await maybe_deferred_to_future(d)
            except OSError:
                addresses = []  # the start request fails on its own
        else:
            addresses = []
        self.guard.allowed = start_allowed(addresses)
        if self.guard.allowed:
            logger.info(
                "SSRF guard on: the start host %s is not public; its addresses %s may be "
                "fetched, no other private address",
                host,
                ", ".join(sorted(map(str, self.guard.allowed))),
            )
        else:
            logger.info("SSRF guard on: only public addresses are fetched")

    async def process_request(self, request):
        if request.meta.get("proxy"):
            self._refuse(request, "it is to go through a proxy, which the guard cannot check")
        host = urlparse_cached(request).hostname
        if not host:
            return None
        literal = numeric_host(host)
        if literal is not None:
            reason = self.guard.policy.refusal(literal)
            if reason is not None:
                self._refuse(request, f"{literal}: {reason}")
            return None
        # A name: ask the resolver the download will use. Its answer is cached, so the
        # connection reuses it and is checked again there.
        from twisted.internet import reactor

        resolver = reactor.resolver
        if isinstance(resolver, SSRFResolver):
            try:
                await maybe_deferred_to_future(resolver.getHostByName(host))
            except SSRFBlocked as exc:
                self._refuse(request, str(exc))
            except Exception:  # noqa: BLE001 - an ordinary failure: the download reports it
                pass
        return None

    def process_exception(self, request, exception):
        # Refused while connecting: Twisted reports it as a lookup that found nothing.
        if isinstance(exception, (CannotResolveHostError, DNSLookupError)) and not isinstance(
            exception, SSRFBlocked
        ):
            host = urlparse_cached(request).hostname or ""
            reason = refused_name(host)
            if reason is not None:
                self._refuse(request, reason)
        return None

    def _refuse(self, request, why: str):
        self.crawler.stats.inc_value("crawlyx/ssrf/blocked")
        logger.info("SSRF guard refused %s: %s", request.url, why)
        raise SSRFBlocked(f"SSRF guard refused {request.url}: {why} ({guard_off_hint()})")


# --------------------------------------------------------------------------------------------
# Start-up checks: refuse to run where the guard cannot see the address connected to
# --------------------------------------------------------------------------------------------


def check_configuration(settings) -> None:
    """Raise :class:`SSRFGuardError` (one line) if the guard cannot protect this crawl."""
    proxies = [name for name in PROXY_VARIABLES if os.environ.get(name)]
    if proxies and settings.getbool("HTTPPROXY_ENABLED"):
        raise SSRFGuardError(
            f"crawlyx: refusing to crawl through an HTTP(S) proxy ({', '.join(proxies)} is "
            "set): the SSRF guard cannot check the addresses a proxy connects to; unset it, "
            f"or {guard_off_hint()}"
        )
    path = _resolver_path(settings)
    if not issubclass(load_object(path), SSRFResolver):
        raise SSRFGuardError(
            f"crawlyx: the SSRF guard needs TWISTED_DNS_RESOLVER = "
            f"'{SSRFResolver.__module__}.SSRFResolver' (it is {path!r}); {guard_off_hint()}"
        )
    # Only Twisted's handlers (HTTP/1.1, HTTP/2) connect through the reactor's resolver.
    handlers = settings.getwithbase("DOWNLOAD_HANDLERS")
    for scheme in ("http", "https"):
        handler = handlers.get(scheme)
        if handler is None:
            continue  # the scheme is not downloaded at all
        cls = load_object(handler) if isinstance(handler, str) else handler
        names = {f"{c.__module__}.{c.__qualname__}" for c in getattr(cls, "__mro__", ())}
        if names.isdisjoint(_TWISTED_HANDLERS):
            raise SSRFGuardError(
                f"crawlyx: the SSRF guard only covers Scrapy's Twisted HTTP handlers, and "
                f"{scheme} is downloaded by {handler!r}; {guard_off_hint()}"
            )


_TWISTED_HANDLERS = frozenset(
    {
        "scrapy.core.downloader.handlers.http11.HTTP11DownloadHandler",
        "scrapy.core.downloader.handlers.http2.H2DownloadHandler",
    }
)


def _resolver_path(settings) -> str:
    """The resolver Scrapy 2.19 installs (DNS_RESOLVER is deprecated but still wins when it
    was set above its default and TWISTED_DNS_RESOLVER was not set higher)."""
    dns = settings.getpriority("DNS_RESOLVER") or 0
    twisted = settings.getpriority("TWISTED_DNS_RESOLVER") or 0
    if dns > SETTINGS_PRIORITIES["default"] and twisted <= dns:
        return settings["DNS_RESOLVER"]
    return settings["TWISTED_DNS_RESOLVER"]
