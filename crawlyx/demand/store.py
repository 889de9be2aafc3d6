"""The Redis side: one OR-merged row per (site, slot, node), and the merged read.

Namespace (through :class:`crawlyx.frontier.state.State`, on the crawl's Redis or the
embedded server, beside breadth's and outside every job's)::

    crawlyx:_demand:{SITE}:{start}:{seconds}:{m}:{k}:{node}   a string of (m + 7) // 8 bytes
    crawlyx:_demand:{SITE}:rows                               set: the keys of the rows
    crawlyx:_demand:sites                                     set: the sites with rows

``SITE`` is the site's origin in braces, the hash tag that keeps its keys in one slot of
a Redis Cluster (:mod:`crawlyx.sitekeys`). Rows written before it was one
(``crawlyx:_demand:https://...:{start}:...``) are not read; they expire within one ring
span.

``{start}`` and ``{seconds}`` are the slice's start (unix time) and length, ``m`` and
``k`` its filter's bits and hashes: a row says what it covers and how to read it, so
processes configured differently (or a change of settings) never misread each other's
rows; a reader reads every row of the site whatever its sizing. ``{node}`` is the
writing process (host, pid, a random part).

Writes: a flush ORs each dirty slice into its node's row atomically (one script: SET a
temporary key of the site, BITOP OR into the row, DEL, EXPIREAT, and the row indexed in
the site's ``rows``), so it lands whole or not at all; OR is idempotent, so a retried
flush is harmless. The flush then lists the site in ``sites``. A row expires one ring
span after its slice ends. A flush that fails leaves its slices dirty for the next.

Reads (:class:`MergedRing`): the site's index a SSCAN step at a time (never SCAN), skip
the rows whose slice has left the ring (on the key, before fetching), fetch a batch at a
time, OR the rows of the same slice and sizing together, drop from the index the rows
found expired, sleep(0) every ``YIELD_EVERY`` keys listed (whether kept or skipped) so
that other threads run. The result is cached for the
refresh interval, and a flush ORs what it merged into its process's cached read: a
process reads its own writes at once, other processes' within the refresh interval.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from dataclasses import dataclass

import redis

from crawlyx.demand.bloom import byte_size, contains, digest, positions, union_into
from crawlyx.demand.recorder import DemandRecorder
from crawlyx.demand.ring import RingConfig
from crawlyx.frontier.state import State
from crawlyx.sitekeys import INDEX_LUA, ROWS, drop_gone, list_site, parse_site, row_keys, site_key

logger = logging.getLogger(__name__)

NAMESPACE = "_demand"  # a State "job" that no crawl can be named

# KEYS: the row, a scratch key, the site's index. ARGV: the slice's bits, expire-at.
_MERGE = (
    INDEX_LUA
    + """
redis.call('SET', KEYS[2], ARGV[1])
redis.call('BITOP', 'OR', KEYS[1], KEYS[1], KEYS[2])
redis.call('DEL', KEYS[2])
redis.call('EXPIREAT', KEYS[1], ARGV[2])
index(KEYS[3], KEYS[1], ARGV[2])
return 1
"""
)


def demand_state(client, embedded=None) -> State:
    return State(client, NAMESPACE, embedded)


def connect(settings) -> State:
    """Connect like a crawl does (CRAWLYX_REDIS_URL, or the embedded server)."""
    return State.connect(settings, NAMESPACE)


def node_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}".replace(":", "_")


@dataclass(frozen=True)
class Layout:
    """What a row covers and how to read it."""

    start: int
    seconds: int
    bits: int
    hashes: int

    @property
    def end(self) -> int:
        return self.start + self.seconds


def row_key(state: State, site: str, layout: Layout, node: str) -> str:
    l = layout  # noqa: E741
    return site_key(state, site, f"{l.start}:{l.seconds}:{l.bits}:{l.hashes}:{node}")


def parse_key(state: State, key: str) -> tuple[str, Layout] | None:
    parsed = parse_site(state, key)
    if parsed is None:
        return None
    site, name = parsed
    parts = name.split(":", 4)
    if len(parts) != 5:
        return None
    try:
        start, seconds, bits, hashes = (int(x) for x in parts[:4])
    except ValueError:
        return None
    if seconds < 1 or bits < 2 or hashes < 1:
        return None
    return site, Layout(start, seconds, bits, hashes)


class DemandStore:
    """Merges the dirty slices of :class:`DemandRecorder` objects into their node's rows."""

    def __init__(self, state: State, config: RingConfig, node: str | None = None):
        self.state = state
        self.config = config
        self.node = node or node_id()
        self._merge = state.client.register_script(_MERGE)

    def flush(
        self, recorder: DemandRecorder, now: float | None = None, read: MergedRing | None = None
    ) -> int:
        """OR every dirty slice of ``recorder`` into Redis; returns the rows merged.
        Each merged slice is ORed into ``read`` too (the process's cached read of the
        site), so that this process sees what it wrote from its very next question.

        A Redis error propagates and leaves the slices not merged yet dirty, to be
        retried by the next flush. Slices that have left the ring are dropped unsent."""
        now = time.time() if now is None else now
        config, merged = self.config, 0
        oldest = config.oldest_slot(now)
        for slot, data in recorder.dirty():
            if slot < oldest:
                recorder.drop(slot)
                continue
            start = slot * config.slice
            layout = Layout(start, config.slice, recorder.bits, recorder.hashes)
            key = row_key(self.state, recorder.site, layout, self.node)
            index = site_key(self.state, recorder.site, ROWS)
            keys = [key, f"{key}:~in", index]  # the scratch key: the row's name, so its tag
            self._merge(keys=keys, args=[bytes(data), layout.end + config.span])
            if read is not None:
                read.add(layout, data)
            recorder.merged(slot)
            merged += 1
        if merged:
            list_site(self.state, recorder.site)  # after its rows are indexed
        return merged


