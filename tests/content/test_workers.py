"""The page-reading pool: real worker processes, below the crawl process's priority."""

from __future__ import annotations

import asyncio
import gc
import multiprocessing
import os
import signal
import struct
import subprocess
import sys
import time

import psutil
import pytest
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler

from crawlyx.content.workers import PageWorkers, WorkerDied
from crawlyx.frontier.fingerprint import url_fingerprint
from crawlyx.process import running
from tests.conftest import Gate, crawl_command, crawl_env, read_items
from tests.sites.site import SiteServer


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


def _settled() -> tuple[int, int]:
    from crawlyx.content import workers

    return gc.get_freeze_count(), workers._trimmed_at[0]


def test_a_worker_starts_with_its_imports_out_of_the_collectors_sight():
    """What a worker imported is frozen (a full collection does not walk it), and its
    size then is where its growth counts from: its first page gives nothing back."""
    workers = PageWorkers(1, main_content=True, links="inline")
    try:
        frozen, base = workers.pool.submit(_settled).result(timeout=30)
        assert frozen > 10_000  # lxml's, numpy's and the reader's objects
        assert base > 20 << 20  # an interpreter with them: tens of MiB
    finally:
        workers.close()


# A crawl run as the `scrapy` (or `crawlyx`) command: its main module is a script that
# imports Scrapy.
SCRIPT_MAIN = """
import asyncio

import scrapy.cmdline  # noqa: F401

from crawlyx.content.workers import PageWorkers
from tests.content.loaded import imported


async def main(workers):
    return await asyncio.gather(workers.run(imported, "scrapy"), workers.run(imported, "lxml"))


if __name__ == "__main__":
    workers = PageWorkers(1, main_content=True, links="inline")
    try:
        print(*asyncio.run(main(workers)))
    finally:
        workers.close()
"""


