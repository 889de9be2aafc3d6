"""The page-reading pool: real worker processes, below the crawl process's priority."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import time

import pytest

from crawlyx.fingerprint import url_fingerprint
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
    assert pids and all(_alive(pid) for pid in pids)
    os.kill(crawl.pid, signal.SIGKILL)
    crawl.join(10)
    deadline = time.monotonic() + 15
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_alive(pid) for pid in pids), "workers outlived the crawl process"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by the fork server) has stopped too.
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split(")")[-1].split()[0] != "Z"
