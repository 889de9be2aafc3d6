"""What the Redis queue is trusted with: entries planted by anyone who can write to the
job's keys are refused (counted, logged once, their lease done) or lose what crawlyx
computes again; none of what they carry reaches a request's meta or the output."""

from __future__ import annotations

import json
import logging
import uuid

import pytest
import redis
from scrapy import Request

from crawlyx import render
from crawlyx.frontier import queued
from crawlyx.frontier.visited import LEASE_META
from tests.frontier.test_scheduler import close_scheduler, open_scheduler

SITE = "http://127.0.0.1:9"  # the scheduler tests' crawl: its origin, fixed
PLANTED = "PLANTED-MARKDOWN: words the site never served"
OFF_SCOPE_LINK = "http://127.0.0.2:9/planted"


@pytest.fixture
def scheduler(redis_url):
    scheduler = open_scheduler(redis_url)
    yield scheduler
    close_scheduler(scheduler)


def entry(url: str = f"{SITE}/page", callback="parse", **meta) -> dict:
    """A queue entry in the format crawlyx writes, as anyone could write it."""
    return {
        "url": url,
        "method": "GET",
        "headers": {},
        "priority": 0,
        "dont_filter": False,
        "callback": callback,
        "errback": "on_error",
        "meta": {"depth": 1, "crawlyx_referrer": f"{SITE}/", **meta},
    }


def planted_page(url: str) -> dict:
    """A page's HTTP version as the earlier format kept it in a render request."""
    page = {
        "links": {OFF_SCOPE_LINK: [OFF_SCOPE_LINK, "f" * 40]},
        "title": "Planted",
        "description": None,
        "lang": "en",
        "canonical": None,
        "markdown": PLANTED,
        "digest": "0123456789abcdef",
        "signature": None,
        "robots": [],
    }
    facts = {"final_url": url, "status": 200, "etag": None, "last_modified": None,
             "elapsed_ms": 1.0, "bytes": 10}  # fmt: skip
    return {"page": page, "directives": [], "facts": facts}


def plant(client: redis.Redis, job: str, data: dict) -> str:
    """Queue ``data`` straight into the job's keys, with a lease of its own."""
    fp = uuid.uuid4().hex + "00000000"
    client.hset(f"crawlyx:{{{job}}}:visited", fp, "q")
    client.lpush(f"crawlyx:{{{job}}}:queue", fp.encode() + json.dumps(data).encode())
    return fp


def payload(data: dict) -> bytes:
    return json.dumps(data).encode()


# -- decoding ---------------------------------------------------------------------------


FORGED = {
    "off the origin": entry("http://127.0.0.2:9/page"),
    "another port": entry("http://127.0.0.1:10/page"),
    "no size cap": entry(download_maxsize=0),
    "a sitemap without a size cap": entry(
        f"{SITE}/sitemap.xml", "parse_sitemap", download_maxsize=0
    ),
    "a failed render with a planted page": entry(
        crawlyx_render="fallback",
        crawlyx_render_failed="the browser failed",
        crawlyx_http_page=planted_page(f"{SITE}/page"),
    ),
    "a planted page without a render": entry(crawlyx_http_page=planted_page(f"{SITE}/page")),
    "navigation without a timeout": entry(
        crawlyx_render="browser",
        playwright=True,
        playwright_page_goto_kwargs={"wait_until": "load", "timeout": 0},
    ),
    "the browser, unmarked": entry(playwright=True),
    "a referrer off the origin": entry(crawlyx_referrer="http://127.0.0.2:9/"),
    "a redirect trail off the origin": entry(redirect_urls=["http://127.0.0.2:9/x"]),
    "a start request elsewhere": entry("http://127.0.0.2:9/", crawlyx_anchor=True),
    "a negative depth": entry(depth=-100),
    "retries without end": entry(retry_times=-(10**9)),
    "a long failure detail": entry(crawlyx_render="fallback", crawlyx_render_failed="x" * 501),
    "an unknown render marker": entry(crawlyx_render=["browser"]),
    "a non-string callback": entry(callback=["parse"]),
}


@pytest.mark.parametrize("name", FORGED)
def test_forged_entries_are_refused(scheduler, name):
    with pytest.raises(queued.Refused):
        queued.decode(payload(FORGED[name]), scheduler.spider)


def test_what_crawlyx_computes_is_computed_again_from_this_run(scheduler):
    spider = scheduler.spider
    # The earlier format's sitemap size cap: checked, then this run's.
    sitemap = queued.decode(
        payload(entry(f"{SITE}/sitemap.xml", "parse_sitemap", download_maxsize=9)), spider
    )
    assert sitemap.meta["download_maxsize"] == spider.sitemap_max_bytes > 9
    assert "download_maxsize" not in queued.decode(payload(entry()), spider).meta
    # The earlier format's render request: the browser's meta and the kept page.
    written = entry(
        crawlyx_render="browser",
        playwright=True,
        playwright_page_goto_kwargs={"wait_until": "networkidle"},
        crawlyx_http_page=planted_page(f"{SITE}/page"),
    )
    request = queued.decode(payload(written), spider)
    assert request.meta == {
        "depth": 1,
        "crawlyx_referrer": f"{SITE}/",
        **spider.browser_meta,  # this run's navigation options
        render.HTTP_PAGE_META: True,  # its HTTP version was fine; the page is not read
    }
    assert PLANTED not in json.dumps(request.meta)
    # What is written now says no more than that.
    again = queued.decode(queued.encode(request, spider), spider)
    assert again.meta == request.meta
    assert b"playwright" not in queued.encode(request, spider)


