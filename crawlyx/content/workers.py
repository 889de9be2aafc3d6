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

A read has a time budget (``CRAWLYX_READ_TIMEOUT``): a page that would hold a worker
for hours (a shape the reader has no linear path for) holds it that long at most. Each
worker writes on its pool's board (shared memory) which read it is on and until when;
a thread of the crawl process looks every fraction of the budget and kills a worker
past its deadline. That breaks the pool like any death, but its cause is known: the
read fails with :class:`ReadTimeout`, and the other reads the pool held are read again
in a new one, not suspected.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
import itertools
import multiprocessing
import os
import signal
import sys
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from functools import partial

from crawlyx.content import LINK_STYLES
from crawlyx.content.board import Board
from crawlyx.content.sitemap import read_sitemap
from crawlyx.process import running


def _start_worker(crawl_pid: int, board: Board | None = None) -> None:
    """Pool initializer: deaf to Ctrl-C, below the crawl process's priority, gone when
    it is, on its pool's board, and ready to read (the page-reading code imported before
    the first page comes)."""
    global _board
    # A Ctrl-C in the terminal reaches the whole process group: the crawl process pauses
    # the crawl, and the page a worker is reading is still wanted.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_exit_with, args=(crawl_pid,), daemon=True).start()
    if board is not None:
        board.join()
        _board = board
    import numpy  # noqa: F401 - for the near-duplicate signatures

    # The page reader in the workers only: markdownify and BeautifulSoup, 0.2 s of imports.
    import crawlyx.content.page  # noqa: F401

    # What the imports made lives as long as the worker: kept out of the cycle
    # collector's sight (a full collection, as each giving back of memory makes, walked
    # it all again: 6 ms), and the worker's size with it is where its growth is counted
    # from (else its first page gives back memory it never took).
    gc.collect()
    gc.freeze()
    _trimmed_at[0] = _rss()
    # Only once ready: the crawl's first pages wait for the imports, which a worker
    # below the crawl process's priority would make while the crawl process starts.
    os.nice(10)


def _exit_with(crawl_pid: int) -> None:
    """A crawl process killed outright cannot stop its workers (nor they, waiting on the
    pool's queue, notice): they stop themselves."""
    while running(crawl_pid):
        time.sleep(1.0)
    os._exit(0)


def _started() -> None:
    """The warm-up task: submitting it makes the pool start a worker."""


def _timed(task: int, budget_ns: int, fn, *args):
    """``fn(*args)`` in a worker, on the board as ``task`` while it runs."""
    if _board is None:
        return fn(*args)
    _board.start(task, budget_ns)
    try:
        return fn(*args)
    finally:
        _board.stop()


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
_trimmed_at = [0]  # this worker's RSS once ready, then after it last gave memory back


def read_page(page: str, url: str, scope: str | None, **options) -> dict:
    """:func:`crawlyx.content.page.analyze`, in a worker."""
    # Imported here: the workers have it (see _start_worker); the crawl process, which
    # never reads a page, does without the converter and markdownify.
    from crawlyx.content.page import analyze

    # The objects a read makes (two trees of the page, the strings of its markdown) all
    # live until it ends: the cycle collector, run meanwhile, walks them again and again
    # for nothing (an eighth of a big page's read). It runs after.
    gc.disable()
    try:
        return analyze(page, url, scope, **options)
    finally:
        gc.enable()
        _read_over(len(page))


def read_document(kind: str, body: bytes | str, url: str, scope: str | None, neardup: bool) -> dict:
    """:func:`crawlyx.content.documents.reader.read_document`, in a worker: the memory a big
    document took is given back after, as a big page's."""
    # pypdfium2, imported by a worker's first document: a crawl of pages only never needs it.
    from crawlyx.content.documents.reader import read_document as read

    try:
        return read(kind, body, url, scope, neardup)
    finally:
        _read_over(len(body))


