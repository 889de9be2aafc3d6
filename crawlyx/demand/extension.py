"""Demand for the crawl: the process's ring, on the crawl's Redis, flushed on a timer.

With CRAWLYX_DEMAND_ENABLED, the extension builds the process's ring
(:class:`crawlyx.demand.DemandTracker`) on the crawl's Redis when the spider opens, as
:attr:`Demand.ring`, and hands it to the spider's recrawl, whose rung ladder asks it; code
the crawl runs finds it there too (``crawler.get_extension(Demand).ring``). The crawl's
own fetches are not visits and are not recorded. Recording touches memory only; a
LoopingCall merges the visits into Redis every CRAWLYX_DEMAND_FLUSH_INTERVAL, and the
spider's close flushes once more.

Every CRAWLYX_DEMAND_STATS_INTERVAL the spider's recrawl logs where the rung ladder has
put the pages of the sites it reads (crawlyx/demand/recrawl.py), on a timer of its own: a
crawl waiting on a slow site, or between pages that come due, still says where it stands.

Loss model: a crawl killed hard loses the visits since its last flush. A flush that
fails (Redis unreachable) keeps its slices and the next retries them; one that still
fails at close is logged with what was lost.

Stats: ``crawlyx/demand/recorded``, ``.../rows_merged``, ``.../flushes``,
``.../flush_failures``, ``.../sites_dropped``.
"""

from __future__ import annotations

import logging

from scrapy import signals
from scrapy.exceptions import NotConfigured
from twisted.internet import task

from crawlyx.demand import ladder
from crawlyx.demand.registry import retention
from crawlyx.demand.ring import RingConfig
from crawlyx.demand.tracker import DemandTracker
from crawlyx.extensions import flush_counted
from crawlyx.frontier.state import REDIS_DOWN, outage
from crawlyx.parts import shared_parts

logger = logging.getLogger(__name__)


class Demand:
    def __init__(self, crawler, parts, config: RingConfig):
        self.crawler = crawler
        self.stats = crawler.stats
        self.parts = parts  # the crawl's shared parts: the visits go to its Redis
        self.config = config
        self.ring: DemandTracker | None = None
        self._task: task.LoopingCall | None = None
        self._rungs: task.LoopingCall | None = None  # logs the rung histogram

    @staticmethod
    def check_settings(settings) -> RingConfig:
        """The ring's, the ladder's and the page registry's settings, each checked with
        demand on or off (every crawl keeps its pages' intervals), and, with demand on,
        that the ring can answer what the ladder asks; ValueError (one line naming the
        setting) if not."""
        config = RingConfig.from_settings(settings)
        retention(settings)
        if settings.getbool("CRAWLYX_DEMAND_ENABLED"):
            ladder.check(settings)
        else:
            ladder.check_values(settings)
        return config

    @classmethod
    def from_crawler(cls, crawler):
        if not crawler.settings.getbool("CRAWLYX_DEMAND_ENABLED"):
            raise NotConfigured
        ext = cls(crawler, shared_parts(crawler), cls.check_settings(crawler.settings))
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    def spider_opened(self, spider):
        self.ring = DemandTracker.from_settings(self.crawler.settings, self.parts.state)
        self._task = task.LoopingCall(self.flush)
        self._task.start(self.config.flush_interval, now=False)
        recrawl = getattr(spider, "recrawl", None)
        if recrawl is not None:
            recrawl.demand = self.ring  # what the rung ladder reads the visits from
        if recrawl is not None and recrawl.ladder.enabled:
            self._rungs = task.LoopingCall(self.log_rungs, recrawl)
            self._rungs.start(recrawl.ladder.stats_interval, now=False)

    def log_rungs(self, recrawl) -> None:
        try:
            recrawl.log_histograms()
        except REDIS_DOWN as exc:  # the next tick tries again
            outage(self.stats, "reading the rung histogram", exc)

    def flush(self) -> bool:
        """Merge the process's visits into Redis; False if Redis failed (kept)."""
        if self.ring is None:
            return False
        flushed = flush_counted(self.stats, "demand", self.ring.flush)
        self.stats.set_value("crawlyx/demand/recorded", self.ring.recorded)
        if self.ring.sites_dropped:
            self.stats.set_value("crawlyx/demand/sites_dropped", self.ring.sites_dropped)
        return flushed

    def spider_closed(self, spider, reason=None):
        for timer in (self._task, self._rungs):
            if timer is not None and timer.running:
                timer.stop()
        if self.ring is not None and not self.flush():
            logger.error(
                "crawlyx: demand: %d slices of visits could not be saved to Redis",
                self.ring.dirty(),
            )
