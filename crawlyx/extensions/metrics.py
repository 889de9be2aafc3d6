"""A Prometheus endpoint for a running crawl (``CRAWLYX_METRICS_PORT``; off by default).

Served on 127.0.0.1 only, from the crawl's own registry (never the process-global one),
in a thread of prometheus_client's; the port closes when the spider closes.

Nothing is counted twice: every value is read at scrape time from where the crawl
keeps it already (the fetch tally of crawlyx/extensions/telemetry.py, Scrapy's stats, the window
middleware, the visited table). Counts are counters and durations a histogram; only
levels (the frontier, a window, an age) are gauges. No label carries a URL, and the
``host`` label is bounded (``CRAWLYX_METRICS_HOSTS``, see :class:`HostLabels`).

The scrape runs on the endpoint's thread: it copies under the tally's lock, reads the
stats and the windows (dict reads), and asks Redis two cheap questions (LLEN, HLEN) on
the crawl's thread-safe client.
"""

from __future__ import annotations

import logging
import time

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

from crawlyx.errors import ERROR_CLASSES
from crawlyx.extensions.telemetry import fetch_tally
from crawlyx.middlewares import installed
from crawlyx.middlewares.window import WindowMiddleware
from crawlyx.parts import crawl_parts

logger = logging.getLogger(__name__)

RENDER_MODES = ("http", "browser")


class CrawlCollector:
    """The crawl's metric families, read at scrape time."""

    def __init__(self, crawler, tally):
        self.crawler = crawler
        self.stats = crawler.stats
        self.tally = tally
        self.window_mw: WindowMiddleware | None = None
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
        yield HistogramMetricFamily(
            "crawlyx_fetch_duration_seconds",
            "Time to the response headers of each fetch that got a response.",
            buckets=[(floatToGoString(le), n) for le, n in snap.latency.cumulative()],
            sum_value=snap.latency.sum,
        )
        errors = CounterMetricFamily(
            "crawlyx_errors", "Failed or skipped URLs by error class.", labels=["class"]
        )
        for name in ERROR_CLASSES:
            errors.add_metric([name], self.stats.get_value(f"crawlyx/error/{name}", 0))
        yield errors
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
        if snap.robots_fetched_at is not None:
            yield GaugeMetricFamily(
                "crawlyx_robots_age_seconds",
                "Age of the robots.txt rules applied to the latest fetch.",
                value=max(0.0, time.time() - snap.robots_fetched_at),
            )

    def _frontier_size(self) -> int | None:
        table = self.visited
        if table is None:
            return None
        try:
            pipe = table.redis.pipeline(transaction=False)
            queued, leased = pipe.llen(table.queue_key).hlen(table.leases_key).execute()
        except (redis.RedisError, OSError):
            return None  # Redis gone (the crawl is closing): no sample rather than a wrong one
        return int(queued) + int(leased)


class Metrics:
    def __init__(self, crawler, port: int):
        self.crawler = crawler
        self.port = port
        self.collector = CrawlCollector(crawler, fetch_tally(crawler))
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
        return cls(crawler, port)

    def spider_opened(self, spider):
        self.collector.window_mw = installed(self.crawler, WindowMiddleware)
        self.collector.visited = crawl_parts(self.crawler).visited
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