class MergedRing:
    """The union of every node's rows of one site, per slice, read row by row."""

    BATCH = 16  # rows per round trip
    SCAN_COUNT = 500
    YIELD_EVERY = 50

    def __init__(self, state: State, site: str, config: RingConfig):
        self.state = state
        self.site = site
        self.config = config
        self.slices: dict[Layout, bytearray] = {}
        self.read_at: float | None = None  # when the cached union was read
        self.rows = 0  # rows in the cached union

    def refresh(self, now: float | None = None) -> None:
        """Read the union anew (a Redis error propagates; the cached union stays)."""
        now = time.time() if now is None else now
        horizon = now - self.config.span  # slices that ended before this are out
        union: dict[Layout, bytearray] = {}
        seen: set[str] = set()
        batch: list[tuple[str, Layout]] = []
        stale: list[str] = []  # rows whose slice has left the ring: gone, or about to be
        rows = listed = 0
        for keys in row_keys(self.state, self.site, self.SCAN_COUNT):
            for key in keys:
                listed += 1
                if listed % self.YIELD_EVERY == 0:  # every so many keys, kept or not
                    time.sleep(0)
                parsed = parse_key(self.state, key)
                if parsed is None or parsed[0] != self.site or key in seen:
                    continue
                seen.add(key)
                if parsed[1].end <= horizon:
                    stale.append(key)
                    continue
                batch.append((key, parsed[1]))
                if len(batch) >= self.BATCH:
                    rows += self._merge(batch, union)
                    batch = []
            drop_gone(self.state, self.site, stale)  # a SSCAN step's worth at most
            stale = []
        rows += self._merge(batch, union)
        self.slices, self.read_at, self.rows = union, now, rows

    def _merge(self, batch: list[tuple[str, Layout]], union: dict[Layout, bytearray]) -> int:
        if not batch:
            return 0
        values = self.state.client.mget([key for key, _ in batch])  # one slot: the site's
        merged, gone = 0, []
        for (key, layout), value in zip(batch, values, strict=True):
            if value is None:
                gone.append(key)  # expired: its index entry goes too
                continue
            if len(value) != byte_size(layout.bits):
                logger.warning("crawlyx: demand row %s has %d bytes; skipped", key, len(value))
                continue
            current = union.get(layout)
            if current is None:
                union[layout] = bytearray(value)
            else:
                union_into(current, value)
            merged += 1
        drop_gone(self.state, self.site, gone)
        return merged

    def add(self, layout: Layout, data: bytes) -> None:
        """OR a slice this process has just merged into Redis into the cached union: the
        cache stays what a read now would give, as far as this process's own visits go
        (other processes' flushes show at the next refresh). Nothing is cached yet: the
        first read fetches it from Redis anyway."""
        if self.read_at is None:
            return
        current = self.slices.get(layout)
        if current is None:
            self.slices[layout] = bytearray(data)
            self.rows += 1  # a row the cached read had not seen: the ring is not cold
        else:
            union_into(current, data)

    def fresh(self, now: float) -> bool:
        return self.read_at is not None and now - self.read_at < self.config.refresh_interval

    def visited_within(self, url: str, seconds: float, now: float | None = None) -> bool:
        """Whether ``url`` (normalized) was visited in a slice ending after
        ``now - seconds``, per the union read at most a refresh interval ago."""
        now = time.time() if now is None else now
        if not self.fresh(now):
            try:
                self.refresh(now)
            except redis.RedisError as exc:
                if self.read_at is None:
                    raise
                self.read_at = now  # keep the last union; try again an interval later
                logger.warning("crawlyx: demand read failed, using the last one: %s", exc)
        return self.visited_between(url, now - seconds)

    def visited_between(self, url: str, since: float, until: float | None = None) -> bool:
        """Whether ``url`` was visited in a slice that overlaps ``since``..``until`` (no
        upper bound by default: a visit logged by a clock ahead counts), per the union as
        last read: the ladder's promotion windows, each asked on its own."""
        value = digest(url)
        where: dict[tuple[int, int], list[int]] = {}  # positions per sizing
        for layout, data in self.slices.items():
            if layout.end > since and (until is None or layout.start < until):
                sizing = (layout.bits, layout.hashes)
                spots = where.get(sizing)
                if spots is None:
                    spots = where[sizing] = positions(value, *sizing)
                if contains(data, spots):
                    return True
        return False
