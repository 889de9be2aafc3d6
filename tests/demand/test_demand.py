"""Demand's ring: the Bloom filter (no false negatives, the false-positive rate it was
sized for), the slot arithmetic, the Redis merge of several nodes, failed flushes, the
merged read, the extension, the module API and ``scrapy visits`` feeding the ring."""

from __future__ import annotations

import random
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from scrapy.exceptions import NotConfigured
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

import crawlyx.settings as project_settings
from crawlyx.demand import RingConfig, bloom, parse_duration
from crawlyx.demand.extension import Demand as DemandExtension
from crawlyx.demand.recorder import PENDING_LIMIT, DemandRecorder
from crawlyx.demand.store import (
    DemandStore,
    Layout,
    MergedRing,
    demand_state,
    parse_key,
    row_key,
)
from crawlyx.demand.tracker import DemandTracker
from crawlyx.sitekeys import ROWS, site_key
from tests.breadth.test_breadth import FIREFOX, GOOGLE, GPT, SEMRUSH, log_line, scrapy
from tests.conftest import crawl_env, empty_store, free_port

SITE = "https://docs.example.com"
HOUR = 3600
NOW = 1_900_000_000.0  # a fixed clock: 2030-03-17


def urls(start: int, stop: int, site: str = SITE) -> list[str]:
    return [f"{site}/p/{i}" for i in range(start, stop)]


def config(**overrides) -> RingConfig:
    values = dict(slice=HOUR, slices=24, slice_urls=20_000, fp_rate=0.01)
    return RingConfig(**{**values, **overrides})


@pytest.fixture
def state(redis_client):
    """The demand namespace on the test Redis, emptied before and after."""
    state = demand_state(redis_client)
    empty_store(state)
    yield state
    empty_store(state)


def crawlyx_settings(**overrides) -> dict:
    values = {k: v for k, v in vars(project_settings).items() if k.startswith("CRAWLYX_")}
    return {**values, "ADDONS": project_settings.ADDONS, **overrides}


# -- durations, sizing, the filter ------------------------------------------------------


def test_durations():
    assert [parse_duration(v) for v in ("90s", "30m", "6h", "2d", "3600", 1.5, " 2H ")] == [
        90, 1800, 21600, 172800, 3600, 1.5, 7200,
    ]  # fmt: skip
    for bad in ("", "6 hours", "-1h", "0", "1w", "h", True, None):
        with pytest.raises(ValueError, match="CRAWLYX_DEMAND_SLICE"):
            parse_duration(bad, "CRAWLYX_DEMAND_SLICE")


def test_settings_are_read_and_checked():
    ring = RingConfig.from_settings(Settings(crawlyx_settings()))
    assert (ring.slice, ring.slices, ring.span) == (HOUR, 192, 192 * HOUR)
    assert (ring.bits, ring.hashes, ring.slice_bytes) == (2_396_265, 7, 299_534)
    assert ring.flush_interval == ring.refresh_interval == 60
    bad = [
        {"CRAWLYX_DEMAND_SLICE": "1.5s"},
        {"CRAWLYX_DEMAND_SLICES": 0},
        {"CRAWLYX_DEMAND_FP_RATE": 1.5},
        {"CRAWLYX_DEMAND_SLICE_URLS": 0},
        {"CRAWLYX_DEMAND_FLUSH_INTERVAL": "soon"},
        {"CRAWLYX_DEMAND_SLICE_URLS": 10**9, "CRAWLYX_DEMAND_FP_RATE": 1e-9},  # > 2³² bits
    ]
    for overrides in bad:
        with pytest.raises(ValueError, match="CRAWLYX_DEMAND|bits per slice"):
            RingConfig.from_settings(Settings(crawlyx_settings(**overrides)))


