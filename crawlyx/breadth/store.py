"""The Redis side: where breadth sketches live, the atomic merge, the streaming read.

Namespace (through :class:`crawlyx.frontier.state.State`, like every crawl key, on the same
Redis or embedded server the crawl uses)::

    crawlyx:_breadth:{SITE}:day:{YYYY-MM-DD}:{bot}   one row per (site, UTC day, bot)
    crawlyx:_breadth:{SITE}:corpus                   the pages crawlyx emitted for the site
    crawlyx:_breadth:{SITE}:rows                     set: the keys of the site's rows
    crawlyx:_breadth:sites                           set: the sites with rows

``SITE`` is the normalized origin (``https://docs.example.com``), in braces: the hash
tag that keeps a site's keys in one slot of a Redis Cluster (:mod:`crawlyx.sitekeys`).
Breadth belongs to a site, across jobs and runs, so the rows sit outside every job's
``crawlyx:{job}:`` namespace: ``_breadth`` can never be a job name (those start with a
letter or digit), so no job's cleanup touches them. Rows written before the site was a
hash tag (``crawlyx:_breadth:https://...:day:...``) are not read; they expire with
their retention.

A row is a hash: ``r`` the 16,384 registers (one byte each), ``x`` the exact set while
small (8-byte hashes; absent once saturated), ``f`` how many flushes were merged, ``o``
(``1``) on a row of crawlyx's own fetches (the crawl's, under CRAWLYX_BOT_NAME: no
visiting bot's), and one ``p:{process}`` field per process (shard) that merged into it.
Each flush merges a process's sketch into the row with one Lua script, atomically (the
script indexes the row in its site's ``rows`` too; the flush then lists the site):
element-wise max of the registers, union of the exact sets. Redis runs a script alone,
so any number of processes can flush the same row at once and no register is lost; no
client-side read-merge-write, no lock to forget. Merging is idempotent, so a retried
flush is harmless. Day rows expire ``retention`` days after their day ends (EXPIREAT, the same
on every flush); the corpus row ``retention`` days after the last flush that touched it.

The read side (:class:`RowScan`) streams: the sites set and each site's index read a
SSCAN step at a time (never SCAN), the rows fetched a batch at a time and handed to the
caller one by one to merge and drop, a hard cap on rows with ``truncated`` set rather
than a short answer passed off as complete. Index entries of rows found expired are
removed on the way.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime

from crawlyx.breadth.recorder import Recorder, bot_key
from crawlyx.breadth.sketch import EXACT_LIMIT, Sketch
from crawlyx.frontier.state import State
from crawlyx.sitekeys import (
    INDEX_LUA,
    ROWS,
    drop_gone,
    list_site,
    parse_site,
    row_keys,
    site_key,
    site_names,
)

NAMESPACE = "_breadth"  # a State "job" that no crawl can be named
DAY = 86400

# KEYS[1]: the row, KEYS[2]: its site's index. ARGV: registers, exact hashes ('' when
# saturated), '1' if saturated, shard id, expire-at (unix seconds), exact limit, now (unix
# seconds), '1' for a row of crawlyx's own fetches.
_MERGE = (
    INDEX_LUA
    + """
