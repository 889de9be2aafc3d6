"""The rung ladder: how often each known page is recrawled, moved by whether it is visited.

A page's recrawl interval sits on a short ladder of rungs (``CRAWLYX_DEMAND_RUNGS``,
default 6h, 12h, 24h, 48h). Each rung is a staleness budget: a slower rung costs fewer
fetches and leaves the stored copy wrong for longer, so the ladder stops at both ends
rather than chasing a hot page down to minutes or letting a cold one drift for weeks.

A page starts at the base interval (``CRAWLYX_DEMAND_BASE_INTERVAL``), which is also its
ceiling: the ladder only ever spends fetches on pages that are visited, it never makes a
page staler than the crawl would without it. The rungs in use are the configured ones
below the base, and the base itself.

Each page is decided on its own, when it is due (its stored next-due time has passed),
never by a sweep: the visit ring is a set of Bloom filters and cannot list its members.

- Demote one rung when the page was not visited within its current interval.
- Promote one rung only when it was visited in each of the last ``promote_windows``
  windows of the faster rung's length. "Visited at all this interval" would settle at
  two fetches per visit (a window of length T holds a visit with odds ~T/P, so promotion
  and demotion balance at T = P/2); a visit in every window of the candidate rung asks
  whether a fetch at that rung would actually have been seen, and settles near one.
- Backstop: promotion into the fastest rung stops while that rung holds
  ``max_fast_fraction`` of the site's pages. Cost scales with the hot set, and the hot
  set grows with bot traffic; the rung histogram is the early warning.
- Cold ring: a merged read with nothing in it (no rows yet, nothing since the ring
  started) says "nobody visited anything" and would demote the whole corpus after a
  restart. Every page holds its rung instead, and the caller refreshes the ring.

The visit probe is injected (``probe(url, seconds, until) -> bool``: was ``url`` visited
in the ``seconds`` before ``until``), so these rules run in simulated time without a ring.

Off by default (``CRAWLYX_DEMAND_ENABLED``), and a dry run by default once enabled
(``CRAWLYX_DEMAND_DRY_RUN``): the ladder then walks a shadow interval per page and reports
the counterfactual histogram, and no page's real interval changes. A week of dry run
tells the fetch budget the ladder would settle at before paying for it.

An interval is written only when the page's rung moves, so a converged corpus costs no
write on the recrawl path (:func:`step` and its :class:`PageStore`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Protocol

from crawlyx.demand import durations

logger = logging.getLogger(__name__)

Probe = Callable[[str, float, float], bool]  # (url, seconds, until) -> visited in that span


def label(seconds: float) -> str:
    """``21600`` -> ``6h``, for log lines: the largest unit that divides the duration,
    hours up to 48h (the rungs read as they are usually written: 6h, 12h, 24h, 48h)."""
    for unit in ("d", "h", "m"):
        size = durations.UNITS[unit]
        if seconds >= size and seconds % size == 0 and (unit != "d" or seconds > 2 * size):
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def normalize(values, name: str = "CRAWLYX_DEMAND_RUNGS") -> tuple[float, ...]:
    """Rungs in seconds, ascending: finite, positive, each once. ``values`` is a
    comma-separated text or a list; a value that is not a duration raises ValueError."""
    if isinstance(values, str):
        values = [v for v in values.split(",") if v.strip()]
    seconds = (durations.seconds(v, name) for v in values)
    return tuple(sorted({s for s in seconds if math.isfinite(s) and s > 0}))


@dataclass(frozen=True)
class PageState:
    """What the ladder needs of a page: its interval (seconds) and when it is next due
    (unix seconds), both as stored at its last fetch. ``shadow`` is the dry run's interval."""

    interval: float
    next_due: float
    shadow: float | None = None


@dataclass(frozen=True)
class Decision:
    interval: float  # the page's interval from now on
    moved: bool  # the interval changed: the one case that is written
    why: str  # not_due | cold | demote | ceiling | promote | backstop | visited | floor
    refresh: bool = False  # the ring read was cold: the caller refreshes it


