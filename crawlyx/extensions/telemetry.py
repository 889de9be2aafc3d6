"""What a crawl measures of its own fetches, for the metrics endpoint and the report.

A *fetch* is one request the downloader handled: every attempt counts (a retry, each
redirect hop, robots.txt), by host and status class (``2xx`` ... ``5xx``, or
``failed`` when no response came: a timeout, a refused connection, a DNS or TLS
failure). Its latency is the time to the response headers (Scrapy's
``download_latency``), kept in a fixed-bucket histogram: flat memory however long the
crawl, and exactly what the Prometheus exposition wants.

Robots compliance is checked where it matters, at the downloader's door: every request
that reaches it (robots.txt itself aside) is held against the rules the robots
middleware has for its origin. One it would have refused counts as a violation; so does
a request to an origin it holds no rules for. Counting is the whole job: the middleware
still decides.

Bytes received are counted per fetch mode: a plain HTTP response's status line, headers
and body as they came (compressed if they came compressed); the browser's are counted by
its proxy (crawlyx/render/proxy.py), every byte its pages received. Errors (the URLs the
crawl recorded under an error class, crawlyx/errors.py) are counted by class and host.

The page workers' reads are counted by :class:`WorkerTally`: reads, failures by kind,
their duration (from the crawl handing the page over to its markdown coming back: the
wait for a free worker included), the reads waiting for a worker, and how busy the pool
was (worker-seconds of reads in flight, at most one per worker).

Everything here runs on the reactor thread; :meth:`FetchTally.snapshot` is what another
thread (the metrics endpoint's) reads, under a lock.
"""

from __future__ import annotations

import threading
import time
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass
from urllib.parse import urlsplit
from weakref import WeakKeyDictionary

from scrapy import signals
from scrapy.utils.httpobj import urlparse_cached

from crawlyx.middlewares import installed
from crawlyx.middlewares.robots import RobotsMiddleware
from crawlyx.signals import url_failed
from crawlyx.urls.normalize import url_origin

# Upper bounds (seconds) of the latency buckets. 3 s is one of them: the latency SLO
# (p95 <= 3 s) is then decided by a count, not an interpolation.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 30, 60)
# Upper bounds (seconds) of a page read's buckets; CRAWLYX_READ_TIMEOUT's default (10 s) is one.
READ_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)

OTHER = "other"
FAILED = "failed"


class Histogram:
    """Counts of values per bucket (upper bounds inclusive, then +Inf) and their sum."""

    def __init__(self, bounds=LATENCY_BUCKETS):
        self.bounds = tuple(float(bound) for bound in bounds)
        self.counts = [0] * (len(self.bounds) + 1)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.sum += value

    @property
    def count(self) -> int:
        return sum(self.counts)

    def copy(self) -> Histogram:
        other = Histogram(self.bounds)
        other.counts, other.sum = list(self.counts), self.sum
        return other

    def cumulative(self) -> list[tuple[float, int]]:
        """(upper bound, values at most that): the buckets as Prometheus exposes them."""
        total, buckets = 0, []
        for bound, count in zip((*self.bounds, float("inf")), self.counts, strict=True):
            total += count
            buckets.append((bound, total))
        return buckets

    def quantile(self, q: float) -> float | None:
        """The ``q``-quantile, interpolated linearly inside its bucket (as Prometheus's
        ``histogram_quantile`` does); None with no values. In the +Inf bucket it is the
        highest finite bound: a lower bound of the true value."""
        total = self.count
        if not total:
            return None
        rank, below = q * total, 0
        for i, count in enumerate(self.counts):
            if count and below + count >= rank:
                if i == len(self.bounds):
                    return self.bounds[-1]
                lower = self.bounds[i - 1] if i else 0.0
                return lower + (self.bounds[i] - lower) * max(0.0, rank - below) / count
            below += count
        return self.bounds[-1]


class HostLabels:
    """Bounded values for a ``host`` label: the first ``limit`` hosts fetched keep their
    name, every later one is ``other``. A host keeps its label for the whole crawl, as a
    counter's series must not move. A crawl of one site fetches its busiest hosts first:
    the start URL's host and the one it redirects to."""

    def __init__(self, limit: int):
        self.limit = max(0, limit)
        self.named: set[str] = set()
        self.first: str | None = None  # the first host fetched: the start URL's

    def __call__(self, host: str) -> str:
        if host in self.named:
            return host
        if len(self.named) < self.limit:
            self.named.add(host)
            if self.first is None:
                self.first = host
            return host
        return OTHER

    def label(self, host: str) -> str:
        """``host``'s label, without giving it one of its own if it has none yet."""
        return host if host in self.named else OTHER


@dataclass
class Snapshot:
    fetches: Counter  # (host label, status class) -> fetches
    modes: Counter  # "http" / "browser" -> fetches
    latency: Histogram
    robots_checked: int
    robots_violations: int
    robots_fetched_at: float | None  # when the rules applied to the latest fetch were fetched
    received: Counter  # "http" -> bytes received (the browser's are its proxy's)
    errors: Counter  # (host label, error class) -> URLs

    def by_status_class(self) -> dict[str, int]:
        classes: Counter = Counter()
        for (_, status_class), count in self.fetches.items():
            classes[status_class] += count
        return dict(sorted(classes.items()))


