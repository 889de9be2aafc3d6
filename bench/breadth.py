"""Crawl breadth: µs per record on the hot path, and accuracy from 1 to 10,000,000 URLs.

    python bench/breadth.py                  # speed + accuracy sweep to 10M (~30 s)
    python bench/breadth.py --max 1000000    # a shorter sweep
    python bench/breadth.py --redis-url redis://127.0.0.1:6379/0   # + Lua merge time

Speed: Recorder.record (day check, dict lookup, BLAKE2b-64, register update) against
datasketch's own HyperLogLogPlusPlus.update with the same hash (identical registers)
and with its default SHA-1 hash. Accuracy: one stream of real URL hashes, the estimate
checked at every 50 up to 60,000 (through the linear counting → HLL++ switch at
~11,500 and plain HLL's at 2.5 × M ≈ 41,000), then every 0.5 %; plus plain HLL's
estimator on the same registers around 41,000, over several streams, for contrast.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from datasketch import HyperLogLog, HyperLogLogPlusPlus

from crawlyx.breadth import Recorder, Sketch, hash64

DAY = "2030-01-01"


def per_record(fn, items) -> float:
    start = time.perf_counter()
    for item in items:
        fn(item)
    return (time.perf_counter() - start) / len(items) * 1e6


def speed(n: int) -> None:
    items = [f"https://docs.example.com/section/{i % 977}/page-{i}?v={i % 13}" for i in range(n)]
    recorder = Recorder("https://docs.example.com")

    def record(url, record=recorder.record):
        record("GPTBot", url, DAY)

    warm = [f"https://docs.example.com/warm/{i}" for i in range(5000)]
    per_record(record, warm)  # past the exact set: the steady state
    print(f"record, new URLs (steady state)      {per_record(record, items):6.2f} µs")
    print(f"record, the same URLs again          {per_record(record, items):6.2f} µs")
    small = Recorder("https://docs.example.com")
    exact = items[:1000]
    print(
        f"record, first 1,000 (exact set too)  "
        f"{per_record(lambda u: small.record('GPTBot', u, DAY), exact):6.2f} µs"
    )
    ours = HyperLogLogPlusPlus(p=14, hashfunc=hash64)
    encoded = [url.encode() for url in items]
    print(f"datasketch update, BLAKE2b-64         {per_record(ours.update, encoded):6.2f} µs")
    default = HyperLogLogPlusPlus(p=14)
    print(f"datasketch update, default SHA-1      {per_record(default.update, encoded):6.2f} µs")
    sketch = Sketch()
    for url in items:
        sketch.add(url)
    same = bytes(sketch.registers) == ours.reg.astype(np.uint8).tobytes()
    print(f"registers identical to datasketch's:  {same}")


SHOWN = (100, 5000, 41_000, 100_000, 1_000_000, 10_000_000)


def checkpoints(limit: int) -> list[int]:
    points = list(range(1, 2001)) + list(range(2050, min(limit, 60_000) + 1, 50))
    n = points[-1]
    while n < limit:
        n = min(int(n * 1.005) + 1, limit)
        points.append(n)
    return sorted({p for p in (*points, *SHOWN) if p <= limit})


def accuracy(limit: int) -> None:
    sketch, at = Sketch(), 0
    worst: dict[str, tuple[float, int]] = {}
    bands = [(1, 1024, "1..1,024 (exact)"), (1025, 11_500, "1,025..11,500 (linear counting)"),
             (11_501, 60_000, "11,501..60,000 (switch, bias-corrected)"),
             (60_001, 1_000_000, "60,001..1M"), (1_000_001, 10_000_000, "1M..10M")]  # fmt: skip
    started = time.perf_counter()
    for target in checkpoints(limit):
        add = sketch.add
        for i in range(at, target):
            add(f"https://sweep.example/p/{i}")
        at = target
        estimate = sketch.estimate()
        error = (estimate - target) / target
        for low, high, name in bands:
            if low <= target <= high and abs(error) >= abs(worst.get(name, (0.0, 0))[0]):
                worst[name] = (error, target)
        if target in SHOWN:
            print(f"  n={target:>10,}  estimate {estimate:>12,.0f}  error {error:+.3%}")
    print(f"  ({len(checkpoints(limit))} checkpoints in {time.perf_counter() - started:.1f} s)")
    for _, _, name in bands:
        if name in worst:
            error, n = worst[name]
            print(f"  worst in {name:<42} {error:+.3%} at n={n:,}")


def plain_hll_bias(streams: int = 12) -> None:
    """Mean error of plain HLL's estimator vs HLL++'s on the same registers."""
    points = [30_000, 36_000, 41_000, 46_000, 55_000]
    plain = {n: [] for n in points}
    plus = {n: [] for n in points}
    for seed in range(streams):
        sketch, at = Sketch(), 0
        for target in points:
            for i in range(at, target):
                sketch.add(f"https://s{seed}.example/{i}")
            at = target
            registers = np.frombuffer(sketch.registers, dtype=np.int8).copy()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                plain[target].append(HyperLogLog(reg=registers).count() / target - 1)
            plus[target].append(sketch.estimate() / target - 1)
    print(
        f"  {'n':>8}  {'plain HLL mean error':>22}  {'HLL++ mean error':>18}  ({streams} streams)"
    )
    for n in points:
        print(f"  {n:>8,}  {np.mean(plain[n]):>+22.3%}  {np.mean(plus[n]):>+18.3%}")


def lua_merge(url: str) -> None:
    import redis

    from crawlyx.breadth.store import BreadthStore, breadth_state, utc_day

    state = breadth_state(redis.Redis.from_url(url))
    store = BreadthStore(state)
    site = f"https://bench-{time.time_ns()}.example"
    recorders, today = [], utc_day(time.time())
    for shard in range(20):
        recorder = Recorder(site)
        for i in range(shard * 5000, shard * 5000 + 20_000):
            recorder.record("bot", f"{site}/{i}", today)
        recorders.append(recorder)
    start = time.perf_counter()
    for recorder in recorders:
        store.flush(recorder)
    took = (time.perf_counter() - start) / len(recorders) * 1000
    print(f"Lua max-merge of one 16 KiB sketch into its row: {took:.2f} ms (round trip)")
    state.delete_all()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max", type=int, default=10_000_000, help="sweep up to this many")
    parser.add_argument("--speed-n", type=int, default=300_000, help="URLs per speed run")
    parser.add_argument("--redis-url", help="also time the Lua merge on this Redis")
    args = parser.parse_args()
    print("µs per record (one URL):")
    speed(args.speed_n)
    print(f"accuracy, one stream of real URL hashes up to {args.max:,}:")
    accuracy(args.max)
    print("plain HLL vs HLL++ around the switch (2.5 × 16,384 ≈ 41,000):")
    plain_hll_bias()
    if args.redis_url:
        lua_merge(args.redis_url)


if __name__ == "__main__":
    main()
