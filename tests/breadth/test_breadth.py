"""Crawl breadth: the sketch's properties, the recorder, the Redis merge (several real
processes at once), the extension, and the ``visits`` / ``breadth`` commands.

Accuracy is tested here on real URL hashes up to 1,000,000 distinct URLs (a dense
sweep through the linear-counting → HLL++ switch at ~11,500 and plain HLL's 2.5 × M ≈
41,000); ``python bench/breadth.py`` sweeps on to 10,000,000.
"""

from __future__ import annotations

import json
import multiprocessing
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
import redis
from datasketch import HyperLogLogPlusPlus
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis.backoff import NoBackoff
from redis.retry import Retry
from scrapy.exceptions import NotConfigured
from scrapy.http import HtmlResponse, Request
from scrapy.utils.test import get_crawler

import crawlyx.settings as project_settings
from crawlyx.breadth import EXACT_LIMIT, OVERFLOW, Recorder, Sketch, hash64
from crawlyx.breadth.accesslog import BadLine, LogFormat
from crawlyx.breadth.bots import OWN, BotTable
from crawlyx.breadth.extension import Breadth, site_of
from crawlyx.breadth.report import read_breadth
from crawlyx.breadth.sketch import union
from crawlyx.breadth.store import (
    BreadthStore,
    RowScan,
    breadth_state,
    corpus_key,
    day_key,
    day_start,
    parse_key,
    utc_day,
)
from tests.breadth.breadth_worker import flush_worker
from tests.conftest import crawl_env, empty_store, free_port

SITE = "https://docs.example.com"


def urls(start: int, stop: int, site: str = SITE) -> list[str]:
    return [f"{site}/p/{i}" for i in range(start, stop)]


def sketch_of(items) -> Sketch:
    sketch = Sketch()
    for url in items:
        sketch.add(url)
    sketch.dirty = False
    return sketch


def days_ago(n: int) -> str:
    return (datetime.now(UTC) - timedelta(days=n)).strftime("%Y-%m-%d")


@pytest.fixture
def today() -> str:
    """The UTC day the test runs on (a module's constant would be a day old for the tests
    run after a midnight)."""
    return utc_day(time.time())


def on_one_day(state, check) -> None:
    """Run ``check(today)``; once more, on an emptied store, if it failed as the UTC day
    changed: its subprocesses date what they record by their own clock, and a midnight
    between them splits the records over two days."""
    for last in (False, True):
        today = utc_day(time.time())
        try:
            check(today)
            return
        except AssertionError:
            if last or utc_day(time.time()) == today:
                raise
            empty_store(state)


@pytest.fixture
def state(redis_client):
    """The breadth namespace on the test Redis, emptied before and after."""
    state = breadth_state(redis_client)
    empty_store(state)
    yield state
    empty_store(state)


# -- the sketch ------------------------------------------------------------------------

url_lists = st.lists(
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=30),
    max_size=300,
)


