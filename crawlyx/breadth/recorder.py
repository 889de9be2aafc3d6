"""The in-memory side: one process's sketches for one site, per (UTC day, bot).

Shared by the crawl's breadth extension and ``scrapy visits`` (and meant for any later
consumer that sees URLs go by). :meth:`Recorder.record` is the hot path: one day
check, one dict lookup, one hash, one register update (plus one set insert while the
sketch is still small enough to count exactly), no allocation beyond the hash, no I/O.

Bots per day are capped (``max_bots``, CRAWLYX_BREADTH_MAX_BOTS): once a day has that
many named sketches, further bot names share the visible ``~overflow`` bucket, so a
flood of made-up user agents cannot mint unbounded 16 KiB sketches.

Not thread-safe by design: the owner calls record and flush from one thread (the
reactor's in a crawl, the command's loop in ``scrapy visits``), so a flush sees no
update half done and needs no lock.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from hashlib import blake2b

from crawlyx.breadth.sketch import EXACT_LIMIT, MASK, RANK_BASE, P, Sketch, hash_url

OVERFLOW = "~overflow"
_BOT_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9._~-]")


def bot_key(name: str) -> str:
    """The bot name as stored: letters, digits and ``._~-`` (it is part of a Redis key)."""
    return _BOT_NAME_UNSAFE.sub("_", name)[:64] or "unknown"


class Recorder:
    """Sketches of one site: ``(day, bot) -> Sketch`` for a few days, and the corpus."""

    ALIAS_LIMIT = 4096  # names remembered per day (an overflowed name is an alias)

    def __init__(self, site: str, max_bots: int = 64):
        if max_bots < 1:
            raise ValueError("max_bots must be 1 or more")
        self.site = site
        self.max_bots = max_bots
        self.corpus = Sketch()  # pages crawlyx itself has emitted for the site
        # day -> {raw bot name or alias -> Sketch}; several names may share a sketch.
        self._lookup: dict[str, dict[str, Sketch]] = {}
        # day -> {stored bot name -> Sketch}: each sketch once, what gets flushed.
        self._sketches: dict[str, dict[str, Sketch]] = {}
        self._day: str | None = None
        self._bots: dict[str, Sketch] = {}
        self.overflowed = 0  # (day, bot name) pairs sent to ~overflow

    # -- the hot path -------------------------------------------------------------------

    def record(
        self, bot: str, url: str, day: str, _blake2b=blake2b, _from_bytes=int.from_bytes
    ) -> None:
        """Count ``url`` (already normalized) as fetched by ``bot`` on UTC ``day``
        (``YYYY-MM-DD``). Same effect as ``Sketch.add``, inlined."""
        if day != self._day:
            self._switch(day)
        sketch = self._bots.get(bot)
        if sketch is None:
            sketch = self._admit(bot)
        h = _from_bytes(
            _blake2b(url.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little"
        )
        registers = sketch.registers
        i = h & MASK
        rank = RANK_BASE - (h >> P).bit_length()
        if rank > registers[i]:
            registers[i] = rank
            sketch.dirty = True
        exact = sketch.exact
        if exact is not None and h not in exact:
            exact.add(h)
            sketch.dirty = True
            if len(exact) > EXACT_LIMIT:
                sketch.exact = None

    def record_corpus(self, url: str) -> None:
        """Count ``url`` as a page of the site (the coverage denominator)."""
        self.corpus.add_hash(hash_url(url))

    # -- the slow paths -------------------------------------------------------------------

    def _switch(self, day: str) -> None:
        bots = self._lookup.get(day)
        if bots is None:
            bots = self._lookup[day] = {}
            self._sketches[day] = {}
        self._day, self._bots = day, bots

    def _admit(self, bot: str) -> Sketch:
        """The sketch for a name not seen yet today: its own, or ~overflow past the cap."""
        day = self._day
        assert day is not None
        sketches = self._sketches[day]
        name = bot_key(bot)
        sketch = sketches.get(name)
        overflowed = False
        if sketch is None:
            named = len(sketches) - (OVERFLOW in sketches)
            if named < self.max_bots and name != OVERFLOW:
                sketch = sketches[name] = Sketch()
            else:
                sketch = sketches.get(OVERFLOW)
                if sketch is None:
                    sketch = sketches[OVERFLOW] = Sketch()
                overflowed = True
        # Past ALIAS_LIMIT names a day, new names come through here on every record
        # (slower, still bounded in memory).
        if len(self._bots) < self.ALIAS_LIMIT:
            self._bots[bot] = sketch
            self.overflowed += overflowed
        return sketch

    # -- for the flusher ------------------------------------------------------------------

    @property
    def day(self) -> str | None:
        """The day last recorded."""
        return self._day

    def days(self) -> list[str]:
        return sorted(self._sketches)

    def sketches(self, day: str) -> dict[str, Sketch]:
        """``stored bot name -> Sketch`` of one day (a view: do not modify)."""
        return self._sketches.get(day, {})

    def dirty(self) -> Iterator[tuple[str, str, Sketch]]:
        """``(day, bot, sketch)`` for every sketch changed since it was last flushed."""
        for day, sketches in list(self._sketches.items()):
            for bot, sketch in list(sketches.items()):
                if sketch.dirty:
                    yield day, bot, sketch

    def dirty_count(self) -> int:
        return sum(1 for _ in self.dirty()) + self.corpus.dirty

    def size(self) -> int:
        """Sketches held (16 KiB each)."""
        return sum(len(sketches) for sketches in self._sketches.values())

    def drop_day(self, day: str) -> None:
        self._sketches.pop(day, None)
        self._lookup.pop(day, None)
        if day == self._day:
            self._day, self._bots = None, {}

    def evict_clean(self) -> int:
        """Forget days other than the current one whose sketches are all flushed.

        Safe at any time: Redis holds their union already, and a late URL for such a day
        starts a fresh sketch whose max-merge is the same union."""
        evicted = 0
        for day, sketches in list(self._sketches.items()):
            if day != self._day and not any(s.dirty for s in sketches.values()):
                self.drop_day(day)
                evicted += 1
        return evicted
