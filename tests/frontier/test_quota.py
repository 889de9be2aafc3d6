"""max_pages across processes: page slots taken from a Redis counter in blocks."""

from __future__ import annotations

import multiprocessing
import uuid

import redis

from crawlyx.frontier.quota import PageQuota


def test_exactly_the_limit_fits_and_the_last_one_says_full(redis_client):
    key = f"test-quota-{uuid.uuid4().hex[:8]}"
    quota = PageQuota(redis_client, key, 100)
    results = [quota.take() for _ in range(102)]
    assert [fits for fits, _ in results] == [True] * 100 + [False, False]
    assert [full for _, full in results][:99] == [False] * 99
    assert all(full for _, full in results[99:])
    assert int(redis_client.hget(key, "pages")) == 100
    assert quota.take() == (False, True)  # no round trip once exhausted
    redis_client.delete(key)


def test_a_limit_of_one(redis_client):
    key = f"test-quota-{uuid.uuid4().hex[:8]}"
    quota = PageQuota(redis_client, key, 1)
    assert quota.take() == (True, True)
    assert quota.take() == (False, True)
    redis_client.delete(key)


def test_unused_slots_go_back_and_a_resumed_job_gets_them(redis_client):
    key = f"test-quota-{uuid.uuid4().hex[:8]}"
    first = PageQuota(redis_client, key, 1000)
    assert first.take() == (True, False)
    taken = int(redis_client.hget(key, "pages"))
    assert taken == PageQuota.MAX_BLOCK  # a block at once: one round trip for 32 pages
    first.release()
    assert int(redis_client.hget(key, "pages")) == 1
    resumed = PageQuota(redis_client, key, 1000)
    assert sum(resumed.take()[0] for _ in range(1200)) == 999
    redis_client.delete(key)


def _crawl_pages(url: str, key: str, limit: int, results) -> None:
    quota = PageQuota(redis.Redis.from_url(url), key, limit)
    fitted = 0
    while True:
        fits, full = quota.take()
        fitted += fits
        if full:
            break
    quota.release()
    results.put(fitted)


def test_processes_sharing_a_limit_emit_exactly_the_limit(redis_url, redis_client):
    key = f"test-quota-{uuid.uuid4().hex[:8]}"
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    procs = [
        ctx.Process(target=_crawl_pages, args=(redis_url, key, 777, results)) for _ in range(4)
    ]
    for proc in procs:
        proc.start()
    counts = [results.get(timeout=60) for _ in procs]
    for proc in procs:
        proc.join(30)
    assert sum(counts) == 777
    redis_client.delete(key)
