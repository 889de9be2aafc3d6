"""robots.txt per RFC 9309 against hostile servers: 5xx, 4xx, timeouts, huge files,
redirect chains, the user agent token, an outsized Crawl-delay; the job's fetch lock."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import time
import uuid
from collections import Counter

import pytest
from scrapy.settings import Settings

from crawlyx.addon import Addon
from crawlyx.middlewares.robots import FetchLock
from tests.conftest import crawl_command, crawl_env, free_port
from tests.sites.site import QuietHandler, Serving


class RobotsSite(Serving):
    """Pages /, /a, /b, /private/c; robots.txt as the test says."""

    def __init__(self, robots, port: int = 0):
        self.robots = robots  # handler(self_handler) -> None, writes the robots.txt response
        self.counts: Counter[str] = Counter()
        self.times: list[tuple[str, float]] = []  # (path, when it was asked)
        site = self

        class Handler(QuietHandler):
            def do_GET(self):  # noqa: N802
                site.counts[self.path] += 1
                site.times.append((self.path, time.monotonic()))
                if self.path.startswith("/robots"):
                    return site.robots(self)
                if self.path == "/":
                    links = '<a href="/a">a</a><a href="/b">b</a><a href="/private/c">c</a>'
                    return self.reply(200, f"<title>Home</title><p>{links}</p>".encode())
                if self.path in ("/a", "/b", "/private/c"):
                    return self.reply(200, f"<title>{self.path}</title><p>page</p>".encode())
                return self.reply(404)

        super().__init__(Handler, port)


RULES = "User-agent: *\nDisallow: /private/\n"


def fetched(site) -> set[str]:
    return {path for path in site.counts if not path.startswith("/robots")}


def body(text: str):
    return lambda h: h.reply(200, text.encode(), "text/plain")


def crawl_site(crawl, robots, **settings):
    with RobotsSite(robots) as site:
        result = crawl(f"start={site.base}/", "sitemap=0", settings={"RETRY_TIMES": 0, **settings})
    return site, result


def test_2xx_rules_are_obeyed_for_our_token(crawl):
    robots = "User-agent: *\nDisallow: /\n\nUser-agent: crawlyx\nDisallow: /private/\n"
    site, result = crawl_site(crawl, body(robots))
    assert fetched(site) == {"/", "/a", "/b"}
    assert result.stat("crawlyx/error/robots_disallowed") == "1"


@pytest.mark.parametrize("status", [404, 403, 410])
def test_4xx_means_no_rules(crawl, status):
    site, result = crawl_site(crawl, lambda h: h.reply(status))
    assert fetched(site) == {"/", "/a", "/b", "/private/c"}
    assert result.stat("crawlyx/error/robots_disallowed") is None


@pytest.mark.parametrize("status", [500, 503, 429])
def test_5xx_and_429_disallow_everything_while_they_last(crawl, status):
    site, result = crawl_site(crawl, lambda h: h.reply(status), CRAWLYX_ROBOTS_RETRY_FOR=1)
    assert fetched(site) == set()
    assert site.counts["/robots.txt"] == 2  # asked again after a second, then given up
    assert result.stat("crawlyx/error/robots_unavailable") == "1"
    assert result.stat("crawlyx/error/robots_disallowed") is None
    assert f"answered {status}" in result.log
    assert result.returncode == 1  # the start URL failed: nothing was crawled


def test_unreachable_robots_disallows(crawl):
    def hang(handler):
        time.sleep(4)
        handler.reply(200, b"User-agent: *\nAllow: /\n", "text/plain")

    site, result = crawl_site(crawl, hang, DOWNLOAD_TIMEOUT=1, CRAWLYX_ROBOTS_RETRY_FOR=0)
    assert fetched(site) == set()
    assert result.stat("crawlyx/robots/unavailable") == "1"
    assert result.stat("crawlyx/error/robots_unavailable") == "1"


def flaky(failures: int, status: int = 503):
    """robots.txt that answers ``status`` ``failures`` times, then disallows /private/."""
    calls = []

    def robots(handler):
        calls.append(handler.path)
        if len(calls) <= failures:
            return handler.reply(status)
        return handler.reply(200, b"User-agent: *\nDisallow: /private/\n", "text/plain")

    return robots


def test_pages_wait_for_robots_to_recover(crawl):
    # Three 503s: the first request and Scrapy's two retries. Asked again a second later,
    # robots.txt answers, and the start page, held back meanwhile, is crawled.
    site, result = crawl_site(crawl, flaky(3), RETRY_TIMES=2)
    assert result.returncode == 0, result.log[-3000:]
    assert fetched(site) == {"/", "/a", "/b"}
    assert site.counts["/robots.txt"] == 4
    assert result.stat("crawlyx/error/robots_unavailable") is None
    assert result.stat("crawlyx/error/robots_disallowed") == "1"  # /private/c, by the rules


def test_pages_given_up_on_are_crawled_by_the_next_run(crawl, redis_client, tmp_path):
    job = f"robots-outage-{tmp_path.name}"
    errors = tmp_path / "errors.jsonl"
    settings = {"RETRY_TIMES": 0, "CRAWLYX_ROBOTS_RETRY_FOR": 1}
    with RobotsSite(flaky(2)) as site:
        args = (f"start={site.base}/", "sitemap=0", f"job={job}", f"errors={errors}")
        first = crawl(*args, settings=settings)
        assert first.returncode == 1 and first.items == []
        assert fetched(site) == set()
        assert [
            (e["url"], e["class"]) for e in map(json.loads, errors.read_text().splitlines())
        ] == [(f"{site.base}/", "robots_unavailable")]
        # Not done: left queued for the job's next run.
        assert b"d" not in redis_client.hvals(f"crawlyx:{{{job}}}:visited")
        assert redis_client.llen(f"crawlyx:{{{job}}}:parked") == 1
        second = crawl(*args, settings=settings)  # robots.txt answers now
    assert second.returncode == 0, second.log[-3000:]
    assert sorted(item["url"] for item in second.items) == [
        f"{site.base}/",
        f"{site.base}/a",
        f"{site.base}/b",
    ]
    assert fetched(site) == {"/", "/a", "/b"}
    assert redis_client.llen(f"crawlyx:{{{job}}}:parked") == 0


def test_a_start_host_refusing_connections_fails_the_crawl_at_once(crawl, tmp_path):
    port = free_port()  # nothing listens there yet
    start = f"http://127.0.0.1:{port}/"
    job = f"dead-host-{tmp_path.name}"
    # The default robots.txt retry window (two minutes) is not waited out: there was
    # never a site to come back.
    result = crawl(f"start={start}", "sitemap=0", f"job={job}", timeout=60)
    assert result.returncode == 1
    assert result.items == []
    assert result.stat("crawlyx/error/connection") == "1"
    assert result.stat("crawlyx/error/robots_unavailable") is None
    assert result.stat("crawlyx/start_failed") == "'connection'"
    assert f"nothing crawled, the start URL failed: {start} (connection)" in result.log
    assert f"http://127.0.0.1:{port} could not be reached (connection: Connection was" in (
        result.log
    )
    assert "its pages wait" not in result.log

    # The start page was not fetched, so not done: once the host is up, the job crawls.
    with RobotsSite(body(RULES), port=port):
        again = crawl(f"start={start}", "sitemap=0", f"job={job}")
    assert again.returncode == 0, again.log[-3000:]
    assert sorted(again.urls) == [start, start + "a", start + "b"]


def test_huge_robots_is_read_up_to_500_kib(crawl):
    # The Disallow within the first 500 KiB counts; the one after it does not.
    filler = "# " + "x" * 1000 + "\n"
    text = "User-agent: *\nDisallow: /a\n" + filler * 600 + "Disallow: /b\n"
    site, _ = crawl_site(crawl, body(text))
    assert fetched(site) == {"/", "/b", "/private/c"}


def test_redirects_followed_up_to_five(crawl):
    def chain(hops):
        def robots(handler):
            n = int(handler.path.removeprefix("/robots.txt").lstrip("?") or 0)
            if n < hops:
                return handler.reply(301, headers={"Location": f"/robots.txt?{n + 1}"})
            return handler.reply(200, b"User-agent: *\nDisallow: /a\n", "text/plain")

        return robots

    site, _ = crawl_site(crawl, chain(5))
    assert fetched(site) == {"/", "/b", "/private/c"}  # five hops: the rules apply
    site, result = crawl_site(crawl, chain(6))
    assert fetched(site) == {"/", "/a", "/b", "/private/c"}  # six: unavailable, no rules
    assert result.stat("crawlyx/robots/too_many_redirects") == "1"


def test_a_byte_order_mark_and_crlf_lines_hide_no_rule(crawl):
    robots = "\ufeffUser-agent: *\r\nDisallow: /private/\r\n"
    site, result = crawl_site(crawl, body(robots))
    assert fetched(site) == {"/", "/a", "/b"}
    assert result.stat("crawlyx/error/robots_disallowed") == "1"


def test_garbage_robots_is_no_rules(crawl):
    site, _ = crawl_site(crawl, lambda h: h.reply(200, bytes(range(256)) * 50, "text/plain"))
    assert fetched(site) == {"/", "/a", "/b", "/private/c"}


def test_a_stopped_crawl_does_not_wait_out_the_outage(tmp_path, redis_url, redis_client):
    # The default patience is minutes: Ctrl-C ends the crawl now, the page left for the
    # job's next run (a hang fails this test on the subprocess timeout).
    job = f"robots-stopped-{tmp_path.name}"
    with RobotsSite(lambda h: h.reply(503)) as site:
        settings = {"CRAWLYX_REDIS_URL": redis_url, "RETRY_TIMES": 0}
        command = crawl_command(
            tmp_path / "out.jsonl", f"start={site.base}/", f"job={job}", settings=settings
        )
        proc = subprocess.Popen(
            command, cwd=tmp_path, env=crawl_env(), stderr=subprocess.PIPE, text=True
        )
        try:
            for _ in range(600):  # until robots.txt has been asked
                if site.counts["/robots.txt"] or proc.poll() is not None:
                    break
                time.sleep(0.1)
            proc.send_signal(signal.SIGINT)
            log = proc.communicate(timeout=60)[1]
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert "crawlyx: paused:" in log, log[-3000:]
    assert fetched(site) == set()
    assert redis_client.llen(f"crawlyx:{{{job}}}:parked") == 1


def test_an_outsized_crawl_delay_is_capped(crawl):
    # A day between requests, as written, would hang this crawl (and the hang guard).
    with RobotsSite(body("User-agent: *\nCrawl-delay: 86400\n")) as site:
        settings = {"RETRY_TIMES": 0, "CRAWLYX_MAX_CRAWL_DELAY": 1}
        result = crawl(f"start={site.base}/", "sitemap=0", settings=settings, timeout=60)
    assert result.returncode == 0, result.log[-3000:]
    assert fetched(site) == {"/", "/a", "/b", "/private/c"}
    assert result.stat("crawlyx/robots/crawl_delay_capped") == "1"  # once for the origin
    assert "asks for a Crawl-delay of 86400 s: capped at 1 s" in result.log
    # Capped, not dropped: the pages still start the capped delay apart (as they arrive
    # here: a fifth of slack for how long each request travels on a busy machine).
    starts = [when for path, when in site.times if not path.startswith("/robots")]
    assert min(b - a for a, b in zip(starts, starts[1:], strict=False)) >= 0.8


@pytest.mark.parametrize("value", ["-1", "a day", "nan"])
def test_a_bad_crawl_delay_cap_is_one_line_naming_it(value):
    settings = Settings()
    settings.setmodule("crawlyx.settings")
    settings.set("CRAWLYX_MAX_CRAWL_DELAY", value)
    with pytest.raises(ValueError, match=r"^CRAWLYX_MAX_CRAWL_DELAY \(.*\) must be a number"):
        Addon.check_settings(settings)


def test_a_lock_that_expired_is_left_to_its_new_holder(redis_client):
    key = f"robots-lock-{uuid.uuid4().hex}"
    a = FetchLock(redis_client, key, "process-a", ttl=1.0)
    b = FetchLock(redis_client, key, "process-b")
    assert a.acquire()
    assert not b.acquire()  # one fetch at a time
    time.sleep(1.5)  # A stalls past its lock's expiry, B takes it
    assert b.acquire()
    # A wakes up: renewing and releasing leave B's lock alone.
    asyncio.run(asyncio.wait_for(a.keep(), timeout=10))  # returns: the lock is lost
    assert not a.release()
    assert redis_client.get(key) == b"process-b"
    assert redis_client.ttl(key) > 20  # B's expiry, not A's
    assert b.release()
    assert redis_client.get(key) is None


def test_a_lock_held_through_a_long_fetch_is_renewed(redis_client):
    key = f"robots-lock-{uuid.uuid4().hex}"
    lock = FetchLock(redis_client, key, "process-a", ttl=1.5)

    async def fetch_for(seconds):
        keeping = asyncio.ensure_future(lock.keep())
        await asyncio.sleep(seconds)  # a fetch outlasting the expiry twice over
        assert redis_client.get(key) == b"process-a"
        keeping.cancel()

    assert lock.acquire()
    asyncio.run(fetch_for(3.5))
    assert lock.release()
    assert redis_client.get(key) is None
