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

Everything here runs on the reactor thread; :meth:`FetchTally.snapshot` is what another
thread (the metrics endpoint's) reads, under a lock.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass
from weakref import WeakKeyDictionary

from scrapy import signals
from scrapy.utils.httpobj import urlparse_cached

from crawlyx.middlewares import installed
from crawlyx.middlewares.robots import RobotsMiddleware
from crawlyx.urls.normalize import url_origin

# Upper bounds (seconds) of the latency buckets. 3 s is one of them: the latency SLO
# (p95 <= 3 s) is then decided by a count, not an interpolation.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 30, 60)

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

    def __call__(self, host: str) -> str:
        if host in self.named:
            return host
        if len(self.named) < self.limit:
            self.named.add(host)
            return host
        return OTHER


@dataclass
class Snapshot:
    fetches: Counter  # (host label, status class) -> fetches
    modes: Counter  # "http" / "browser" -> fetches
    latency: Histogram
    robots_checked: int
    robots_violations: int
    robots_fetched_at: float | None  # when the rules applied to the latest fetch were fetched

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
        self._answered: set = set()  # requests whose response came, until they leave
        self._robots: RobotsMiddleware | None | bool = False  # False: not looked up yet
        crawler.signals.connect(self._reached, signal=signals.request_reached_downloader)
        crawler.signals.connect(self._downloaded, signal=signals.response_downloaded)
        crawler.signals.connect(self._left, signal=signals.request_left_downloader)

    def snapshot(self) -> Snapshot:
        with self._lock:
            return Snapshot(
                Counter(self._fetches),
                Counter(self._modes),
                self._latency.copy(),
                self._robots_checked,
                self._robots_violations,
                self._robots_fetched_at,
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

    def _downloaded(self, response, request, **kwargs):
        self._answered.add(request)
        self._count(request, f"{response.status // 100}xx", request.meta.get("download_latency"))

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


_tallies: WeakKeyDictionary = WeakKeyDictionary()


def fetch_tally(crawler) -> FetchTally:
    """The crawl's one :class:`FetchTally`, made (and connected) on first use."""
    tally = _tallies.get(crawler)
    if tally is None:
        limit = crawler.settings.getint("CRAWLYX_METRICS_HOSTS")
        tally = _tallies[crawler] = FetchTally(crawler, limit)
    return tally
