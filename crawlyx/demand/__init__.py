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

A process's ring is a :class:`DemandTracker`, built by whoever uses it and passed on:
``scrapy visits`` builds one on its Redis and records what bots fetched; in a crawl the
demand extension (:mod:`.extension`, CRAWLYX_DEMAND_ENABLED) builds one on the crawl's
Redis when the spider opens, flushes it every CRAWLYX_DEMAND_FLUSH_INTERVAL and at the end,
and hands it to the spider's recrawl, whose rung ladder asks it; a script builds one with
:meth:`DemandTracker.from_settings`, records, and calls ``flush()`` itself (recording
touches memory only). Reads see what this process flushed at once, and what other
processes flushed as of at most CRAWLYX_DEMAND_REFRESH_INTERVAL ago.

Loss model: a process killed hard loses its visits since its last flush (fewer visits:
a page may wait longer, at most one rung). A failed flush keeps its slices for the next.
"""

from __future__ import annotations

from crawlyx.demand.durations import parse_duration
from crawlyx.demand.ring import RingConfig
from crawlyx.demand.tracker import DemandTracker

__all__ = ["DemandTracker", "RingConfig", "parse_duration"]