def test_hash_is_the_same_in_every_process():
    # Pinned: changing the hash orphans every stored sketch. Python's hash() would
    # differ per process (PYTHONHASHSEED); a subprocess with another seed agrees.
    assert hash64(b"https://example.com/") == 0x5B55279CB72EBA14
    code = "from crawlyx.breadth import hash64; print(hash64(b'https://example.com/'))"
    env = dict(crawl_env(), PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert int(out.stdout) == 0x5B55279CB72EBA14


@settings(max_examples=60, deadline=None)
@given(url_lists)
def test_registers_are_datasketch_hllpp_registers(items):
    recorder = Recorder(SITE)
    reference = HyperLogLogPlusPlus(p=14, hashfunc=hash64)
    for url in items:
        recorder.record("bot", url, "2030-01-01")
        reference.update(url.encode("utf-8"))
    recorded = recorder.sketches("2030-01-01").get("bot", Sketch())
    assert bytes(recorded.registers) == reference.reg.astype(np.uint8).tobytes()
    assert recorded == sketch_of(items)  # the inlined hot path is Sketch.add


@settings(max_examples=60, deadline=None)
@given(url_lists, st.randoms(use_true_random=False))
def test_duplicates_and_order_never_move_the_estimate(items, rnd):
    once = sketch_of(items)
    repeated = items * 3 + items[: len(items) // 2]
    rnd.shuffle(repeated)
    again = sketch_of(repeated)
    assert again == once
    assert again.estimate() == once.estimate() == len(set(items))


@st.composite
def shards(draw):
    """A set of URLs (sizes around EXACT_LIMIT and beyond) split over overlapping shards."""
    n = draw(st.sampled_from([1, 50, EXACT_LIMIT - 5, EXACT_LIMIT + 1, 2500, 20_000]))
    k = draw(st.integers(1, 5))
    seed = draw(st.integers(0, 10**6))
    rng = np.random.default_rng(seed)
    owners = rng.integers(0, k, size=(2, n))  # each URL seen by one or two shards
    items = urls(seed, seed + n)
    parts = [[u for u, a, b in zip(items, *owners, strict=True) if j in (a, b)] for j in range(k)]
    return items, parts


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shards(), st.randoms(use_true_random=False))
def test_merge_is_the_single_observer_sketch_in_any_order(data, rnd):
    items, parts = data
    single = sketch_of(items)
    pieces = [sketch_of(part) for part in parts]
    merged = union(pieces)
    assert merged == single  # register for register, and the same exact set
    rnd.shuffle(pieces)
    assert union(pieces) == single
    # Merging in twice (a retried flush) changes nothing.
    merged.merge(pieces[0])
    assert merged == single


def test_exact_up_to_the_limit_then_within_three_percent():
    sketch = Sketch()
    for n, url in enumerate(urls(0, 3 * EXACT_LIMIT), 1):
        sketch.add(url)
        if n <= EXACT_LIMIT:
            assert sketch.estimate() == n
            assert not sketch.saturated
        else:
            assert sketch.saturated
            assert abs(sketch.estimate() - n) <= 0.03 * n, n


def checkpoints(limit: int) -> list[int]:
    """Every 50 up to 60,000 (both switch points), then 0.5 % steps."""
    points = list(range(50, 60_001, 50))
    n = 60_000
    while n < limit:
        n = int(n * 1.005) + 1
        points.append(min(n, limit))
    return points


def test_accuracy_sweep_to_one_million():
    sketch, worst, points = Sketch(), (0.0, 0), checkpoints(1_000_000)
    at = 0
    for target in points:
        for url in urls(at, target, site="https://sweep.example"):
            sketch.add(url)
        at = target
        error = abs(sketch.estimate() - target) / target
        worst = max(worst, (error, target))
    assert worst[0] <= 0.03, f"worst error {worst[0]:.2%} at {worst[1]}"


@settings(max_examples=25, deadline=None, derandomize=True)
@given(st.integers(1, 150_000), st.integers(0, 2**32))
def test_accuracy_at_any_cardinality(n, seed):
    sketch = sketch_of(f"https://r{seed}.example/{i}" for i in range(n))
    assert abs(sketch.estimate() - n) <= 0.03 * n


def test_serialization_round_trip():
    for sketch in (Sketch(), sketch_of(urls(0, 10)), sketch_of(urls(0, 5000))):
        copy = Sketch.from_bytes(sketch.register_bytes(), sketch.exact_bytes())
        assert copy == sketch
    with pytest.raises(ValueError):
        Sketch(b"\0" * 10)


# -- the recorder -----------------------------------------------------------------------


def test_bots_past_the_cap_share_the_overflow_bucket(today):
    recorder = Recorder(SITE, max_bots=2)
    for bot in ("A", "B", "C", "D"):
        recorder.record(bot, f"{SITE}/{bot}", today)
        recorder.record(bot, f"{SITE}/shared", today)
    sketches = recorder.sketches(today)
    assert sorted(sketches) == sorted(["A", "B", OVERFLOW])
    assert sketches[OVERFLOW].count() == 3  # /C, /D, /shared
    assert recorder.overflowed == 2
    # A new day starts with a clean slate of names.
    recorder.record("D", f"{SITE}/x", "2030-01-02")
    assert list(recorder.sketches("2030-01-02")) == ["D"]


def test_bot_names_are_safe_in_keys_and_days_are_separate():
    recorder = Recorder(SITE)
    recorder.record("evil:bot*[x]", f"{SITE}/a", "2030-01-01")
    recorder.record("evil:bot*[x]", f"{SITE}/b", "2030-01-02")
    assert list(recorder.sketches("2030-01-01")) == ["evil_bot__x_"]
    assert recorder.sketches("2030-01-02")["evil_bot__x_"].count() == 1
    assert recorder.day == "2030-01-02"


# -- Redis ----------------------------------------------------------------------------


def stored(state, key) -> tuple[Sketch, int, int]:
    rows = list(RowScan(state, cap=10_000))
    for row in rows:
        if (row.day and day_key(state, row.site, row.day, row.bot) == key) or (
            row.day is None and corpus_key(state, row.site) == key
        ):
            return row.sketch, row.shards, row.flushes
    raise AssertionError(f"no row {key}")


def test_flush_merges_with_what_other_processes_stored(state, today):
    a, b = Recorder(SITE), Recorder(SITE)
    for url in urls(0, 3000):
        a.record("GPTBot", url, today)
    for url in urls(2000, 2600):
        b.record("GPTBot", url, today)
    BreadthStore(state, shard="a").flush(a)
    result = BreadthStore(state, shard="b").flush(b)
    assert result.merged == 1
    sketch, shards, flushes = stored(state, day_key(state, SITE, today, "GPTBot"))
    assert sketch == sketch_of(urls(0, 3000))  # b's registers did not overwrite a's
    assert (shards, flushes) == (2, 2)
    # Expiry: retention (90 days) after the day ends, the same on every flush.
    ttl = state.client.ttl(day_key(state, SITE, today, "GPTBot"))
    assert abs(time.time() + ttl - (day_start(today) + 91 * 86400)) <= 5


def test_flush_is_idempotent_and_exact_sets_saturate_in_redis(state, today):
    store = BreadthStore(state)
    a, b = Recorder(SITE), Recorder(SITE)
    for url in urls(0, 700):
        a.record("bot", url, today)
    for url in urls(500, 1200):
        b.record("bot", url, today)
    store.flush(a)
    a.sketches(today)["bot"].dirty = True
    store.flush(a)  # the same sketch again (a retried flush)
    key = day_key(state, SITE, today, "bot")
    assert stored(state, key)[0] == sketch_of(urls(0, 700))
    assert state.client.hexists(key, "x")
    store.flush(b)  # each exact, the union (1200) past the limit: saturated in Lua
    assert not state.client.hexists(key, "x")
    assert stored(state, key)[0] == sketch_of(urls(0, 1200))


def test_processes_flushing_at_once_lose_no_register(state, redis_url):
    # The workers date their records by their own clock.
    def check(today):
        workers, prefix = 4, f"{SITE}/{uuid.uuid4().hex[:6]}"
        ctx = multiprocessing.get_context("spawn")
        ready, start = ctx.Queue(), ctx.Event()
        procs = [
            ctx.Process(target=flush_worker, args=(redis_url, prefix, w, workers, ready, start))
            for w in range(workers)
        ]
        for proc in procs:
            proc.start()
        for _ in procs:
            ready.get(timeout=60)  # every worker imported and at the start line
        start.set()
        for proc in procs:
            proc.join(120)
            assert proc.exitcode == 0
        # What one observer of every worker's URLs would have built, register for register.
        expected = {
            "small": sketch_of(f"{prefix}/s/{i}/{s}" for i in range(250) for s in (0, 1)),
            "crossing": sketch_of(
                f"{prefix}/c/{i}" for w in range(workers) for i in range(w * 300, w * 300 + 400)
            ),
            "big": sketch_of(
                f"{prefix}/b/{(i * (w + 1)) % 50_000}"
                for w in range(workers)
                for i in range(40_000)
            ),
        }
        for bot, sketch in expected.items():
            got, shards, flushes = stored(state, day_key(state, SITE, today, bot))
            assert got == sketch, bot
            assert shards == workers, bot
        # A sketch is sent only when it changed: "small" in its first two steps only,
        # "crossing" (new URLs) in all ten; "big" when a register happened to rise.
        assert stored(state, day_key(state, SITE, today, "small"))[2] == workers * 2
        assert stored(state, day_key(state, SITE, today, "crossing"))[2] == workers * 10
        assert expected["small"].count() == 500 and not expected["small"].saturated
        assert expected["crossing"].saturated and expected["big"].saturated
        corpus, _, _ = stored(state, corpus_key(state, SITE))
        assert corpus.count() == workers * 10

    on_one_day(state, check)


def test_failed_flush_keeps_sketches_dirty_and_is_retried(state, today):
    dead = breadth_state(redis.Redis(port=free_port(), retry=Retry(NoBackoff(), 0)))
    recorder = Recorder(SITE)
    for url in urls(0, 100):
        recorder.record("bot", url, today)
    recorder.record_corpus(f"{SITE}/p/0")
    with pytest.raises(redis.ConnectionError):
        BreadthStore(dead).flush(recorder)
    assert recorder.dirty_count() == 2
    assert BreadthStore(state).flush(recorder).merged == 2
    assert recorder.dirty_count() == 0
    assert stored(state, day_key(state, SITE, today, "bot"))[0].count() == 100


def test_days_past_retention_are_dropped_not_written(state, today):
    recorder = Recorder(SITE)
    recorder.record("bot", f"{SITE}/old", days_ago(100))
    recorder.record("bot", f"{SITE}/new", today)
    result = BreadthStore(state, retention_days=90).flush(recorder)
    assert (result.merged, result.expired) == (1, 1)
    assert recorder.days() == [today]


def test_row_scan_is_exact_about_sites_and_truncates_at_the_cap(state, today):
    store = BreadthStore(state)
    for site in ("http://localhost", "http://localhost:8080", "http://[::1]:8080"):
        recorder = Recorder(site)
        for bot in ("a", "b", "c"):
            recorder.record(bot, f"{site}/x", today)
        store.flush(recorder)
    assert parse_key(state, day_key(state, "http://[::1]:8080", today, "a")) == (
        "http://[::1]:8080",
        today,
        "a",
    )
    for site in ("http://localhost", "http://[::1]:8080"):
        rows = list(RowScan(state, site=site))
        assert {row.site for row in rows} == {site} and len(rows) == 3
    scan = RowScan(state, cap=4)
    assert len(list(scan)) == 4
    assert scan.truncated and scan.rows_read == 4
    scan = RowScan(state, cap=9)
    assert len(list(scan)) == 9 and not scan.truncated


def test_rows_are_tagged_by_their_site_and_indexed_as_they_are_written(state, today):
    recorder = Recorder(SITE)
    recorder.record("GPTBot", f"{SITE}/a", today)
    recorder.record_corpus(f"{SITE}/a")
    BreadthStore(state).flush(recorder)
    day = f"crawlyx:_breadth:{{{SITE}}}:day:{today}:GPTBot"
    corpus = f"crawlyx:_breadth:{{{SITE}}}:corpus"
    index = f"crawlyx:_breadth:{{{SITE}}}:rows"
    assert day_key(state, SITE, today, "GPTBot") == day and corpus_key(state, SITE) == corpus
    assert state.client.smembers(index) == {day.encode(), corpus.encode()}
    assert state.client.smembers("crawlyx:_breadth:sites") == {SITE.encode()}
    # The index lives as long as its longest-lived row, however the rows were written.
    assert state.client.ttl(index) >= max(state.client.ttl(day), state.client.ttl(corpus)) > 0


def test_expired_rows_leave_the_index_and_an_empty_site_the_sites(state, today):
    store, other = BreadthStore(state), "http://localhost:8080"
    for site in (SITE, other):
        recorder = Recorder(site)
        for bot in ("a", "b"):
            recorder.record(bot, f"{site}/x", today)
        recorder.record("a", f"{site}/x", days_ago(40))  # kept 90 days, read within 31
        store.flush(recorder)
    index = f"crawlyx:_breadth:{{{SITE}}}:rows"
    old = day_key(state, SITE, days_ago(40), "a")
    state.client.delete(day_key(state, SITE, today, "b"), old)  # as if expired
    assert {row.bot for row in RowScan(state, site=SITE, days={today})} == {"a"}
    assert state.client.smembers(index) == {day_key(state, SITE, today, "a").encode()}
    # A site all of whose rows (and so its index) expired is no longer listed.
    state.client.delete(*state.client.smembers(f"crawlyx:_breadth:{{{other}}}:rows"))
    state.client.delete(f"crawlyx:_breadth:{{{other}}}:rows")
    assert {row.site for row in RowScan(state)} == {SITE}
    assert state.client.smembers("crawlyx:_breadth:sites") == {SITE.encode()}


def test_rows_of_the_layout_before_sites_were_tags_are_not_read(state, today):
    recorder = Recorder(SITE)
    recorder.record("a", f"{SITE}/x", today)
    BreadthStore(state).flush(recorder)
    row = state.client.hgetall(day_key(state, SITE, today, "a"))
    state.client.hset(f"crawlyx:_breadth:{SITE}:day:{today}:old", mapping=row)
    assert [row.bot for row in RowScan(state)] == ["a"]


def test_report_union_is_not_the_sum_and_coverage_uses_the_corpus(state, today):
    store = BreadthStore(state)
    recorder = Recorder(SITE)
    for url in urls(0, 400):
        recorder.record_corpus(url)
    for url in urls(0, 100):
        recorder.record("Googlebot", url, today)
    for url in urls(50, 250):
        recorder.record("GPTBot", url, today)
    recorder.record("GPTBot", f"{SITE}/old", days_ago(3))
    store.flush(recorder)
    report = read_breadth(state, site=SITE, days=7)
    assert report["corpus_pages"] == 400 and not report["truncated"]
    day = report["breadth"][0]
    assert day["day"] == today
    assert [(b["bot"], b["distinct_urls"]) for b in day["bots"]] == [
        ("GPTBot", 200),
        ("Googlebot", 100),
    ]
    assert day["total"] == {"distinct_urls": 250, "coverage_pct": 62.5}
    assert report["breadth"][3]["bots"][0]["distinct_urls"] == 1
    only = read_breadth(state, site=SITE, days=1, bot="googlebot")
    assert only["breadth"][0]["total"]["distinct_urls"] == 100
    assert read_breadth(state, site=SITE, days=2, cap=1)["truncated"]


# -- the extension ----------------------------------------------------------------------


def breadth_crawler(**overrides):
    values = {k: v for k, v in vars(project_settings).items() if k.startswith("CRAWLYX_")}
    return get_crawler(settings_dict={**values, "ADDONS": project_settings.ADDONS, **overrides})


def test_extension_is_off_when_disabled():
    with pytest.raises(NotConfigured):
        Breadth.from_crawler(breadth_crawler(CRAWLYX_BREADTH_ENABLED=False))


def test_extension_records_fetches_and_corpus_and_flushes_at_rollover(state, monkeypatch, today):
    from twisted.internet import reactor

    import crawlyx.breadth.extension as module

    ext = Breadth.from_crawler(breadth_crawler(CRAWLYX_BOT_NAME="crawlyx-test"))
    ext.store = BreadthStore(state)  # what spider_opened does, on the test Redis
    scheduled = []
    monkeypatch.setattr(reactor, "callLater", lambda delay, fn: scheduled.append(fn))
    clock = [day_start(today) - 10.0]  # just before midnight UTC
    monkeypatch.setattr(module.time, "time", lambda: clock[0])
    yesterday = utc_day(clock[0])

    def fetch(url):
        response = HtmlResponse(url, body=b"<html></html>", request=Request(url))
        ext.response_received(response=response, request=response.request)

    fetch("https://Docs.Example.com:443/a?utm_source=x")
    fetch("https://docs.example.com/a")
    fetch("https://docs.example.com/b/")
    ext.item_scraped({"url": "https://docs.example.com/a"})
    assert not scheduled
    clock[0] = day_start(today) + 5.0  # midnight passes
    fetch("https://docs.example.com/c")
    assert scheduled == [ext.flush]  # the old day is persisted right away
    assert ext.flush()
    assert stored(state, day_key(state, SITE, yesterday, "crawlyx-test"))[0].count() == 2
    assert stored(state, day_key(state, SITE, today, "crawlyx-test"))[0].count() == 1
    assert stored(state, corpus_key(state, SITE))[0].count() == 1
    assert ext.recorders[SITE].days() == [today]  # the flushed old day is forgotten
    assert ext.crawler.stats.get_value("crawlyx/breadth/recorded") == 4
    assert site_of("http://user@host:8080/x?y") == "http://host:8080"


def test_a_crawl_records_its_fetches_and_corpus(site, crawl, redis_client, state):
    # The crawl dates its records by the clock; the report reads today's.
    def check(today):
        result = crawl(f"start=http://127.0.0.1:{site.port}/start")
        assert result.returncode == 0, result.log[-3000:]
        report = read_breadth(state, site=site.base, days=1, bot="crawlyx", today=today)
        assert report["corpus_pages"] == len(result.items)
        day = report["breadth"][0]
        # Its own fetches, no visiting bot's.
        assert day["bots"] == [] and day["total"]["distinct_urls"] == 0
        assert day["own"][0]["bot"] == "crawlyx" and day["own"][0]["shards"] == 1
        # Every page plus robots.txt, the sitemaps, the non-HTML and error responses.
        assert day["own"][0]["distinct_urls"] > len(result.items)
        assert result.stat("crawlyx/breadth/rows_merged") is not None

    on_one_day(state, check)


def test_crawlyxs_own_crawls_are_shown_apart_from_the_bots(site, crawl, state, redis_url, tmp_path):
    # The crawl, the visits and the report each date by the clock.
    def check(today):
        result = crawl(f"start=http://127.0.0.1:{site.port}/start")
        assert result.returncode == 0, result.log[-3000:]
        pages = len(result.items)
        # The site's access log: GPTBot read three pages; crawlyx's own requests are there too.
        lines = [log_line(path, GPT) for path in ("/", "/about", "/docs/intro?a=1&b=2")]
        lines += [log_line(path, project_settings.USER_AGENT) for path in ("/", "/about", "/zz")]
        log = tmp_path / "access.log"
        log.write_text("\n".join(lines) + "\n")
        visits = scrapy("visits", "--site", site.base, str(log), redis_url=redis_url, cwd=tmp_path)
        assert visits.returncode == 0, visits.stderr
        assert "3 bot requests recorded (1 bots, 1 days)" in visits.stdout
        assert "3 of crawlyx's own skipped" in visits.stdout

        command = ("breadth", "--site", site.base, "--days", "1")
        out = scrapy(*command, "--json", redis_url=redis_url, cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        report = json.loads(out.stdout)
        assert report["corpus_pages"] == pages
        day = report["breadth"][0]
        # The bots that visit the site, and their union: GPTBot alone.
        assert [(b["bot"], b["distinct_urls"]) for b in day["bots"]] == [("GPTBot", 3)]
        assert day["total"] == {"distinct_urls": 3, "coverage_pct": round(300 / pages, 2)}
        # crawlyx's own fetches apart: every page and more (robots.txt, sitemaps, errors).
        [own] = day["own"]
        assert own["bot"] == "crawlyx" and own["distinct_urls"] > pages and own["shards"] == 1

        table = scrapy(*command, redis_url=redis_url, cwd=tmp_path)
        assert table.returncode == 0, table.stderr
        rows = [line.split() for line in table.stdout.splitlines()[2:]]
        assert rows == [
            [today, "GPTBot", "3", "1", f"{300 / pages:.1f}%"],
            ["all", "bots", "(union)", "3", f"{300 / pages:.1f}%"],
            ["crawlyx", "(own", "crawls)", f"{own['distinct_urls']:,}", "1",
             f"{own['coverage_pct']:.1f}%"],
        ]  # fmt: skip

    on_one_day(state, check)


def test_rows_of_crawlyxs_bot_from_before_they_were_marked_are_its_own(state, today):
    recorder = Recorder(SITE)
    for url in urls(0, 5):
        recorder.record("crawlyx", url, today)
        recorder.record("GPTBot", url, today)
    BreadthStore(state).flush(recorder)  # a store that marks no row as crawlyx's own
    day = read_breadth(state, site=SITE, days=1, own="crawlyx")["breadth"][0]
    assert [b["bot"] for b in day["bots"]] == ["GPTBot"]
    assert [b["bot"] for b in day["own"]] == ["crawlyx"]
    # Marked rows are its own whatever the name asked about.
    recorder.record("crawlyx-2", f"{SITE}/x", today)
    BreadthStore(state, own="crawlyx-2").flush(recorder)
    day = read_breadth(state, site=SITE, days=1, own="crawlyx")["breadth"][0]
    assert sorted(b["bot"] for b in day["own"]) == ["crawlyx", "crawlyx-2"]
    assert day["total"]["distinct_urls"] == 5


# -- the commands -----------------------------------------------------------------------

GOOGLE = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
GPT = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2)"
CLAUDE = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0)"
FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
SEMRUSH = "Mozilla/5.0 (compatible; SemrushBot/7~bl; +http://www.semrush.com/bot.html)"


