"""A process's ring: the recorders of its sites, the store they flush to, the reads.

:class:`DemandTracker` is what the crawl's extension (and through it the recrawl's rung
ladder), ``scrapy visits`` and a script each build, on the Redis they use.
"""

from __future__ import annotations

import time

from crawlyx.breadth.bots import HUMAN, OTHER
from crawlyx.demand.durations import parse_duration
from crawlyx.demand.recorder import DemandRecorder
from crawlyx.demand.ring import RingConfig
from crawlyx.demand.store import DemandStore, MergedRing, demand_state
from crawlyx.frontier.state import State


class DemandTracker:
    """Record visits (memory), flush them (Redis), ask the merged ring (cached)."""

    MAX_SITES = 256  # sites recorded per process; visits to more are counted, dropped
    BOTS_REMEMBERED = 1024  # bot names whose verdict is cached

    def __init__(self, state: State, config: RingConfig, bot: str = "crawlyx", node=None):
        self.state = state
        self.config = config
        self.store = DemandStore(state, config, node)
        # Not visits: nobody named (None), people, unnamed automation (monitors,
        # scripts: ``other``), and crawlyx's own fetches.
        self.not_visits = {None, "", HUMAN, OTHER, bot.lower()}
        self._visitors: dict[str | None, bool] = {}  # bot name -> counts as a visit
        self.recorders: dict[str, DemandRecorder] = {}
        self.reads: dict[str, MergedRing] = {}
        self.recorded = 0
        self.sites_dropped = 0

    @classmethod
    def from_settings(cls, settings, state: State, node: str | None = None) -> DemandTracker:
        """A ring sized by ``settings`` on the Redis of ``state``: a crawl's, or for a
        script, :func:`crawlyx.demand.store.connect`'s (the caller closes it). The fetches
        of ``CRAWLYX_BOT_NAME`` (crawlyx's own) are not visits."""
        bot = settings.get("CRAWLYX_BOT_NAME") or "crawlyx"
        config = RingConfig.from_settings(settings)
        return cls(demand_state(state.client), config, bot, node)

    def record(self, site: str, url: str, bot: str | None, when: float | None = None) -> bool:
        """Record a visit by ``bot`` to ``url`` (normalized) of ``site`` at ``when``
        (unix time, default now); False if it is not a visit (see ``not_visits``)."""
        if not self._visitors.get(bot) and not self._visitor(bot):
            return False
        recorder = self.recorders.get(site)
        if recorder is None:
            if len(self.recorders) >= self.MAX_SITES:
                self.sites_dropped += 1
                return False
            recorder = self.recorders[site] = DemandRecorder(site, self.config)
        recorder.record(url, time.time() if when is None else when)
        self.recorded += 1
        return True

    def _visitor(self, bot: str | None) -> bool:
        """Whether ``bot``'s fetches are visits (remembered for the next call)."""
        visitor = bot is not None and bot.lower() not in self.not_visits
        if len(self._visitors) < self.BOTS_REMEMBERED:
            self._visitors[bot] = visitor
        return visitor

    def flush(self, now: float | None = None) -> int:
        """Merge every dirty slice into Redis; rows merged. This process's next read
        sees them. A Redis error propagates and what was not merged stays dirty for the
        next flush."""
        merged = 0
        for site, recorder in list(self.recorders.items()):
            merged += self.store.flush(recorder, now, self.reads.get(site))
            if not recorder.size():
                del self.recorders[site]
        return merged

    def dirty(self) -> int:
        """Slices held in memory, not merged yet."""
        return sum(recorder.size() for recorder in self.recorders.values())

    def visited_within(self, site: str, url: str, seconds, now: float | None = None) -> bool:
        """Whether ``url`` (normalized) of ``site`` was visited in the last ``seconds``
        (a number or a duration such as ``"24h"``), per the merged ring."""
        return self.read(site).visited_within(url, parse_duration(seconds, "seconds"), now)

    def read(self, site: str) -> MergedRing:
        """The site's merged read (its ``rows`` say whether it found any)."""
        read = self.reads.get(site)
        if read is None:
            read = self.reads[site] = MergedRing(self.state, site, self.config)
        return read
