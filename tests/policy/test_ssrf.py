"""The SSRF guard (crawlyx.policy.ssrf).

No test here sends a packet outside 127.0.0.0/8. Blocked ranges are proven on the classifier
and on the resolver with a stubbed lookup function; the only real lookup is of ``localhost``
(/etc/hosts), the end-to-end crawls use servers on 127.0.0.1 and 127.0.0.2 only, and the
connection-path test runs Twisted's endpoint on an in-memory reactor (no sockets at all).
The browser test's Chromium connects only through the proxies, whose lookups are stubbed.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import socket
import subprocess
import threading
from collections import Counter
from html import escape
from http.server import ThreadingHTTPServer
from ipaddress import ip_address, ip_network

import pytest
from scrapy import Request, Spider
from scrapy.core.downloader.handlers.http11 import _BindAddressAgent
from scrapy.exceptions import CannotResolveHostError, NotConfigured
from scrapy.resolver import dnscache
from scrapy.utils.test import get_crawler
from twisted.internet._resolver import SimpleResolverComplexifier
from twisted.internet.error import DNSLookupError
from twisted.internet.testing import MemoryReactorClock
from twisted.python.failure import Failure
from twisted.web.client import BrowserLikePolicyForHTTPS

from crawlyx import render
from crawlyx.errors import classify
from crawlyx.middlewares.ssrf import SSRFMiddleware, check_configuration
from crawlyx.policy import ssrf
from crawlyx.policy.ssrf import (
    Guard,
    Policy,
    SSRFBlocked,
    SSRFGuardError,
    SSRFLookupRefused,
    SSRFResolver,
    blocked_reason,
    numeric_host,
    register_guard,
    start_allowed,
)
from crawlyx.render.proxy import BrowserProxy
from tests.conftest import crawl_command, crawl_env, read_items
from tests.sites.site import QuietHandler


@pytest.fixture(autouse=True)
def fresh_registry():
    """Each test starts with no registered guards and no remembered refusals."""
    ssrf._GUARDS.clear()
    ssrf._REFUSED.clear()
    limit = dnscache.limit
    yield
    ssrf._GUARDS.clear()
    ssrf._REFUSED.clear()
    for key in [k for k in dnscache if isinstance(k, tuple)]:
        del dnscache[key]
    dnscache.limit = limit


# --------------------------------------------------------------------------------------------
# blocked_reason: classification only
# --------------------------------------------------------------------------------------------

BLOCKED = [
    # IPv4
    ("127.0.0.1", "loopback"),
    ("127.0.0.2", "loopback"),
    ("127.255.255.254", "loopback"),
    ("10.0.0.1", "private"),
    ("172.16.0.1", "private"),
    ("172.31.255.255", "private"),
    ("192.168.1.1", "private"),
    ("100.64.0.1", "carrier-grade NAT"),
    ("100.127.255.254", "carrier-grade NAT"),
    ("169.254.169.254", "metadata"),
    ("100.100.100.200", "metadata"),
    ("169.254.1.1", "link-local"),
    ("0.0.0.0", "unspecified"),
    ("0.1.2.3", "this network"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("255.255.255.255", "broadcast"),
    ("240.0.0.1", "reserved"),
    ("192.0.0.8", "IETF"),
    ("192.0.2.10", "documentation"),
    ("198.51.100.7", "documentation"),
    ("203.0.113.9", "documentation"),
    ("198.18.0.1", "benchmarking"),
    ("198.19.255.255", "benchmarking"),
    ("192.88.99.1", "6to4 relay"),
    # IPv6
    ("::1", "loopback"),
    ("::", "unspecified"),
    ("fe80::1", "link-local"),
    ("fe80::1%eth0", "link-local"),
    ("febf:ffff::1", "link-local"),
    ("fc00::1", "unique-local"),
    ("fd12:3456:789a::1", "unique-local"),
    ("fd00:ec2::254", "metadata"),
    ("fec0::1", "site-local"),
    ("ff02::1", "multicast"),
    ("ff0e::1", "multicast"),
    ("2001:db8::1", "documentation"),
    ("3fff::1", "documentation"),
    ("100::1", "discard"),
    ("5f00::1", "SRv6"),
    ("2001:10::1", "not globally routable"),  # ORCHID, in 2001::/23
    ("4000::1", "reserved"),
    # IPv4-mapped: judged by the IPv4 address
    ("::ffff:127.0.0.1", "IPv4-mapped form of 127.0.0.1: loopback"),
    ("::ffff:7f00:2", "IPv4-mapped form of 127.0.0.2: loopback"),
    ("::ffff:10.0.0.1", "IPv4-mapped form of 10.0.0.1: a private"),
    ("::ffff:169.254.169.254", "IPv4-mapped form of 169.254.169.254: the cloud metadata"),
    ("::ffff:0.0.0.0", "IPv4-mapped form of 0.0.0.0: the unspecified"),
    # IPv4-translated (SIIT), NAT64, 6to4, Teredo, IPv4-compatible
    ("::ffff:0:7f00:1", "IPv4-translated form of 127.0.0.1"),
    ("64:ff9b::a9fe:a9fe", "NAT64 form of 169.254.169.254"),
    ("64:ff9b::192.168.0.1", "NAT64 form of 192.168.0.1"),
    ("64:ff9b:1::a00:1", "local-use NAT64 form of 10.0.0.1"),
    ("64:ff9b:1::808:808", "local-use NAT64"),
    ("2002:7f00:1::", "6to4 form of 127.0.0.1"),
    ("2002:c0a8:101::1", "6to4 form of 192.168.1.1"),
    ("2002:a9fe:a9fe::1", "6to4 form of 169.254.169.254"),
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo form of 192.0.2.45"),
    ("2001:0:808:808:0:f5f5:f7f7:f7f7", "Teredo"),  # server and client public: still Teredo
    ("::127.0.0.1", "IPv4-compatible form of 127.0.0.1"),
    ("::10.1.2.3", "IPv4-compatible form of 10.1.2.3"),
    ("::8.8.8.8", "deprecated IPv4-compatible"),
]

PUBLIC = [
    "8.8.8.8",
    "1.1.1.1",
    "93.184.216.34",
    "100.63.255.255",  # just below 100.64/10
    "100.128.0.0",  # just above it
    "172.15.255.255",
    "172.32.0.0",
    "192.1.0.1",
    "169.253.255.255",
    "223.255.255.255",
    "2606:4700::1111",
    "2001:4860:4860::8888",
    "2a00:1450:4001:82a::200e",
    "::ffff:8.8.8.8",  # mapped public: the IPv4 address decides
    "64:ff9b::808:808",  # NAT64 of a public address
    "2002:808:808::1",  # 6to4 of a public address
]


@pytest.mark.parametrize(("address", "reason"), BLOCKED)
def test_blocked_addresses_and_their_reasons(address, reason):
    got = blocked_reason(address)
    assert got is not None, address
    assert reason in got, (address, got)


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_are_not_blocked(address):
    assert blocked_reason(address) is None


def test_blocked_reason_takes_address_objects_and_rejects_names():
    assert "loopback" in blocked_reason(ip_address("127.0.0.1"))
    assert blocked_reason(ip_address("2606:4700::1111")) is None
    assert "loopback" in blocked_reason("[::1]")
    with pytest.raises(ValueError):
        blocked_reason("localhost")


def test_every_non_global_sample_is_blocked():
    # Whatever Python's own table says is not global, the guard refuses too.
    for net in (
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "100.64.0.0/10",
        "fc00::/7",
        "fe80::/10",
    ):
        network = ip_network(net)
        for offset in (0, 1, 2, 255, network.num_addresses // 2, network.num_addresses - 1):
            address = network.network_address + offset
            assert not address.is_global
            assert blocked_reason(address) is not None, address


# --------------------------------------------------------------------------------------------
# numeric_host and the normalizer's numeric hosts
# --------------------------------------------------------------------------------------------

NUMERIC = [
    ("127.0.0.1", "127.0.0.1"),
    ("0x7f000001", "127.0.0.1"),
    ("0X7F000001", "127.0.0.1"),
    ("2130706433", "127.0.0.1"),
    ("127.1", "127.0.0.1"),
    ("127.0.1", "127.0.0.1"),
    ("0177.0.0.1", "127.0.0.1"),
    ("0x7f.0.0.1", "127.0.0.1"),
    ("0x7f.1", "127.0.0.1"),
    ("017700000001", "127.0.0.1"),
    ("127.0.0.1.", "127.0.0.1"),  # trailing dot, as browsers read it
    ("0x7f000002", "127.0.0.2"),
    ("0xa9fea9fe", "169.254.169.254"),
    ("2852039166", "169.254.169.254"),
    ("169.254.43518", "169.254.169.254"),
    ("0", "0.0.0.0"),
    ("10.1", "10.0.0.1"),
    ("[::1]", "::1"),
    ("[0:0:0:0:0:0:0:1]", "::1"),
    ("::1", "::1"),
    ("[::ffff:127.0.0.1]", "::ffff:7f00:1"),
    ("[2606:4700:0:0::1111]", "2606:4700::1111"),
]

NOT_NUMERIC = [
    "localhost",
    "example.com",
    "1password.com",
    "127.0.0.1.example.com",
    "0x7g000001",
    "256.0.0.1",
    "1.2.3.4.5",
    "1..2",
    "09.0.0.1",  # not octal: libc refuses it too
    "4294967296",
    "127.0.0.1..",
    "",
    "[not:v6]",
    "[127.0.0.1]",
]


@pytest.mark.parametrize(("host", "expected"), NUMERIC)
def test_numeric_host(host, expected):
    assert numeric_host(host) == expected


@pytest.mark.parametrize("host", NOT_NUMERIC)
def test_not_numeric_host(host):
    assert numeric_host(host) is None


def test_numeric_host_agrees_with_inet_aton():
    # inet_aton is computed locally (no lookup). It does not take the trailing dot.
    samples = [h for h, _ in NUMERIC if ":" not in h and not h.endswith(".")]
    samples += [h for h in NOT_NUMERIC if h and ":" not in h and not h.endswith(".")]
    samples += ["1", "0x", "0xffffffff", "255.255.255.255", "1.0x10", "1.2.3.0377", "1.2.3.0400"]
    for host in samples:
        try:
            expected = socket.inet_ntoa(socket.inet_aton(host))
        except OSError:
            expected = None
        assert numeric_host(host) == expected, host


# --------------------------------------------------------------------------------------------
# Policy: what the start URL allows
# --------------------------------------------------------------------------------------------


def test_start_on_a_private_address_allows_exactly_its_addresses():
    allowed = start_allowed(["127.0.0.1"])
    assert allowed == {ip_address("127.0.0.1")}
    policy = Policy(allowed)
    assert policy.refusal("127.0.0.1") is None
    assert policy.refusal("::ffff:127.0.0.1") is None  # the same address, mapped
    assert "loopback" in policy.refusal("127.0.0.2")
    assert "private" in policy.refusal("10.0.0.1")
    assert policy.refusal("8.8.8.8") is None


def test_start_on_a_public_address_allows_nothing_private():
    assert start_allowed(["93.184.216.34"]) == frozenset()
    # A name with a public and a private answer: the private one is not let in.
    assert start_allowed(["93.184.216.34", "10.0.0.5"]) == frozenset()
    assert start_allowed([]) == frozenset()
    assert "loopback" in Policy(start_allowed(["8.8.8.8"])).refusal("127.0.0.1")


def test_active_policy_follows_the_registered_guards():
    assert ssrf.active_policy(default_enabled=True) == Policy()
    assert ssrf.active_policy(default_enabled=False) is None
    one, two = Key(), Key()
    register_guard(one, Guard(True, frozenset({ip_address("127.0.0.1"), ip_address("::1")})))
    assert ssrf.active_policy(False).allowed == {ip_address("127.0.0.1"), ip_address("::1")}
    # Two crawlers in a process: only what both allow.
    register_guard(two, Guard(True, frozenset({ip_address("127.0.0.1")})))
    assert ssrf.active_policy(False).allowed == {ip_address("127.0.0.1")}
    # Every registered guard off: nothing enforced.
    ssrf._GUARDS.clear()
    register_guard(one, Guard(False))
    assert ssrf.active_policy(True) is None


class Key:
    """Stands for a crawler in the guard registry."""


# --------------------------------------------------------------------------------------------
# The resolver, on a fake reactor whose "thread pool" runs the lookup at once
# --------------------------------------------------------------------------------------------


class SyncPool:
    def callInThreadWithCallback(self, on_result, f, *args, **kwargs):  # noqa: N802
        try:
            result = f(*args, **kwargs)
        except Exception:
            on_result(False, Failure())
        else:
            on_result(True, result)


class HangingPool:
    """A lookup that never answers."""

    def callInThreadWithCallback(self, on_result, f, *args, **kwargs):  # noqa: N802
        pass


class FakeReactor(MemoryReactorClock):
    """In-memory reactor: connectTCP only records, callLater runs on advance()."""

    def __init__(self, pool=None):
        super().__init__()
        self.pool = pool or SyncPool()

    def getThreadPool(self):  # noqa: N802
        return self.pool

    def callFromThread(self, f, *args, **kwargs):  # noqa: N802
        f(*args, **kwargs)


def make_resolver(answers=None, cache_size=0, pool=None, enabled=True):
    """A resolver; with ``answers`` its lookup function is a stub (name -> addresses)."""
    reactor = FakeReactor(pool)
    resolver = SSRFResolver(reactor, cache_size=cache_size, timeout=5, enabled=enabled)
    resolver.calls = []
    if answers is not None:

        def lookup(name):
            resolver.calls.append(name)
            if name not in answers:
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
            return answers[name]

        resolver.lookup = lookup
    return resolver


def resolve(resolver, name):
    """The resolver's answer (an address) or its Failure."""
    out = []
    resolver.getHostByName(name).addBoth(out.append)
    assert out, f"the lookup of {name!r} did not finish"
    return out[0]


