"""The SSRF guard: crawlyx fetches what a site links or redirects to, so a page must not be
able to point it at the crawl host's own network (``http://127.0.0.1:6379/``, a router's admin
page, the cloud metadata endpoint ``http://169.254.169.254/``).

Policy, when the guard is on (``CRAWLYX_ALLOW_PRIVATE = False``, the default):

* Only globally routable addresses are fetched (:func:`blocked_reason` says why any other
  address is refused).
* Exception: when the start URL's host is itself on a non-global address (a local site, the
  tests), the addresses it resolves to at the start are allowed, and no other non-global
  address is. So ``http://localhost:8000/`` can be crawled, and its pages still cannot reach
  ``127.0.0.2`` or ``10.0.0.1``. When the start host has any global address, nothing
  non-global is allowed.
* No HTTP(S) proxy: behind one, the address connected to is the proxy's, and what the proxy
  reaches cannot be checked here. Proxy variables in the environment stop the crawl at the
  start; a ``proxy`` in a request's meta refuses that request.

Where it is enforced:

* :class:`SSRFResolver` (``TWISTED_DNS_RESOLVER``) is the check that counts. Scrapy's HTTP/1.1
  (and HTTP/2) handler connects through Twisted's ``HostnameEndpoint``, which asks the
  reactor's resolver for the address, once, and connects to exactly the address it returns:
  there is no second lookup between the check and the connection. The resolver asks for
  IPv6 and IPv4 addresses (a site on IPv6 alone can be crawled), drops blocked answers and
  fails the lookup when none is left. Numeric hosts (``127.0.0.2``, ``0x7f000002``,
  ``[::1]``) are answered by the resolver itself, so they are judged here too.
* The middleware (:mod:`crawlyx.middlewares.ssrf`) refuses early, with the error class
  ``ssrf_blocked``: IP-literal hosts without a lookup, host names by asking the same
  resolver (a DNS-cache hit later, when the download connects), and requests with a proxy.
  It runs before the robots.txt middleware, so a refused host does not even get its
  robots.txt requested. Twisted turns any resolver failure into a plain "no results"
  ``DNSLookupError``, so the middleware's early check is also what gives the refusal its
  own error class; if a refusal still happens at connection time (the DNS answer changed
  in between), the middleware's ``process_exception`` names it ``ssrf_blocked`` too.
* The browser (rendering) resolves nothing itself: it connects only through
  :class:`crawlyx.render.proxy.BrowserProxy`, which asks the same resolver and connects to
  exactly the address it answered, for every connection (subresources, XHRs, the redirects
  the browser follows). A refusal there is counted as ``crawlyx/ssrf/browser_blocked``; the
  page's render fails.

Every redirect hop is a new request, so it passes through the middleware and the resolver
again. The resolver is built once per process from the settings, before any crawler has a
spider; each crawler's :class:`Guard` (its switch and the allowed addresses, computed at
``spider_opened`` from the start URL) is registered by crawler, and the resolver applies the
registered guards.
"""

from __future__ import annotations

import logging
import socket
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv6Address, ip_address, ip_network
from weakref import WeakKeyDictionary

from scrapy.exceptions import IgnoreRequest
from scrapy.resolver import CachingThreadedResolver, dnscache
from scrapy.utils.datatypes import LocalCache
from twisted.internet import defer, threads
from twisted.internet.error import DNSLookupError

from crawlyx.errors import CrawlyxIgnore
from crawlyx.urls.normalize import ipv4_host

logger = logging.getLogger(__name__)

IPAddress = IPv4Address | IPv6Address

#: What to set to turn the guard off; every refusal message names it.
ALLOW_SETTING = "CRAWLYX_ALLOW_PRIVATE"
PROXY_VARIABLES = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY")


class SSRFBlocked(CrawlyxIgnore, IgnoreRequest):
    """A request the SSRF guard refused. An IgnoreRequest: not retried, not logged as an
    error by Scrapy; the spider's errback records it as ``ssrf_blocked``."""

    error_class = "ssrf_blocked"


class SSRFLookupRefused(SSRFBlocked, DNSLookupError):
    """The resolver's refusal: also a ``DNSLookupError``, the failure Twisted expects from a
    resolver (its endpoint then reports "no results" for the host, quietly)."""


class SSRFGuardError(RuntimeError):
    """The guard cannot protect this crawl as configured; the message says what to change."""


