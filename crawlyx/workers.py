"""The process pool that reads pages, off the fetch path.

Parsing, link extraction, main-content extraction and markdown conversion are
CPU-bound; markdownify alone costs more than fetching. They run in worker processes
(``CRAWLYX_MARKDOWN_WORKERS``, default one per core) while the reactor keeps
downloading, so both cores work and no download waits for a conversion. Workers run
at a lower priority than the crawl process: it and Redis wait on each other for every
claim and lease, and should not also wait for the CPU. Niced, not SCHED_IDLE: an idle
class worker gets nothing while anything else on the machine is busy, and the crawl
waits for its workers.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from weakref import WeakKeyDictionary

from scrapy import signals

from crawlyx.markdown import LINK_STYLES
from crawlyx.page import analyze
from crawlyx.process import running


def _start_worker(crawl_pid: int) -> None:
    """Pool initializer: below the crawl process's priority, and gone when it is."""
    os.nice(10)
    threading.Thread(target=_exit_with, args=(crawl_pid,), daemon=True).start()


def _exit_with(crawl_pid: int) -> None:
    """A crawl process killed outright cannot stop its workers (nor they, waiting on the
    pool's queue, notice): they stop themselves, and the fork server follows."""
    while running(crawl_pid):
        time.sleep(1.0)
    os._exit(0)


def _started() -> None:
    """The warm-up task: submitting it makes the pool start a worker."""


class PageWorkers:
    def __init__(self, workers: int, main_content: bool, links: str):
        if links not in LINK_STYLES:
            raise ValueError(
                f"CRAWLYX_MARKDOWN_LINKS must be one of {', '.join(LINK_STYLES)}, not {links!r}"
            )
        self.workers = max(1, workers)
        self.analyze = partial(analyze, main_content=main_content, links=links)
        self._pool: ProcessPoolExecutor | None = None

    @classmethod
    def from_settings(cls, settings) -> PageWorkers:
        return cls(
            settings.getint("CRAWLYX_MARKDOWN_WORKERS") or (os.cpu_count() or 1),
            settings.getbool("CRAWLYX_MARKDOWN_MAIN_CONTENT"),
            settings.get("CRAWLYX_MARKDOWN_LINKS"),
        )

    @property
    def pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            # forkserver: workers start from a clean interpreter, not a copy of the
            # reactor, its threads and its sockets.
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(["crawlyx.page"])
            self._pool = ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=context,
                initializer=_start_worker,
                initargs=(os.getpid(),),
            )
        return self._pool

    async def read(self, page: str, url: str, scope: str | None) -> dict:
        """:func:`crawlyx.page.analyze` of the page, in a worker."""
        return await asyncio.wrap_future(self.pool.submit(self.analyze, page, url, scope))

    def warm_up(self) -> None:
        """Start the workers now, before the first page is there to read, from a thread:
        starting them waits for the fork server to import the page-reading code."""
        threading.Thread(
            target=self._start_workers, args=(self.pool,), name="crawlyx-warm-up", daemon=True
        ).start()

    def _start_workers(self, pool: ProcessPoolExecutor) -> None:
        try:
            for _ in range(self.workers):
                pool.submit(_started)
        except RuntimeError:  # the crawl ended first: the pool is shut down
            pass

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


_workers: WeakKeyDictionary = WeakKeyDictionary()


def page_workers(crawler) -> PageWorkers:
    """The crawl's one pool, built on first use and shut down when the engine stops."""
    workers = _workers.get(crawler)
    if workers is None:
        workers = _workers[crawler] = PageWorkers.from_settings(crawler.settings)
        crawler.signals.connect(workers.close, signal=signals.engine_stopped)
    return workers