def allow(*addresses):
    guard = Guard(True, frozenset(ip_address(a) for a in addresses))
    key = Key()
    register_guard(key, guard)
    return key  # keep it alive: the registry holds crawlers weakly


def test_real_localhost_is_refused_unless_allowed():
    resolver = make_resolver()  # the real lookup function; localhost is in /etc/hosts
    refused = resolve(resolver, "localhost")
    assert isinstance(refused, Failure)
    assert refused.check(SSRFLookupRefused, SSRFBlocked, DNSLookupError)
    assert classify(refused) == "ssrf_blocked"
    assert "127.0.0.1: loopback" in refused.getErrorMessage()
    assert "loopback" in ssrf.refused_name("LOCALHOST")

    key = allow("127.0.0.1")  # noqa: F841
    assert resolve(resolver, "localhost") == "127.0.0.1"
    assert ssrf.refused_name("localhost") is None


def test_real_localhost_when_the_guard_is_off():
    assert resolve(make_resolver(enabled=False), "localhost") == "127.0.0.1"
    key = Key()
    register_guard(key, Guard(False))
    assert resolve(make_resolver(enabled=True), "localhost") == "127.0.0.1"


def test_blocked_answers_are_dropped_and_an_allowed_one_returned():
    resolver = make_resolver(
        {
            "rebind.example": ["10.0.0.5", "93.184.216.34"],
            "meta.example": ["169.254.169.254"],
            "lan.example": ["192.168.1.10", "10.1.2.3"],
            "cgnat.example": ["100.64.0.7"],
            "public.example": ["8.8.8.8"],
        }
    )
    assert resolve(resolver, "rebind.example") == "93.184.216.34"
    assert resolve(resolver, "public.example") == "8.8.8.8"
    meta = resolve(resolver, "meta.example")
    assert classify(meta) == "ssrf_blocked"
    assert "169.254.169.254: the cloud metadata endpoint" in meta.getErrorMessage()
    lan = resolve(resolver, "lan.example")
    assert "192.168.1.10: a private network" in lan.getErrorMessage()
    assert "10.1.2.3: a private network" in lan.getErrorMessage()
    assert "carrier-grade NAT" in resolve(resolver, "cgnat.example").getErrorMessage()