def log_line(path, agent, when=None, method="GET", status=200):
    when = when or datetime.now(UTC)
    stamp = when.astimezone(UTC).strftime("%d/%b/%Y:%H:%M:%S +0000")
    return f'203.0.113.9 - - [{stamp}] "{method} {path} HTTP/1.1" {status} 512 "-" "{agent}"'


def scrapy(*args, redis_url=None, stdin=None, cwd=None, timeout=60):
    command = [sys.executable, "-m", "scrapy", *args]
    if redis_url:
        command += ["-s", f"CRAWLYX_REDIS_URL={redis_url}"]
    return subprocess.run(command, input=stdin, capture_output=True, text=True,
                          env=crawl_env(), cwd=cwd, timeout=timeout)  # fmt: skip


def test_bot_table_and_log_format():
    bots = BotTable()
    assert [bots.classify(a) for a in (GOOGLE, GPT, CLAUDE, FIREFOX, SEMRUSH, "", "curl/8")] == [
        "Googlebot", "GPTBot", "ClaudeBot", None, "other", "other", "other",
    ]  # fmt: skip
    assert BotTable(humans=True).classify(FIREFOX) == "human"
    # crawlyx itself, by its token or its whole user agent, is no visiting bot.
    own = BotTable.from_settings(breadth_crawler(USER_AGENT="Acme fetcher 2").settings)
    assert own.classify(project_settings.USER_AGENT) == OWN
    assert own.classify("Mozilla/5.0 (compatible; crawlyx/0.2)") == OWN
    assert own.classify("Acme fetcher 2") == OWN
    assert own.classify("crawlyxlike/1.0 bot") == "other"
    for agent, name in [("Mozilla/5.0 (compatible; Bytespider)", "Bytespider"),
                        ("meta-externalagent/1.1", "Meta-ExternalAgent"),
                        ("Mozilla/5.0 (Applebot/0.1)", "Applebot"),
                        ("CCBot/2.0 (https://commoncrawl.org/faq/)", "CCBot"),
                        ("PerplexityBot/1.0", "PerplexityBot"),
                        ("Mozilla/5.0 (compatible; bingbot/2.0)", "Bingbot")]:  # fmt: skip
        assert bots.classify(agent) == name
    fmt = LogFormat()
    visit = fmt.parse_line(log_line("/a", GOOGLE, datetime(2030, 1, 1, 23, 30, tzinfo=UTC)))
    assert (visit.day, visit.method, visit.target, visit.agent) == (
        "2030-01-01",
        "GET",
        "/a",
        GOOGLE,
    )
    # The UTC day of the line's own time and offset.
    line = '1.2.3.4 - - [01/Jan/2030:20:00:00 -0500] "GET /b HTTP/1.1" 200 1 "-" "x"'
    assert fmt.parse_line(line).day == "2030-01-02"
    with pytest.raises(BadLine):
        fmt.parse_line("garbage")
    custom = LogFormat(r"(?P<time>\S+) (?P<method>\S+) (?P<path>\S+) (?P<agent>.*)")
    assert custom.parse_line("2030-01-01T23:00:00-02:00 GET /x GPTBot").day == "2030-01-02"
    with pytest.raises(ValueError):
        LogFormat(r"(?P<time>\S+)")


