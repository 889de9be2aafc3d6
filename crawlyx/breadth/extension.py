"""Crawl breadth for the crawl itself: every URL crawlyx fetches, per UTC day.

Each response (``response_received``: after redirects, robots.txt included) is
normalized and recorded under CRAWLYX_BOT_NAME for the current UTC day, in the
sketches of its site (the URL's origin), in rows marked as crawlyx's own (``scrapy
breadth`` shows them apart from the bots that visit the site); each emitted page
(``item_scraped``) also goes into the site's *corpus* sketch, the denominator of
``scrapy breadth``'s coverage. Recording touches memory only; the sketches are
merged into Redis (see :mod:`crawlyx.breadth.store`) every
CRAWLYX_BREADTH_FLUSH_INTERVAL seconds by a LoopingCall, right after the UTC day rolls
over (the old day is persisted at once) and when the spider closes.

Loss model: a crawl process killed hard loses at most one flush interval of its own
observations: an undercount, never a double count (a merge is an idempotent max).
A flush that fails (Redis unreachable) leaves the sketches dirty and the next flush
retries them; one that still fails at close is logged with what was lost.

Concurrency: record and flush both run on the reactor thread, so a flush never sees
a half-made update; ``_flushing`` keeps a rollover flush and the timer's from
overlapping. Across processes the Lua merge is the critical section.

Stats: ``crawlyx/breadth/recorded``, ``.../rows_merged``, ``.../flushes``,
``.../flush_failures``, ``.../overflow_bots``, ``.../unparsable_urls``,
``.../sites_dropped``.
"""

from __future__ import annotations

import logging
import time

from itemadapter import ItemAdapter
from scrapy import signals
from scrapy.exceptions import NotConfigured
from twisted.internet import task

from crawlyx.breadth.recorder import Recorder
from crawlyx.breadth.store import DAY, BreadthStore, breadth_state, utc_day
from crawlyx.extensions import flush_counted
from crawlyx.parts import shared_parts
from crawlyx.urls.normalize import normalize_url

logger = logging.getLogger(__name__)


def site_of(url: str) -> str:
    """``scheme://host[:port]`` of a normalized URL (no userinfo), without parsing."""
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{rest.split('/', 1)[0].rpartition('@')[2]}"


class Breadth:
    MAX_SITES = 16  # a crawl has one origin; more are recorded up to this, then dropped

    def __init__(
        self, crawler, parts, bot: str, interval: float, max_bots: int, retention_days: int
    ):
        self.crawler = crawler
        self.stats = crawler.stats
        self.parts = parts  # the crawl's shared parts: the sketches go to its Redis
        self.bot = bot
        self.interval = interval
        self.max_bots = max_bots
        self.retention_days = retention_days
        self.recorders: dict[str, Recorder] = {}
        self.store: BreadthStore | None = None
        self._task: task.LoopingCall | None = None
        self._flushing = False
        self._day_number: int | None = None
        self._day = ""
        self.recorded = 0
        self.unparsable = 0
        self.sites_dropped = 0

    @staticmethod
    def check_settings(settings) -> tuple[float, int, int]:
        """(flush interval, max bots, retention days); ValueError if one is not positive."""
        interval = settings.getfloat("CRAWLYX_BREADTH_FLUSH_INTERVAL")
        max_bots = settings.getint("CRAWLYX_BREADTH_MAX_BOTS")
        retention = settings.getint("CRAWLYX_BREADTH_RETENTION_DAYS")
        if interval <= 0 or max_bots < 1 or retention < 1:
            raise ValueError(
                "CRAWLYX_BREADTH_FLUSH_INTERVAL, CRAWLYX_BREADTH_MAX_BOTS and "
                "CRAWLYX_BREADTH_RETENTION_DAYS must be positive"
            )
        return interval, max_bots, retention

    @classmethod
    def from_crawler(cls, crawler):
        settings = crawler.settings
        if not settings.getbool("CRAWLYX_BREADTH_ENABLED"):
            raise NotConfigured
        interval, max_bots, retention = cls.check_settings(settings)
        bot = settings.get("CRAWLYX_BOT_NAME") or "crawlyx"
        ext = cls(crawler, shared_parts(crawler), bot, interval, max_bots, retention)
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(ext.response_received, signal=signals.response_received)
        crawler.signals.connect(ext.item_scraped, signal=signals.item_scraped)
        return ext

    # -- recording (memory only) ----------------------------------------------------------

    def today(self) -> str:
        """The current UTC day; the first call of a new day schedules a flush."""
        number = int(time.time() // DAY)
        if number != self._day_number:
            if self._day_number is not None:
                from twisted.internet import reactor  # the crawl's, installed by now

                reactor.callLater(0, self.flush)  # persist the day that just ended
            self._day_number, self._day = number, utc_day(number * DAY)
        return self._day

    def _recorder(self, site: str) -> Recorder | None:
        recorder = self.recorders.get(site)
        if recorder is None:
            if len(self.recorders) >= self.MAX_SITES:
                self.sites_dropped += 1
                return None
            recorder = self.recorders[site] = Recorder(site, self.max_bots)
        return recorder

    def response_received(self, response, request, **kwargs):
        try:
            url = normalize_url(response.url)
        except ValueError:
            self.unparsable += 1
            return
        recorder = self._recorder(site_of(url))
        if recorder is not None:
            recorder.record(self.bot, url, self.today())
            self.recorded += 1

    def item_scraped(self, item, **kwargs):
        url = ItemAdapter(item).get("url")
        if not url:
            return
        recorder = self._recorder(site_of(url))
        if recorder is not None:
            recorder.record_corpus(url)

    # -- persisting ---------------------------------------------------------------------

    def spider_opened(self, spider):
        self.store = BreadthStore(
            breadth_state(self.parts.state.client),
            self.retention_days,
            own=self.bot,  # its rows are crawlyx's own, apart from the visiting bots'
        )
        self._task = task.LoopingCall(self.flush)
        self._task.start(self.interval, now=False)

    def dirty(self) -> int:
        return sum(recorder.dirty_count() for recorder in self.recorders.values())

    def flush(self) -> bool:
        """Merge every dirty sketch into Redis; False if Redis failed (retried later)."""
        if self.store is None or self._flushing:
            return False
        self._flushing = True
        try:
            return flush_counted(self.stats, "breadth", self._merge)
        finally:
            self._flushing = False
            self._set_stats()

    def _merge(self) -> int:
        return sum(self.store.flush(r).merged for r in list(self.recorders.values()))

    def _set_stats(self) -> None:
        self.stats.set_value("crawlyx/breadth/recorded", self.recorded)
        overflow = sum(recorder.overflowed for recorder in self.recorders.values())
        for name, value in (
            ("overflow_bots", overflow),
            ("unparsable_urls", self.unparsable),
            ("sites_dropped", self.sites_dropped),
        ):
            if value:
                self.stats.set_value(f"crawlyx/breadth/{name}", value)

    def spider_closed(self, spider, reason=None):
        if self._task is not None and self._task.running:
            self._task.stop()
        if self.store is not None and not self.flush():
            logger.error(
                "crawlyx: breadth: %d sketches could not be saved to Redis; this run's "
                "breadth is undercounted",
                self.dirty(),
            )