def test_allowed_private_answers_pass_and_others_still_do_not():
    resolver = make_resolver({"site.test": ["127.0.0.1"], "other.test": ["127.0.0.2"]})
    key = allow("127.0.0.1")  # noqa: F841
    assert resolve(resolver, "site.test") == "127.0.0.1"
    assert classify(resolve(resolver, "other.test")) == "ssrf_blocked"


def test_numeric_names_are_judged_without_a_lookup():
    resolver = make_resolver({})
    for name in ("127.0.0.2", "0x7f000002", "2130706434", "127.2", "0177.0.0.2", "10.1"):
        failure = resolve(resolver, name)
        assert classify(failure) == "ssrf_blocked", name
    assert (
        "169.254.169.254: the cloud metadata" in resolve(resolver, "0xa9fea9fe").getErrorMessage()
    )
    assert resolve(resolver, "0x08080808") == "8.8.8.8"
    key = allow("127.0.0.1")  # noqa: F841
    assert resolve(resolver, "0x7f000001") == "127.0.0.1"
    assert resolver.calls == []


def test_ipv6_answers_are_judged_like_ipv4_ones_in_the_systems_order():
    # The lookup asks for AAAA and A records; the first allowed answer, in the order the
    # system gave them, is the one connected to.
    resolver = make_resolver(
        {
            "v6only.example": ["2606:4700::1111"],
            "v6first.example": ["2001:4860:4860::8888", "8.8.8.8"],
            "v4first.example": ["8.8.8.8", "2001:4860:4860::8888"],
            "ula.example": ["fd00::5", "2606:4700::1111"],
            "mapped.example": ["::ffff:127.0.0.1"],
            "nat64.example": ["64:ff9b::a9fe:a9fe"],
            "link.example": ["fe80::1"],
            "loop.example": ["::1", "127.0.0.1"],
        }
    )
    assert resolve(resolver, "v6only.example") == "2606:4700::1111"
    assert resolve(resolver, "v6first.example") == "2001:4860:4860::8888"
    assert resolve(resolver, "v4first.example") == "8.8.8.8"
    assert resolve(resolver, "ula.example") == "2606:4700::1111"
    for name, reason in [
        ("mapped.example", "::ffff:127.0.0.1: loopback (127.0.0.0/8)"),  # as 127.0.0.1
        ("nat64.example", "NAT64 form of 169.254.169.254: the cloud metadata endpoint"),
        ("link.example", "fe80::1: link-local"),
        ("loop.example", "::1: loopback (::1); 127.0.0.1: loopback"),
    ]:
        refused = resolve(resolver, name)
        assert classify(refused) == "ssrf_blocked", name
        assert reason in refused.getErrorMessage(), name
    key = allow("::1")  # noqa: F841 - a crawl started on [::1]: only ::1 is let through
    assert resolve(resolver, "loop.example") == "::1"
    assert classify(resolve(resolver, "mapped.example")) == "ssrf_blocked"


def test_numeric_ipv6_names_are_judged_without_a_lookup():
    resolver = make_resolver({})
    for name in ("::1", "[::1]", "fd00::1", "fe80::1%eth0", "::ffff:7f00:2", "64:ff9b::a00:1"):
        assert classify(resolve(resolver, name)) == "ssrf_blocked", name
    assert resolve(resolver, "2606:4700::1111") == "2606:4700::1111"
    key = allow("127.0.0.1")  # noqa: F841 - judged as the IPv4 address it maps
    assert resolve(resolver, "::ffff:127.0.0.1") == "::ffff:7f00:1"
    assert resolver.calls == []


def test_the_real_lookup_asks_for_both_families():
    assert SSRFResolver.lookup is ssrf.lookup_all
    assert ssrf.lookup_all("::1") == ["::1"]  # numeric: getaddrinfo sends no query
    assert ssrf.lookup_all("127.0.0.1") == ["127.0.0.1"]


def test_lookup_failures_stay_dns_errors():
    resolver = make_resolver({})
    failure = resolve(resolver, "nowhere.invalid")
    assert failure.check(DNSLookupError) and not failure.check(SSRFBlocked)
    assert classify(failure) == "dns"
    empty = resolve(make_resolver({"empty.test": []}), "empty.test")
    assert empty.check(DNSLookupError) and not empty.check(SSRFBlocked)


def test_lookup_timeout():
    resolver = make_resolver(pool=HangingPool())
    out = []
    resolver.getHostByName("slow.test").addBoth(out.append)
    assert out == []
    resolver.reactor.advance(5)
    assert out and out[0].check(DNSLookupError)
    assert "timeout" in out[0].getErrorMessage()