def test_the_start_request_and_its_hops_begin_at_the_start_url(redis_url):
    scheduler = open_scheduler(redis_url, origin=None)  # nothing answered yet
    spider = scheduler.spider
    try:
        start = entry(f"{SITE}/", crawlyx_anchor=True, crawlyx_referrer=None)
        assert queued.decode(payload(start), spider).url == f"{SITE}/"
        # Its redirect hop, to the origin it will fix (apex -> www).
        hop = {**start, "url": "http://localhost:9/"}
        hop["meta"] = {**start["meta"], "redirect_urls": [f"{SITE}/"]}
        assert queued.decode(payload(hop), spider).url == "http://localhost:9/"
        # Before the origin is fixed, no other request is in scope.
        with pytest.raises(queued.Refused, match="outside the crawl's origin"):
            queued.decode(payload(entry()), spider)
        spider.scope.fix(f"{SITE}/")
        assert queued.decode(payload(start), spider).url == f"{SITE}/"
        with pytest.raises(queued.Refused, match="outside the crawl's origin"):
            queued.decode(payload(hop), spider)  # a hop away from the fixed origin
    finally:
        close_scheduler(scheduler)


def test_allow_and_deny_hold_for_pages_not_sitemaps(redis_url):
    scheduler = open_scheduler(redis_url, deny="private|sitemap")
    try:
        spider = scheduler.spider
        with pytest.raises(queued.Refused, match="allow/deny"):
            queued.decode(payload(entry(f"{SITE}/private/x")), spider)
        # The spider queues its sitemaps whatever allow/deny say; their pages are held.
        sitemap = entry(f"{SITE}/sitemap.xml", "parse_sitemap")
        assert queued.decode(payload(sitemap), spider).callback == spider.parse_sitemap
    finally:
        close_scheduler(scheduler)


# -- the scheduler ----------------------------------------------------------------------


def test_planted_entries_are_dropped_counted_logged_once_and_done(scheduler, caplog):
    spider, table = scheduler.spider, scheduler.visited
    client, job = table.redis, spider.job
    forged = [plant(client, job, data) for data in FORGED.values()]
    scheduler.enqueue_request(Request(f"{SITE}/real", spider.parse))
    with caplog.at_level(logging.ERROR):
        request = scheduler.next_request()
    assert request.url == f"{SITE}/real"
    assert scheduler.next_request() is None
    assert scheduler.stats.get_value("crawlyx/queue/refused") == len(FORGED)
    refusals = [r for r in caplog.records if "Refusing a queue entry" in r.getMessage()]
    assert len(refusals) == 1
    table.sync()
    assert all(table.state_of(fp) == b"d" for fp in forged)  # never popped again
    assert table.queued() == 0 and table.leased() == 1  # the real page's lease only
    assert request.meta[LEASE_META] not in forged


# -- a crawl ----------------------------------------------------------------------------


def test_a_resumed_crawl_emits_nothing_planted_in_its_queue(site, crawl, redis_client, tmp_path):
    job = f"trust-{uuid.uuid4().hex[:8]}"
    start = f"start=http://127.0.0.1:{site.port}/start"  # the crawl's origin: localhost
    first = crawl(start, f"job={job}", "max_pages=1", "render=never")
    assert first.returncode == 0, first.log[-3000:]
    base = site.base
    forged = {
        "/forged-off-scope": entry(f"http://127.0.0.1:{site.port}/forged-off-scope"),
        "/forged-maxsize": entry(f"{base}/forged-maxsize", download_maxsize=0),
        "/forged-fallback": entry(
            f"{base}/forged-fallback",
            crawlyx_render="fallback",
            crawlyx_render_failed="PLANTED-DETAIL",
            crawlyx_http_page=planted_page(f"{base}/forged-fallback"),
        ),
    }
    for data in forged.values():
        data["meta"]["crawlyx_referrer"] = base + "/"
    fps = [plant(redis_client, job, data) for data in forged.values()]
    # In the earlier format, a render request with its page kept: read, but not its page.
    # The browser's 404 used to be a failed render, and the kept page emitted.
    kept = entry(
        f"{base}/forged-kept",
        crawlyx_render="browser",
        playwright=True,
        playwright_page_goto_kwargs={"wait_until": "load"},
        crawlyx_http_page=planted_page(f"{base}/forged-kept"),
        crawlyx_referrer=base + "/",
    )
    fps.append(plant(redis_client, job, kept))
    errors = tmp_path / "errors.jsonl"
    resumed = crawl(start, f"job={job}", "render=never", f"errors={errors}")
    assert resumed.returncode == 0, resumed.log[-3000:]
    assert resumed.items, "the resumed crawl emitted nothing"
    output = json.dumps(resumed.items) + errors.read_text()
    assert PLANTED not in output and "PLANTED-DETAIL" not in output
    assert OFF_SCOPE_LINK not in output
    assert all(url.startswith(base + "/") for url in resumed.urls)
    assert not any(site.counts[path] for path in forged)  # refused before any fetch
    assert resumed.stat("crawlyx/queue/refused") == str(len(forged))
    assert resumed.log.count("Refusing a queue entry") == 1
    # The kept-page entry was fetched for what it is: a 404, over plain HTTP.
    assert f"{base}/forged-kept" not in resumed.urls
    recorded = [json.loads(line) for line in errors.read_text().splitlines()]
    assert {(e["url"], e["class"]) for e in recorded} >= {(f"{base}/forged-kept", "http_4xx")}
    assert all(redis_client.hget(f"crawlyx:{{{job}}}:visited", fp) == b"d" for fp in fps)
