"""Three crawl processes of one job share each host's politeness budget: its window, its
Crawl-delay and its backing off (crawlyx/middlewares/budget.py), as the server sees it."""

from __future__ import annotations

import subprocess
import threading
import time

from tests.conftest import CrawlResult, crawl_command, crawl_env, read_items
from tests.middlewares.test_window import FAST, NO_ROBOTS, Hostile, page

PROCESSES = 3


def crawl_together(tmp_path, redis_url, server, job: str, settings: dict) -> list[CrawlResult]:
    """Run PROCESSES crawls of one job against ``server`` at once, to the end."""
    procs, outs = [], []
    for n in range(PROCESSES):
        out = tmp_path / f"{job}-{n}.jsonl"
        command = crawl_command(
            out,
            f"start={server.base}/",
            f"job={job}",
            "sitemap=0",
            settings={"CRAWLYX_REDIS_URL": redis_url, **FAST, **settings},
        )
        procs.append(
            subprocess.Popen(
                command, cwd=tmp_path, env=crawl_env(), stderr=subprocess.PIPE, text=True
            )
        )
        outs.append(out)
    logs = [proc.communicate(timeout=120)[1] for proc in procs]
    results = [
        CrawlResult(proc.returncode, read_items(out), log)
        for proc, out, log in zip(procs, outs, logs, strict=True)
    ]
    for result in results:
        assert result.returncode == 0, result.log[-3000:]
    return results


def test_crawl_delay_holds_across_processes(tmp_path, redis_url):
    # The start page takes 2 s, so that all three processes are up and asking for work
    # by the time its links are queued.
    pages = [f"/p{i}" for i in range(9)]

    def respond(path, hit):
        if path == "/robots.txt":
            return 200, {}, "User-agent: *\nCrawl-delay: 1\n", 0
        if path == "/":
            return 200, {}, page(pages), 2.0
        return 200, {}, page(), 0

    with Hostile(respond) as server:
        results = crawl_together(tmp_path, redis_url, server, "delayed", {})
    urls = [url.removeprefix(server.base) for result in results for url in result.urls]
    assert sorted(urls) == sorted(["/", *pages])
    assert sum(1 for result in results if result.items) >= 2  # the processes shared it
    fetches = [(t, path) for t, path, _ in sorted(server.log) if path != "/robots.txt"]
    assert len(fetches) == 10
    gaps = [(round(b - a, 3), p) for (a, _), (b, p) in zip(fetches, fetches[1:], strict=False)]
    # Spaced at the start in the crawls, seen as they arrive here: a fifth of slack for
    # how long each request travels on a busy machine.
    assert min(gap for gap, _ in gaps) >= 0.8, gaps


def test_a_host_answering_429_backs_off_as_for_one_process(tmp_path, redis_url):
    # 60 pages of 0.1 s each. From the 10th page request on, the host answers every
    # request with a 429 for 4.5 s. One window of 4 shared by three processes: never
    # more than 4 requests at once (three windows would allow 12); the 429s halve it to
    # the minimum, 1, in two decreases counted across all processes (each halving
    # its own window would make six); once the processes have heard (they report every
    # 0.25 s; 2.5 s leaves a busy machine time), the host sees one request at a time,
    # as from one process at its minimum.
    pages = [f"/p{i}" for i in range(60)]
    lock = threading.Lock()
    phase = {"hits": 0, "start": None, "late": 0, "late_max": 0}

    def respond(path, hit):
        if path == "/robots.txt":
            return NO_ROBOTS
        if path == "/":
            return 200, {}, page(pages), 0
        now = time.monotonic()
        with lock:
            phase["hits"] += 1
            if phase["start"] is None and phase["hits"] >= 10:
                phase["start"] = now
            start = phase["start"]
            if start is not None and now < start + 4.5:
                if now > start + 2.5:
                    phase["late"] += 1
                    phase["late_max"] = max(phase["late_max"], server.inflight)
                return 429, {}, "slow down", 0.05
        return 200, {}, page(), 0.1

    settings = {
        "CRAWLYX_WINDOW_MIN": 1,
        "CRAWLYX_WINDOW_START": 4,
        "CRAWLYX_WINDOW_MAX": 4,
        "CRAWLYX_WINDOW_GROW_AFTER": 1000,
    }
    with Hostile(respond) as server:
        results = crawl_together(tmp_path, redis_url, server, "limited", settings)
    assert server.max_inflight <= 4
    assert sum(int(result.stat("crawlyx/window/shrinks") or 0) for result in results) == 2
    assert phase["late"] >= 3, phase  # the host was asked during the late 429s
    assert phase["late_max"] <= 1, phase
    assert sum(1 for result in results if result.items) >= 2  # the processes shared it