def test_answers_are_cached_and_judged_again_on_every_use():
    resolver = make_resolver({"site.test": ["127.0.0.1"]}, cache_size=100)
    assert classify(resolve(resolver, "site.test")) == "ssrf_blocked"
    key = allow("127.0.0.1")  # noqa: F841
    assert resolve(resolver, "site.test") == "127.0.0.1"
    assert resolver.calls == ["site.test"]  # one lookup, two verdicts


def test_resolver_reads_the_setting():
    on = SSRFResolver.from_crawler(get_crawler(Spider), FakeReactor())
    off = SSRFResolver.from_crawler(
        get_crawler(Spider, {"CRAWLYX_ALLOW_PRIVATE": True}), FakeReactor()
    )
    assert on.enabled is True and off.enabled is False


def test_scrapys_http11_agent_connects_to_exactly_the_checked_address():
    # Scrapy's HTTP/1.1 handler builds this agent; its endpoint asks the reactor's resolver
    # (installed as reactor.installResolver does) once and connects to the answer. The
    # in-memory reactor records connection attempts and opens no socket.
    resolver = make_resolver({"rebind.example": ["10.0.0.5", "127.0.0.1", "93.184.216.34"]})
    reactor = resolver.reactor
    reactor.nameResolver = SimpleResolverComplexifier(resolver)
    agent = _BindAddressAgent(reactor=reactor, contextFactory=BrowserLikePolicyForHTTPS())
    agent.request(b"GET", b"http://rebind.example:8080/")
    assert [(host, port) for host, port, *_ in reactor.tcpClients] == [("93.184.216.34", 8080)]
    assert resolver.calls == ["rebind.example"]


def test_scrapys_http11_agent_connects_to_an_ipv6_answer():
    resolver = make_resolver({"v6.example": ["fd00::5", "2001:4860:4860::8888", "8.8.8.8"]})
    reactor = resolver.reactor
    reactor.nameResolver = SimpleResolverComplexifier(resolver)
    agent = _BindAddressAgent(reactor=reactor, contextFactory=BrowserLikePolicyForHTTPS())
    agent.request(b"GET", b"http://v6.example:8080/")
    assert [(host, port) for host, port, *_ in reactor.tcpClients] == [
        ("2001:4860:4860::8888", 8080)
    ]


def test_a_refused_lookup_connects_nowhere_and_twisted_hides_the_reason():
    # Why the middleware exists: Twisted turns any resolver failure into "no results".
    resolver = make_resolver({"meta.example": ["169.254.169.254"]})
    reactor = resolver.reactor
    reactor.nameResolver = SimpleResolverComplexifier(resolver)
    agent = _BindAddressAgent(reactor=reactor, contextFactory=BrowserLikePolicyForHTTPS())
    out = []
    agent.request(b"GET", b"http://meta.example/latest/meta-data/").addBoth(out.append)
    assert reactor.tcpClients == []
    assert out and out[0].check(DNSLookupError) and not out[0].check(SSRFBlocked)
    assert "metadata" in ssrf.refused_name("meta.example")


# --------------------------------------------------------------------------------------------
# The middleware
# --------------------------------------------------------------------------------------------

GUARD_SETTINGS = {"TWISTED_DNS_RESOLVER": "crawlyx.policy.ssrf.SSRFResolver"}


def run(coroutine):
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coroutine)
    finally:
        loop.close()


def middleware(allowed=(), **settings):
    crawler = get_crawler(Spider, {**GUARD_SETTINGS, **settings})
    mw = SSRFMiddleware.from_crawler(crawler)
    mw.guard.allowed = frozenset(ip_address(a) for a in allowed)
    return mw


def refused(mw, url, **meta) -> SSRFBlocked:
    with pytest.raises(SSRFBlocked) as info:
        run(mw.process_request(Request(url, meta=meta)))
    return info.value


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.2:8000/x",
        "http://0x7f000002:8000/",
        "http://2130706434/",
        "http://127.2/",
        "http://0177.0.0.2/",
        "http://127.0.0.2./",
        "http://[::1]/",
        "http://[::ffff:127.0.0.2]/",
        "http://169.254.169.254/latest/meta-data/",
        "http://0xa9fea9fe/latest/meta-data/",
        "http://[fd00:ec2::254]/",
        "http://10.0.0.1/",
        "http://[fe80::1]/",
        "https://192.168.0.1/admin",
        "http://100.64.0.1/",
        "http://0.0.0.0:6379/",
    ],
)
def test_middleware_refuses_blocked_literal_hosts(url):
    mw = middleware(allowed=["127.0.0.1"])
    exc = refused(mw, url)
    assert exc.error_class == "ssrf_blocked"
    assert classify(Failure(exc)) == "ssrf_blocked"
    assert "CRAWLYX_ALLOW_PRIVATE=true" in str(exc)
    assert mw.crawler.stats.get_value("crawlyx/ssrf/blocked") == 1


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/",
        "http://0x7f000001:8000/",
        "http://127.1/",
        "http://[::ffff:127.0.0.1]/",
    ],
)
def test_middleware_lets_allowed_literals_through(url):
    mw = middleware(allowed=["127.0.0.1"])
    assert run(mw.process_request(Request(url))) is None


def test_middleware_lets_public_literals_through():
    mw = middleware()
    for url in ("http://8.8.8.8/", "http://[2606:4700::1111]/", "http://0x08080808/"):
        assert run(mw.process_request(Request(url))) is None
    assert mw.crawler.stats.get_value("crawlyx/ssrf/blocked") is None


def test_middleware_refuses_a_proxy_in_meta():
    mw = middleware()
    exc = refused(mw, "http://8.8.8.8/", proxy="http://127.0.0.1:3128")
    assert "proxy" in str(exc)
    assert run(mw.process_request(Request("http://8.8.8.8/", meta={"proxy": None}))) is None


def test_middleware_names_a_refusal_reported_at_connection_time():
    mw = middleware()
    ssrf._REFUSED["meta.example"] = "meta.example resolves only to blocked addresses: ..."
    request = Request("http://meta.example/")
    with pytest.raises(SSRFBlocked):
        mw.process_exception(request, CannotResolveHostError("no results"))
    assert mw.process_exception(Request("http://other.example/"), CannotResolveHostError()) is None
    assert mw.process_exception(request, ValueError()) is None
    assert mw.crawler.stats.get_value("crawlyx/ssrf/blocked") == 1


def test_redirect_hops_pass_through_the_middleware_again():
    from scrapy.downloadermiddlewares.redirect import RedirectMiddleware
    from scrapy.http import Response

    mw = middleware(allowed=["127.0.0.1"])
    crawler = mw.crawler
    crawler.spider = Spider("s")
    redirect = RedirectMiddleware.from_crawler(crawler)
    first = Request("http://127.0.0.1:8000/go")
    assert run(mw.process_request(first)) is None
    response = Response(first.url, status=302, headers={"Location": "http://127.0.0.2:8000/x"})
    hop = redirect.process_response(first, response)
    assert isinstance(hop, Request) and hop.url == "http://127.0.0.2:8000/x"
    refused(mw, hop.url)


