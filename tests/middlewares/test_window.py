"""The adaptive per-host concurrency window (crawlyx/middlewares/window.py): its
arithmetic, Retry-After parsing, and whole crawls against hostile servers."""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import signal
import subprocess
import threading
import time
import uuid
from email.utils import formatdate
from functools import partial
from types import SimpleNamespace

import pytest
from scrapy.settings import Settings

from crawlyx.frontier.jobs import describe
from crawlyx.frontier.state import State
from crawlyx.middlewares.budget import Host, SharedBudget
from crawlyx.middlewares.retry_after import parse_retry_after
from crawlyx.middlewares.robots import Robots, RobotsMiddleware
from crawlyx.middlewares.window import WindowMiddleware
from tests.conftest import crawl_command, crawl_env, read_items
from tests.sites.site import QuietHandler, Server

# -- the job's budget (real Redis) -------------------------------------------------------


def _settings(**values) -> Settings:
    settings = Settings()
    settings.setmodule("crawlyx.settings")
    settings.update(values)
    return settings


def _budgets(redis_client, owners=("a",), **settings):
    """One SharedBudget per owner, on a fresh job, every owner alive."""
    state = State(redis_client, f"budget-{uuid.uuid4().hex[:8]}")
    for owner in owners:
        state.beat(owner, 60)
    values = _settings(**settings)
    return state, [SharedBudget(state, partial(str, owner), values) for owner in owners]


def _host(maximum=40, value=8, through=1) -> Host:
    host = Host("h", maximum, value)
    host.through = through
    return host


def test_window_starts_inside_its_bounds(redis_client):
    for (minimum, maximum, start), expected in {(5, 40, 8): 8, (5, 40, 1): 5, (2, 5, 8): 5}.items():
        _, [budget] = _budgets(redis_client, CRAWLYX_WINDOW_MIN=minimum, CRAWLYX_WINDOW_START=start)
        host = _host(maximum=maximum)
        budget.report(host)
        assert host.value == expected


def test_window_grows_by_one_after_a_run_of_clean_fetches(redis_client):
    _, [budget] = _budgets(redis_client, CRAWLYX_WINDOW_GROW_AFTER=3)
    host = _host()
    host.cleans = 2
    assert budget.report(host).grew == 0 and host.value == 8
    host.cleans = 1  # the run carries over from one report to the next
    assert budget.report(host).grew == 1 and host.value == 9
    host.cleans = 3 * 100
    budget.report(host)
    assert host.value == 40  # never above the maximum


def test_trouble_halves_down_to_the_minimum_and_resets_the_run(redis_client):
    _, [budget] = _budgets(redis_client, CRAWLYX_WINDOW_START=20, CRAWLYX_WINDOW_GROW_AFTER=3)
    host = _host()
    host.cleans = 2
    budget.report(host)
    host.trouble = "HTTP 429"
    assert budget.report(host).shrank_from == 20 and host.value == 10
    host.cleans = 2
    assert budget.report(host).grew == 0  # the run starts over
    for expected in (5, 5):
        host.trouble = "HTTP 429"
        report = budget.report(host)
        assert host.value == expected
    assert report.shrank_from is None  # at the minimum: no change


def test_one_decrease_per_congestion_event_across_processes(redis_client):
    _, budgets = _budgets(redis_client, owners=("a", "b", "c"), CRAWLYX_WINDOW_START=40)
    hosts = [_host() for _ in budgets]
    # All three let requests through under generation 0 and see 429s on them.
    for budget, host in zip(budgets, hosts, strict=True):
        host.trouble = "HTTP 429"
        budget.report(host)
    assert [host.value for host in hosts] == [20, 20, 20]  # halved once, not to 5
    # Nor does a clean fetch sent under the old window count towards growing again.
    stale = hosts[1]
    stale.gen, stale.cleans = 0, 1000
    assert budgets[1].report(stale).grew == 0 and stale.value == 20
    # A request let through after the decrease: a new event.
    hosts[2].trouble = "HTTP 429"
    assert budgets[2].report(hosts[2]).shrank_from == 20 and hosts[2].value == 10


def test_the_processes_never_hold_more_than_the_window_and_share_it(redis_client):
    _, budgets = _budgets(redis_client, owners=("a", "b", "c"), CRAWLYX_WINDOW_START=8)
    hosts = [_host(through=0) for _ in budgets]
    for host in hosts:
        host.waiting.extend(range(20))  # each has more to fetch than the window
    for _ in range(6):
        for budget, host in zip(budgets, hosts, strict=True):
            budget.report(host)
            # Let requests through up to the share, finish a few.
            host.through = max(0, min(host.share, host.through + 3) - 1)
            assert sum(h.through for h in hosts) <= 8
    assert sorted(host.share for host in hosts) == [2, 3, 3]