# --------------------------------------------------------------------------------------------
# Addresses
# --------------------------------------------------------------------------------------------

# Special-purpose ranges (IANA registries), most specific first. Python's own is_global is
# the last resort only: its tables differ between Python versions (3.11 calls multicast,
# NAT64, 6to4 of a private address and site-local addresses "global").
_V4_BLOCKED = [
    (ip_network(net), reason)
    for net, reason in [
        ("0.0.0.0/32", "the unspecified address 0.0.0.0 (reaches the local host)"),
        ("0.0.0.0/8", "'this network' 0.0.0.0/8 (reaches the local host)"),
        ("10.0.0.0/8", "a private network (10.0.0.0/8)"),
        ("100.100.100.200/32", "a cloud metadata endpoint (100.100.100.200)"),
        ("100.64.0.0/10", "carrier-grade NAT space (100.64.0.0/10)"),
        ("127.0.0.0/8", "loopback (127.0.0.0/8)"),
        ("169.254.169.254/32", "the cloud metadata endpoint (169.254.169.254, link-local)"),
        ("169.254.0.0/16", "link-local (169.254.0.0/16)"),
        ("172.16.0.0/12", "a private network (172.16.0.0/12)"),
        ("192.0.0.0/24", "IETF protocol assignments (192.0.0.0/24)"),
        ("192.0.2.0/24", "documentation (192.0.2.0/24)"),
        ("192.88.99.0/24", "the deprecated 6to4 relay anycast range (192.88.99.0/24)"),
        ("192.168.0.0/16", "a private network (192.168.0.0/16)"),
        ("198.18.0.0/15", "benchmarking (198.18.0.0/15)"),
        ("198.51.100.0/24", "documentation (198.51.100.0/24)"),
        ("203.0.113.0/24", "documentation (203.0.113.0/24)"),
        ("224.0.0.0/4", "multicast (224.0.0.0/4)"),
        ("255.255.255.255/32", "the broadcast address (255.255.255.255)"),
        ("240.0.0.0/4", "reserved (240.0.0.0/4)"),
    ]
]
_V6_BLOCKED = [
    (ip_network(net), reason)
    for net, reason in [
        ("::/128", "the unspecified address :: (reaches the local host)"),
        ("::1/128", "loopback (::1)"),
        ("100::/64", "discard-only (100::/64)"),
        ("2001:db8::/32", "documentation (2001:db8::/32)"),
        ("3fff::/20", "documentation (3fff::/20)"),
        ("5f00::/16", "SRv6 segment identifiers (5f00::/16)"),
        ("fd00:ec2::254/128", "the cloud metadata endpoint (fd00:ec2::254)"),
        ("fc00::/7", "unique-local (fc00::/7)"),
        ("fe80::/10", "link-local (fe80::/10)"),
        ("fec0::/10", "deprecated site-local (fec0::/10)"),
        ("ff00::/8", "multicast (ff00::/8)"),
    ]
]
# IPv6 forms that carry an IPv4 address in their low 32 bits (6to4 and Teredo are read with
# ipaddress's own properties).
_MAPPED = ip_network("::ffff:0:0/96")
_TRANSLATED = ip_network("::ffff:0:0:0/96")
_NAT64 = ip_network("64:ff9b::/96")
_NAT64_LOCAL = ip_network("64:ff9b:1::/48")
_COMPATIBLE = ip_network("::/96")
# Refused even around a public IPv4 address: deprecated, or meaningful only inside one
# operator's network.
_REFUSED_FORMS = {
    "local-use NAT64": "a local-use NAT64 address",
    "Teredo": "a Teredo tunnel address",
    "IPv4-compatible": "a deprecated IPv4-compatible address",
}


def _parse(ip: str | IPAddress) -> IPAddress:
    if isinstance(ip, str):
        ip = ip_address(ip.strip("[]"))
    if isinstance(ip, IPv6Address) and ip.scope_id:
        ip = IPv6Address(int(ip))  # "fe80::1%eth0" is judged as fe80::1
    return ip