def test_middleware_is_not_configured_when_the_guard_is_off():
    crawler = get_crawler(Spider, {"CRAWLYX_ALLOW_PRIVATE": True})
    with pytest.raises(NotConfigured):
        SSRFMiddleware.from_crawler(crawler)
    assert ssrf.active_policy(default_enabled=True) is None


def test_middleware_computes_the_allowed_set_at_spider_opened():
    mw = middleware()

    class Args:
        start = "http://0x7f000001:8000/start"

    # Numeric start hosts need no lookup; a name is looked up in a thread of the running
    # reactor (see the end-to-end test started on localhost).
    spider = Spider("s")
    spider.args = Args()
    run(mw.spider_opened(spider))
    assert mw.guard.allowed == {ip_address("127.0.0.1")}
    Args.start = "http://[::1]:8000/"
    run(mw.spider_opened(spider))
    assert mw.guard.allowed == {ip_address("::1")}
    Args.start = "http://8.8.8.8/"
    run(mw.spider_opened(spider))
    assert mw.guard.allowed == frozenset()
    assert start_allowed(ssrf.lookup_all("localhost")) >= {ip_address("127.0.0.1")}


def test_proxy_environment_stops_the_guard(monkeypatch):
    for name in ssrf.PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    check_configuration(get_crawler(Spider, GUARD_SETTINGS).settings)
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:3128")
    with pytest.raises(SSRFGuardError) as info:
        check_configuration(get_crawler(Spider, GUARD_SETTINGS).settings)
    message = str(info.value)
    assert "HTTPS_PROXY" in message and "CRAWLYX_ALLOW_PRIVATE=true" in message
    assert "\n" not in message
    # With Scrapy's proxy middleware off, the environment is not used.
    check_configuration(
        get_crawler(Spider, {**GUARD_SETTINGS, "HTTPPROXY_ENABLED": False}).settings
    )


def test_guard_refuses_a_resolver_or_handler_it_does_not_control():
    with pytest.raises(SSRFGuardError, match="TWISTED_DNS_RESOLVER"):
        check_configuration(get_crawler(Spider).settings)
    settings = {
        **GUARD_SETTINGS,
        "DOWNLOAD_HANDLERS": {
            "https": "scrapy.core.downloader.handlers._httpx.HttpxDownloadHandler"
        },
    }
    with pytest.raises(SSRFGuardError, match="https is downloaded by"):
        check_configuration(get_crawler(Spider, settings).settings)


def test_project_settings_wire_the_guard():
    from tests.test_settings import crawl_settings

    settings = crawl_settings()  # the add-on wires it
    assert settings["TWISTED_DNS_RESOLVER"] == "crawlyx.policy.ssrf.SSRFResolver"
    assert settings.getbool("CRAWLYX_ALLOW_PRIVATE") is False
    mws = settings.getwithbase("DOWNLOADER_MIDDLEWARES")
    order = mws["crawlyx.middlewares.ssrf.SSRFMiddleware"]
    assert order < mws["crawlyx.middlewares.robots.RobotsMiddleware"]
    assert order < mws["scrapy.downloadermiddlewares.httpproxy.HttpProxyMiddleware"]
    check_configuration(settings)


# --------------------------------------------------------------------------------------------
# End to end: servers on 127.0.0.1 (the site) and 127.0.0.2 (where nothing may arrive)
# --------------------------------------------------------------------------------------------


def page(title: str, links: list[str]) -> str:
    anchors = "".join(f'<p><a href="{escape(href)}">{escape(href)}</a></p>' for href in links)
    return f"<html><head><title>{title}</title></head><body><h1>{title}</h1>{anchors}</body></html>"


class IPv6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6


class Server:
    """A small HTTP server on one loopback address (IPv4 or IPv6); records every request
    path."""

    def __init__(self, host: str, port: int = 0):
        self.routes: dict[str, tuple[int, dict, str]] = {}
        self.paths: list[str] = []
        self.lock = threading.Lock()
        server = self

        class Handler(QuietHandler):
            def do_GET(self):  # noqa: N802
                with server.lock:
                    server.paths.append(self.path)
                status, headers, body = server.routes.get(self.path, (404, {}, "not found"))
                self.reply(status, body, headers=headers)

        server_class = IPv6Server if ":" in host else ThreadingHTTPServer
        self.httpd = server_class((host, port), Handler)
        self.httpd.daemon_threads = True
        self.host, self.port = self.httpd.server_address[:2]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def route(self, path: str, status: int = 200, body: str = "", **headers) -> None:
        self.routes[path] = (status, headers, body)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def web():
    """The site being crawled, on 127.0.0.1."""
    with Server("127.0.0.1") as server:
        yield server


@pytest.fixture
def internal():
    """A server on 127.0.0.2: a private address the crawl must not reach."""
    with Server("127.0.0.2") as server:
        server.route("/", body=page("Internal", []))
        server.route("/x", body=page("Internal x", []))
        yield server


def test_start_url_redirect_to_a_private_address_is_refused(web, internal, crawl):
    web.route("/start", 302, Location=f"http://127.0.0.2:{internal.port}/")
    result = crawl(f"start=http://127.0.0.1:{web.port}/start", "sitemap=0")
    assert result.returncode == 1, result.log[-3000:]  # the start failed: nothing crawled
    assert "/start" in web.paths
    assert internal.paths == []
    assert result.items == []
    assert result.stat("crawlyx/error/ssrf_blocked") == "1"
    assert result.stat("crawlyx/ssrf/blocked") == "1"
    assert "SSRF guard on: the start host 127.0.0.1 is not public" in result.log


def test_same_origin_redirects_to_private_addresses_are_refused(web, internal, crawl):
    # Started by name: localhost's own address (127.0.0.1) is allowed, nothing else private.
    p = internal.port
    web.route(
        "/",
        body=page("Home", ["/go", "/go2", "/go3", "/go4", "/ok", f"http://127.0.0.2:{p}/outside"]),
    )
    # Distinct paths: the three numeric spellings of 127.0.0.2 normalize to one URL.
    web.route("/go", 302, Location=f"http://127.0.0.2:{p}/x")
    web.route("/go2", 302, Location=f"http://0x7f000002:{p}/y")
    web.route("/go3", 302, Location=f"http://[::ffff:127.0.0.2]:{p}/z")
    web.route("/go4", 302, Location=f"http://2130706434:{p}/w")
    web.route("/ok", body=page("OK", []))
    result = crawl(f"start=http://localhost:{web.port}/", "sitemap=0")
    assert result.returncode == 0, result.log[-3000:]
    base = f"http://localhost:{web.port}"
    assert sorted(result.urls) == [base + "/", base + "/ok"]
    assert internal.paths == []
    assert {"/go", "/go2", "/go3", "/go4"} <= set(web.paths)
    # Off the crawl's origin: refused before the guard is even asked.
    assert result.stat("crawlyx/error/out_of_scope") == "4"
    assert result.stat("crawlyx/error/ssrf_blocked") is None
    assert "its addresses 127.0.0.1 may be fetched" in result.log


def ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as sock:
            sock.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not ipv6_loopback(), reason="no IPv6 loopback (::1) on this machine")
def test_a_site_on_ipv6_is_crawled(crawl):
    with Server("::1") as web, Server("127.0.0.1") as v4:
        v4.route("/", body=page("IPv4", []))
        web.route("/", body=page("Home", ["/a", f"http://[::1]:{web.port}/b"]))
        web.route("/a", body=page("A", ["/go"]))
        web.route("/b", body=page("B", []))
        # Loopback over IPv4 is another address than the start host's: refused.
        web.route("/go", 302, Location=f"http://127.0.0.1:{v4.port}/")
        result = crawl(f"start=http://[::1]:{web.port}/", "sitemap=0")
    assert result.returncode == 0, result.log[-3000:]
    base = f"http://[::1]:{web.port}"
    assert sorted(result.urls) == [base + "/", base + "/a", base + "/b"]
    assert sorted(web.paths) == ["/", "/a", "/b", "/go", "/robots.txt"]
    assert v4.paths == []
    assert "the start host ::1 is not public; its addresses ::1 may be fetched" in result.log


def test_guard_off_fetches_the_private_hop(web, internal, crawl):
    web.route("/start", 302, Location=f"http://127.0.0.2:{internal.port}/")
    result = crawl(
        f"start=http://127.0.0.1:{web.port}/start",
        "sitemap=0",
        settings={"CRAWLYX_ALLOW_PRIVATE": "true"},
    )
    assert result.returncode == 0, result.log[-3000:]
    assert "/" in internal.paths
    assert result.urls == [f"http://127.0.0.2:{internal.port}/"]
    assert result.stat("crawlyx/error/ssrf_blocked") is None
    assert "SSRF guard off" in result.log