FULL = '203.0.113.9 - - [01/Jan/2030:10:00:00 +0000] "GET /a?x=1 HTTP/1.1" 200 512 "http://r/" '


@pytest.mark.parametrize(
    "line",
    [
        FULL[:60],  # inside the request
        FULL.replace(" 200 512 ", " 20"),  # inside the status
        FULL.replace('512 "http://r/" ', "51"),  # inside the size (a common-format line)
        FULL.replace('"http://r/" ', ""),  # the common format: no referrer, no agent
        FULL + '"Mozilla/5.0 (compatible; Googl',  # inside the agent: no closing quote
        FULL.replace('"http://r/" ', '"http://r'),  # inside the referrer
        FULL + '"Googlebot/2.1"trailing',  # glued to the agent's closing quote
        FULL + '"Googlebot/2.1" "10.0.0.1, 10.0',  # a field after the agent cut inside
    ],
)
def test_a_line_cut_short_or_with_garbage_is_a_bad_line(line):
    with pytest.raises(BadLine):
        LogFormat().parse_line(line)


@pytest.mark.parametrize(
    "tail",
    ["", " ", ' "10.0.0.1, 10.0.0.2"', ' "-" 0.003', " 512 1024", ' "a \\"quoted\\" b"'],
)
def test_complete_fields_after_the_agent_are_a_visit(tail):
    visit = LogFormat().parse_line(FULL + '"Googlebot/2.1 \\"x\\""' + tail)
    assert (visit.target, visit.agent, visit.status) == ("/a?x=1", 'Googlebot/2.1 "x"', "200")