@dataclass(frozen=True)
class Ladder:
    """The ladder as configured. Build it with :func:`ladder_for`, which caches it."""

    rungs: tuple[float, ...]  # the rungs in use, ascending; the last is the base
    promote_windows: int = 2
    max_fast_fraction: float = 0.05
    enabled: bool = False
    dry_run: bool = True
    stats_interval: float = 3600.0

    @property
    def base(self) -> float:
        return self.rungs[-1]

    @property
    def fastest(self) -> float:
        return self.rungs[0]

    @property
    def acts(self) -> bool:
        """Whether decisions change real intervals (enabled, and not a dry run)."""
        return self.enabled and not self.dry_run

    def index(self, interval: float) -> int:
        """The rung an interval stands on: the slowest rung not slower than it (the
        fastest for anything faster). Intervals stored under other settings snap here."""
        below = [i for i, rung in enumerate(self.rungs) if rung <= interval]
        return below[-1] if below else 0

    def decide(
        self,
        url: str,
        state: PageState,
        now: float,
        probe: Probe,
        *,
        cold: bool = False,
        fast_share: float = 0.0,
    ) -> Decision:
        """The page's interval after it came due at ``now``. Pure: no I/O but the probe.
        ``fast_share`` is the share of the site's pages on the fastest rung."""
        if now < state.next_due:
            return Decision(state.interval, False, "not_due")
        if cold:
            return Decision(state.interval, False, "cold", refresh=True)
        at = self.index(state.interval)
        current = self.rungs[at]
        if not probe(url, current, now):
            to, why = min(at + 1, len(self.rungs) - 1), "demote"
            if to == at:
                why = "ceiling"
        elif at == 0:
            to, why = at, "floor"
        elif not self._visited_each_window(url, self.rungs[at - 1], now, probe):
            to, why = at, "visited"
        elif at == 1 and fast_share >= self.max_fast_fraction:
            to, why = at, "backstop"
        else:
            to, why = at - 1, "promote"
        interval = self.rungs[to]
        return Decision(interval, interval != state.interval, why)

    def _visited_each_window(self, url: str, window: float, now: float, probe: Probe) -> bool:
        return all(probe(url, window, now - k * window) for k in range(self.promote_windows))


@lru_cache(maxsize=16)
def _build(rungs, base, windows, fraction, enabled, dry_run, stats) -> Ladder:
    base = durations.seconds(base, "CRAWLYX_DEMAND_BASE_INTERVAL")
    if not (math.isfinite(base) and base > 0):
        raise ValueError(f"CRAWLYX_DEMAND_BASE_INTERVAL: {label(base)} is not a positive duration")
    below = tuple(r for r in normalize(rungs) if r < base)
    return Ladder(
        rungs=below + (base,),
        promote_windows=windows,
        max_fast_fraction=fraction,
        enabled=enabled,
        dry_run=dry_run,
        stats_interval=durations.seconds(stats, "CRAWLYX_DEMAND_STATS_INTERVAL"),
    )


def ladder_for(settings) -> Ladder:
    """The ladder for these (Scrapy) settings. Normalizing is done once per distinct set
    of values: the cache is keyed on the values, so changed settings build a new ladder."""
    rungs = settings.get("CRAWLYX_DEMAND_RUNGS")
    return _build(
        rungs if isinstance(rungs, str) else tuple(rungs),
        settings.get("CRAWLYX_DEMAND_BASE_INTERVAL"),
        settings.getint("CRAWLYX_DEMAND_PROMOTE_WINDOWS"),
        settings.getfloat("CRAWLYX_DEMAND_MAX_FAST_FRACTION"),
        settings.getbool("CRAWLYX_DEMAND_ENABLED"),
        settings.getbool("CRAWLYX_DEMAND_DRY_RUN", True),
        settings.get("CRAWLYX_DEMAND_STATS_INTERVAL"),
    )


def check_values(settings) -> Ladder:
    """Validate each of the ladder's settings on its own; ValueError with one line naming
    the setting. Every crawl reads them (a page's interval), with demand on or off."""
    ladder = ladder_for(settings)
    if not normalize(settings.get("CRAWLYX_DEMAND_RUNGS")):
        raise ValueError("CRAWLYX_DEMAND_RUNGS: no finite, positive rung")
    if ladder.promote_windows < 1:
        raise ValueError(
            f"CRAWLYX_DEMAND_PROMOTE_WINDOWS: {ladder.promote_windows}, must be 1 or more"
        )
    if not 0 < ladder.max_fast_fraction <= 1:
        raise ValueError(
            f"CRAWLYX_DEMAND_MAX_FAST_FRACTION: {ladder.max_fast_fraction}, must be in (0, 1]"
        )
    if not ladder.stats_interval > 0:
        raise ValueError("CRAWLYX_DEMAND_STATS_INTERVAL: must be a positive duration")
    return ladder


