"""A progress line while crawling and a short summary when the crawl ends.

Replaces Scrapy's LogStats for crawlyx crawls: it speaks in pages (items emitted),
the frontier (queued in Redis, for the whole job) and errors by class. The summary is
shown at any log level (crawlyx.log); so is the progress line, in place, on a terminal
whose log hides INFO.
"""

from __future__ import annotations

import logging
import os
import time

from scrapy import signals
from scrapy.exceptions import NotConfigured
from twisted.internet import task

from crawlyx.errors import ALIASES, error_counts
from crawlyx.frontier.jobs import last_stop, outcome
from crawlyx.frontier.state import REDIS_DOWN, outage
from crawlyx.log import SHOWN, ProgressLine
from crawlyx.middlewares import installed
from crawlyx.middlewares.window import WindowMiddleware
from crawlyx.parts import shared_parts

logger = logging.getLogger(__name__)

PROGRESS = "crawlyx: %d pages done, %d queued, %.1f pages/s, %d errors, rss %d MiB%s"


def _rss() -> int:
    """This process's resident memory in bytes (Linux; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


class Progress:
    def __init__(self, crawler, parts, interval: float):
        self.crawler = crawler
        self.stats = crawler.stats
        self.parts = parts  # the crawl's shared parts: the job's queue is its visited table
        self.interval = interval
        self.started = time.monotonic()
        self._task: task.LoopingCall | None = None
        self._last = (self.started, 0)
        # In place on a terminal whose log hides the progress record (crawlyx.log).
        self.line = ProgressLine.for_settings(crawler.settings)

    @classmethod
    def from_crawler(cls, crawler):
        interval = crawler.settings.getfloat("CRAWLYX_PROGRESS_INTERVAL")
        if interval <= 0:
            raise NotConfigured
        ext = cls(crawler, shared_parts(crawler), interval)
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    def spider_opened(self, spider):
        self.started = time.monotonic()
        self._last = (self.started, 0)
        self._task = task.LoopingCall(self.log_progress)
        self._task.start(self.interval, now=False)

    def pages(self) -> int:
        return self.stats.get_value("item_scraped_count", 0)

    def errors(self) -> int:
        return self.stats.get_value("crawlyx/error/count", 0)

    def log_progress(self):
        now, pages = time.monotonic(), self.pages()
        then, before = self._last
        self._last = (now, pages)
        rate = (pages - before) / (now - then) if now > then else 0.0
        try:
            queued = self.parts.visited.queued()
        except REDIS_DOWN as exc:  # an exception would stop the looping call
            outage(self.stats, "counting the queue", exc)
            queued = -1
        args = (pages, queued, rate, self.errors(), _rss() >> 20, self.windows())
        if self.line is not None:
            self.line.show(PROGRESS % args)
        else:
            logger.info(PROGRESS, *args)

    def windows(self, shown: int = 3) -> str:
        """``, window localhost=12 cdn.example=8``: the widest windows (see
        crawlyx/middlewares/window.py), ``+N`` for the hosts left out."""
        window_mw = installed(self.crawler, WindowMiddleware)
        if window_mw is None or not window_mw.windows:
            return ""
        widest = sorted(window_mw.windows.items(), key=lambda kv: (-kv[1].value, kv[0]))
        text = " ".join(f"{key}={window.value}" for key, window in widest[:shown])
        more = len(widest) - shown
        return f", window {text}" + (f" +{more}" if more > 0 else "")

    def spider_closed(self, spider, reason):
        if self._task is not None and self._task.running:
            self._task.stop()
        if self.line is not None:
            self.line.clear()
        wall = time.monotonic() - self.started
        pages = self.pages()
        by_class = error_counts(self.stats)
        # Other addresses of documents written once are no errors: said apart.
        others = {name: by_class.pop(name) for name in ALIASES if name in by_class}
        errors = ", ".join(f"{name} {count}" for name, count in by_class.items()) or "none"
        if others:
            errors += "; other addresses of pages written: " + ", ".join(
                f"{n} {c}" for n, c in others.items()
            )
        self.stats.set_value("crawlyx/pages", pages)
        self.stats.set_value("crawlyx/wall_seconds", round(wall, 3))
        logger.info(
            "crawlyx: %s: %d pages in %.1f s (%.1f pages/s), %d links seen before, errors: %s",
            self.outcome(spider, reason),
            pages,
            wall,
            pages / wall if wall > 0 else 0.0,
            self.stats.get_value("crawlyx/frontier/duplicates", 0),
            errors,
            extra=SHOWN,
        )

    def outcome(self, spider, reason: str) -> str:
        """What became of the job, as ``jobs`` will show it (finished, paused, failed, or
        running on in other processes), and why this process stopped when that says
        more than the state: ``paused (max_pages)``."""
        try:
            visited = self.parts.visited
            state = outcome(visited.state, visited.owner, last_stop(spider, reason))
        except REDIS_DOWN as exc:
            outage(self.stats, "reading the job's state", exc)
            state = "stopped"
        if state == "running":
            return "done here, the job runs on in other processes"
        if reason in ("finished", "shutdown") or state == "failed":
            return state
        return f"{state} ({reason})"
