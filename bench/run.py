"""Crawl the synthetic site with crawlyx, Crawlee for Python and a plain Scrapy spider.

    python bench/run.py --pages 2000 --latency-ms 20
    python bench/run.py --rss --pages 20000 --latency-ms 20   # RSS at 2,000 vs 20,000 pages

For each crawler: pages emitted, unique pages fetched, duplicate fetches (both counted by
the server), wall time from process start to exit and unique pages per second over it,
the time from the first request to the last as the server saw it ("fetch s") and unique
pages per second over that ("unique/fs", startup excluded), peak RSS of the crawler
process and of its page workers (the embedded redis-server is not the crawler and is
reported apart), the peak of the whole process tree's RSS (crawler and every descendant,
summed at the same sample, every 0.2 s: "tree MiB"), CPU seconds of the crawler process
and of its workers, and the crawler process's CPU milliseconds per unique page ("CPU
ms/pg"). The crawlers are ``bench/crawlee_spider.py`` (``--skip-crawlee``) and
``bench/baseline_spider.py`` (``--skip-baseline``) beside crawlyx. Everything listens on
and talks to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent


def start_site(pages: int, latency_ms: int) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "site.py"), "--pages", str(pages),
         "--latency-ms", str(latency_ms), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    line = proc.stdout.readline().strip()
    if not line.startswith("READY "):
        raise RuntimeError(f"site did not start: {line!r}")
    return proc, line.split(" ", 1)[1]


def site_call(base: str, path: str) -> dict:
    with urllib.request.urlopen(base + path.lstrip("/"), timeout=10) as response:
        body = response.read()
    return json.loads(body) if body.strip().startswith(b"{") else {}


def run_measured(command: list[str], cwd: Path, env: dict) -> dict:
    """Run a crawl; sample the RSS of it and its children until it exits."""
    started = time.monotonic()
    proc = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    main = psutil.Process(proc.pid)
    # "children": every descendant, "tree": the crawler and every descendant, each summed
    # at the same sample.
    peak = {"crawler": 0, "workers": 0, "redis": 0, "children": 0, "tree": 0}
    cpu: dict[int, tuple[str, float]] = {}  # pid -> (role, last seen user+system seconds)
    log_lines: list[str] = []
    reader = threading.Thread(target=lambda: log_lines.extend(proc.stderr), daemon=True)
    reader.start()
    while proc.poll() is None:
        try:
            crawler = main.memory_info().rss
            times = main.cpu_times()
            cpu[main.pid] = ("crawler", times.user + times.system)
            workers = redis = 0
            for child in main.children(recursive=True):
                try:
                    rss = child.memory_info().rss
                    # (the server's forks rename themselves: redis-aof-rewrite...)
                    role = "redis" if "redis-" in " ".join(child.cmdline()) else "workers"
                    times = child.cpu_times()
                except psutil.Error:  # a child that ended between the listing and now
                    continue
                cpu[child.pid] = (role, times.user + times.system)
                if role == "redis":
                    redis += rss
                else:
                    workers += rss
            sample = {
                "crawler": crawler,
                "workers": workers,
                "redis": redis,
                "children": workers + redis,
                "tree": crawler + workers + redis,
            }
            for key, value in sample.items():
                peak[key] = max(peak[key], value)
        except psutil.Error:
            pass
        time.sleep(0.2)
    reader.join(5)
    wall = time.monotonic() - started
    if proc.returncode != 0:
        sys.stderr.write("".join(log_lines[-40:]))
        raise RuntimeError(f"crawl failed: {' '.join(command)}")
    used = {
        role: sum(t for r, t in cpu.values() if r == role)
        for role in ("crawler", "workers", "redis")
    }
    return {"wall": wall, "peak": peak, "cpu": used, "log": "".join(log_lines)}


def crawl(
    name: str,
    base: str,
    out: Path,
    max_pages: int,
    workdir: Path,
    settings=(),
    start: str | None = None,
    arguments=(),
) -> dict:
    """Run one crawler ("crawlyx", "crawlee" or "scrapy") from ``start`` (default: ``base``)
    against the bench server at ``base`` (its ``/_reset`` and ``/_stats``); its figures."""
    start = start or base
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("SCRAPY_SETTINGS_MODULE", None)
    if name == "crawlyx":
        env["SCRAPY_SETTINGS_MODULE"] = "crawlyx.settings"
        command = [sys.executable, "-m", "scrapy", "crawl", "site", "-a", f"start={start}",
                   "-a", f"max_pages={max_pages}", "-O", str(out),
                   "-s", f"CRAWLYX_DATA_DIR={workdir / '.crawlyx'}"]  # fmt: skip
        for setting in settings:
            command += ["-s", setting]
        for argument in arguments:
            command += ["-a", argument]
    elif name == "crawlee":
        command = [sys.executable, str(ROOT / "bench" / "crawlee_spider.py"),
                   "--start", start, "--output", str(out),
                   "--max-pages", str(max_pages)]  # fmt: skip
    elif name == "scrapy":
        command = [sys.executable, "-m", "scrapy", "runspider",
                   str(ROOT / "bench" / "baseline_spider.py"), "-a", f"start={start}",
                   "-a", f"max_pages={max_pages}", "-O", str(out),
                   "-s", "REMOTE_CONTROL_ENABLED=False"]  # fmt: skip
    else:
        raise ValueError(f"unknown crawler {name!r}")
    site_call(base, "/_reset")
    result = run_measured(command, workdir, env)
    stats = site_call(base, "/_stats")
    pages = sum(1 for line in out.open() if line.strip())
    return {
        "name": name,
        "pages": pages,
        "unique": stats["resources"],
        "duplicates": stats["duplicate_fetches"],
        "bytes": stats["bytes"],
        "wall": result["wall"],
        "pages_per_s": pages / result["wall"],
        "unique_per_s": stats["resources"] / result["wall"],
        "fetching": stats["fetching_s"],
        "unique_per_fetch_s": stats["resources"] / max(stats["fetching_s"], 1e-9),
        **{f"rss_{k}": v / 2**20 for k, v in result["peak"].items()},
        **{f"cpu_{k}": v for k, v in result["cpu"].items()},
        "cpu_ms_per_page": 1000 * result["cpu"]["crawler"] / max(stats["resources"], 1),
        "log": result["log"],
    }


def print_rows(rows: list[dict]) -> None:
    header = (
        f"{'crawler':<10} {'pages':>7} {'unique':>7} {'dup fetches':>11} {'wall s':>7} "
        f"{'unique/s':>9} {'fetch s':>7} {'unique/fs':>9} {'RSS MiB':>8} {'workers':>8} "
        f"{'redis':>6} {'tree MiB':>8} {'CPU s':>6} {'workers':>8} {'CPU ms/pg':>9}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['name']:<10} {r['pages']:>7} {r['unique']:>7} {r['duplicates']:>11} "
            f"{r['wall']:>7.1f} {r['unique_per_s']:>9.1f} {r['fetching']:>7.1f} "
            f"{r['unique_per_fetch_s']:>9.1f} {r['rss_crawler']:>8.1f} "
            f"{r['rss_workers']:>8.1f} {r['rss_redis']:>6.1f} {r['rss_tree']:>8.1f} "
            f"{r['cpu_crawler']:>6.1f} {r['cpu_workers']:>8.1f} {r['cpu_ms_per_page']:>9.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=2000, help="pages on the site")
    parser.add_argument("--latency-ms", type=int, default=20)
    parser.add_argument("--max-pages", type=int, default=0, help="default: --pages")
    parser.add_argument("--skip-baseline", action="store_true", help="no plain Scrapy crawl")
    parser.add_argument("--skip-crawlee", action="store_true", help="no Crawlee crawl")
    parser.add_argument(
        "-s", dest="settings", action="append", default=[], metavar="NAME=VALUE",
        help="a setting for the crawlyx crawl (repeatable), e.g. -s CRAWLYX_GRAPH_ENABLED=0",
    )  # fmt: skip
    parser.add_argument(
        "-a", dest="arguments", action="append", default=[], metavar="NAME=VALUE",
        help="a spider argument for the crawlyx crawl (repeatable), e.g. -a chunks=512",
    )  # fmt: skip
    parser.add_argument(
        "--rss", action="store_true", help="crawlyx at 2,000 and at --pages pages: RSS ratio"
    )
    args = parser.parse_args()
    site, base = start_site(args.pages, args.latency_ms)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            if args.rss:
                # Each crawl in a directory of its own, as two users' would be: the second
                # one's embedded Redis without the first one's job.
                rows = []
                for n in (2000, args.pages):
                    own = work / f"rss-{n}"
                    own.mkdir()
                    rows.append(crawl("crawlyx", base, own / "pages.jsonl", n, own))
                for row in rows:
                    row["name"] = f"crawlyx@{row['pages']}"
                print_rows(rows)
                for part in ("crawler", "tree"):
                    ratio = rows[1][f"rss_{part}"] / rows[0][f"rss_{part}"]
                    print(f"{part} RSS at {args.pages} pages / at 2000 pages: {ratio:.2f}x")
                return
            max_pages = args.max_pages or args.pages
            rows = [
                crawl("crawlyx", base, work / "crawlyx.jsonl", max_pages, work, args.settings,
                      arguments=args.arguments)
            ]  # fmt: skip
            if not args.skip_crawlee:
                rows.append(crawl("crawlee", base, work / "crawlee.jsonl", max_pages, work))
            if not args.skip_baseline:
                rows.append(crawl("scrapy", base, work / "baseline.jsonl", max_pages, work))
            print(
                f"site: {args.pages} pages, {args.latency_ms} ms latency; cores: {os.cpu_count()}"
            )
            print_rows(rows)
            print()
            names = {"crawlee": "Crawlee", "scrapy": "plain Scrapy"}
            for other in rows[1:]:
                speedup = rows[0]["unique_per_s"] / other["unique_per_s"]
                steady = rows[0]["unique_per_fetch_s"] / other["unique_per_fetch_s"]
                print(f"unique pages/s, crawlyx / {names[other['name']]}: {speedup:.1f}x end to "
                      f"end (process start to exit), {steady:.1f}x while fetching")  # fmt: skip
    finally:
        site.terminate()
        site.wait(10)


if __name__ == "__main__":
    main()
