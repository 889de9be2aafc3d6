"""A Prometheus endpoint for a running crawl (``CRAWLYX_METRICS_PORT``; off by default).

Served on 127.0.0.1 only, from the crawl's own registry (never the process-global one),
in a thread of prometheus_client's; the port closes when the spider closes.

Nothing is counted twice: every value is read at scrape time from where the crawl
keeps it already (the fetch tally of crawlyx/extensions/telemetry.py, the usage meter of
crawlyx/extensions/usage.py, the audits of crawlyx/extensions/compliance.py, Scrapy's
stats, the window and robots middlewares, the visited table). Counts are counters and
durations histograms; only levels (the frontier, a window, an age, memory, a ratio over
the last minutes) are gauges. No label carries a URL, and the ``host`` label is bounded
(``CRAWLYX_METRICS_HOSTS``, see :class:`HostLabels`).

The scrape runs on the endpoint's thread: it copies under the tallies' locks, reads the
stats and the windows (dict reads), and asks Redis a few cheap questions (LLEN, HLEN,
INFO memory, and a PING it times) on the crawl's thread-safe client.
"""

from __future__ import annotations

import logging
import time
from urllib.parse import urlsplit

import redis
from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)
from prometheus_client.utils import floatToGoString
from scrapy import signals
from scrapy.exceptions import NotConfigured

from crawlyx.cost.model import CATEGORIES, MODES, Prices, costs, per_url
from crawlyx.cost.processes import COMPONENTS
from crawlyx.errors import ERROR_CLASSES
from crawlyx.extensions.compliance import compliance
from crawlyx.extensions.telemetry import fetch_tally
from crawlyx.extensions.usage import usage_meter
from crawlyx.middlewares import installed
from crawlyx.middlewares.robots import RobotsMiddleware
from crawlyx.middlewares.window import WindowMiddleware
from crawlyx.parts import shared_parts

logger = logging.getLogger(__name__)

RENDER_MODES = MODES


