"""The in-memory side: one process's visits to one site, per time slice.

:meth:`DemandRecorder.record` is the hot path: one slot check and one BLAKE2b-128 of the URL,
added to the slice's *pending* set; no bit arithmetic and no I/O there (setting ``k``
bits one by one in Python costs several µs). The pending digests become bits in the
slice's filter vectorized (numpy), when the set reaches :data:`PENDING_LIMIT` and
before every flush.

Memory is constant in the number of visits: a repeated URL is one set entry, the set
never holds more than PENDING_LIMIT digests (~1.5 MiB), and a slice's filter
(``(m + 7) // 8`` bytes) exists only while it holds bits not merged into Redis yet.
Once merged, a slice is dropped: Redis holds its bits, and a later visit to the same
slice starts a fresh filter whose OR-merge gives the same union.

Not thread-safe by design: the owner calls record and flush from one thread (the
reactor's in a crawl, the command's loop in ``scrapy visits``).
"""

from __future__ import annotations

from hashlib import blake2b

from crawlyx.demand.bloom import DIGEST_BYTES, add_digests, byte_size
from crawlyx.demand.ring import RingConfig

PENDING_LIMIT = 16_384  # digests per slice before they are turned into bits


class Slice:
    __slots__ = ("filter", "pending")

    def __init__(self):
        self.pending: set[bytes] = set()
        self.filter: bytearray | None = None  # allocated when the first bits are set


class DemandRecorder:
    """One site's unflushed visits: ``slot -> Slice``."""

    def __init__(self, site: str, config: RingConfig):
        self.site = site
        self.config = config
        self.bits, self.hashes = config.bits, config.hashes
        self._slice_seconds = config.slice
        self.slices: dict[int, Slice] = {}
        self._slot: int | None = None
        self._pending: set[bytes] = set()

    # -- the hot path -------------------------------------------------------------------

    def record(self, url: str, when: float, _blake2b=blake2b, _size=DIGEST_BYTES) -> None:
        """Count a visit to ``url`` (normalized) at unix time ``when``."""
        slot = int(when // self._slice_seconds)
        if slot != self._slot:
            self._switch(slot)
        pending = self._pending
        pending.add(_blake2b(url.encode("utf-8", "surrogatepass"), digest_size=_size).digest())
        if len(pending) >= PENDING_LIMIT:
            self._apply(self.slices[slot])

    # -- the slow paths -----------------------------------------------------------------

    def _switch(self, slot: int) -> None:
        current = self.slices.get(slot)
        if current is None:
            current = self.slices[slot] = Slice()
        self._slot, self._pending = slot, current.pending

    def _apply(self, piece: Slice) -> None:
        """Turn a slice's pending digests into bits."""
        if not piece.pending:
            return
        if piece.filter is None:
            piece.filter = bytearray(byte_size(self.bits))
        add_digests(piece.filter, self.bits, self.hashes, piece.pending)
        piece.pending.clear()

    # -- for the flusher ----------------------------------------------------------------

    def dirty(self) -> list[tuple[int, bytearray]]:
        """``(slot, filter)`` of every slice with visits not merged yet, bits set."""
        out = []
        for slot, piece in sorted(self.slices.items()):
            self._apply(piece)
            if piece.filter is not None:
                out.append((slot, piece.filter))
        return out

    def merged(self, slot: int) -> None:
        """Forget a slice whose bits are in Redis now (unless visits came meanwhile)."""
        piece = self.slices.get(slot)
        if piece is None or piece.pending:
            return
        del self.slices[slot]
        if slot == self._slot:
            self._slot, self._pending = None, set()

    def drop(self, slot: int) -> None:
        """Forget a slice unsent (it has left the ring)."""
        self.slices.pop(slot, None)
        if slot == self._slot:
            self._slot, self._pending = None, set()

    def size(self) -> int:
        """Slices held."""
        return len(self.slices)