def test_vectorized_and_plain_positions_agree_for_any_bit_count():
    rnd = random.Random(7)
    for bits in (64, 1001, 4099, 2_396_265):
        assert bloom.byte_size(bits) == -(-bits // 8)
        digests = [rnd.randbytes(16) for _ in range(2000)]
        vectorized = bytearray(bloom.byte_size(bits))
        bloom.add_digests(vectorized, bits, 7, digests)
        plain = bytearray(bloom.byte_size(bits))
        for value in digests:
            for p in bloom.positions(value, bits, 7):
                assert 0 <= p < bits
                plain[p >> 3] |= 1 << (p & 7)
        assert vectorized == plain, bits
        if bits % 8:  # only the low bits of the last, partial byte are used
            assert plain[-1] >> (bits % 8) == 0
            assert plain[-1] or bits > 10_000  # and used, when 14,000 bits fill most


def test_digest_is_stable_across_processes_and_machines():
    # BLAKE2b-128 of the UTF-8 URL: a fixed value, never Python's salted hash().
    assert bloom.digest("https://docs.example.com/").hex() == ("a5a7233838ccbe6638988651d8847f0b")


# -- the recorder -----------------------------------------------------------------------


def test_recorder_memory_is_bounded_by_distinct_urls_not_visits():
    recorder = DemandRecorder(SITE, config())
    for _ in range(3):
        for url in urls(0, 1000):
            recorder.record(url, NOW)
    assert len(recorder.slices[int(NOW // HOUR)].pending) == 1000  # repeats are one entry
    for url in urls(0, PENDING_LIMIT + 10):
        recorder.record(url, NOW)
    piece = recorder.slices[int(NOW // HOUR)]
    assert len(piece.pending) < PENDING_LIMIT  # turned into bits at the limit
    assert piece.filter is not None and len(piece.filter) == config().slice_bytes


# -- Redis: flush, merge, read ----------------------------------------------------------


def test_no_false_negatives_and_the_configured_false_positive_rate(state):
    ring = config(slice_urls=20_000, fp_rate=0.01)
    recorder = DemandRecorder(SITE, ring)
    members = urls(0, 20_000)
    for url in members:
        recorder.record(url, NOW)
    assert DemandStore(state, ring).flush(recorder, NOW) == 1
    read = MergedRing(state, SITE, ring)
    assert all(read.visited_within(url, HOUR, NOW) for url in members)
    others = urls(1_000_000, 1_020_000)
    rate = sum(read.visited_within(url, HOUR, NOW) for url in others) / len(others)
    # 20,000 trials at p = 1 %: σ = 0.07 %; the fixed URLs make the figure reproducible.
    assert 0.006 < rate < 0.015, rate


def test_nodes_flush_into_one_ring_and_the_read_ors_them(state):
    ring = config()
    recorders = [DemandRecorder(SITE, ring) for _ in range(3)]
    for n, recorder in enumerate(recorders):
        for url in urls(n * 100, n * 100 + 150):  # overlapping sets
            recorder.record(url, NOW - n * HOUR)
        recorder.record(f"{SITE}/shared", NOW)
    for n, recorder in enumerate(recorders):
        assert DemandStore(state, ring, node=f"node{n}").flush(recorder, NOW) == 1 + (n > 0)
        assert recorder.size() == 0  # merged slices are forgotten
    rows = sorted(k.decode() for k in state.client.scan_iter(match=state.key("{*}:*")))
    rows.remove(site_key(state, SITE, ROWS))
    assert len(rows) == 5
    # The rows are indexed as they are written, and their site listed: read without SCAN.
    assert sorted(k.decode() for k in state.client.smembers(site_key(state, SITE, ROWS))) == rows
    assert state.client.smembers(state.key("sites")) == {SITE.encode()}
    assert rows[0].startswith(f"crawlyx:_demand:{{{SITE}}}:")
    site, layout = parse_key(state, rows[0])
    assert site == SITE and layout.seconds == HOUR and layout.bits == ring.bits
    read = MergedRing(state, SITE, ring)
    read.refresh(NOW)
    assert read.rows == 5 and len(read.slices) == 3  # one union per slot
    assert all(read.visited_within(url, 3 * HOUR, NOW) for url in urls(0, 350))
    assert read.visited_within(f"{SITE}/shared", 60, NOW)
    # Node 2's URLs were visited two hours ago, not within the last hour.
    assert not any(read.visited_within(url, HOUR - 1, NOW) for url in urls(300, 350))
    # A flush again is an OR: idempotent.
    again = DemandRecorder(SITE, ring)
    again.record(f"{SITE}/p/0", NOW)
    DemandStore(state, ring, node="node0").flush(again, NOW)
    read.refresh(NOW)
    assert read.rows == 5


def test_a_read_is_cached_for_the_refresh_interval(state):
    ring = config(refresh_interval=60)
    read = MergedRing(state, SITE, ring)
    assert not read.visited_within(f"{SITE}/late", HOUR, NOW)
    recorder = DemandRecorder(SITE, ring)
    recorder.record(f"{SITE}/late", NOW)
    DemandStore(state, ring).flush(recorder, NOW)
    assert not read.visited_within(f"{SITE}/late", HOUR, NOW + 59)  # the cached read
    assert read.visited_within(f"{SITE}/late", HOUR, NOW + 60)


def test_a_process_reads_its_own_flushes_at_once(state):
    ring = config(refresh_interval=60)
    mine, other = DemandTracker(state, ring), DemandTracker(state, ring)  # two processes
    for process in (mine, other):  # both have read the ring: an empty one, cached
        assert not process.visited_within(SITE, f"{SITE}/a", HOUR, NOW)
    assert mine.read(SITE).rows == 0
    mine.record(SITE, f"{SITE}/a", "GPTBot", NOW)
    assert mine.flush(NOW) == 1
    assert mine.visited_within(SITE, f"{SITE}/a", HOUR, NOW + 1)
    assert mine.read(SITE).rows == 1  # no longer a cold ring
    mine.record(SITE, f"{SITE}/b", "GPTBot", NOW + 2)  # the same slice, a second flush
    assert mine.flush(NOW + 2) == 1
    assert mine.visited_within(SITE, f"{SITE}/b", HOUR, NOW + 3)
    assert not mine.visited_within(SITE, f"{SITE}/c", HOUR, NOW + 3)
    assert mine.read(SITE).read_at == NOW  # from the cache, not a new read
    # Another process sees them at its next refresh.
    assert not other.visited_within(SITE, f"{SITE}/a", HOUR, NOW + 59)
    assert other.visited_within(SITE, f"{SITE}/b", HOUR, NOW + 60)


def test_failed_flush_stays_dirty_and_lands_later(state):
    ring = config()
    dead = demand_state(redis.Redis(port=free_port(), retry=Retry(NoBackoff(), 0)))
    recorder = DemandRecorder(SITE, ring)
    for url in urls(0, 100):
        recorder.record(url, NOW)
    with pytest.raises(redis.ConnectionError):
        DemandStore(dead, ring).flush(recorder, NOW)
    assert recorder.size() == 1
    recorder.record(f"{SITE}/after", NOW + 1)
    assert DemandStore(state, ring).flush(recorder, NOW) == 1
    assert recorder.size() == 0
    read = MergedRing(state, SITE, ring)
    assert all(read.visited_within(url, HOUR, NOW) for url in [*urls(0, 100), f"{SITE}/after"])


def test_failed_flush_while_redis_is_down_lands_after_restart(own_redis):
    ring = config()
    state = demand_state(redis.Redis.from_url(own_redis.url, retry=Retry(NoBackoff(), 0)))
    recorder = DemandRecorder(SITE, ring)
    recorder.record(f"{SITE}/x", NOW)
    own_redis.stop()
    with pytest.raises(redis.ConnectionError):
        DemandStore(state, ring).flush(recorder, NOW)
    own_redis.start()
    assert DemandStore(state, ring).flush(recorder, NOW) == 1
    assert MergedRing(state, SITE, ring).visited_within(f"{SITE}/x", 60, NOW)
    state.client.close()


def test_slots_older_than_the_ring_are_skipped(state):
    ring = config(slices=4)
    recorder = DemandRecorder(SITE, ring)
    recorder.record(f"{SITE}/old", NOW - 10 * HOUR)
    recorder.record(f"{SITE}/recent", NOW - 2 * HOUR)
    # Written while they were in the ring (a flush drops slices that already left it).
    assert DemandStore(state, ring).flush(recorder, NOW - 9 * HOUR) == 2
    late = DemandRecorder(SITE, ring)
    late.record(f"{SITE}/gone", NOW - 10 * HOUR)
    assert DemandStore(state, ring).flush(late, NOW) == 0 and late.size() == 0
    read = MergedRing(state, SITE, ring)
    read.refresh(NOW)
    assert read.rows == 1  # the old row is still in Redis, not read
    assert not read.visited_within(f"{SITE}/old", 100 * HOUR, NOW)
    assert read.visited_within(f"{SITE}/recent", 3 * HOUR, NOW)
    # Rows expire one span after their slice ends (the clock here is in 2030).
    start = int((NOW - 2 * HOUR) // HOUR) * HOUR
    (key,) = state.client.scan_iter(match=state.key(f"*:{start}:*"))
    expected = start + HOUR + ring.span - time.time()
    assert abs(state.client.ttl(key) - expected) <= 2


def test_rows_found_expired_leave_the_index(state):
    ring, index = config(), f"crawlyx:_demand:{{{SITE}}}:rows"
    recorder = DemandRecorder(SITE, ring)
    for hours in (0, 1, 2):
        recorder.record(f"{SITE}/p", NOW - hours * HOUR)
    assert DemandStore(state, ring, node="n").flush(recorder, NOW) == 3
    keys = sorted(state.client.smembers(index))
    assert len(keys) == 3 and all(key.startswith(index[:-4].encode()) for key in keys)
    state.client.delete(keys[0])  # as if expired
    read = MergedRing(state, SITE, ring)
    read.refresh(NOW)
    assert read.rows == 2 and sorted(state.client.smembers(index)) == keys[1:]
    # Rows whose slice has left the ring are never fetched; those gone leave all the same,
    # and those still there stay.
    state.client.delete(keys[1])
    read.refresh(NOW + 2 * ring.span)
    assert read.rows == 0 and sorted(state.client.smembers(index)) == keys[2:]


def test_the_read_goes_row_by_row_and_yields(state, monkeypatch):
    import crawlyx.demand.store as store

    ring = config(slices=200)
    for n in range(120):  # 120 rows: slices of three nodes
        recorder = DemandRecorder(SITE, ring)
        recorder.record(f"{SITE}/{n}", NOW - (n // 3) * HOUR)
        DemandStore(state, ring, node=f"n{n % 3}").flush(recorder, NOW)
    fetched, sleeps = [], []
    monkeypatch.setattr(store.time, "sleep", sleeps.append)
    monkeypatch.setattr(MergedRing, "BATCH", 8)
    read = MergedRing(state, SITE, ring)
    real_mget = state.client.mget
    monkeypatch.setattr(
        state.client, "mget", lambda keys: fetched.append(len(keys)) or real_mget(keys)
    )
    read.refresh(NOW)
    assert read.rows == 120 and len(read.slices) == 40
    assert max(fetched) == 8 and sum(fetched) == 120  # a batch at a time
    assert len(sleeps) == 120 // MergedRing.YIELD_EVERY  # every 50 keys scanned
    assert all(read.visited_within(f"{SITE}/{n}", 40 * HOUR, NOW) for n in range(120))


def test_other_sites_other_sizings_and_bad_rows(state):
    small, large = config(slice_urls=100), config(slice_urls=5000)
    for ring, url in ((small, f"{SITE}/a"), (large, f"{SITE}/b")):
        recorder = DemandRecorder(SITE, ring)
        recorder.record(url, NOW)
        DemandStore(state, ring).flush(recorder, NOW)
    other = DemandRecorder(SITE + ":8443", small)
    other.record(f"{SITE}:8443/c", NOW)
    DemandStore(state, small).flush(other, NOW)
    start = int(NOW // HOUR) * HOUR
    state.client.set(row_key(state, SITE, Layout(start, HOUR, 999, 3), "bad"), b"short")
    read = MergedRing(state, SITE, small)  # reads rows of any sizing
    assert read.visited_within(f"{SITE}/a", HOUR, NOW)
    assert read.visited_within(f"{SITE}/b", HOUR, NOW)
    assert not read.visited_within(f"{SITE}:8443/c", HOUR, NOW)
    assert read.rows == 2  # the 8443 site's row and the short row are not merged


# -- the process's ring, built from settings, the extension ----------------------------------


def test_people_other_automation_and_crawlyx_are_not_visits(state):
    ring = DemandTracker(state, config(), bot="crawlyx")
    for bot in (None, "", "human", "other", "crawlyx", "Crawlyx"):
        assert not ring.record(SITE, f"{SITE}/{bot}", bot, NOW)
    assert ring.record(SITE, f"{SITE}/g", "Googlebot", NOW)
    assert ring.record(SITE, f"{SITE}/ahead", "Googlebot", NOW + 2 * HOUR)  # a clock ahead
    assert ring.recorded == 2 and ring.flush(NOW) == 2 and ring.dirty() == 0
    assert ring.visited_within(SITE, f"{SITE}/g", "1h", NOW)
    assert ring.visited_within(SITE, f"{SITE}/ahead", "1m", NOW)
    assert not ring.visited_within(SITE, f"{SITE}/human", "1h", NOW)


def test_a_tracker_from_settings_records_flushes_and_asks(state, redis_url):
    settings = Settings(crawlyx_settings(CRAWLYX_REDIS_URL=redis_url, CRAWLYX_DEMAND_SLICE="30m"))
    ring = DemandTracker.from_settings(settings, state)
    assert ring.config == RingConfig.from_settings(settings)
    now = time.time() // 1800 * 1800 + 1700  # the visit, 1000 s before, in the same slice
    assert ring.record(SITE, f"{SITE}/api", "GPTBot", now - 1000)
    assert not ring.record(SITE, f"{SITE}/person", None, now)
    assert not ring.record(SITE, f"{SITE}/self", "crawlyx", now)  # CRAWLYX_BOT_NAME's own
    assert not ring.visited_within(SITE, f"{SITE}/api", "6h", now)  # not flushed yet
    assert ring.flush() == 1
    assert ring.visited_within(SITE, f"{SITE}/api", "6h", now)  # its own flush, at once
    assert ring.visited_within(SITE, f"{SITE}/api", 900, now)  # same 30-minute slice
    assert not ring.visited_within(SITE, f"{SITE}/api", 60, now + 4 * HOUR)


def test_extension_is_off_by_default_and_flushes_when_on(state, redis_url):
    with pytest.raises(NotConfigured):
        DemandExtension.from_crawler(get_crawler(settings_dict=crawlyx_settings()))
    crawler = get_crawler(
        settings_dict=crawlyx_settings(CRAWLYX_DEMAND_ENABLED=True, CRAWLYX_REDIS_URL=redis_url)
    )
    ext = DemandExtension.from_crawler(crawler)
    ext.ring = DemandTracker.from_settings(crawler.settings, state)  # what spider_opened does
    ext.ring.record(SITE, f"{SITE}/e", "ClaudeBot")
    assert ext.flush()
    assert crawler.stats.get_value("crawlyx/demand/rows_merged") == 1
    assert crawler.stats.get_value("crawlyx/demand/recorded") == 1
    assert ext.ring.visited_within(SITE, f"{SITE}/e", "1h")
    with pytest.raises(NotConfigured):
        DemandExtension.from_crawler(
            get_crawler(settings_dict=crawlyx_settings(CRAWLYX_DEMAND_SLICE="x"))
        )
    with pytest.raises(ValueError, match="CRAWLYX_DEMAND_SLICE"):
        DemandExtension.from_crawler(
            get_crawler(
                settings_dict=crawlyx_settings(
                    CRAWLYX_DEMAND_ENABLED=True, CRAWLYX_DEMAND_SLICE="x"
                )
            )
        )


def test_extension_builds_its_ring_and_hands_it_to_the_recrawl(state, redis_url):
    crawler = get_crawler(
        settings_dict=crawlyx_settings(CRAWLYX_DEMAND_ENABLED=True, CRAWLYX_REDIS_URL=redis_url)
    )
    # The crawl's parts, their state the test's own: no spider names a job.
    parts = SimpleNamespace(state=state)
    ext = DemandExtension(crawler, parts, DemandExtension.check_settings(crawler.settings))
    recrawl = SimpleNamespace(demand=None, ladder=SimpleNamespace(enabled=False))
    ext.spider_opened(SimpleNamespace(recrawl=recrawl))
    try:
        assert isinstance(ext.ring, DemandTracker) and recrawl.demand is ext.ring
        assert ext.ring.state.client is state.client
    finally:
        ext.spider_closed(None)


def test_visits_feeds_the_ring_with_bots_only(state, redis_url, tmp_path):
    lines = [log_line(f"/docs/{i}", GOOGLE) for i in range(20)]
    lines += [log_line("/only-people", FIREFOX), log_line("/only-other", SEMRUSH)]
    lines += [log_line("/gpt", GPT)]
    ten_days_ago = datetime.now(UTC) - timedelta(days=10)  # breadth's, not the ring's
    lines += [log_line("/gpt-old", GPT, when=ten_days_ago)]
    log = tmp_path / "access.log"
    log.write_text("\n".join(lines) + "\n")
    result = scrapy("visits", "--site", SITE, str(log), "-s", "CRAWLYX_DEMAND_ENABLED=1",
                    redis_url=redis_url, cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr
    # Breadth counts SemrushBot (other) and the old line; the ring neither.
    assert "23 bot requests recorded" in result.stdout
    assert "21 demand visits (" in result.stdout  # 1 row, 2 across an hour's end
    ring = RingConfig.from_settings(Settings(crawlyx_settings()))
    read = MergedRing(state, SITE, ring)
    assert all(read.visited_within(f"{SITE}/docs/{i}", HOUR) for i in range(20))
    assert read.visited_within(f"{SITE}/gpt", HOUR)
    assert not read.visited_within(f"{SITE}/only-people", 2 * HOUR)
    assert not read.visited_within(f"{SITE}/only-other", 2 * HOUR)
    assert not read.visited_within(f"{SITE}/gpt-old", ring.span)
    # Off (the default), visits records breadth alone.
    empty_store(state)
    result = scrapy("visits", "--site", SITE, str(log), redis_url=redis_url, cwd=tmp_path)
    assert result.returncode == 0 and "demand" not in result.stdout
    assert not list(state.client.scan_iter(match=state.key("*")))


def test_visits_from_a_pipe_flushes_on_time_while_lines_keep_coming(state, redis_url, tmp_path):
    # As `tail -F access.log | scrapy visits -` sees a steady log: a line every 0.5 s,
    # never a pause as long as the flush interval.
    command = [sys.executable, "-m", "scrapy", "visits", "--site", SITE, "--flush-interval",
               "1", "-", "-s", f"CRAWLYX_REDIS_URL={redis_url}",
               "-s", "CRAWLYX_DEMAND_ENABLED=1"]  # fmt: skip
    clients = len(state.client.client_list())
    pipe = subprocess.PIPE
    proc = subprocess.Popen(command, stdin=pipe, stdout=pipe, stderr=pipe, text=True,
                            env=crawl_env(), cwd=tmp_path)  # fmt: skip
    try:
        deadline = time.monotonic() + 60  # a hang guard: the command connects at start
        while len(state.client.client_list()) == clients and proc.poll() is None:
            assert time.monotonic() < deadline, "the command never connected"
            time.sleep(0.05)
        # Lines until the rows are in Redis: flushed on the 1 s clock while they keep coming
        # (a minute of them, on however loaded a machine, is a hang).
        written, flushed = 0, False
        deadline = time.monotonic() + 60
        while not flushed and time.monotonic() < deadline:
            proc.stdin.write(log_line(f"/t/{written}", GPT) + "\n")
            proc.stdin.flush()
            written += 1
            time.sleep(0.5)
            flushed = any(state.client.scan_iter(match=state.key("*")))
    finally:
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert flushed, "nothing flushed while lines kept coming"
    assert f"{written} demand visits (" in out
    read = MergedRing(state, SITE, RingConfig.from_settings(Settings(crawlyx_settings())))
    assert all(read.visited_within(f"{SITE}/t/{i}", HOUR) for i in range(written))


def test_a_crawl_with_demand_on_flushes_and_records_none_of_its_own_fetches(site, crawl, state):
    result = crawl(
        f"start=http://127.0.0.1:{site.port}/start",
        "max_pages=5",
        settings={"CRAWLYX_DEMAND_ENABLED": "true"},
    )
    assert result.returncode == 0, result.log[-3000:]
    assert result.stat("crawlyx/demand/flushes") == "1"  # at close
    assert not list(state.client.scan_iter(match=state.key("*")))  # fetches are not visits
    bad = crawl(
        f"start=http://127.0.0.1:{site.port}/start",
        settings={"CRAWLYX_DEMAND_ENABLED": "true", "CRAWLYX_DEMAND_SLICE": "an hour"},
    )
    assert bad.returncode == 2 and "CRAWLYX_DEMAND_SLICE" in bad.log
    # The ring must be able to answer the ladder: a slice no longer than the fastest rung.
    slow = crawl(
        f"start=http://127.0.0.1:{site.port}/start",
        settings={"CRAWLYX_DEMAND_ENABLED": "true", "CRAWLYX_DEMAND_SLICE": "7h"},
    )
    assert slow.returncode == 2 and "no longer than the fastest rung (6h)" in slow.log


def test_a_timer_flush_counts_and_never_raises():
    from crawlyx.extensions import flush_counted

    stats = get_crawler(settings_dict=crawlyx_settings()).stats

    def fails(exc):
        def merge():
            raise exc

        return merge

    assert flush_counted(stats, "demand", lambda: 3)
    assert not flush_counted(stats, "demand", fails(redis.ConnectionError("down")))
    assert not flush_counted(stats, "demand", fails(ValueError("a bug")))
    assert stats.get_value("crawlyx/demand/flushes") == 1
    assert stats.get_value("crawlyx/demand/rows_merged") == 3
    assert stats.get_value("crawlyx/demand/flush_failures") == 2