class CrawlCollector:
    """The crawl's metric families, read at scrape time."""

    def __init__(self, crawler, parts, tally):
        self.crawler = crawler
        self.stats = crawler.stats
        self.tally = tally
        self.usage = usage_meter(crawler, parts)
        self.audits = compliance(crawler, parts)
        self.prices = Prices.from_settings(crawler.settings)
        self.window_mw: WindowMiddleware | None = None
        self.robots_mw: RobotsMiddleware | None = None
        self.visited = None  # the visited table, once the spider is open

    def collect(self):
        snap = self.tally.snapshot()
        fetches = CounterMetricFamily(
            "crawlyx_fetch",
            "Fetches (every attempt: retries, redirect hops, robots.txt) by host and "
            "status class (failed: no response).",
            labels=["host", "status_class"],
        )
        for (host, status_class), count in sorted(snap.fetches.items()):
            fetches.add_metric([host, status_class], count)
        yield fetches
        yield _histogram(
            "crawlyx_fetch_duration_seconds",
            "Time to the response headers of each fetch that got a response.",
            snap.latency,
        )
        yield self._errors(snap)
        yield CounterMetricFamily(
            "crawlyx_pages", "Pages emitted.", value=self.stats.get_value("item_scraped_count", 0)
        )
        yield CounterMetricFamily(
            "crawlyx_dedup_hits",
            "Links not queued because the URL was already known.",
            value=self.stats.get_value("crawlyx/frontier/duplicates", 0),
        )
        render = CounterMetricFamily(
            "crawlyx_render", "Fetches by how they were made.", labels=["mode"]
        )
        for mode in RENDER_MODES:
            render.add_metric([mode], snap.modes.get(mode, 0))
        yield render
        frontier = self._frontier_size()
        if frontier is not None:
            yield GaugeMetricFamily(
                "crawlyx_frontier_size",
                "URLs queued or leased, for the whole job.",
                value=frontier,
            )
        if self.window_mw is not None:
            windows = GaugeMetricFamily(
                "crawlyx_window", "The adaptive concurrency window per host.", labels=["host"]
            )
            for host, window in sorted(self.window_mw.windows.items(), key=lambda kv: kv[0]):
                if host in self.tally.hosts.named:
                    windows.add_metric([host], window.value)
            yield windows
        yield from self._robots(snap)
        yield from self._frontier_rates()
        yield from self._cost(snap)
        yield from self._workers()
        yield from self._resources(frontier is not None)

    def _errors(self, snap):
        """Errors by class and host: every class has a series (0 at the first host
        fetched until it has one), so a rate of any class is a number, not nothing."""
        errors = CounterMetricFamily(
            "crawlyx_errors", "Failed or skipped URLs by error class and host.",
            labels=["class", "host"],
        )  # fmt: skip
        seen = set()
        for (host, name), count in sorted(snap.errors.items()):
            errors.add_metric([name, host], count)
            seen.add(name)
        first = self.tally.hosts.first
        if first is not None:
            for name in ERROR_CLASSES:
                if name not in seen:
                    errors.add_metric([name, first], 0)
        return errors

    def _robots(self, snap):
        yield CounterMetricFamily(
            "crawlyx_robots_checked",
            "Fetches held against the robots.txt rules at the downloader (robots.txt aside).",
            value=snap.robots_checked,
        )
        yield CounterMetricFamily(
            "crawlyx_robots_disallowed_fetched",
            "Fetches the robots.txt rules refuse, or of an origin with no rules yet.",
            value=snap.robots_violations,
        )
        if self.robots_mw is not None:
            ages = GaugeMetricFamily(
                "crawlyx_robots_age_seconds",
                "Age of the robots.txt rules the crawl holds, per host.",
                labels=["host"],
            )
            now = time.time()
            for host, fetched_at in sorted(self._robots_ages().items()):
                ages.add_metric([host], max(0.0, now - fetched_at))
            yield ages
        checked, violations, _ = self.audits.delay.counts()
        yield CounterMetricFamily(
            "crawlyx_crawl_delay_fetches",
            "Fetches of origins with a Crawl-delay, checked against the job's other fetches.",
            value=checked,
        )
        yield CounterMetricFamily(
            "crawlyx_crawl_delay_violations",
            "Fetches closer than their origin's Crawl-delay to another fetch of the job's.",
            value=violations,
        )
        opted = CounterMetricFamily(
            "crawlyx_opt_out_pages",
            "Pages whose robots directives opt out: kept out (honoured) or emitted.",
            labels=["outcome"],
        )
        opted.add_metric(["honoured"], self.audits.opt_out.honoured)
        opted.add_metric(["emitted"], self.audits.opt_out.emitted)
        yield opted

    def _robots_ages(self) -> dict[str, float]:
        """host label -> when its freshest rules were fetched (named hosts, then other)."""
        ages: dict[str, float] = {}
        for origin, rules in self.robots_mw.held().items():
            host = self.tally.hosts.label(urlsplit(origin).hostname or "")
            ages[host] = max(ages.get(host, 0.0), rules.fetched_at)
        return ages

    def _frontier_rates(self):
        yield CounterMetricFamily(
            "crawlyx_frontier_taken",
            "Requests this process took from the frontier.",
            value=self.stats.get_value("crawlyx/frontier/dequeued", 0),
        )
        yield CounterMetricFamily(
            "crawlyx_frontier_added",
            "Requests this process added to the frontier.",
            value=self.stats.get_value("crawlyx/frontier/enqueued", 0),
        )
        rates = self.usage.rates()
        if rates is None:
            return
        if rates.drain is not None:
            yield GaugeMetricFamily(
                "crawlyx_drain_rate",
                "Requests taken from the frontier per request added, over the last 5 minutes.",
                value=rates.drain,
            )
        if rates.dedup_hits is not None:
            yield GaugeMetricFamily(
                "crawlyx_dedup_hit_ratio",
                "Links not queued because already known, per link offered, last 5 minutes.",
                value=rates.dedup_hits,
            )

    def _cost(self, snap):
        usage = self.usage.usage()
        cpu = CounterMetricFamily(
            "crawlyx_cpu_seconds",
            "CPU seconds of the crawl's processes by component and fetch mode.",
            labels=["component", "mode"],
        )
        for component in COMPONENTS:  # the browser works for its own mode only
            for mode in ("browser",) if component == "browser" else MODES:
                cpu.add_metric([component, mode], usage.cpu.get((component, mode), 0.0))
        yield cpu
        received = CounterMetricFamily(
            "crawlyx_response_bytes", "Bytes received by fetch mode.", labels=["mode"]
        )
        for mode in MODES:
            received.add_metric([mode], usage.response_bytes.get(mode, 0))
        yield received
        yield CounterMetricFamily(
            "crawlyx_written_bytes", "Bytes written to the output.", value=usage.written_bytes
        )
        pages = CounterMetricFamily(
            "crawlyx_page_modes", "Pages emitted by fetch mode.", labels=["mode"]
        )
        for mode in MODES:
            pages.add_metric([mode], usage.pages.get(mode, 0))
        yield pages
        cost = costs(usage, self.prices)
        spent = CounterMetricFamily(
            "crawlyx_cost",
            "What the crawl cost so far (CRAWLYX_COST_* prices), by category and fetch mode.",
            labels=["category", "mode", "tier"],
        )
        for category in CATEGORIES:
            for mode in MODES:
                spent.add_metric([category, mode, self.prices.proxy_tier], cost[category, mode])
        yield spent
        each = GaugeMetricFamily(
            "crawlyx_cost_per_url",
            "Cost per page emitted so far, by fetch mode.",
            labels=["mode"],
        )
        for mode in MODES:
            value = per_url(cost, usage.pages, mode)
            if value is not None:
                each.add_metric([mode], value)
        yield each

    def _workers(self):
        tally = self.usage.workers
        if tally is None:
            return
        snap = tally.snapshot()
        yield GaugeMetricFamily("crawlyx_workers", "Page workers in the pool.", value=snap.workers)
        yield CounterMetricFamily(
            "crawlyx_worker_reads", "Pages the workers read (or failed to).", value=snap.reads
        )
        failures = CounterMetricFamily(
            "crawlyx_worker_failures",
            "Page reads that failed, by kind (read_timeout, died, parse).",
            labels=["kind"],
        )
        for kind in ("read_timeout", "died", "parse"):
            failures.add_metric([kind], snap.failures.get(kind, 0))
        yield failures
        yield _histogram(
            "crawlyx_worker_read_duration_seconds",
            "From a page handed to the workers to its markdown back (waiting included).",
            snap.duration,
        )
        yield GaugeMetricFamily(
            "crawlyx_worker_queue_depth", "Page reads waiting for a free worker.",
            value=snap.waiting,
        )  # fmt: skip
        yield CounterMetricFamily(
            "crawlyx_worker_busy_seconds",
            "Worker-seconds spent on reads (busy share: its rate over crawlyx_workers).",
            value=snap.busy_seconds,
        )

    def _resources(self, redis_up: bool):
        rss = GaugeMetricFamily(
            "crawlyx_rss_bytes",
            "Resident memory of the crawl's processes by component.",
            labels=["component"],
        )
        for component, size in sorted(self.usage.rss().items()):
            rss.add_metric([component], size)
        yield rss
        if not redis_up or self.visited is None:
            return
        client = self.visited.redis
        try:
            started = time.perf_counter()
            client.ping()
            latency = time.perf_counter() - started
            memory = used_memory(client.info("memory"))
        except (redis.RedisError, OSError):
            return
        yield GaugeMetricFamily(
            "crawlyx_redis_latency_seconds", "Round trip of a PING to the crawl's Redis.",
            value=latency,
        )  # fmt: skip
        yield GaugeMetricFamily(
            "crawlyx_redis_memory_bytes", "Memory the crawl's Redis uses.", value=memory
        )

    def _frontier_size(self) -> int | None:
        table = self.visited
        if table is None:
            return None
        try:
            queued, _, leased = table.size()
        except (redis.RedisError, OSError):
            return None  # Redis gone (the crawl is closing): no sample rather than a wrong one
        return queued + leased