class FetchTally:
    """Counts the crawl's fetches from the downloader's signals (see the module docstring)."""

    def __init__(self, crawler, host_limit: int):
        self.crawler = crawler
        self.hosts = HostLabels(host_limit)
        self._lock = threading.Lock()
        self._fetches: Counter = Counter()
        self._modes: Counter = Counter()
        self._latency = Histogram()
        self._robots_checked = 0
        self._robots_violations = 0
        self._robots_fetched_at: float | None = None
        self._received: Counter = Counter()
        self._errors: Counter = Counter()
        self._answered: set = set()  # requests whose response came, until they leave
        self._robots: RobotsMiddleware | None | bool = False  # False: not looked up yet
        crawler.signals.connect(self._reached, signal=signals.request_reached_downloader)
        crawler.signals.connect(self._downloaded, signal=signals.response_downloaded)
        crawler.signals.connect(self._left, signal=signals.request_left_downloader)
        crawler.signals.connect(self.error, signal=url_failed)

    def snapshot(self) -> Snapshot:
        with self._lock:
            return Snapshot(
                Counter(self._fetches),
                Counter(self._modes),
                self._latency.copy(),
                self._robots_checked,
                self._robots_violations,
                self._robots_fetched_at,
                Counter(self._received),
                Counter(self._errors),
            )

    def _reached(self, request, **kwargs):
        if request.meta.get("dont_obey_robotstxt"):
            return  # robots.txt itself
        if self._robots is False:
            self._robots = installed(self.crawler, RobotsMiddleware)
        if self._robots is None:
            return  # robots.txt is not obeyed: nothing to check against
        rules = self._robots.cached(url_origin(request.url))
        allowed = rules is not None and rules.allowed(request.url, self._robots.agent)
        with self._lock:
            self._robots_checked += 1
            if allowed:
                self._robots_fetched_at = rules.fetched_at
            else:
                self._robots_violations += 1

    def error(self, url: str, error_class: str, **kwargs) -> None:
        """A URL recorded under ``error_class`` (crawlyx.signals.url_failed)."""
        host = self.hosts(urlsplit(url).hostname or "")
        with self._lock:
            self._errors[host, error_class] += 1

    def _downloaded(self, response, request, **kwargs):
        self._answered.add(request)
        self._count(request, f"{response.status // 100}xx", request.meta.get("download_latency"))
        if not request.meta.get("playwright"):
            size = len(response.body) + 15  # the status line
            for name, values in dict.items(response.headers):
                size += len(name) + 4 + sum(len(value) for value in values)
            with self._lock:
                self._received["http"] += size

    def _left(self, request, **kwargs):
        if request in self._answered:
            self._answered.discard(request)
        else:
            self._count(request, FAILED, None)

    def _count(self, request, status_class: str, latency: float | None) -> None:
        host = self.hosts(urlparse_cached(request).hostname or "")
        mode = "browser" if request.meta.get("playwright") else "http"
        with self._lock:
            self._fetches[host, status_class] += 1
            self._modes[mode] += 1
            if latency is not None:
                self._latency.observe(latency)


@dataclass
class WorkerSnapshot:
    workers: int  # the pool's size
    reads: int
    failures: Counter  # "read_timeout" / "died" / "parse" -> reads
    duration: Histogram
    in_flight: int
    busy_seconds: float  # worker-seconds of reads so far (at most one per worker at a time)

    @property
    def waiting(self) -> int:
        """Reads waiting for a free worker."""
        return max(0, self.in_flight - self.workers)


class WorkerTally:
    """The page workers' reads (see the module docstring); the pool
    (crawlyx/content/workers.py) calls :meth:`started` and :meth:`finished`."""

    def __init__(self, workers: int):
        self.workers = max(1, workers)
        self._lock = threading.Lock()
        self._reads = 0
        self._failures: Counter = Counter()
        self._duration = Histogram(READ_BUCKETS)
        self._in_flight = 0
        self._busy = 0.0
        self._since = time.monotonic()

    def _advance(self, now: float) -> None:
        self._busy += min(self._in_flight, self.workers) * (now - self._since)
        self._since = now

    def started(self) -> float:
        now = time.monotonic()
        with self._lock:
            self._advance(now)
            self._in_flight += 1
        return now

    def finished(self, started: float, failure: str | None = None) -> None:
        now = time.monotonic()
        with self._lock:
            self._advance(now)
            self._in_flight -= 1
            self._reads += 1
            self._duration.observe(now - started)
            if failure:
                self._failures[failure] += 1

    def snapshot(self) -> WorkerSnapshot:
        with self._lock:
            self._advance(time.monotonic())
            return WorkerSnapshot(
                self.workers,
                self._reads,
                Counter(self._failures),
                self._duration.copy(),
                self._in_flight,
                self._busy,
            )


# crawler -> {class: the crawl's one instance of it}
_instruments: WeakKeyDictionary = WeakKeyDictionary()


def shared(crawler, cls, make=None):
    """The crawl's one ``cls``, made with ``make(crawler)`` (default: ``cls(crawler)``) and
    connected on first use: the instruments the metrics endpoint and the report both read
    (this tally, crawlyx.extensions.usage's meter, crawlyx.extensions.compliance's
    audits), whichever of them is built first."""
    made = _instruments.setdefault(crawler, {})
    if cls not in made:
        made[cls] = (make or cls)(crawler)
    return made[cls]


def tally_of(crawler) -> FetchTally | None:
    """The crawl's :class:`FetchTally` if something measures the crawl, else None."""
    return _instruments.get(crawler, {}).get(FetchTally)


def fetch_tally(crawler) -> FetchTally:
    """The crawl's one :class:`FetchTally`."""
    return shared(
        crawler, FetchTally, lambda c: FetchTally(c, c.settings.getint("CRAWLYX_METRICS_HOSTS"))
    )
