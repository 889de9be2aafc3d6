"""One job crawled by 1, 2 and 4 crawlyx processes, on one Redis server, then on a Cluster.

    python bench/cluster.py                                  # 20,000 pages, 1 ms latency
    python bench/cluster.py --pages 2000 --processes 1,2 --only cluster --shards 16

The bench site (``bench/site.py``) is crawled as one job by N ``scrapy crawl site``
processes started together (the same ``-a job=``, a fresh name each run, each its own
output file and data directory); the run is over when all of them have exited. First on
one ``redis-server``, then on a three-node Redis Cluster (``tests/cluster.py``); each run
starts from an empty Redis (FLUSHALL on every node). For each run: pages emitted (lines
of all outputs, and of each), items written twice (one URL in two lines, over all outputs), unique
pages fetched and duplicate fetches (as the site counted them), wall seconds from the
first process's start to the last one's exit, pages emitted per second over it, the CPU
seconds each Redis node spent during the run (``INFO cpu``: used_cpu_sys +
used_cpu_user, after minus before), the keys each node holds at the end (DBSIZE), the
processes' exit statuses and the ERROR lines and tracebacks of their logs.

``--shards N`` sets CRAWLYX_FRONTIER_SHARDS for both kinds (default: crawlyx's own
choice, 64 shards on a cluster, 1 on one server). Everything listens on and talks to
127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import ROOT, site_call, start_site  # noqa: E402

sys.path.insert(0, str(ROOT))

from tests.cluster import RedisClusterServer  # noqa: E402
from tests.conftest import RedisServer  # noqa: E402

PROXY_VARIABLES = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy")


class SingleServer(RedisServer):
    """One redis-server on a free loopback port, keeping nothing on disk, seen as the
    cluster is (``ports``, ``nodes()``)."""

    @property
    def ports(self) -> list[int]:
        return [self.port]

    def nodes(self) -> list[redis.Redis]:
        return [redis.Redis(host="127.0.0.1", port=self.port)]


def each_node(server, call) -> list:
    """``call(client)`` on every node of ``server``, in port order."""
    nodes = server.nodes()
    try:
        return [call(node) for node in nodes]
    finally:
        for node in nodes:
            node.close()


def cpu_seconds(node: redis.Redis) -> float:
    info = node.info("cpu")
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])


def crawl_env() -> dict:
    # A proxy in the environment would stop every crawl (the SSRF guard refuses it).
    env = {k: v for k, v in os.environ.items() if k not in PROXY_VARIABLES}
    env["SCRAPY_SETTINGS_MODULE"] = "crawlyx.settings"
    env["PYTHONPATH"] = str(ROOT)
    return env


def spawn(base: str, job: str, out: Path, data: Path, log: Path, settings: list[str]):
    command = [sys.executable, "-m", "scrapy", "crawl", "site", "-a", f"start={base}",
               "-a", f"job={job}", "-O", str(out), "-s", f"CRAWLYX_DATA_DIR={data}"]  # fmt: skip
    for setting in settings:
        command += ["-s", setting]
    with log.open("w") as handle:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            command,
            cwd=data.parent,
            env=crawl_env(),
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: its workers go with it
        )


def run_job(args, server, kind: str, processes: int, base: str, work: Path) -> dict:
    """One job crawled by ``processes`` processes at once on ``server``: its figures."""
    job = f"bench-{kind}-{processes}-{time.time_ns()}"
    home = work / job
    home.mkdir()
    each_node(server, lambda node: node.flushall())
    site_call(base, "/_reset")
    settings = [f"CRAWLYX_REDIS_URL={server.url}"]
    if args.shards is not None:
        settings.append(f"CRAWLYX_FRONTIER_SHARDS={args.shards}")
    before = each_node(server, cpu_seconds)
    started = time.monotonic()
    runs = []
    for i in range(processes):
        out, log = home / f"out-{i}.jsonl", home / f"crawl-{i}.log"
        proc = spawn(base, job, out, home / f"data-{i}", log, settings)
        runs.append((proc, out, log))
    deadline = started + args.timeout
    hung = []
    for proc, _, log in runs:
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            hung.append(log)
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    wall = time.monotonic() - started
    after = each_node(server, cpu_seconds)
    keys = each_node(server, lambda node: node.dbsize())
    stats = site_call(base, "/_stats")
    seen: Counter = Counter()
    broken = 0
    split = []  # lines of each process's output
    for _, out, _ in runs:
        lines = out.read_text(encoding="utf-8").splitlines() if out.exists() else []
        lines = [line for line in lines if line.strip()]
        split.append(len(lines))
        for line in lines:
            try:
                seen[json.loads(line)["url"]] += 1
            except (ValueError, KeyError):
                broken += 1
    errors = 0
    for proc, _, log in runs:
        text = log.read_text(encoding="utf-8", errors="replace")
        lines = [ln for ln in text.splitlines() if " ERROR: " in ln or ln.startswith("Traceback")]
        errors += len(lines)
        for line in lines[:3]:
            print(f"{kind} x{processes}, {log.name}: {line[:300]}", file=sys.stderr)
        if proc.returncode != 0 or log in hung:
            what = "killed after --timeout" if log in hung else f"exit {proc.returncode}"
            print(f"--- {kind} x{processes}, {log.name} ({what}), its tail:", file=sys.stderr)
            print("\n".join(text.splitlines()[-30:]), file=sys.stderr)
    pages = sum(seen.values()) + broken
    return {
        "processes": processes,
        "redis": kind,
        "pages": pages,
        "split": split,
        "twice": sum(n - 1 for n in seen.values()),
        "unique": stats["resources"],
        "dup_fetches": stats["duplicate_fetches"],
        "wall": wall,
        "pages_per_s": pages / wall,
        "cpu": [a - b for a, b in zip(after, before, strict=True)],
        "keys": keys,
        "exits": ",".join(str(proc.returncode) for proc, _, _ in runs),
        "errors": errors,
        "hung": len(hung),
    }


COLUMNS = (
    "procs",
    "redis",
    "pages",
    "per process",
    "twice",
    "unique",
    "dup fetches",
    "wall s",
    "pages/s",
    "Redis CPU s per node",
    "keys per node",
    "exits",
    "log errors",
)


def cells(r: dict) -> list[str]:
    return [
        str(r["processes"]),
        r["redis"],
        str(r["pages"]),
        "+".join(str(n) for n in r["split"]),
        str(r["twice"]),
        str(r["unique"]),
        str(r["dup_fetches"]),
        f"{r['wall']:.1f}",
        f"{r['pages_per_s']:.1f}",
        " / ".join(f"{c:.1f}" for c in r["cpu"]) + f" (sum {sum(r['cpu']):.1f})",
        " / ".join(str(k) for k in r["keys"]),
        r["exits"] + (f" ({r['hung']} killed)" if r["hung"] else ""),
        str(r["errors"]),
    ]


def print_rows(rows: list[dict], markdown: bool) -> None:
    table = [list(COLUMNS)] + [cells(r) for r in rows]
    if markdown:
        print("| " + " | ".join(table[0]) + " |")
        print("|" + " --- |" * len(COLUMNS))
        for line in table[1:]:
            print("| " + " | ".join(line) + " |")
        return
    widths = [max(len(line[i]) for line in table) for i in range(len(COLUMNS))]
    for n, line in enumerate(table):
        print(
            "  ".join(
                c.rjust(w) if i != 1 else c.ljust(w)
                for i, (c, w) in enumerate(zip(line, widths, strict=True))
            )
        )
        if n == 0:
            print("-" * (sum(widths) + 2 * (len(widths) - 1)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=20000, help="pages on the site")
    parser.add_argument("--latency-ms", type=int, default=1)
    parser.add_argument("--processes", default="1,2,4", help="crawl processes per run")
    parser.add_argument("--only", choices=("single", "cluster"), help="one Redis kind")
    parser.add_argument(
        "--shards", type=int, default=None, help="CRAWLYX_FRONTIER_SHARDS (default: auto)"
    )
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per run")
    parser.add_argument("--markdown", action="store_true", help="the table in Markdown")
    args = parser.parse_args(argv)
    counts = [int(n) for n in args.processes.split(",") if n.strip()]
    kinds = [args.only] if args.only else ["single", "cluster"]
    rows: list[dict] = []
    site, base = start_site(args.pages, args.latency_ms)
    try:
        with tempfile.TemporaryDirectory(prefix="crawlyx-cluster-") as tmp:
            work = Path(tmp)
            for kind in kinds:
                if kind == "single":
                    (work / "redis").mkdir(parents=True, exist_ok=True)
                    server = SingleServer(work / "redis")
                else:
                    server = RedisClusterServer(work / "redis-cluster")
                server.start()
                try:
                    for processes in counts:
                        row = run_job(args, server, kind, processes, base, work)
                        rows.append(row)
                        print(" ".join(cells(row)), file=sys.stderr, flush=True)
                finally:
                    server.stop()
    finally:
        site.terminate()
        site.wait(10)
    shards = "auto" if args.shards is None else str(args.shards)
    print(
        f"site: {args.pages} pages, {args.latency_ms} ms latency; frontier shards: {shards}; "
        f"cores: {os.cpu_count()}"
    )
    print_rows(rows, args.markdown)
    return 1 if any(r["hung"] or r["exits"].strip("0,") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