def test_a_dead_or_idle_process_gives_its_share_back(redis_client):
    state, (a, b) = _budgets(redis_client, owners=("a", "b"))
    host_a, host_b = _host(through=8), _host(through=0)
    a.report(host_a)
    host_b.waiting.append(None)
    b.report(host_b)
    assert (host_a.share, host_b.share) == (8, 0)
    state.retire(["a"])  # a died: its heartbeat ran out
    b.report(host_b)
    assert host_b.share == 8
    # An idle process holds nothing.
    host_b.waiting.clear()
    b.report(host_b)
    assert host_b.share == 0
    assert redis_client.hget(state.key("host:h"), "o:b") is None


def test_retry_after_and_crawl_delay_hold_every_process(redis_client):
    _, (a, b) = _budgets(redis_client, owners=("a", "b"))
    host_a, host_b = _host(), _host()
    host_a.pause = time.monotonic() + 2.0  # a Retry-After: 2 seen by a
    a.report(host_a)
    assert 1.5 < b.report(host_b).paused <= 2.0
    _, (a, b) = _budgets(redis_client, owners=("a", "b"))
    host_a, host_b = _host(through=0), _host(through=0)
    host_a.delay = host_b.delay = 1.0
    assert a.report(host_a, start=True).started and host_a.through == 1
    refused = b.report(host_b, start=True)
    assert not refused.started and 0.9 < refused.wait <= 1.0 and host_b.through == 0


def test_retry_after_seconds():
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after(b" 120 ") == 120.0
    assert parse_retry_after("1.5") == 1.5
    assert parse_retry_after(None) is None
    assert parse_retry_after("") is None
    assert parse_retry_after("-3") is None
    assert parse_retry_after("soon") is None


def test_retry_after_http_date():
    now = 1_700_000_000.0
    assert parse_retry_after(formatdate(now + 30, usegmt=True), now=now) == pytest.approx(30)
    assert parse_retry_after(formatdate(now - 30, usegmt=True), now=now) == 0.0
    # Measured from the response's Date (the server's clock) when there is one.
    date = formatdate(now + 1000, usegmt=True)
    later = formatdate(now + 1045, usegmt=True)
    assert parse_retry_after(later, now=now, date=date) == pytest.approx(45)
    assert parse_retry_after(later.encode(), now=now, date=b"garbage") == pytest.approx(1045)


def test_crawl_delay_from_robots():
    robots = Robots(200, "User-agent: *\nCrawl-delay: 1.5\nDisallow: /x\n", 0.0)
    assert robots.crawl_delay("crawlyx") == 1.5
    assert Robots(404, "", 0.0).crawl_delay("crawlyx") is None


def _crawler(**settings):
    values = _settings(**settings)
    downloader = SimpleNamespace(
        DOWNLOAD_SLOT="download_slot",
        slots={},
        per_slot_settings={},
        middleware=SimpleNamespace(middlewares=()),
        get_slot_key=lambda request: "h",
    )
    stats = SimpleNamespace(values={})
    stats.set_value = stats.values.__setitem__
    stats.inc_value = lambda key, n=1: stats.values.__setitem__(key, stats.values.get(key, 0) + n)
    signals = SimpleNamespace(connect=lambda *a, **k: None)
    engine = SimpleNamespace(downloader=downloader, running=True)
    return SimpleNamespace(
        settings=values, stats=stats, signals=signals, engine=engine, spider=None
    )


class FakeRequest:
    def __init__(self, url):
        self.url = url
        self.meta = {}


def _middleware(redis_client, **settings) -> WindowMiddleware:
    """A window middleware on a fake downloader, with a real job budget in Redis."""
    crawler = _crawler(**settings)
    mw = WindowMiddleware(crawler, None)  # no crawl parts: its budget is set here
    state, [mw.budget] = _budgets(redis_client, **settings)
    return mw