def used_memory(info: dict) -> int:
    """``used_memory`` of INFO: a cluster's answer is one INFO per node, summed."""
    if "used_memory" in info:
        return int(info["used_memory"])
    return sum(int(node.get("used_memory", 0)) for node in info.values())


class Metrics:
    def __init__(self, crawler, parts, port: int):
        self.crawler = crawler
        self.parts = parts  # the crawl's shared parts (crawlyx/parts.py)
        self.port = port
        self.collector = CrawlCollector(crawler, parts, fetch_tally(crawler))
        self.registry = CollectorRegistry()
        self.registry.register(self.collector)
        self.server = self.thread = None
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @staticmethod
    def check_settings(settings) -> int:
        """The port (0: off); ValueError when it is not one."""
        value = settings.get("CRAWLYX_METRICS_PORT")
        try:
            port = int(value or 0)
        except (TypeError, ValueError):
            port = -1
        if not 0 <= port <= 65535:
            raise ValueError(f"CRAWLYX_METRICS_PORT ({value}) must be a port number, or 0 for off")
        return port

    @classmethod
    def from_crawler(cls, crawler):
        port = cls.check_settings(crawler.settings)
        if not port:
            raise NotConfigured
        return cls(crawler, shared_parts(crawler), port)

    def spider_opened(self, spider):
        self.collector.window_mw = installed(self.crawler, WindowMiddleware)
        self.collector.robots_mw = installed(self.crawler, RobotsMiddleware)
        self.collector.visited = self.parts.visited
        self.start()

    def spider_closed(self, spider):
        self.stop()

    def start(self) -> None:
        """Listen on 127.0.0.1; a port in use costs the metrics, not the crawl."""
        try:
            self.server, self.thread = start_http_server(
                self.port, addr="127.0.0.1", registry=self.registry
            )
        except OSError as exc:
            logger.error("crawlyx: no metrics endpoint: 127.0.0.1:%d: %s", self.port, exc)
            return
        logger.info("crawlyx: metrics on http://127.0.0.1:%d/metrics", self.port)

    def stop(self) -> None:
        if self.server is None:
            return
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)
        self.server = self.thread = None


def _histogram(name: str, documentation: str, histogram) -> HistogramMetricFamily:
    """One of the crawl's fixed-bucket histograms (crawlyx.extensions.telemetry) as a
    Prometheus histogram."""
    buckets = [(floatToGoString(le), n) for le, n in histogram.cumulative()]
    return HistogramMetricFamily(name, documentation, buckets=buckets, sum_value=histogram.sum)
