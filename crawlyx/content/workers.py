"""The process pool that reads pages, off the fetch path.

Parsing, link extraction, main-content extraction and markdown conversion are
CPU-bound; markdownify alone costs more than fetching. They run in worker processes
(``CRAWLYX_MARKDOWN_WORKERS``, default one per core) while the reactor keeps
downloading, so both cores work and no download waits for a conversion. Workers run
at a lower priority than the crawl process: it and Redis wait on each other for every
claim and lease, and should not also wait for the CPU. Niced, not SCHED_IDLE: an idle
class worker gets nothing while anything else on the machine is busy, and the crawl
waits for its workers.

A worker that dies (the OOM killer, a crash in a parser's C code) breaks the whole
pool: every task in it fails, not only the one that killed it. The pool is rebuilt and
the tasks it held are read again, one at a time (see :meth:`PageWorkers.run`), so a
page that kills every worker reading it costs that page alone.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
import multiprocessing
import os
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from functools import partial

from crawlyx.content import LINK_STYLES
from crawlyx.content.sitemap import read_sitemap
from crawlyx.process import running


def _start_worker(crawl_pid: int) -> None:
    """Pool initializer: below the crawl process's priority, gone when it is, and ready
    to read (the page-reading code imported before the first page comes)."""
    os.nice(10)
    threading.Thread(target=_exit_with, args=(crawl_pid,), daemon=True).start()
    import numpy  # noqa: F401 - for the near-duplicate signatures

    import crawlyx.content.page  # noqa: F401


def _exit_with(crawl_pid: int) -> None:
    """A crawl process killed outright cannot stop its workers (nor they, waiting on the
    pool's queue, notice): they stop themselves, and the fork server follows."""
    while running(crawl_pid):
        time.sleep(1.0)
    os._exit(0)


def _started() -> None:
    """The warm-up task: submitting it makes the pool start a worker."""


# A big page leaves its worker with a heap as large as its parse (lxml's tree and the
# light tree the converter walks are many times the page). Freed, that memory stays with
# the process (the allocator keeps it for the next page) unless given back: after a page
# past TRIM_BYTES, or once the worker has grown TRIM_GROWTH since it last gave memory
# back (pages of a few hundred KB, one after another), the worker collects and returns
# its free memory to the system, so its size follows the page it reads, not the biggest
# page it ever read.
TRIM_BYTES = 1 << 20
TRIM_GROWTH = 32 << 20
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
_trimmed_at = [0]  # this worker's RSS after it last gave memory back


def read_page(page: str, url: str, scope: str | None, **options) -> dict:
    """:func:`crawlyx.content.page.analyze`, in a worker."""
    # Imported here: the workers have it (see _start_worker); the crawl process, which
    # never reads a page, does without the converter and its imports.
    from crawlyx.content.page import analyze

    try:
        return analyze(page, url, scope, **options)
    finally:
        if len(page) > TRIM_BYTES or _rss() > _trimmed_at[0] + TRIM_GROWTH:
            _give_back_memory()
            _trimmed_at[0] = _rss()


def _rss() -> int:
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE_SIZE
    except OSError:  # not Linux: only big pages trigger it
        return 0


def _give_back_memory() -> None:
    gc.collect()
    if _libc is not None:
        _libc.malloc_trim(0)


try:
    _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    _libc.malloc_trim  # noqa: B018 - glibc's; other C libraries have none
except (OSError, AttributeError):
    _libc = None


class WorkerDied(Exception):
    """A worker died twice with the task in flight, the second time reading it alone."""


# Deaths of the worker a task is alone with that make it a poison page.
POISON_DEATHS = 2


class PageWorkers:
    def __init__(
        self, workers: int, main_content: bool, links: str, crawler=None, neardup: bool = False
    ):
        if links not in LINK_STYLES:
            raise ValueError(
                f"CRAWLYX_MARKDOWN_LINKS must be one of {', '.join(LINK_STYLES)}, not {links!r}"
            )
        self.workers = max(1, workers)
        # neardup: each page's near-duplicate signature, for the link graph (crawlyx.graph).
        self.analyze = partial(read_page, main_content=main_content, links=links, neardup=neardup)
        self.crawler = crawler  # for its stats, if any
        self._pool: ProcessPoolExecutor | None = None
        self._alone: ProcessPoolExecutor | None = None  # one worker, for suspects
        self._one_at_a_time: asyncio.Lock | None = None

    @classmethod
    def from_settings(cls, settings, crawler=None) -> PageWorkers:
        return cls(
            settings.getint("CRAWLYX_MARKDOWN_WORKERS") or (os.cpu_count() or 1),
            settings.getbool("CRAWLYX_MARKDOWN_MAIN_CONTENT"),
            settings.get("CRAWLYX_MARKDOWN_LINKS"),
            crawler,
            neardup=settings.getbool("CRAWLYX_GRAPH_ENABLED"),
        )

    @classmethod
    def from_crawler(cls, crawler) -> PageWorkers:
        return cls.from_settings(crawler.settings, crawler)

    @property
    def pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = _new_pool(self.workers)
        return self._pool

    async def read(self, page: str, url: str, scope: str | None) -> dict:
        """:func:`crawlyx.content.page.analyze` of the page, in a worker."""
        return await self.run(self.analyze, page, url, scope)

    async def read_sitemap(self, body: bytes, max_bytes: int) -> tuple[str, list[str]]:
        """:func:`crawlyx.content.sitemap.read_sitemap` of the document, in a worker."""
        self._inc("crawlyx/workers/sitemaps")
        return await self.run(read_sitemap, body, max_bytes)

    async def run(self, fn, *args):
        """``fn(*args)`` in a worker, through the deaths of workers.

        When a worker dies, the pool fails every task it holds and is rebuilt. Which
        task killed it cannot be told, so each of them is a suspect, read again alone:
        one at a time, in a pool of one worker that reads nothing else. A task that
        kills the worker it is alone with twice killed it itself: it fails with
        :class:`WorkerDied` (its page recorded once as a ``parse`` error). Dying alone
        once proves nothing (the OOM killer may pick that worker, as any other), and an
        innocent task never shares a death with the culprit in the pool of one.
        """
        pool = self.pool
        try:
            return await asyncio.wrap_future(self._submit(pool, fn, *args))
        except BrokenProcessPool:
            self._rebuild(pool)
        if self._one_at_a_time is None:
            self._one_at_a_time = asyncio.Lock()
        async with self._one_at_a_time:
            for _ in range(POISON_DEATHS):
                self._inc("crawlyx/workers/reread")
                if self._alone is None:
                    self._alone = _new_pool(1)
                alone = self._alone
                try:
                    return await asyncio.wrap_future(alone.submit(fn, *args))
                except BrokenProcessPool:
                    self._alone = None
                    alone.shutdown(wait=False)
                    self._inc("crawlyx/workers/restarts")
        raise WorkerDied(f"a worker died reading it alone, {POISON_DEATHS} times")

    def _submit(self, pool: ProcessPoolExecutor, fn, *args) -> Future:
        try:
            return pool.submit(fn, *args)
        except BrokenProcessPool:  # broken before the task got there: not a suspect
            self._rebuild(pool)
            return self.pool.submit(fn, *args)

    def _rebuild(self, pool: ProcessPoolExecutor) -> None:
        """Replace the broken ``pool``, once whichever of its tasks notices first."""
        if self._pool is pool:
            self._pool = None
            pool.shutdown(wait=False)
            self._inc("crawlyx/workers/restarts")

    def _inc(self, key: str) -> None:
        if self.crawler is not None:
            self.crawler.stats.inc_value(key)

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
        for pool in (self._pool, self._alone):
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
        self._pool = self._alone = None


def _new_pool(workers: int) -> ProcessPoolExecutor:
    # forkserver: workers start from a clean interpreter, not a copy of the reactor,
    # its threads and its sockets.
    context = multiprocessing.get_context("forkserver")
    # Only this module is preloaded: the fork server lives as long as the crawl, and what
    # it imported would be counted again in its RSS (each worker imports the page-reading
    # code as it starts, see _start_worker).
    context.set_forkserver_preload(["crawlyx.content.workers"])
    return ProcessPoolExecutor(
        max_workers=workers,
        mp_context=context,
        initializer=_start_worker,
        initargs=(os.getpid(),),
    )
