"""A process that flushes breadth sketches, for tests/breadth/test_breadth.py's concurrency test.

Its own small module so that the spawned processes import crawlyx.breadth and redis
only, not the test module's Scrapy, hypothesis and fixtures.
"""

from __future__ import annotations

import sys
import time

import redis

from crawlyx.breadth import Recorder
from crawlyx.breadth.store import BreadthStore, breadth_state, utc_day

SITE = "https://docs.example.com"


def flush_worker(url, prefix, worker, workers, ready, start) -> None:
    client = redis.Redis.from_url(url)
    store = BreadthStore(breadth_state(client), shard=f"w{worker}")
    recorder = Recorder(SITE)
    today = utc_day(time.time())
    ready.put(worker)
    start.wait(30)
    began = time.perf_counter()
    for step in range(10):  # ten flushes each, all workers at once
        for i in range(worker, 250, workers):
            recorder.record("small", f"{prefix}/s/{i}/{step % 2}", today)
        for i in range(worker * 300 + step * 40, worker * 300 + step * 40 + 40):
            recorder.record("crossing", f"{prefix}/c/{i}", today)
        for i in range(step * 4000, step * 4000 + 4000):
            recorder.record("big", f"{prefix}/b/{(i * (worker + 1)) % 50_000}", today)
        recorder.record_corpus(f"{prefix}/b/{worker}-{step}")
        store.flush(recorder)
    print(f"worker {worker}: {time.perf_counter() - began:.2f}s", file=sys.stderr)
    client.close()
