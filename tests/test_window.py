"""The adaptive per-host concurrency window (crawlyx/middlewares/window.py): its
arithmetic, Retry-After parsing, and whole crawls against hostile servers."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from email.utils import formatdate
from types import SimpleNamespace

import pytest
from scrapy.settings import Settings

from crawlyx.middlewares.robots import Robots
from crawlyx.middlewares.window import Window, WindowMiddleware, parse_retry_after
from tests.site import QuietHandler, Server

# -- the arithmetic ----------------------------------------------------------------------


def test_window_starts_inside_its_bounds():
    assert Window(5, 40, 8, 10).value == 8
    assert Window(5, 40, 1, 10).value == 5
    assert Window(2, 5, 8, 10).value == 5


def test_window_grows_by_one_after_a_run_of_clean_fetches():
    window = Window(5, 40, 8, grow_after=3)
    assert [window.clean_fetch(started=1.0) for _ in range(3)] == [False, False, True]
    assert window.value == 9
    for _ in range(3 * 100):
        window.clean_fetch(started=1.0)
    assert window.value == 40  # never above the maximum


def test_trouble_halves_down_to_the_minimum_and_resets_the_run():
    window = Window(5, 40, 20, grow_after=3)
    window.clean_fetch(started=0.5)
    window.clean_fetch(started=0.5)
    assert window.trouble(started=1.0, now=2.0) is True
    assert window.value == 10
    assert window.clean_fetch(started=2.5) is False  # the run starts over
    assert window.clean_fetch(started=2.5) is False
    assert window.clean_fetch(started=2.5) is True and window.value == 11
    window = Window(5, 40, 40, grow_after=3)
    assert window.trouble(started=1.0, now=2.0) is True
    assert window.value == 20
    assert window.trouble(started=3.0, now=4.0) and window.value == 10
    assert window.trouble(started=5.0, now=6.0) and window.value == 5
    assert window.trouble(started=7.0, now=8.0) is False and window.value == 5


def test_one_decrease_per_congestion_event():
    window = Window(5, 40, 40, grow_after=10)
    assert window.trouble(started=1.0, now=2.0) and window.value == 20
    # Sent before that decrease, under the old window: already answered.
    assert window.trouble(started=1.5, now=2.1) is False and window.value == 20
    # Nor does a clean fetch sent before it count towards growing again.
    assert not any(window.clean_fetch(started=1.9) for _ in range(20))
    # Sent after it: a new event.
    assert window.trouble(started=2.2, now=3.0) and window.value == 10


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
    values = Settings()
    values.setmodule("crawlyx.settings")
    values.update(settings)
    slots = {}
    downloader = SimpleNamespace(
        DOWNLOAD_SLOT="download_slot",
        slots=slots,
        per_slot_settings={},
        middleware=SimpleNamespace(middlewares=()),
    )
    stats = SimpleNamespace(values={})
    stats.set_value = stats.values.__setitem__
    stats.inc_value = lambda key, n=1: stats.values.__setitem__(key, stats.values.get(key, 0) + n)
    signals = SimpleNamespace(connect=lambda *a, **k: None)
    engine = SimpleNamespace(downloader=downloader)
    return SimpleNamespace(settings=values, stats=stats, signals=signals, engine=engine)


def test_middleware_applies_the_window_and_crawl_delay_to_the_slot():
    crawler = _crawler(CRAWLYX_WINDOW_SLOW_SECONDS=1.0)
    mw = WindowMiddleware(crawler)
    slot = SimpleNamespace(concurrency=40, delay=0.0, jitter=0.5, latercall=None)
    crawler.engine.downloader.slots["h"] = slot
    robots_mw = SimpleNamespace(
        agent="crawlyx",
        cached=lambda origin: Robots(200, "User-agent: *\nCrawl-delay: 2\n", 0.0),
    )
    mw._robots = robots_mw
    request = SimpleNamespace(url="http://h/page", meta={"download_slot": "h"})
    mw._reached(request)
    assert slot.concurrency == 8
    assert (slot.delay, slot.jitter) == (2.0, 0.0)
    slow = SimpleNamespace(status=200, headers={}, body=b"x")
    request.meta["download_latency"] = 1.5
    mw._downloaded(slow, request)
    assert slot.concurrency == 5 and crawler.stats.values["crawlyx/window/h"] == 5
    assert crawler.stats.values["crawlyx/window/shrinks"] == 1


def test_the_gate_lets_through_at_most_the_window_in_order_and_holds_in_a_pause():
    class Request:
        def __init__(self, n):
            self.n = n

    async def scenario():
        crawler = _crawler(CRAWLYX_WINDOW_MIN=1, CRAWLYX_WINDOW_START=2, CRAWLYX_WINDOW_MAX=4)
        crawler.engine.downloader.get_slot_key = lambda request: "h"
        mw = WindowMiddleware(crawler)
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
        for _ in range(4):
            mw._clean("h", started=time.monotonic())  # grow_after is 10: no change yet
        assert mw.window("h").value == 2
        mw._left(requests[3])
        await asyncio.sleep(0.01)
        assert through == [0, 1, 2, 3, 4, 5]
        await asyncio.gather(*tasks)

    asyncio.run(scenario())


def test_grows_are_logged_at_debug_shrinks_and_pauses_at_info(caplog):
    mw = WindowMiddleware(_crawler(CRAWLYX_WINDOW_GROW_AFTER=1))
    with caplog.at_level(logging.DEBUG, logger="crawlyx.middlewares.window"):
        for _ in range(3):
            mw._clean("h", started=time.monotonic())
        mw._trouble("h", started=time.monotonic(), now=time.monotonic(), reason="HTTP 503")
    levels = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert levels == [
        (logging.DEBUG, "crawlyx: window h 9 (grow)"),
        (logging.DEBUG, "crawlyx: window h 10 (grow)"),
        (logging.DEBUG, "crawlyx: window h 11 (grow)"),
        (logging.INFO, "crawlyx: window h 5 (shrink from 11: HTTP 503)"),
    ]


def test_bad_bounds_are_refused():
    with pytest.raises(ValueError, match="CRAWLYX_WINDOW_MIN"):
        WindowMiddleware(_crawler(CRAWLYX_WINDOW_MIN=10, CRAWLYX_WINDOW_MAX=5))


# -- hostile servers ---------------------------------------------------------------------


def page(links=()) -> str:
    anchors = "".join(f'<a href="{href}">{href}</a>\n' for href in links)
    return (
        f"<!doctype html><html><head><title>t</title></head><body><p>x</p>{anchors}</body></html>"
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
    # stragglers sent before the 429 came back.
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
    for (t429, path), grace in zip(limited, (0.0, 0.25), strict=True):
        early = [(round(t - t429, 3), p) for t, p, _ in log if t429 + grace < t < t429 + 1.95]
        assert not early, f"requests within Retry-After of the 429 on {path}: {early}"
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
    assert min(gaps) >= 0.9, gaps