def test_middleware_applies_the_window_and_crawl_delay_to_the_slot(redis_client):
    mw = _middleware(redis_client, CRAWLYX_WINDOW_SLOW_SECONDS=1.0)
    crawler = mw.crawler
    slot = SimpleNamespace(concurrency=40, delay=0.0, jitter=0.5, latercall=None)
    crawler.engine.downloader.slots["h"] = slot
    # Holding the rules, as once it fetched them: no crawl parts to fetch them with.
    robots_mw = RobotsMiddleware(crawler, None)
    robots_mw._robots["http://h"] = Robots(200, "User-agent: *\nCrawl-delay: 2\n", 0.0)
    mw._robots = robots_mw
    request = FakeRequest("http://h/page")
    asyncio.run(mw.process_request(request))
    request.meta["download_slot"] = "h"  # as the downloader sets it
    mw._reached(request)
    assert slot.concurrency == 8
    assert mw.window("h").delay == 2.0
    # The next start is the job's, in a second: not the slot's delay.
    assert (slot.delay, slot.jitter) == (0.0, 0.5)
    slow = SimpleNamespace(status=200, headers={}, body=b"x")
    request.meta["download_latency"] = 1.5
    mw._downloaded(slow, request)
    assert slot.concurrency == 5 and crawler.stats.values["crawlyx/window/h"] == 5
    assert crawler.stats.values["crawlyx/window/shrinks"] == 1


def test_the_gate_lets_through_at_most_the_window_in_order_and_holds_in_a_pause(redis_client):
    class Request(FakeRequest):
        def __init__(self, n):
            super().__init__(f"http://h/{n}")
            self.n = n

    async def scenario():
        mw = _middleware(
            redis_client, CRAWLYX_WINDOW_MIN=1, CRAWLYX_WINDOW_START=2, CRAWLYX_WINDOW_MAX=4
        )
        requests = [Request(n) for n in range(6)]
        through = []

        async def fetch(request):
            await mw.process_request(request)
            through.append(request.n)

        tasks = [asyncio.create_task(fetch(r)) for r in requests]
        await asyncio.sleep(0.01)
        assert through == [0, 1]
        mw._left(requests[0])
        await asyncio.sleep(0.01)
        assert through == [0, 1, 2]
        mw.pause("h", 0.3)
        mw._left(requests[1])
        mw._left(requests[2])
        await asyncio.sleep(0.15)
        assert through == [0, 1, 2]  # paused: nothing through, room or not
        await asyncio.sleep(0.25)
        assert through == [0, 1, 2, 3, 4]  # then the window's worth, in order
        mw.window("h").cleans = 4  # grow_after is 10: no change yet
        mw._report_all()
        assert mw.window("h").value == 2
        mw._left(requests[3])
        await asyncio.sleep(0.01)
        assert through == [0, 1, 2, 3, 4, 5]
        await asyncio.gather(*tasks)

    asyncio.run(scenario())


def test_grows_are_logged_at_debug_shrinks_at_info(redis_client, caplog):
    mw = _middleware(redis_client, CRAWLYX_WINDOW_GROW_AFTER=1)
    host = mw.window("h")
    with caplog.at_level(logging.DEBUG, logger="crawlyx.middlewares.window"):
        for _ in range(3):
            host.cleans = 1
            mw._report_all()
        host.trouble = "HTTP 503"
        mw._report_all()
    levels = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert levels == [
        (logging.DEBUG, "crawlyx: window h 9 (grow)"),
        (logging.DEBUG, "crawlyx: window h 10 (grow)"),
        (logging.DEBUG, "crawlyx: window h 11 (grow)"),
        (logging.INFO, "crawlyx: window h 5 (shrink from 11: HTTP 503)"),
    ]


def test_bad_bounds_are_refused():
    with pytest.raises(ValueError, match="CRAWLYX_WINDOW_MIN"):
        WindowMiddleware(_crawler(CRAWLYX_WINDOW_MIN=10, CRAWLYX_WINDOW_MAX=5), None)


# -- hostile servers ---------------------------------------------------------------------


_served = itertools.count()


def page(links=()) -> str:
    """A page of its own (no two alike: crawlyx writes a copy of a page once)."""
    anchors = "".join(f'<a href="{href}">{href}</a>\n' for href in links)
    return (
        f"<!doctype html><html><head><title>t</title></head><body><p>page {next(_served)}</p>"
        f"{anchors}</body></html>"
    )


class Hostile:
    """A loopback server whose answers come from ``respond(path, hit)``, which returns
    (status, headers, body, seconds to wait before answering). It records every
    request's arrival (monotonic time), path and status, and the most requests it was
    ever handling at once."""

    def __init__(self, respond):
        self.respond = respond
        self.lock = threading.Lock()
        self.log: list[tuple[float, str, int]] = []
        self.hits: dict[str, int] = {}
        self.inflight = 0
        self.max_inflight = 0
        self.httpd = Server(("127.0.0.1", 0), self._handler())
        self.port = self.httpd.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def _handler(self):
        server = self

        class Handler(QuietHandler):
            def do_GET(self):  # noqa: N802
                arrived = time.monotonic()
                path = self.path
                with server.lock:
                    hit = server.hits[path] = server.hits.get(path, 0) + 1
                    server.inflight += 1
                    server.max_inflight = max(server.max_inflight, server.inflight)
                try:
                    status, headers, body, wait = server.respond(path, hit)
                    if wait:
                        time.sleep(wait)
                    self.reply(status, body, headers=headers)
                    self.wfile.flush()
                finally:
                    with server.lock:
                        server.inflight -= 1
                        server.log.append((arrived, path, status))

        return Handler

    def statuses(self, path: str) -> list[int]:
        return [status for _, p, status in sorted(self.log) if p == path]

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