def blocked_reason(ip: str | IPAddress) -> str | None:
    """Why ``ip`` must not be fetched when the guard is on, or None when it is public.

    Anything not globally routable is refused: loopback, private, carrier-grade NAT,
    link-local (with the metadata endpoint), unique-local, multicast, unspecified, reserved,
    benchmarking and documentation ranges. IPv6 forms that embed an IPv4 address (mapped,
    translated, NAT64, 6to4, Teredo, IPv4-compatible) are judged by the embedded address,
    since that is where the packets end up. ValueError if ``ip`` is not an address.
    """
    ip = _parse(ip)
    if isinstance(ip, IPv4Address):
        for net, reason in _V4_BLOCKED:
            if ip in net:
                return reason
        return None if ip.is_global else f"not globally routable ({ip})"

    # Forms that embed an IPv4 address: the packets end up there, so it is judged.
    embedded = _embedded_v4(ip)
    if embedded is not None:
        form, addresses = embedded
        for v4 in addresses:
            reason = blocked_reason(v4)
            if reason is not None:
                return f"{form} form of {v4}: {reason}"
        if form in _REFUSED_FORMS:
            return f"{_REFUSED_FORMS[form]} ({ip})"
        return None  # e.g. 6to4 or NAT64 of a public address

    for net, reason in _V6_BLOCKED:
        if ip in net:
            return reason
    if ip.is_reserved:
        return f"reserved ({ip})"
    return None if ip.is_global else f"not globally routable ({ip})"


def _embedded_v4(ip: IPv6Address) -> tuple[str, list[IPv4Address]] | None:
    """The IPv4 address(es) an IPv6 address carries, with the name of the form."""
    low = IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip in _MAPPED:
        return "IPv4-mapped", [low]
    if ip in _TRANSLATED:
        return "IPv4-translated", [low]
    if ip in _NAT64:
        return "NAT64", [low]
    if ip in _NAT64_LOCAL:
        return "local-use NAT64", [low]
    if ip.sixtofour is not None:
        return "6to4", [ip.sixtofour]
    if ip.teredo is not None:
        server, client = ip.teredo
        return "Teredo", [client, server]
    if ip in _COMPATIBLE and int(ip) > 1:  # :: and ::1 are in the table
        return "IPv4-compatible", [low]
    return None


def canonical_address(ip: str | IPAddress) -> IPAddress:
    """``ip`` as compared against the allowed set: an IPv4-mapped IPv6 address is its IPv4
    address, a scoped IPv6 address loses its scope."""
    ip = _parse(ip)
    if isinstance(ip, IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def numeric_host(host: str) -> str | None:
    """The address a URL host names when it is numeric, else None (a name to resolve).

    IPv4 in any spelling libc's inet_aton accepts (``0x7f000001``, ``2130706433``,
    ``127.1``, ``0177.0.0.1``, and ``127.0.0.1.`` with a trailing dot) gives the dotted
    quad; an IPv6 literal (``[::1]``, with or without brackets) its compressed form.
    """
    if not host:
        return None
    quad = ipv4_host(host)
    if quad is not None:
        return quad
    literal = host[1:-1] if host[:1] == "[" and host[-1:] == "]" else host
    if ":" not in literal:
        return None
    try:
        return IPv6Address(literal).compressed
    except ValueError:
        return None


def lookup_all(name: str) -> list[str]:
    """All IPv4 and IPv6 addresses of ``name`` (AAAA and A), in the order the system
    prefers them (getaddrinfo's: RFC 6724, as /etc/gai.conf tunes it) (blocking)."""
    infos = socket.getaddrinfo(name, None, socket.AF_UNSPEC, socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0].partition("%")[0] for info in infos))


# --------------------------------------------------------------------------------------------
# Policy: one Guard per crawler, applied by the process-wide resolver
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Policy:
    """The addresses the guard lets through besides public ones."""

    allowed: frozenset[IPAddress] = frozenset()

    def refusal(self, address: str | IPAddress) -> str | None:
        """Why ``address`` is refused, or None when it may be fetched."""
        ip = canonical_address(address)
        reason = blocked_reason(ip)
        if reason is None or ip in self.allowed:
            return None
        return reason


@dataclass
class Guard:
    """One crawler's guard: on or off, and the non-global addresses its start URL allows."""

    enabled: bool
    allowed: frozenset[IPAddress] = frozenset()

    @property
    def policy(self) -> Policy:
        return Policy(self.allowed)


_GUARDS: WeakKeyDictionary[object, Guard] = WeakKeyDictionary()

# Host names the resolver refused, with the reason: how the middleware names a refusal that
# Twisted reported as a plain failed lookup.
_REFUSED: LocalCache[str, str] = LocalCache(1000)


def register_guard(crawler, guard: Guard) -> None:
    _GUARDS[crawler] = guard


