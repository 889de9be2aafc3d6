"""What a crawl uses, measured on a timer, for its cost and its health.

A thread of its own samples every ``SAMPLE_INTERVAL`` seconds, from the spider's open
to its close (and once more then): the CPU time and memory of the crawl's processes by
component (crawlyx/cost/processes.py), and the frontier's counters. The reactor never
waits for a sample; per page it only counts the page's fetch mode (a dict increment).

**CPU by fetch mode.** The browser's CPU is the browser's mode's. The crawl process,
its page workers and the embedded Redis work for both modes: the CPU each used in an
interval is shared between the modes by the fetches each made in it (in an interval
without fetches, by the fetches so far; before the first fetch, it waits for one). A
crawl with one mode (``render=never``, ``render=always``) is exact; a mixed one is an
apportionment, no finer than a sample's interval.

**Rates of the frontier.** Over the last ``WINDOW`` seconds (or since the crawl
opened): the drain rate (requests taken from the frontier per request added, as the
report's; below 1 the frontier grows) and the dedup hit ratio (links not queued because
the URL was known, per link offered).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass

from scrapy import signals

from crawlyx.cost.model import MODES, Usage
from crawlyx.cost.processes import COMPONENTS, ProcessMeter
from crawlyx.extensions.telemetry import WorkerTally, fetch_tally, shared

logger = logging.getLogger(__name__)

SAMPLE_INTERVAL = 2.0  # seconds
WINDOW = 300.0  # seconds of frontier rates


@dataclass
class Rates:
    seconds: float
    taken: int
    added: int
    duplicates: int

    @property
    def drain(self) -> float | None:
        return self.taken / self.added if self.added else None

    @property
    def dedup_hits(self) -> float | None:
        offered = self.duplicates + self.added
        return self.duplicates / offered if offered else None


class UsageMeter:
    def __init__(self, crawler, parts):
        self.crawler = crawler
        self.stats = crawler.stats
        self.parts = parts  # the crawl's shared parts: its page workers are metered
        self.tally = fetch_tally(crawler)
        self.meter: ProcessMeter | None = None
        self.workers: WorkerTally | None = None  # the page workers' reads
        self._lock = threading.Lock()
        self._cpu: Counter = Counter()  # (component, mode) -> CPU seconds
        self._rss: dict[str, int] = dict.fromkeys(COMPONENTS, 0)
        self._pending: Counter = Counter()  # component -> CPU before the first fetch
        self._then_cpu: dict[str, float] = dict.fromkeys(COMPONENTS, 0.0)
        self._then_modes: Counter = Counter()
        self._pages: Counter = Counter()  # mode -> pages emitted
        self._frontier: deque = deque(maxlen=int(WINDOW / SAMPLE_INTERVAL) + 1)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False
        crawler.signals.connect(self._scraped, signal=signals.item_scraped)
        crawler.signals.connect(self.open, signal=signals.spider_opened)
        crawler.signals.connect(self.close, signal=signals.spider_closed)

    def open(self, spider=None) -> None:
        if self._thread is not None:
            return
        pool = self.parts.workers
        if pool.tally is None:
            pool.tally = WorkerTally(pool.workers)
        self.workers = pool.tally
        self.meter = ProcessMeter()
        self.sample()
        self._thread = threading.Thread(target=self._run, name="crawlyx-usage", daemon=True)
        self._thread.start()

    def close(self, spider=None, reason=None) -> None:
        """The last sample (the page workers still run; the browser has closed, its
        processes waited for). Once."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        if self.meter is not None:
            self.sample()
            with self._lock:  # no fetch at all: what the crawl cost is the plain mode's
                for component, seconds in self._pending.items():
                    self._cpu[component, "http"] += seconds
                self._pending.clear()

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_INTERVAL):
            try:
                self.sample()
            except Exception:  # a sample lost, not the meter
                logger.exception("crawlyx: sampling the crawl's processes failed")

    def _scraped(self, item, **kwargs):
        mode = item.get("render") if hasattr(item, "get") else None
        self._pages[mode if mode in MODES else "http"] += 1

    # -- samples -----------------------------------------------------------------------

    def sample(self) -> None:
        sample = self.meter.sample()
        modes = self.tally.snapshot().modes
        stats = self.stats
        frontier = (
            time.monotonic(),
            stats.get_value("crawlyx/frontier/dequeued", 0),
            stats.get_value("crawlyx/frontier/enqueued", 0),
            stats.get_value("crawlyx/frontier/duplicates", 0),
        )
        with self._lock:
            fetched = {mode: modes.get(mode, 0) - self._then_modes.get(mode, 0) for mode in MODES}
            weights = fetched if sum(fetched.values()) else {m: modes.get(m, 0) for m in MODES}
            total = sum(weights.values())
            for component in COMPONENTS:
                used = max(0.0, sample.cpu[component] - self._then_cpu[component])
                self._then_cpu[component] = max(self._then_cpu[component], sample.cpu[component])
                if component == "browser":
                    self._cpu[component, "browser"] += used
                    continue
                used += self._pending.pop(component, 0.0)
                if not total:
                    self._pending[component] += used
                    continue
                for mode in MODES:
                    self._cpu[component, mode] += used * weights[mode] / total
            self._then_modes = Counter({mode: modes.get(mode, 0) for mode in MODES})
            self._rss = sample.rss
            self._frontier.append(frontier)

    # -- readings ------------------------------------------------------------------------

    def usage(self) -> Usage:
        snap = self.tally.snapshot()
        received = dict(snap.received)
        received["browser"] = self.stats.get_value("crawlyx/render/bytes_received", 0)
        with self._lock:
            cpu = dict(self._cpu)
            pages = dict(self._pages)
        return Usage(
            cpu=cpu,
            response_bytes=received,
            fetches={mode: snap.modes.get(mode, 0) for mode in MODES},
            pages=pages,
            written_bytes=self.stats.get_value("crawlyx/feed/bytes", 0),
        )

    def rss(self) -> dict[str, int]:
        with self._lock:
            return dict(self._rss)

    def rates(self) -> Rates | None:
        """The frontier's rates over the last WINDOW seconds; None before two samples."""
        with self._lock:
            if len(self._frontier) < 2:
                return None
            (then, taken0, added0, dups0), (now, taken, added, dups) = (
                self._frontier[0],
                self._frontier[-1],
            )
        return Rates(now - then, taken - taken0, added - added0, dups - dups0)


def usage_meter(crawler, parts) -> UsageMeter:
    """The crawl's one :class:`UsageMeter`, made (and connected) on first use; ``parts``:
    the crawl's shared parts (crawlyx/parts.py)."""
    return shared(crawler, UsageMeter, lambda c: UsageMeter(c, parts))