def check(settings) -> Ladder:
    """Validate the demand settings at start; ValueError with one line naming the setting.

    Each of the ladder's (:func:`check_values`), and, for a crawl that records demand,
    that the ring can answer what the ladder asks: a slice no longer than the
    fastest rung (or a visit in the last fastest-rung window blurs into the one before),
    and a ring span (slices × slice length) of at least promote_windows × the slowest
    configured rung."""
    ladder = check_values(settings)
    configured = normalize(settings.get("CRAWLYX_DEMAND_RUNGS"))
    slice_ = durations.seconds(settings.get("CRAWLYX_DEMAND_SLICE"), "CRAWLYX_DEMAND_SLICE")
    slices = settings.getint("CRAWLYX_DEMAND_SLICES")
    if not 0 < slice_ <= ladder.fastest:
        raise ValueError(
            f"CRAWLYX_DEMAND_SLICE: {label(slice_)} must be positive and no longer than "
            f"the fastest rung ({label(ladder.fastest)})"
        )
    need = ladder.promote_windows * max(configured[-1], ladder.base)
    if slices * slice_ < need:
        raise ValueError(
            f"CRAWLYX_DEMAND_SLICES: {slices} × {label(slice_)} spans {label(slices * slice_)}, "
            f"less than CRAWLYX_DEMAND_PROMOTE_WINDOWS × the slowest rung ({label(need)})"
        )
    return ladder


@dataclass
class RungHistogram:
    """Pages per rung for one site (the counterfactual one in a dry run), logged every
    ``stats_interval``. The ``fast_share`` it reports feeds the backstop."""

    counts: dict[float, int] = field(default_factory=dict)
    logged_at: float | None = None

    def add(self, interval: float, n: int = 1) -> None:
        self.counts[interval] = self.counts.get(interval, 0) + n

    def move(self, old: float, new: float) -> None:
        self.add(old, -1)
        self.add(new, 1)

    def share(self, interval: float) -> float:
        total = sum(self.counts.values())
        return self.counts.get(interval, 0) / total if total else 0.0

    def line(self, ladder: Ladder) -> str:
        rungs = " ".join(f"{label(r)}={self.counts.get(r, 0)}" for r in ladder.rungs)
        mode = "dry run" if not ladder.acts else "acting"
        return f"demand rungs ({mode}): {rungs}; fastest {self.share(ladder.fastest):.1%}"

    def maybe_log(self, ladder: Ladder, now: float) -> bool:
        """Log the histogram if ``stats_interval`` has passed since the last time."""
        if self.logged_at is not None and now - self.logged_at < ladder.stats_interval:
            return False
        self.logged_at = now
        logger.info(self.line(ladder))
        return True


class PageStore(Protocol):
    """Where pages' states live (the site's page registry)."""

    def get(self, url: str) -> PageState | None: ...

    def write_interval(self, url: str, interval: float, *, shadow: bool) -> None: ...


def step(
    ladder: Ladder,
    store: PageStore,
    histogram: RungHistogram,
    url: str,
    now: float,
    probe: Probe,
    *,
    cold: bool = False,
) -> Decision | None:
    """Decide one known page at ``now`` and write its interval if (and only if) it moved:
    the real interval when the ladder acts, the shadow one in a dry run. The histogram
    follows the same interval. None for a page the store does not know."""
    state = store.get(url)
    if state is None:
        return None
    shadow = not ladder.acts
    if shadow and state.shadow is not None:
        state = PageState(state.shadow, state.next_due)
    decision = ladder.decide(
        url, state, now, probe, cold=cold, fast_share=histogram.share(ladder.fastest)
    )
    if decision.moved:
        store.write_interval(url, decision.interval, shadow=shadow)
        histogram.move(state.interval, decision.interval)
    return decision