local key, incoming = KEYS[1], ARGV[1]
local stored = redis.call('HGET', key, 'r')
if stored then
  if #stored ~= #incoming then
    return redis.error_reply('ERR breadth row ' .. key .. ' holds ' .. #stored ..
      ' registers, not ' .. #incoming)
  end
  if stored ~= incoming then
    local out = {}
    for i = 1, #incoming, 4000 do
      local j = i + 3999
      local mine = string.sub(stored, i, j)
      if mine == string.sub(incoming, i, j) then
        out[#out + 1] = mine
      else
        local a = {string.byte(stored, i, j)}
        local b = {string.byte(incoming, i, j)}
        for k = 1, #a do
          if b[k] > a[k] then a[k] = b[k] end
        end
        out[#out + 1] = string.char(unpack(a))
      end
    end
    redis.call('HSET', key, 'r', table.concat(out))
  end
  local x = redis.call('HGET', key, 'x')
  if x then
    if ARGV[3] == '1' then
      redis.call('HDEL', key, 'x')
    else
      local seen, parts, n = {}, {}, 0
      for _, s in ipairs({x, ARGV[2]}) do
        for i = 1, #s, 8 do
          local h = string.sub(s, i, i + 7)
          if not seen[h] then
            seen[h] = true
            n = n + 1
            parts[n] = h
          end
        end
      end
      if n > tonumber(ARGV[6]) then
        redis.call('HDEL', key, 'x')
      elseif n * 8 ~= #x then
        redis.call('HSET', key, 'x', table.concat(parts))
      end
    end
  end
else
  redis.call('HSET', key, 'r', incoming)
  if ARGV[3] ~= '1' then
    redis.call('HSET', key, 'x', ARGV[2])
  end
end
redis.call('HINCRBY', key, 'f', 1)
if ARGV[8] == '1' then
  redis.call('HSET', key, 'o', '1')
end
redis.call('HSET', key, 'p:' .. ARGV[4], ARGV[7])
redis.call('EXPIREAT', key, ARGV[5])
index(KEYS[2], key, ARGV[5])
return 1
"""
)


def utc_day(timestamp: float) -> str:
    """``YYYY-MM-DD`` of a unix time, in UTC."""
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d")


def day_start(day: str) -> int:
    """Unix time of 00:00 UTC on ``day``."""
    return (date.fromisoformat(day) - date(1970, 1, 1)).days * DAY


def breadth_state(client, embedded=None) -> State:
    """The breadth namespace on a Redis client (a crawl's, or one of its own)."""
    return State(client, NAMESPACE, embedded)


def connect(settings) -> State:
    """Connect like a crawl does (CRAWLYX_REDIS_URL, or the embedded server)."""
    return State.connect(settings, NAMESPACE)


def day_key(state: State, site: str, day: str, bot: str) -> str:
    return site_key(state, site, f"day:{day}:{bot}")


def corpus_key(state: State, site: str) -> str:
    return site_key(state, site, "corpus")


def parse_key(state: State, key: str) -> tuple[str, str | None, str | None] | None:
    """``(site, day, bot)`` of a row key; ``(site, None, None)`` for a corpus row."""
    parsed = parse_site(state, key)
    if parsed is None:
        return None
    site, name = parsed
    if name == "corpus":
        return site, None, None
    parts = name.split(":", 2)
    if len(parts) != 3 or parts[0] != "day" or len(parts[1]) != 10:
        return None
    return site, parts[1], parts[2]


@dataclass
class FlushResult:
    merged: int = 0  # rows merged into Redis
    expired: int = 0  # sketches of days already past retention, dropped unsent


class BreadthStore:
    """Merges a :class:`Recorder`'s dirty sketches into Redis. ``own``: the bot name
    crawlyx's own fetches are recorded under (the crawl's store), whose rows are marked
    so that ``scrapy breadth`` shows them apart from the visiting bots."""

    def __init__(
        self,
        state: State,
        retention_days: int = 90,
        shard: str | None = None,
        own: str | None = None,
    ):
        if retention_days < 1:
            raise ValueError("retention_days must be 1 or more")
        self.state = state
        self.retention_days = retention_days
        self.shard = shard or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.own = bot_key(own) if own else None
        self._merge = state.client.register_script(_MERGE)

    def day_expiry(self, day: str) -> int:
        """When a day's rows expire: ``retention_days`` after the day ends."""
        return day_start(day) + (self.retention_days + 1) * DAY

    def merge(
        self, site: str, key: str, sketch: Sketch, expire_at: int, now: float, own=False
    ) -> None:
        """One atomic max-merge of ``sketch`` into ``site``'s row ``key``, indexed in the
        site's ``rows`` (``own``: a row of crawlyx's own fetches)."""
        exact = sketch.exact_bytes()
        self._merge(
            keys=[key, site_key(self.state, site, ROWS)],
            args=[
                sketch.register_bytes(),
                exact or b"",
                "1" if exact is None else "0",
                self.shard,
                expire_at,
                EXACT_LIMIT,
                int(now),
                "1" if own else "0",
            ],
        )

    def flush(self, recorder: Recorder, now: float | None = None) -> FlushResult:
        """Merge every dirty sketch of ``recorder``; each is marked clean once merged.

        A Redis error propagates and leaves the sketches not merged yet dirty, to be
        retried by the next flush (merging twice changes nothing). Afterwards the clean
        sketches of past days are forgotten."""
        now = time.time() if now is None else now
        result = FlushResult()
        state, site = self.state, recorder.site
        for day in recorder.days():
            if self.day_expiry(day) <= now:
                result.expired += sum(s.dirty for s in recorder.sketches(day).values())
                recorder.drop_day(day)
        for day, bot, sketch in recorder.dirty():
            key, own = day_key(state, site, day, bot), bot == self.own
            self.merge(site, key, sketch, self.day_expiry(day), now, own)
            sketch.dirty = False
            result.merged += 1
        corpus = recorder.corpus
        if corpus.dirty:
            expire_at = int(now) + self.retention_days * DAY
            self.merge(site, corpus_key(state, site), corpus, expire_at, now)
            corpus.dirty = False
            result.merged += 1
        if result.merged:
            list_site(state, site)  # after its rows are indexed (crawlyx.sitekeys)
        recorder.evict_clean()
        return result


@dataclass
class Row:
    site: str
    day: str | None  # None: the site's corpus row
    bot: str | None
    sketch: Sketch
    shards: int  # processes that merged into the row
    flushes: int
    own: bool = False  # crawlyx's own fetches, not a visiting bot's


class RowScan:
    """Streams the breadth rows of one site (or all), at most ``cap`` of them.

    Iterate it once; afterwards ``rows_read`` and ``truncated`` tell how much was seen.
    The sites come from the sites set, each site's rows from its index (SSCAN steps, never
    SCAN); filtering by day and bot happens on the key, before any row is fetched. Every
    ``YIELD_EVERY`` rows the scan sleeps(0) so that other threads of the process (a
    reactor, a server) run; every Redis call is short (one SSCAN step, one batch of rows),
    so Redis keeps serving crawls in between."""

    BATCH = 32  # rows per round trip: 32 × ~24 KiB at most in flight
    SCAN_COUNT = 500
    YIELD_EVERY = 200

    def __init__(
        self,
        state: State,
        *,
        site: str | None = None,
        days: set[str] | None = None,
        bot: str | None = None,
        cap: int = 4096,
    ):
        if cap < 1:
            raise ValueError("cap must be 1 or more")
        self.state = state
        self.site = site
        self.days = days
        self.bot = bot.lower() if bot else None
        self.cap = cap
        self.rows_read = 0
        self.truncated = False

    def _wanted(self, day: str | None, bot: str | None) -> bool:
        if day is None:
            return True  # the corpus: coverage needs it whatever the filters
        if self.days is not None and day not in self.days:
            return False
        return self.bot is None or bot.lower() == self.bot

    def _older(self, day: str | None) -> bool:
        """Whether a row of ``day`` is older than the days read: perhaps expired."""
        return day is not None and bool(self.days) and day < min(self.days)

    def __iter__(self) -> Iterator[Row]:
        sites = [self.site] if self.site is not None else site_names(self.state)
        for site in sites:
            yield from self._site(site)
            if self.truncated:
                return

    def _site(self, site: str) -> Iterator[Row]:
        seen: set[str] = set()  # SSCAN may return a key more than once
        pending: list[tuple[str, tuple]] = []
        for keys in row_keys(self.state, site, self.SCAN_COUNT):
            # Rows of days before those read are never fetched: those expired are looked
            # for here, so that the index forgets them.
            older = []
            for key in keys:
                parsed = parse_key(self.state, key)
                if parsed is None or parsed[0] != site or key in seen:
                    continue
                if not self._wanted(*parsed[1:]):
                    if self._older(parsed[1]):
                        older.append(key)
                    continue
                seen.add(key)  # at most cap + 1 keys
                if self.rows_read >= self.cap:
                    self.truncated = True  # one more row than the cap: never merged
                    yield from self._fetch(site, pending)
                    return
                self.rows_read += 1
                pending.append((key, parsed))
                if len(pending) >= self.BATCH:
                    yield from self._fetch(site, pending)
                    pending = []
                if self.rows_read % self.YIELD_EVERY == 0:
                    time.sleep(0)
            drop_gone(self.state, site, older)
        yield from self._fetch(site, pending)

    def _fetch(self, site: str, pending: list[tuple[str, tuple]]) -> Iterator[Row]:
        if not pending:
            return
        pipe = self.state.client.pipeline(transaction=False)
        for key, _ in pending:
            pipe.hmget(key, "r", "x", "f", "o")
            pipe.hlen(key)
        replies = pipe.execute()
        gone = []
        for index, (key, (site_, day, bot)) in enumerate(pending):
            (registers, exact, flushes, own), fields = replies[2 * index], replies[2 * index + 1]
            if registers is None:
                gone.append(key)  # expired: its index entry goes too
                continue
            known = 1 + (exact is not None) + (flushes is not None) + (own is not None)
            yield Row(
                site_,
                day,
                bot,
                Sketch.from_bytes(registers, exact),
                shards=fields - known,
                flushes=int(flushes or 0),
                own=own == b"1",
            )
        drop_gone(self.state, site, gone)