@pytest.mark.parametrize("how", [["crawl_script.py"], ["-m", "crawl_script"]])
def test_workers_of_a_crawl_run_as_a_script_do_without_scrapy(tmp_path, how):
    # multiprocessing would import the script or module again in each worker to rebuild
    # its main module (the `scrapy` command's, scrapyd's runner): all of Scrapy and
    # Twisted, for nothing.
    (tmp_path / "crawl_script.py").write_text(SCRIPT_MAIN)
    done = subprocess.run(
        [sys.executable, *how],
        cwd=tmp_path,
        env=crawl_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False", "True"]  # the page-reading code, and no Scrapy


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


def _read_or_die(page: str) -> str:
    """Reads a page slowly enough for others to be in flight with it; dies on poison."""
    time.sleep(0.05)
    if page.startswith("poison"):
        os._exit(1)  # as the OOM killer would: no exception, no clean-up
    if page.startswith("unlucky:"):  # its worker is killed the first two times it is read
        marks = page.split(":", 1)[1]
        with open(marks, "a") as file:
            file.write("x")
        if os.path.getsize(marks) <= 2:
            os._exit(1)
    return page.upper()


def _read_all(workers: PageWorkers, pages: list[str]) -> list:
    async def read_all():
        return await asyncio.gather(
            *(workers.run(_read_or_die, page) for page in pages), return_exceptions=True
        )

    try:
        return asyncio.run(read_all())
    finally:
        workers.close()


def _stats_crawler():
    crawler = get_crawler()
    crawler.stats = MemoryStatsCollector(crawler)
    return crawler


def test_a_page_that_kills_its_worker_fails_alone():
    crawler = _stats_crawler()
    workers = PageWorkers(2, main_content=True, links="inline", crawler=crawler)
    pages = [f"page-{i}" for i in range(12)]
    pages.insert(5, "poison")
    results = dict(zip(pages, _read_all(workers, pages), strict=True))
    assert isinstance(results.pop("poison"), WorkerDied)
    assert results == {page: page.upper() for page in results}
    # The shared pool once, then twice the pool where the poison page was read alone.
    assert crawler.stats.get_value("crawlyx/workers/restarts") == 3
    assert 1 <= crawler.stats.get_value("crawlyx/workers/reread") <= len(pages)


def test_a_page_whose_lone_worker_is_killed_once_is_read(tmp_path):
    # Killed in the shared pool, then once alone (the OOM killer picks that worker): a
    # third reading, alone, succeeds, and the page is not taken for a poison page.
    workers = PageWorkers(2, main_content=True, links="inline")
    page = f"unlucky:{tmp_path / 'marks'}"
    [result] = _read_all(workers, [page])
    assert result == page.upper()
    assert (tmp_path / "marks").read_text() == "xxx"


def test_two_poison_pages_take_no_innocent_page_with_them():
    workers = PageWorkers(2, main_content=True, links="inline")
    pages = [f"page-{i}" for i in range(16)]
    pages[3], pages[9] = "poison-a", "poison-b"
    results = dict(zip(pages, _read_all(workers, pages), strict=True))
    assert {page for page, result in results.items() if isinstance(result, WorkerDied)} == {
        "poison-a",
        "poison-b",
    }
    assert all(results[page] == page.upper() for page in pages if "poison" not in page)


def _killed_mid_result(page: str) -> str:
    """Reads a page; on "cut", its worker is killed halfway through sending the result:
    the message's length is in the pipe, a few of its bytes, and the pipe's lock is held
    by a dead process."""
    time.sleep(0.05)
    if page == "cut":
        frame = sys._getframe()
        while frame.f_code.co_name != "_process_worker":  # concurrent.futures' worker loop
            frame = frame.f_back
        results = frame.f_locals["result_queue"]
        results._wlock.acquire()
        os.write(results._writer.fileno(), struct.pack("!i", 1 << 16) + b"cut short")
        os.kill(os.getpid(), signal.SIGKILL)
    return page.upper()


def test_a_worker_killed_while_sending_its_result_stalls_no_read():
    # The pool's thread would wait for the rest of the message for ever, and every other
    # worker for the lock: the pool is broken, its reads read again.
    crawler = _stats_crawler()
    workers = PageWorkers(2, main_content=True, links="inline", crawler=crawler)
    pages = [f"page-{i}" for i in range(8)]
    pages.insert(3, "cut")

    async def read_all():
        reads = (workers.run(_killed_mid_result, page) for page in pages)
        return await asyncio.wait_for(asyncio.gather(*reads, return_exceptions=True), 60)

    try:
        results = dict(zip(pages, asyncio.run(read_all()), strict=True))
    finally:
        workers.close()
    assert isinstance(results.pop("cut"), WorkerDied)  # it killed its worker alone, twice
    assert results == {page: page.upper() for page in results}
    assert crawler.stats.get_value("crawlyx/workers/unstuck") == 3  # the shared pool, twice alone


def _page_workers(crawl_pid: int) -> list[psutil.Process]:
    """The crawl's page workers: the children it spawned with multiprocessing."""
    workers = []
    for child in psutil.Process(crawl_pid).children():
        try:  # a child may end (or be a zombie not yet reaped) while it is looked at
            if "multiprocessing.spawn" in " ".join(child.cmdline()):
                workers.append(child)
        except psutil.Error:
            continue
    return workers


def _second_half(host: str, rid: str) -> bool:
    return rid.startswith("/gen/") and int(rid.removeprefix("/gen/")) >= 30


def test_a_killed_worker_loses_no_page(tmp_path, redis_url):
    with SiteServer(generated=60, latency=0.1) as site:
        # Half the generated pages wait until the worker is killed: pages are left to read
        # after it, however fast the crawl got there.
        gate = Gate(site, "respond", _second_half)
        out = tmp_path / "pages.jsonl"
        settings = {"CRAWLYX_REDIS_URL": redis_url, "CRAWLYX_MARKDOWN_WORKERS": 2}
        command = crawl_command(
            out, f"start=http://127.0.0.1:{site.port}/start", "sitemap=0", settings=settings
        )
        proc = subprocess.Popen(
            command, cwd=tmp_path, env=crawl_env(), stderr=subprocess.PIPE, text=True
        )
        try:
            deadline = time.monotonic() + 60
            workers = []
            while time.monotonic() < deadline and proc.poll() is None:
                workers = _page_workers(proc.pid)
                if workers and sum(site.counts.values()) >= 20:
                    break
                time.sleep(0.05)
            assert workers and proc.poll() is None, "no worker to kill mid-crawl"
            os.kill(workers[0].pid, signal.SIGKILL)  # as the OOM killer would
            gate.open()
            log = proc.communicate(timeout=120)[1]
        finally:
            gate.open()
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        assert proc.returncode == 0, log[-2000:]
        urls = [item["url"] for item in read_items(out)]
    assert len(urls) == len(set(urls)), "a page was emitted twice"
    assert set(urls) == site.expected_pages() - {f"{site.base}/orphan", f"{site.base}/sitemap-only"}
    assert "'crawlyx/workers/restarts': " in log, log[-3000:]
    assert "crawlyx/error/parse" not in log