def test_proxy_in_the_environment_stops_the_crawl(web, tmp_path, redis_url):
    web.route("/", body=page("Home", []))
    out = tmp_path / "pages.jsonl"
    env = crawl_env()
    # Never connected to: the crawl stops before its first request.
    env["http_proxy"] = "http://127.0.0.1:9"
    proc = subprocess.run(
        crawl_command(
            out, f"start=http://127.0.0.1:{web.port}/", settings={"CRAWLYX_REDIS_URL": redis_url}
        ),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    message = (
        "crawlyx: refusing to crawl through an HTTP(S) proxy (http_proxy is set): the SSRF "
        "guard cannot check the addresses a proxy connects to; unset it, or set "
        "CRAWLYX_ALLOW_PRIVATE=true to turn the SSRF guard off"
    )
    assert proc.stderr.strip() == message  # one line, before anything starts
    assert web.paths == []
    assert read_items(out) == []


def test_the_resolver_alone_stops_the_connection(web, crawl):
    # Without the middleware (so no guard knows the start URL), the resolver still answers
    # every connection of Scrapy's HTTP handler, IP literals included: 127.0.0.1 is refused
    # and the site sees nothing. Twisted reports it as a failed lookup.
    web.route("/", body=page("Home", []))
    result = crawl(
        f"start=http://127.0.0.1:{web.port}/",
        "sitemap=0",
        settings={
            "DOWNLOADER_MIDDLEWARES": '{"crawlyx.middlewares.ssrf.SSRFMiddleware": null}',
            "CRAWLYX_ROBOTS_ENABLED": "false",
            "LOG_LEVEL": "DEBUG",
        },
    )
    assert result.returncode == 1, result.log[-3000:]  # the start failed: nothing crawled
    assert web.paths == []
    assert result.items == []
    assert result.stat("crawlyx/error/dns") == "1"
    assert "SSRF guard: 127.0.0.1 resolves only to blocked addresses" in result.log


# --------------------------------------------------------------------------------------------
# Only http(s) is fetched: no file, data, s3 or ftp handler
# --------------------------------------------------------------------------------------------


class Listener:
    """A TCP port on 127.0.0.1 that counts the connections made to it (an FTP server's
    place: nothing may connect)."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.close()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.sock.close()


@pytest.mark.parametrize("render_mode", [None, "always"])
def test_only_http_and_https_have_a_download_handler(render_mode):
    from scrapy.core.downloader.handlers import DownloadHandlers
    from scrapy.exceptions import NotSupported
    from scrapy.utils.python import without_none_values

    from tests.test_settings import crawl_settings

    settings = crawl_settings()
    if render_mode is not None:  # as the add-on does for a crawl that may render
        settings = settings.copy()
        render.install(settings, render_mode)
    handlers = without_none_values(settings.getwithbase("DOWNLOAD_HANDLERS"))
    assert sorted(handlers) == ["http", "https"]
    if render_mode is not None:
        assert handlers["http"] == handlers["https"] == render.HANDLER
    check_configuration(settings)  # the guard covers what is left
    with Listener() as ftp:
        downloader = DownloadHandlers(get_crawler(Spider, settings.copy_to_dict()))
        for url in (
            "file:///etc/passwd",
            "data:text/plain,not-read",
            f"ftp://127.0.0.1:{ftp.port}/x",
            "s3://bucket/key",
        ):
            with pytest.raises(NotSupported, match="no handler available"):
                run(downloader.download_request_async(Request(url)))
    assert ftp.connections == 0


def test_a_start_url_of_another_scheme_stops_the_crawl(crawl):
    result = crawl("start=file:///etc/passwd")
    assert result.returncode == 2
    lines = [line for line in result.log.splitlines() if line.strip()]
    message = "crawlyx: bad argument start: scheme 'file' is not supported; use http or https"
    assert lines == [message]
    assert result.items == []


def test_links_and_redirects_to_other_schemes_fetch_nothing(web, crawl, tmp_path):
    with Listener() as ftp:
        other = [
            "file:///etc/passwd",
            f"ftp://127.0.0.1:{ftp.port}/x",
            "data:text/html,<h1>DATA-PAGE</h1>",
            "s3://bucket/key",
        ]
        hops = ["/go", "/goftp", "/gomail", "/refresh", "/ok"]
        web.route("/", body=page("Home", [*other, *hops]))
        web.route("/go", 302, Location="file:///etc/passwd")
        web.route("/gomail", 302, Location="mailto:webmaster@example.com")
        web.route("/goftp", 301, Location=f"ftp://127.0.0.1:{ftp.port}/y")
        web.route(
            "/refresh",
            body='<html><head><meta http-equiv="refresh" content="0; url=file:///etc/passwd">'
            "<title>Refresh</title></head><body><p>stays</p></body></html>",
        )
        web.route("/ok", body=page("OK", []))
        errors = tmp_path / "errors.jsonl"
        result = crawl(f"start=http://127.0.0.1:{web.port}/", "sitemap=0", f"errors={errors}")
    assert result.returncode == 0, result.log[-3000:]
    base = f"http://127.0.0.1:{web.port}"
    # Links to other schemes are no links of the crawl's; a meta refresh to one is not
    # followed (the page is kept); a redirect to one is refused, naming its target.
    assert sorted(result.urls) == [base + "/", base + "/ok", base + "/refresh"]
    [home] = [item for item in result.items if item["url"] == base + "/"]
    assert home["links"] == [
        base + path for path in ("/go", "/goftp", "/gomail", "/ok", "/refresh")
    ]
    markdown = "".join(item["markdown"] for item in result.items)
    # (The home page's anchor texts name the targets; their content is what must not appear.)
    assert "root:x:0" not in markdown and "# DATA-PAGE" not in markdown
    assert ftp.connections == 0
    assert sorted(web.paths) == ["/", "/go", "/goftp", "/gomail", "/ok", "/refresh", "/robots.txt"]
    logged = sorted((e["url"], e["class"], e["detail"]) for e in read_items(errors))
    refused = "RedirectRefused: redirects to {}, not an http(s) URL"
    assert logged == [
        (base + "/go", "out_of_scope", refused.format("file:///etc/passwd")),
        (base + "/goftp", "out_of_scope", refused.format(f"ftp://127.0.0.1:{ftp.port}/y")),
        (base + "/gomail", "out_of_scope", refused.format("mailto:webmaster@example.com")),
    ]
    assert result.stat("crawlyx/error/out_of_scope") == "3"
    assert result.stat("crawlyx/error/http_4xx") is None


# --------------------------------------------------------------------------------------------
# The browser's proxy (crawlyx.render.proxy): real Chromium, servers on 127.0.0.1 and 127.0.0.2
# --------------------------------------------------------------------------------------------


async def browse(chromium, proxy, visits, own_lookups):
    """Launch Chromium as a crawl does: its pages through ``proxy``, the browser's own
    traffic through one that serves no host (whose lookups go to ``own_lookups``). Each
    visit is a URL to open, or ``(page_url, script)`` to run a script there. The outcome
    of each, in order."""
    from playwright.async_api import Error, async_playwright

    async def lookup(host):
        own_lookups.append(host)
        raise SSRFBlocked(host)

    outcomes = []
    own = BrowserProxy(lookup, timeout=5, allowed_hosts=(), log_level=logging.DEBUG)
    pages_proxy = await proxy.start()
    try:
        async with async_playwright() as playwright:
            options = {**render.launch_options(chromium), "proxy": await own.start()}
            browser = await playwright.chromium.launch(**options)
            context = await browser.new_context(proxy=pages_proxy)
            page = await context.new_page()
            for visit in visits:
                url, script = visit if isinstance(visit, tuple) else (visit, None)
                try:
                    response = await page.goto(url, timeout=10_000)
                    outcome = response.status
                    if script is not None:
                        outcome = await page.evaluate(script)
                except Error as exc:
                    outcome = str(exc).splitlines()[0]
                outcomes.append(outcome)
            await browser.close()
    finally:
        await proxy.close()
        await own.close()
    return outcomes


FETCH = "fetch('{url}').then(r => 'fetched ' + r.status, e => 'failed')"
SOCKET = "new Promise(done => {{ new WebSocket('{url}').onclose = () => done('closed') }})"


def test_the_browser_connects_only_to_the_address_the_guard_checked(chromium, caplog):
    # DNS rebinding: the crawl's resolver answered localhost -> 127.0.0.2, and the guard
    # allowed it; the system now answers 127.0.0.1, which the guard does not allow (here).
    # The browser must go where the guard checked: its own lookup is never used.
    with Server("127.0.0.2") as site, Server("127.0.0.1", site.port) as private:
        p = site.port
        site.route("/", body=page("Site", []))
        site.route("/api", body="{}")
        site.route("/hop", 302, Location=f"http://127.0.0.1:{p}/")
        private.route("/", body=page("Private", []))
        resolver = make_resolver({"localhost": ["127.0.0.2"], "rebound.test": ["127.0.0.1"]})
        key = allow("127.0.0.2")  # noqa: F841 - held: the registry is weak

        asked, own_lookups = [], []

        async def checked(host):
            asked.append(host)
            answer = resolve(resolver, host)
            if isinstance(answer, Failure):
                answer.raiseException()
            return answer

        stats = get_crawler(Spider).stats
        proxy = BrowserProxy(checked, timeout=5, stats=stats)
        home = f"http://localhost:{p}/"
        with caplog.at_level("INFO", logger="crawlyx.render.proxy"):
            outcomes = run(
                browse(
                    chromium,
                    proxy,
                    [
                        (home, FETCH.format(url=f"http://localhost:{p}/api")),
                        (home, FETCH.format(url=f"http://rebound.test:{p}/api")),
                        # WebSockets go through CONNECT; this server answers the handshake 404.
                        (home, SOCKET.format(url=f"ws://localhost:{p}/socket")),
                        (home, SOCKET.format(url=f"ws://rebound.test:{p}/socket")),
                        f"http://localhost:{p}/hop",  # the browser follows it itself
                        f"http://127.0.0.1:{p}/",
                        f"http://[::1]:{p}/",
                        f"http://nowhere.test:{p}/",  # no answer at all
                    ],
                    own_lookups,
                )
            )
    assert outcomes[:4] == ["fetched 200", "failed", "closed", "closed"]
    # Refused: closed without an answer. Which network error Chromium names for that
    # (ERR_EMPTY_RESPONSE today) is its build's business; that the navigation failed is not.
    failed = [str(outcome).startswith("Page.goto: net::ERR_") for outcome in outcomes[4:]]
    assert failed == [True] * 4, outcomes
    assert private.paths == []  # the blocked address saw nothing
    # The site saw the pages and what the guard allowed, once each; in what order, and
    # whether Chromium fetched a page twice (a favicon, a retry), depends on its build.
    paths = Counter(path for path in site.paths if path != "/favicon.ico")
    assert set(paths) == {"/", "/api", "/socket", "/hop"}, paths
    assert paths["/"] >= 4 and paths["/api"] == paths["/socket"] == 1, paths
    # Each refusal is logged and counted (Chromium may try a failed connection twice).
    prefix = "SSRF guard refused the browser a connection to "
    records = [r.getMessage() for r in caplog.records if r.name == "crawlyx.render.proxy"]
    refused = {message.removeprefix(prefix).split(": ")[0] for message in records}
    assert refused == {f"rebound.test:{p}", f"127.0.0.1:{p}", f"[::1]:{p}"}
    assert stats.get_value("crawlyx/ssrf/browser_blocked") == len(records) >= 4
    # Only the pages' hosts were looked up; what the browser fetched for itself, nothing.
    assert set(asked) == {"localhost", "rebound.test", "127.0.0.1", "::1", "nowhere.test"}
    assert own_lookups == []


def credentials(option: dict) -> bytes:
    """The Proxy-Authorization header of the proxy whose Playwright option is ``option``."""
    token = base64.b64encode(f"{option['username']}:{option['password']}".encode())
    return b"Proxy-Authorization: Basic " + token + b"\r\n"


async def exchange(proxy: BrowserProxy, request, timeout: float = 10) -> bytes:
    """Everything ``proxy`` answers a client that sends ``request`` (bytes, or a function of
    the proxy's Playwright option giving them), then nothing, until it closes."""
    option = await proxy.start()
    try:
        port = int(option["server"].rpartition(":")[2])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(request(option) if callable(request) else request)
        writer.write_eof()  # through to the server, when connected: it then closes too
        answer = await asyncio.wait_for(reader.read(), timeout)  # a hang guard
        writer.close()
        return answer
    finally:
        await proxy.close()


def ask(proxy: BrowserProxy, request) -> bytes:
    return run(exchange(proxy, request))


def recording(looked_up: list[str], answer: str = "127.0.0.1"):
    async def lookup(host):
        looked_up.append(host)
        return answer

    return lookup


class Recorder:
    """A server on 127.0.0.1 that records the bytes each connection sends until it ends,
    answering each with ``answer``, then closing."""

    def __init__(self, answer: bytes = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"):
        self.answer = answer
        self.received: list[bytes] = []
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\r\n\r\n" not in data and (chunk := conn.recv(65536)):
                    data += chunk
                self.received.append(data)
                conn.sendall(self.answer)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.sock.close()


def test_a_client_without_the_crawls_secret_is_refused(caplog):
    # Chromium's first request carries no credentials: it gets the challenge, and Playwright
    # answers it with the secret. Any other client gets the challenge, and nothing else.
    looked_up = []
    with Recorder() as site:
        request = f"CONNECT 127.0.0.1:{site.port} HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode()

        def with_secret(option):
            return request + credentials(option) + b"\r\n"

        def with_another_proxys_secret(option):
            return with_secret({**option, "password": BrowserProxy().password})

        proxy = BrowserProxy(recording(looked_up), timeout=5)
        assert ask(proxy, request + b"\r\n").startswith(b"HTTP/1.1 407 ")
        with caplog.at_level("WARNING", logger="crawlyx.render.proxy"):
            refused = ask(proxy, with_another_proxys_secret)
        assert refused.startswith(b"HTTP/1.1 407 ") and b"Proxy-Authenticate: Basic" in refused
        assert "refused a client with a wrong secret" in caplog.text
        assert looked_up == [] and site.received == []
        # With it: a tunnel to the address the resolver answered.
        tunnel = ask(proxy, lambda option: with_secret(option) + b"hello")
    assert tunnel == b"HTTP/1.1 200 Connection established\r\n\r\n" + site.answer
    assert looked_up == ["127.0.0.1"] and site.received == [b"hello"]


def test_a_plain_request_is_forwarded_alone_without_the_secret():
    looked_up = []
    with Recorder() as site:
        head = (
            f"GET http://site.test:{site.port}/page?q=1 HTTP/1.1\r\n"
            f"Host: site.test:{site.port}\r\nProxy-Connection: keep-alive\r\nAccept: */*\r\n"
        ).encode()
        proxy = BrowserProxy(recording(looked_up), timeout=5)
        answer = ask(proxy, lambda option: head + credentials(option) + b"\r\n")
    assert answer == site.answer
    assert looked_up == ["site.test"]
    assert site.received == [
        f"GET /page?q=1 HTTP/1.1\r\nHost: site.test:{site.port}\r\nAccept: */*\r\n"
        "Connection: close\r\n\r\n".encode()
    ]


@pytest.mark.parametrize(
    "request_head",
    [
        b"GET https://site.test/ HTTP/1.1\r\n",  # only CONNECT reaches https
        b"GET /relative HTTP/1.1\r\n",
        b"CONNECT site.test HTTP/1.1\r\n",  # no port
        b"CONNECT [::1:443 HTTP/1.1\r\n",
        b"POST http://site.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n",
        b"GET http://site.test/ HTTP/1.1\r\nbroken header\r\n",
        b"NONSENSE\r\n",
    ],
)
def test_what_the_proxy_cannot_forward_is_closed_unanswered(request_head):
    looked_up = []
    proxy = BrowserProxy(recording(looked_up), timeout=5)
    assert ask(proxy, lambda option: request_head + credentials(option) + b"\r\n") == b""
    assert looked_up == []


def test_a_host_outside_the_allowed_hosts_is_refused_without_a_lookup(caplog):
    # CRAWLYX_RENDER_ALLOWED_HOSTS: a name not listed is refused before the resolver is
    # asked, so no DNS query is sent for it; a listed one (any case) is looked up.
    with Recorder() as site:
        looked_up = []
        stats = get_crawler(Spider).stats

        def connect(host: str, allowed) -> bytes:
            proxy = BrowserProxy(recording(looked_up), 5, stats=stats, allowed_hosts=allowed)
            head = f"CONNECT {host}:{site.port} HTTP/1.1\r\n".encode()
            return ask(proxy, lambda option: head + credentials(option) + b"\r\n")

        with caplog.at_level("INFO", logger="crawlyx.render.proxy"):
            refused = connect("clients2.google.com", ["localhost", "127.0.0.1"])
            none_allowed = connect("localhost", ())
            listed = connect("LocalHost", ["localhost"])
            any_host = connect("site.test", None)
    assert refused == none_allowed == b""  # closed unanswered
    assert listed == any_host == b"HTTP/1.1 200 Connection established\r\n\r\n" + site.answer
    assert looked_up == ["localhost", "site.test"]
    assert stats.get_value("crawlyx/ssrf/browser_blocked") == 2
    assert "connection to clients2.google.com:" in caplog.text
    assert "not an allowed host; not looked up" in caplog.text


def test_an_idle_connection_is_closed():
    # A tunnel to a site that never answers, from a client that sends nothing more: both
    # ends are closed once nothing moved for idle_timeout (never before it).
    async def scenario():
        closed = asyncio.Event()

        async def silent(reader, writer):
            await reader.read()  # until the proxy closes its end
            closed.set()
            writer.close()

        site = await asyncio.start_server(silent, "127.0.0.1", 0)
        port = site.sockets[0].getsockname()[1]
        proxy = BrowserProxy(recording([]), timeout=5, idle_timeout=0.3)
        option = await proxy.start()
        try:
            proxy_port = int(option["server"].rpartition(":")[2])
            reader, writer = await asyncio.open_connection("127.0.0.1", proxy_port)
            head = f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n".encode()
            writer.write(head + credentials(option) + b"\r\n")
            established = await reader.readuntil(b"\r\n\r\n")
            started = asyncio.get_running_loop().time()
            rest = await asyncio.wait_for(reader.read(), 10)  # a hang guard
            idle = asyncio.get_running_loop().time() - started
            await asyncio.wait_for(closed.wait(), 10)
            writer.close()
            return established, rest, idle
        finally:
            await proxy.close()
            site.close()

    established, rest, idle = run(scenario())
    assert established.startswith(b"HTTP/1.1 200 ")
    assert rest == b""  # closed by the proxy
    # Timed from when this end read the answer, a little after the proxy's clock started.
    assert idle >= 0.25