def active_policy(default_enabled: bool) -> Policy | None:
    """What the resolver enforces now: None when the guard is off.

    Before any crawler registered its guard, the process settings decide (no exceptions
    allowed). With several crawlers in one process the resolver cannot tell whose download a
    lookup is for, so it allows only what every enforcing guard allows.
    """
    guards = list(_GUARDS.values())
    if not guards:
        return Policy() if default_enabled else None
    enforcing = [guard.allowed for guard in guards if guard.enabled]
    if not enforcing:
        return None
    return Policy(frozenset.intersection(*enforcing))


def start_allowed(addresses: list[str]) -> frozenset[IPAddress]:
    """The non-global addresses a crawl may fetch, given the start host's addresses: all of
    them when none is global (a local site), none otherwise."""
    ips = {canonical_address(address) for address in addresses}
    if not ips or any(blocked_reason(ip) is None for ip in ips):
        return frozenset()
    return frozenset(ips)


def guard_off_hint() -> str:
    return f"set {ALLOW_SETTING}=true to turn the SSRF guard off"


# --------------------------------------------------------------------------------------------
# The resolver
# --------------------------------------------------------------------------------------------


class SSRFResolver(CachingThreadedResolver):
    """Scrapy's caching threaded resolver, answering only with addresses the guard allows.

    A lookup gets every address of the name, IPv6 and IPv4, in the order the system prefers
    them (cached like Scrapy's resolver caches, by name, keyed apart from it), and returns
    the first allowed one: the address the download then connects to (Twisted connects to
    an IPv6 address given as a host, as to an IPv4 one). When none is allowed the lookup
    fails with :class:`SSRFLookupRefused`. Numeric names (``127.0.0.2``, ``0x7f000002``,
    ``::1``) are answered without a lookup.
    """

    #: The blocking lookup, run in the reactor's thread pool; tests replace it.
    lookup = staticmethod(lookup_all)

    def __init__(self, reactor, cache_size: int, timeout: float, enabled: bool = True):
        super().__init__(reactor, cache_size, timeout)
        # The guard's state before any crawler registered its own (from the process
        # settings, which is all Scrapy gives a resolver).
        self.enabled = enabled

    @classmethod
    def from_crawler(cls, crawler, reactor):
        resolver = super().from_crawler(crawler, reactor)
        resolver.enabled = not crawler.settings.getbool(ALLOW_SETTING)
        return resolver

    def getHostByName(self, name: str, timeout=()) -> defer.Deferred[str]:  # noqa: N802
        d = self._answers(name)
        d.addCallback(self._choose, name, active_policy(self.enabled))
        return d

    def _answers(self, name: str) -> defer.Deferred[list[str]]:
        literal = numeric_host(name)
        if literal is not None:
            return defer.succeed([literal])
        key = ("crawlyx.policy.ssrf", name)
        if key in dnscache:
            return defer.succeed(dnscache[key])
        d = threads.deferToThreadPool(self.reactor, self.reactor.getThreadPool(), self.lookup, name)
        # Scrapy's DNS_TIMEOUT; the thread may go on, its answer is then dropped.
        d.addTimeout(self.timeout, self.reactor)
        d.addCallbacks(
            self._looked_up, self._lookup_failed, callbackArgs=(key,), errbackArgs=(name,)
        )
        return d

    def _looked_up(self, addresses: list[str], key) -> list[str]:
        if not addresses:
            raise DNSLookupError(f"address {key[1]!r} not found: no address")
        dnscache[key] = addresses
        return addresses

    @staticmethod
    def _lookup_failed(failure, name: str):
        if failure.check(defer.TimeoutError):
            raise DNSLookupError(f"address {name!r} not found: timeout error")
        raise DNSLookupError(f"address {name!r} not found: {failure.getErrorMessage()}")

    @staticmethod
    def _choose(addresses: list[str], name: str, policy: Policy | None) -> str:
        if policy is None:
            return addresses[0]
        reasons = []
        for address in addresses:
            reason = policy.refusal(address)
            if reason is None:
                _REFUSED.pop(name.lower(), None)
                return address
            reasons.append(f"{address}: {reason}")
        message = f"{name} resolves only to blocked addresses: {'; '.join(reasons)}"
        _REFUSED[name.lower()] = message
        logger.debug("SSRF guard: %s", message)
        raise SSRFLookupRefused(message)


def refused_name(host: str) -> str | None:
    """Why the resolver last refused ``host``, or None if it did not."""
    return _REFUSED.get(host.lower())