def _read_over(size: int) -> None:
    """After a read of ``size`` characters or bytes: off the board (giving memory back is
    not the read's time), and memory given back past TRIM_BYTES or TRIM_GROWTH."""
    if _board is not None:
        _board.stop()
    if size > TRIM_BYTES or _rss() > _trimmed_at[0] + TRIM_GROWTH:
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


class ReadTimeout(Exception):
    """A read ran past its time budget: its worker was killed."""


class WorkerDied(Exception):
    """A worker died twice with the task in flight, the second time reading it alone."""


# Deaths of the worker a task is alone with that make it a poison page.
POISON_DEATHS = 2


class Pool(ProcessPoolExecutor):
    """A pool of workers with their :class:`Board`; ``killed`` once a worker of it was
    killed for running past its budget."""

    # Seconds a dead worker's pool may take to notice it (it notices at once unless stuck).
    STUCK_AFTER = 1.0

    def __init__(self, workers: int):
        # spawn: workers start from a clean interpreter, not a copy of the reactor, its
        # threads and its sockets. Not from a fork server: that is one more process for
        # the crawl's length (15 MB), to save each worker the interpreter's start.
        context = multiprocessing.get_context("spawn")
        self.board = Board(context, workers)
        self.killed = False
        self.dead_since: float | None = None  # a worker found dead, the pool not broken
        super().__init__(
            max_workers=workers,
            mp_context=context,
            initializer=_start_worker,
            initargs=(os.getpid(), self.board),
        )

    def stuck(self, now: float) -> bool:
        """A worker died :data:`STUCK_AFTER` seconds ago at least and the pool has not
        broken: its thread is stuck reading the result that worker was sending when it
        was killed. A message cut short blocks the pipe's reader for good, and the lock
        on the pipe the dead worker held blocks every other worker's result."""
        if self._broken or self._shutdown_thread:
            return False
        processes = list((self._processes or {}).values())
        if not any(process.exitcode is not None for process in processes):
            self.dead_since = None
            return False
        if self.dead_since is None:
            self.dead_since = now
        return now - self.dead_since >= self.STUCK_AFTER

    def unstick(self) -> None:
        """Break a stuck pool: its workers are killed and this process's end of the
        result pipe is closed, so that its thread reads the end of the pipe and fails
        every task it held (BrokenProcessPool); they are read again in a new pool."""
        for process in list((self._processes or {}).values()):
            try:
                os.kill(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._result_queue._writer.close()

    def _spawn_process(self) -> None:
        # A new process is told the crawl's main module to import again (multiprocessing
        # rebuilds __main__ in it): the `scrapy` or `crawlyx` script, or scrapyd's runner
        # module, that is all of Scrapy and Twisted, 27 MB a worker for nothing (only a
        # package's __main__, as with `python -m scrapy`, is skipped). A worker needs
        # nothing of it: it is started with the main module saying neither.
        #
        # And a terminal's Ctrl-C reaches the whole process group: the crawl process
        # pauses the crawl, and a worker should not die of it. A process whose parent
        # ignored SIGINT starts with it ignored, so a worker is deaf to it while it
        # imports (it ignores it itself once started): the crawl process ignores it
        # while it spawns one (a few milliseconds), from the main thread, where signals
        # are handled.
        main = sys.modules["__main__"]
        spec, path = getattr(main, "__spec__", None), main.__dict__.pop("__file__", None)
        main.__spec__ = None
        deaf = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if deaf else None
        try:
            super()._spawn_process()
        finally:
            if deaf:
                signal.signal(signal.SIGINT, previous)
            main.__spec__ = spec
            if path is not None:
                main.__file__ = path


class PageWorkers:
    def __init__(
        self,
        workers: int,
        main_content: bool,
        links: str,
        crawler=None,
        neardup: bool = False,
        timeout: float = 0.0,
        max_links: int | None = None,
    ):
        if links not in LINK_STYLES:
            raise ValueError(
                f"CRAWLYX_MARKDOWN_LINKS must be one of {', '.join(LINK_STYLES)}, not {links!r}"
            )
        self.workers = max(1, workers)
        # neardup: each page's near-duplicate signature, for the link graph (crawlyx.graph).
        self.analyze = partial(
            read_page, main_content=main_content, links=links, neardup=neardup, max_links=max_links
        )
        self.neardup = neardup
        self.crawler = crawler  # for its stats, if any
        self.timeout = timeout  # a page read's budget, seconds; 0: none
        self.resubmitted = 0  # reads lost with a pool killed for another read, read again
        self._pool: Pool | None = None
        self._alone: Pool | None = None  # one worker, for suspects
        self._one_at_a_time: asyncio.Lock | None = None
        self._tasks = itertools.count(1)
        self._over: set[int] = set()  # tasks whose worker was killed past their budget
        self._closed = threading.Event()
        self._watchdog: threading.Thread | None = None
        # Counts the page reads when the crawl is measured (a WorkerTally of
        # crawlyx/extensions/telemetry.py, set by the metrics or the report).
        self.tally = None

    @classmethod
    def from_settings(cls, settings, crawler=None) -> PageWorkers:
        return cls(
            settings.getint("CRAWLYX_MARKDOWN_WORKERS") or (os.cpu_count() or 1),
            settings.getbool("CRAWLYX_MARKDOWN_MAIN_CONTENT"),
            settings.get("CRAWLYX_MARKDOWN_LINKS"),
            crawler,
            neardup=settings.getbool("CRAWLYX_GRAPH_ENABLED"),
            timeout=settings.getfloat("CRAWLYX_READ_TIMEOUT"),  # checked: a number, 0 or more
            max_links=settings.getint("CRAWLYX_MAX_LINKS_PER_PAGE"),
        )

    @classmethod
    def from_crawler(cls, crawler) -> PageWorkers:
        return cls.from_settings(crawler.settings, crawler)

    @property
    def pool(self) -> Pool:
        if self._pool is None:
            self._pool = Pool(self.workers)
        return self._pool

    async def read(self, page: str, url: str, scope: str | None) -> dict:
        """:func:`crawlyx.content.page.analyze` of the page, in a worker, within the
        read budget (:class:`ReadTimeout` past it)."""
        tally = self.tally
        if tally is None:
            return await self.run(self.analyze, page, url, scope, timeout=self.timeout)
        started, failure = tally.started(), None
        try:
            return await self.run(self.analyze, page, url, scope, timeout=self.timeout)
        except ReadTimeout:
            failure = "read_timeout"
            raise
        except WorkerDied:
            failure = "died"
            raise
        except Exception:
            failure = "parse"
            raise
        finally:
            tally.finished(started, failure)

    async def read_document(
        self, kind: str, body: bytes | str, url: str, scope: str | None
    ) -> dict:
        """:func:`crawlyx.content.documents.reader.read_document` (a PDF...), in a worker, within
        the read budget of any page."""
        self._inc("crawlyx/workers/documents")
        return await self.run(
            read_document, kind, body, url, scope, self.neardup, timeout=self.timeout
        )

    async def read_sitemap(self, body: bytes, max_bytes: int) -> tuple[str, list[str]]:
        """:func:`crawlyx.content.sitemap.read_sitemap` of the document, in a worker."""
        self._inc("crawlyx/workers/sitemaps")
        return await self.run(read_sitemap, body, max_bytes)

    async def run(self, fn, *args, timeout: float = 0.0):
        """``fn(*args)`` in a worker, through the deaths of workers, killed after
        ``timeout`` seconds (0: never) with :class:`ReadTimeout`.

        When a worker dies, the pool fails every task it holds and is rebuilt. Which
        task killed it cannot be told, so each of them is a suspect, read again alone:
        one at a time, in a pool of one worker that reads nothing else. A task that
        kills the worker it is alone with twice killed it itself: it fails with
        :class:`WorkerDied` (its page recorded once as a ``parse`` error). Dying alone
        once proves nothing (the OOM killer may pick that worker, as any other), and an
        innocent task never shares a death with the culprit in the pool of one.
        A worker killed for its task's time is no such death: the other tasks of its
        pool are read again in the new pool, as they came.
        """
        budget = round(timeout * 1e9)
        self._watch(timeout)
        while True:
            pool = self.pool
            task = next(self._tasks)
            try:
                return await asyncio.wrap_future(self._submit(pool, task, budget, fn, args))
            except BrokenProcessPool:
                self._rebuild(pool)
                self._check_time(task, timeout)
                if not pool.killed:
                    break
                self.resubmitted += 1
                self._inc("crawlyx/workers/resubmitted")
        if self._one_at_a_time is None:
            self._one_at_a_time = asyncio.Lock()
        async with self._one_at_a_time:
            for _ in range(POISON_DEATHS):
                self._inc("crawlyx/workers/reread")
                if self._alone is None:
                    self._alone = Pool(1)
                alone = self._alone
                task = next(self._tasks)
                try:
                    return await asyncio.wrap_future(alone.submit(_timed, task, budget, fn, *args))
                except BrokenProcessPool:
                    self._alone = None
                    alone.shutdown(wait=False)
                    self._inc("crawlyx/workers/restarts")
                    self._check_time(task, timeout)
        raise WorkerDied(f"a worker died reading it alone, {POISON_DEATHS} times")

    def _submit(self, pool: Pool, task: int, budget: int, fn, args) -> Future:
        try:
            return pool.submit(_timed, task, budget, fn, *args)
        except BrokenProcessPool:  # broken before the task got there: not a suspect
            self._rebuild(pool)
            return self.pool.submit(_timed, task, budget, fn, *args)

    def _check_time(self, task: int, timeout: float) -> None:
        """Raise :class:`ReadTimeout` if ``task``'s worker was killed for its time."""
        if task in self._over:
            self._over.discard(task)
            raise ReadTimeout(f"still reading after {timeout:g} s: its worker was killed")

    def _rebuild(self, pool: Pool) -> None:
        """Replace the broken ``pool``, once whichever of its tasks notices first."""
        if self._pool is pool:
            self._pool = None
            pool.shutdown(wait=False)
            self._inc("crawlyx/workers/restarts")

    def _watch(self, timeout: float) -> None:
        """Start the thread that watches the pools, if not yet: it kills workers past
        their deadline (a fraction of the budget ``timeout`` apart), and breaks a pool
        stuck on a worker's death."""
        if self._watchdog is None and not self._closed.is_set():
            interval = min(0.25, timeout / 10) if timeout else 0.25
            self._watchdog = threading.Thread(
                target=self._watch_pools, args=(interval,), name="crawlyx-read-budget", daemon=True
            )
            self._watchdog.start()

    def _watch_pools(self, interval: float) -> None:
        while not self._closed.wait(interval):
            for pool in (self._pool, self._alone):
                if pool is None:
                    continue
                if pool.stuck(time.monotonic()):
                    self._inc("crawlyx/workers/unstuck")
                    pool.unstick()
                    continue
                if pool.killed:
                    continue
                for pid, task in pool.board.overdue(time.monotonic_ns()):
                    self._over.add(task)
                    pool.killed = True  # before its tasks learn it is broken
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass

    def _inc(self, key: str) -> None:
        if self.crawler is not None:
            self.crawler.stats.inc_value(key)

    def warm_up(self) -> None:
        """Start the workers now, before the first page is there to read: they import
        the page-reading code while the crawl starts."""
        try:
            for _ in range(self.workers):
                self.pool.submit(_started)
        except RuntimeError:  # the crawl ended first: the pool is shut down
            pass

    def close(self) -> None:
        # A read past its budget is killed meanwhile: the watchdog stops after the pools.
        for pool in (self._pool, self._alone):
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
        self._pool = self._alone = None
        self._closed.set()
