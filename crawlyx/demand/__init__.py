"""Demand: which URLs bots visited, when, in a ring of time-sliced Bloom filters.

One ring per site: the last CRAWLYX_DEMAND_SLICES slices of CRAWLYX_DEMAND_SLICE each,
one Bloom filter per slice, sized for CRAWLYX_DEMAND_SLICE_URLS distinct URLs at
CRAWLYX_DEMAND_FP_RATE. A visited URL always reads as visited (no false negatives);
an unvisited one reads as visited at about the configured rate per slice looked at
(false positives bring a page back sooner: wasted work, never staleness). A Bloom
filter cannot list its members: the ring answers "was this URL visited?", nothing more.

- :mod:`.bloom`     one filter, the shared hash, sizing,
- :mod:`.ring`      slices, slots, the span, the settings,
- :mod:`.recorder`  a process's unflushed visits to a site (the hot path),
- :mod:`.store`     the Redis rows (one OR-merged row per node per slot), the merged read,
- :mod:`.tracker`   the three together for a process, :mod:`.durations` ``90s``/``6h``/...

Writers are ``scrapy visits`` (bots in access logs, the same pass as breadth) and
:func:`record_visit`; readers ask :func:`visited_within`. In a crawl the demand
extension (CRAWLYX_DEMAND_ENABLED) sets the process's ring up on the crawl's Redis and
flushes it every CRAWLYX_DEMAND_FLUSH_INTERVAL and at the end; a script calls
:func:`flush` itself (recording touches memory only). Reads see what this process
flushed at once, and what other processes flushed as of at most
CRAWLYX_DEMAND_REFRESH_INTERVAL ago.

Loss model: a process killed hard loses its visits since its last flush (fewer visits:
a page may wait longer, at most one rung). A failed flush keeps its slices for the next.
"""

from __future__ import annotations

from crawlyx.demand.durations import parse_duration
from crawlyx.demand.ring import RingConfig
from crawlyx.demand.tracker import DemandTracker

__all__ = [
    "DemandTracker",
    "RingConfig",
    "configure",
    "flush",
    "parse_duration",
    "record_visit",
    "visited_within",
]

_demand: DemandTracker | None = None


def configure(settings=None, state=None, node: str | None = None) -> DemandTracker:
    """Set the process's ring up from ``settings`` (the project's by default) on
    ``state`` (default: the Redis the settings name, as a crawl connects). Visits
    recorded before and not flushed are kept when the sizing is unchanged."""
    global _demand
    from crawlyx.demand.store import connect, demand_state

    if settings is None:
        from scrapy.utils.project import get_project_settings

        settings = get_project_settings()
    config = RingConfig.from_settings(settings)
    state = demand_state(state.client) if state is not None else connect(settings)
    bot = settings.get("CRAWLYX_BOT_NAME") or "crawlyx"
    previous = _demand
    _demand = DemandTracker(state, config, bot, node)
    if previous is not None and previous.config == config:
        _demand.recorders = previous.recorders
    return _demand


def current() -> DemandTracker:
    """The process's ring, set up from the project's settings on first use."""
    return _demand if _demand is not None else configure()


def record_visit(site: str, url: str, bot: str | None, when: float | None = None) -> bool:
    """Record that ``bot`` fetched ``url`` of ``site`` at unix time ``when`` (default
    now). ``url`` is normalized as the crawl does (crawlyx.urls.normalize.normalize_url),
    ``site`` its origin. People (``None``, ``human``), unnamed automation (``other``)
    and crawlyx itself are not visits: False, nothing recorded. Memory only; see
    :func:`flush`."""
    demand = _demand if _demand is not None else configure()
    return demand.record(site, url, bot, when)


def flush() -> int:
    """Merge this process's recorded visits into Redis; the rows merged. The process's
    next :func:`visited_within` sees them."""
    return current().flush()


def visited_within(site: str, url: str, seconds, now: float | None = None) -> bool:
    """Whether any process's flushed visits include ``url`` in the last ``seconds``
    (a number or ``"90s"``, ``"30m"``, ``"6h"``, ``"2d"``) before ``now``: this
    process's as of its last flush, other processes' as of the last refresh."""
    return current().visited_within(site, url, seconds, now)