NO_ROBOTS = (404, {}, "", 0)
FAST = {"CRAWLYX_MARKDOWN_WORKERS": 1, "CRAWLYX_PROGRESS_INTERVAL": 0}


def test_retry_after_holds_every_request_to_the_host(crawl):
    # "/" leads to /a alone; /a answers its first request with a 429 while nothing else
    # is in flight; /a leads to 20 slow pages, and the third of those to arrive gets
    # a 429 too, while others are in flight and more are queued. Both say
    # Retry-After: 2, and nothing may reach the server in those 2 seconds but the
    # stragglers sent before the 429 came back. Nothing else was known at the first, so
    # none may come. At the second, a busy machine may take long to read the 429: the
    # requests it let through meanwhile may arrive, but not the page that got the 429,
    # and no more than its window held besides (a crawl that did not pause would send
    # the seventeen slow pages left).
    pages = [f"/p{i}" for i in range(20)]
    arrivals = []

    def respond(path, hit):
        if path == "/robots.txt":
            return NO_ROBOTS
        if path == "/":
            return 200, {}, page(["/a"]), 0
        if path == "/a":
            if hit == 1:
                return 429, {"Retry-After": "2"}, "slow down", 0
            return 200, {}, page(pages), 0
        if path in pages:
            arrivals.append(path)
            if len(arrivals) == 3 and hit == 1:
                return 429, {"Retry-After": "2"}, "slow down", 0
            return 200, {}, page(), 0.2
        return 404, {}, "", 0

    with Hostile(respond) as server:
        result = crawl(f"start={server.base}/", "sitemap=0", settings=FAST)
    assert result.returncode == 0, result.log[-3000:]
    log = sorted(server.log)
    limited = [(t, p) for t, p, status in log if status == 429]
    assert len(limited) == 2 and limited[0][1] == "/a"
    # The window then was its minimum (the first 429 halved it), and grew after if at all.
    window = int(result.stat("crawlyx/window/127.0.0.1"))
    for (t429, path), stragglers in zip(limited, (0, window - 1), strict=True):
        early = [(round(t - t429, 3), p) for t, p, _ in log if t429 < t < t429 + 1.95]
        assert len(early) <= stragglers and path not in [p for _, p in early], (
            f"requests within Retry-After of the 429 on {path}: {early}"
        )
        assert server.statuses(path) == [429, 200]  # then fetched once, successfully
    urls = [url.removeprefix(server.base) for url in result.urls]
    assert sorted(urls) == sorted(["/", "/a", *pages])
    assert result.stat("crawlyx/window/retry_after_waits") == "2"
    assert result.log.count("crawlyx: window 127.0.0.1 resumed (Retry-After elapsed)") == 2
    assert int(result.stat("crawlyx/window/shrinks")) >= 1


def test_a_slow_host_shrinks_the_window_to_the_minimum(crawl):
    pages = [f"/p{i}" for i in range(14)]

    def respond(path, hit):
        if path == "/robots.txt":
            return NO_ROBOTS
        if path == "/":
            return 200, {}, page(pages), 0
        return 200, {}, page(), 0.5

    settings = {
        **FAST,
        "CRAWLYX_WINDOW_SLOW_SECONDS": 0.25,
        "CRAWLYX_WINDOW_MIN": 2,
        "CRAWLYX_WINDOW_START": 8,
    }
    with Hostile(respond) as server:
        result = crawl(f"start={server.base}/", "sitemap=0", settings=settings)
    assert result.returncode == 0, result.log[-3000:]
    assert len(result.items) == 15
    # 8 -> 4 on the first slow batch, 4 -> 2 on the next.
    assert result.stat("crawlyx/window/127.0.0.1") == "2"
    assert result.stat("crawlyx/window/shrinks") == "2"
    assert "crawlyx: window 127.0.0.1 4 (shrink from 8: slow response" in result.log