def test_visits_then_breadth_end_to_end(state, redis_url, tmp_path):
    # The lines are dated by the clock, and so is the report's today.
    def check(today):
        old = datetime.now(UTC) - timedelta(days=2)
        lines = [log_line(f"/docs/{i}?utm_source=x", GOOGLE) for i in range(30)]
        lines += [log_line(f"/docs/{i}", GOOGLE) for i in range(30)]  # the same URLs
        lines += [log_line(f"/docs/{i}", GPT) for i in range(20, 50)]
        lines += [log_line(f"/docs/{i}", CLAUDE, when=old) for i in range(5)]
        lines += [log_line("/docs/1", FIREFOX), log_line("/x", SEMRUSH)]
        lines += [log_line("/form", GPT, method="POST"), "not a log line", ""]
        lines += [log_line("/phantom", GOOGLE)[:-30]]  # cut inside the agent: not a visit
        lines += [log_line("/ancient", GPT, when=datetime.now(UTC) - timedelta(days=200))]
        lines += [log_line("/later", GPT, when=datetime.now(UTC) + timedelta(days=5))]
        log = tmp_path / "access.log"
        log.write_text("\n".join(lines) + "\n")
        result = scrapy("visits", "--site", SITE + "/", str(log), redis_url=redis_url, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        summary = result.stdout.strip()
        assert summary.count("\n") == 0
        assert "102 lines" in summary and "96 bot requests recorded (4 bots, 2 days)" in summary
        assert "1 human skipped" in summary and "2 bad lines (first: " in summary
        assert "1 other methods" in summary and "1 older than retention" in summary
        assert "1 dated in the future" in summary

        out = scrapy("breadth", "--site", SITE, "--json", redis_url=redis_url, cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        report = json.loads(out.stdout)
        day = report["breadth"][0]
        assert day["day"] == today
        got = {bot["bot"]: (bot["distinct_urls"], bot["shards"]) for bot in day["bots"]}
        assert got == {"Googlebot": (30, 1), "GPTBot": (30, 1), "other": (1, 1)}
        assert day["total"]["distinct_urls"] == 51  # 0..49 and /x: a union, not 61
        assert report["breadth"][2]["bots"][0]["bot"] == "ClaudeBot"
        assert report["corpus_pages"] is None and report["truncated"] is False

        table = scrapy("breadth", "--site", SITE, "--days", "3", redis_url=redis_url, cwd=tmp_path)
        assert "all bots (union)" in table.stdout and "Googlebot" in table.stdout
        # A second run is a second shard of the same rows; the counts do not double.
        scrapy("visits", "--site", SITE, str(log), redis_url=redis_url, cwd=tmp_path)
        report = json.loads(scrapy("breadth", "--site", SITE, "--json", redis_url=redis_url).stdout)
        google = report["breadth"][0]["bots"][0]
        assert (google["distinct_urls"], google["shards"]) == (30, 2)

    on_one_day(state, check)


@pytest.mark.parametrize("days", ["0", "32", "x", "-1"])
def test_breadth_bad_days_is_one_clear_line(days, redis_url, tmp_path):
    result = scrapy("breadth", "--days", days, redis_url=redis_url, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"crawlyx: breadth: bad --days {days!r}: use a whole number from 1 to 31"
    ]


def test_visits_streams_stdin_and_flushes_while_reading(state, redis_url, tmp_path):
    command = [sys.executable, "-m", "scrapy", "visits", "--site", SITE, "--flush-interval",
               "0.5", "-", "-s", f"CRAWLYX_REDIS_URL={redis_url}"]  # fmt: skip
    pipe = subprocess.PIPE
    proc = subprocess.Popen(command, stdin=pipe, stdout=pipe, stderr=pipe, text=True,
                            env=crawl_env(), cwd=tmp_path)  # fmt: skip
    now = datetime.now(UTC)  # the lines' time, so their day's row
    try:
        proc.stdin.write("\n".join(log_line(f"/s/{i}", GPT, now) for i in range(10)) + "\n")
        proc.stdin.flush()
        key = day_key(state, SITE, now.strftime("%Y-%m-%d"), "GPTBot")
        deadline = time.monotonic() + 30
        while not state.client.exists(key) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert state.client.exists(key), "no flush while stdin was still open"
        assert proc.poll() is None
        proc.stdin.write(log_line("/s/99", GPT, now) + "\n")
    finally:
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "11 bot requests recorded" in out
    assert stored(state, key)[0].count() == 11


def test_commands_work_with_the_embedded_server(tmp_path):
    log = tmp_path / "access.log"
    log.write_text("\n".join(log_line(f"/e/{i}", CLAUDE) for i in range(7)) + "\n")
    data = f"CRAWLYX_DATA_DIR={tmp_path / 'data'}"
    result = scrapy("visits", "--site", SITE, str(log), "-s", data, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = scrapy("breadth", "--json", "--days", "1", "-s", data, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["breadth"][0]["bots"][0]["distinct_urls"] == 7
    assert report["sites"] == [SITE]
