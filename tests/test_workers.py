"""The page-reading pool: real worker processes, below the crawl process's priority."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import subprocess
import sys
import time

import pytest

from crawlyx.fingerprint import url_fingerprint
from crawlyx.process import running
from crawlyx.workers import PageWorkers


def _priority() -> int:
    return os.getpriority(os.PRIO_PROCESS, 0)


def test_workers_read_pages_at_a_lower_priority():
    workers = PageWorkers(1, main_content=True, links="inline")
    try:
        page = "<html><body><h1>Hi</h1><p>Text <a href='/b'>b</a></p></body></html>"
        read = asyncio.run(workers.read(page, "http://127.0.0.1:9/a", "http://127.0.0.1:9"))
        assert read["markdown"] == "# Hi\n\nText [b](http://127.0.0.1:9/b)\n"
        assert list(read["links"]) == ["http://127.0.0.1:9/b"]
        assert read["links"]["http://127.0.0.1:9/b"] == (
            "http://127.0.0.1:9/b",
            url_fingerprint("http://127.0.0.1:9/b"),
        )
        nice = workers.pool.submit(_priority).result(timeout=30)
        assert nice >= min(19, os.getpriority(os.PRIO_PROCESS, 0) + 10)
    finally:
        workers.close()


def test_bad_link_style_is_refused():
    with pytest.raises(ValueError, match="CRAWLYX_MARKDOWN_LINKS"):
        PageWorkers(1, main_content=True, links="footnotes")


def _start_and_report(results) -> None:
    workers = PageWorkers(2, main_content=True, links="inline")
    pids = [workers.pool.submit(os.getpid).result(timeout=60) for _ in range(4)]
    results.put(sorted(set(pids)))
    time.sleep(60)  # killed before this ends


def test_workers_stop_when_the_crawl_process_is_killed():
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    crawl = ctx.Process(target=_start_and_report, args=(results,))
    crawl.start()
    pids = results.get(timeout=60)
    assert pids and all(running(pid) for pid in pids)
    os.kill(crawl.pid, signal.SIGKILL)
    crawl.join(10)
    deadline = time.monotonic() + 15
    while any(running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(running(pid) for pid in pids), "workers outlived the crawl process"


def test_a_zombie_is_not_running():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    while running(child.pid) and time.monotonic() < deadline:
        time.sleep(0.05)  # exited: a zombie until it is reaped below
    assert not running(child.pid)
    child.wait()
    assert running(os.getpid())