def test_never_more_requests_in_flight_than_the_window(crawl):
    # 40 pages that each take 0.15 s, all known at once: without the window's gate the
    # slot would let all that CONCURRENT_REQUESTS allows through at a time.
    pages = [f"/p{i}" for i in range(40)]

    def respond(path, hit):
        if path == "/robots.txt":
            return NO_ROBOTS
        if path == "/":
            return 200, {}, page(pages), 0
        return 200, {}, page(), 0.15

    settings = {
        **FAST,
        "CRAWLYX_WINDOW_MIN": 2,
        "CRAWLYX_WINDOW_START": 2,
        "CRAWLYX_WINDOW_MAX": 5,
        "CRAWLYX_WINDOW_GROW_AFTER": 2,
    }
    with Hostile(respond) as server:
        result = crawl(f"start={server.base}/", "sitemap=0", settings=settings)
    assert result.returncode == 0, result.log[-3000:]
    assert len(result.items) == 41
    assert server.max_inflight <= 5
    assert server.max_inflight >= 4  # it did open up
    assert result.stat("crawlyx/window/127.0.0.1") == "5"
    assert result.stat("crawlyx/window/grows") == "3"
    assert "(grow)" not in result.log  # grows are DEBUG


def test_crawl_delay_spaces_request_starts(crawl):
    pages = [f"/p{i}" for i in range(4)]

    def respond(path, hit):
        if path == "/robots.txt":
            return 200, {}, "User-agent: *\nCrawl-delay: 1\n", 0
        if path == "/":
            return 200, {}, page(pages), 0
        return 200, {}, page(), 0

    with Hostile(respond) as server:
        result = crawl(f"start={server.base}/", "sitemap=0", settings=FAST)
    assert result.returncode == 0, result.log[-3000:]
    assert len(result.items) == 5
    starts = [t for t, _, _ in sorted(server.log)]
    assert len(starts) == 6  # robots.txt, /, 4 pages
    gaps = [round(b - a, 3) for a, b in zip(starts, starts[1:], strict=False)]
    # Spaced at the start in the crawl, seen as they arrive here: a fifth of slack for
    # how long each request travels on a busy machine.
    assert min(gaps) >= 0.8, gaps


def test_a_stop_does_not_wait_out_a_retry_after_pause(tmp_path, redis_url, redis_client, crawl):
    # /p0 answers 429 with Retry-After: an hour (capped at 300 s) while the other pages
    # are slow: the requests left are held for the pause. One Ctrl-C stops the crawl at
    # once; what was held was never sent, and stays queued for the job's next run.
    pages = [f"/p{i}" for i in range(12)]

    def respond(path, hit):
        if path == "/robots.txt":
            return NO_ROBOTS
        if path == "/":
            return 200, {}, page(pages), 0
        if path == "/p0":
            return 429, {"Retry-After": "3600"}, "slow down", 0
        return 200, {}, page(), 0.3

    settings = {**FAST, "CRAWLYX_REDIS_URL": redis_url, "CRAWLYX_WINDOW_RETRY_AFTER_MAX": 300}
    out = tmp_path / "pages.jsonl"
    with Hostile(respond) as server:
        command = crawl_command(
            out, f"start={server.base}/", "sitemap=0", "job=held", settings=settings
        )
        proc = subprocess.Popen(
            command, cwd=tmp_path, env=crawl_env(), stderr=subprocess.PIPE, text=True,
            start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while 429 not in server.statuses("/p0") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert 429 in server.statuses("/p0"), "no 429 within a minute"
        os.killpg(proc.pid, signal.SIGINT)
        log = proc.communicate(timeout=60)[1]  # not the 300 s of the pause
        assert proc.returncode == 0, log[-3000:]
        assert "crawlyx: paused" in log
        assert server.statuses("/p0") == [429]  # its retry was held, never sent
    written = {item["url"].removeprefix(server.base) for item in read_items(out)}
    fetched = {path for _, path, status in server.log if status == 200}
    assert written == fetched - {"/robots.txt"}
    job = describe(State(redis_client, "held"))
    assert job["state"] == "paused"
    assert job["queued"] == len(pages) + 1 - len(written)  # the rest, /p0 among them

    # Nor does a crawl that reached max_pages while requests were held: /p0's 429 comes
    # while pages are in flight, which are written, and the rest is held.
    def late_429(path, hit):
        status, headers, body, wait = respond(path, hit)
        return status, headers, body, (0.5 if path == "/p0" else 1.0 if path != "/" else 0)

    with Hostile(late_429) as server:
        result = crawl(f"start={server.base}/", "sitemap=0", "max_pages=3", settings=settings)
        assert result.returncode == 0, result.log[-3000:]
        assert len(result.items) == 3 and server.statuses("/p0") == [429]
