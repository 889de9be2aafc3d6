"""One HyperLogLog++ sketch: distinct URLs, in 16 KiB, mergeable without loss.

Layout (the contract every process and machine shares; changing any of it orphans
the stored sketches):

- **Hash**: :func:`hash64`, the first 8 bytes of BLAKE2b of the UTF-8 URL read as a
  little-endian integer. Standard, keyless and the same on every machine and Python
  (never :func:`hash`, which is salted per process).
- **Registers**: ``P = 14`` → ``M = 16384`` one-byte registers, exactly
  :class:`datasketch.HyperLogLogPlusPlus`'s layout: register ``h & (M - 1)`` holds the
  largest rank ``64 - P - bit_length(h >> P) + 1`` (1..51) seen. A sketch updated
  here and a ``HyperLogLogPlusPlus(p=14, hashfunc=hash64)`` fed the same URLs have
  identical registers; the estimate is datasketch's (HLL++ empirical bias correction
  between linear counting and the raw estimator, which plain HLL lacks around
  2.5 × M ≈ 41,000).
- **Exact set** (HLL++'s sparse mode, simplified): while a sketch has seen at most
  :data:`EXACT_LIMIT` distinct hashes it also keeps them, and its count is exact.
  Linear counting alone is off by more than 3 % for one set in forty around 30 URLs
  (one register collision is 1/30); from 1,024 URLs on its error is 0.55 % (σ).
  Past the limit the set is dropped for good (the sketch is *saturated*).

Merging is element-wise max of the registers and union of the exact sets (saturated
when the union passes the limit): both are functions of the set of URLs seen, so a
merge of shards is register for register the sketch one observer would have built,
in any order, and duplicates never change anything.
"""

from __future__ import annotations

from hashlib import blake2b

P = 14
M = 1 << P
MASK = M - 1
RANK_BASE = 64 - P + 1  # rank = RANK_BASE - bit_length(h >> P): 1..51
EXACT_LIMIT = 1024  # distinct hashes kept exactly; 8 KiB when stored
HASH_BYTES = 8


def hash64(data: bytes) -> int:
    """The sketch hash of ``data``: 64 bits, identical in every process and machine."""
    return int.from_bytes(blake2b(data, digest_size=8).digest(), "little")


def hash_url(url: str) -> int:
    return hash64(url.encode("utf-8", "surrogatepass"))


class Sketch:
    """HyperLogLog++ registers (a ``bytearray``) plus the exact set while small.

    ``dirty`` is set whenever an update changed the sketch; whoever persists it clears
    it. Not thread-safe: one thread updates and flushes (see crawlyx.breadth).
    """

    __slots__ = ("dirty", "exact", "registers")

    def __init__(
        self,
        registers: bytes | bytearray | None = None,
        exact: set[int] | None = None,
        saturated: bool = False,
    ):
        if registers is None:
            self.registers = bytearray(M)
        elif len(registers) != M:
            raise ValueError(f"a sketch has {M} registers, not {len(registers)}")
        else:
            self.registers = bytearray(registers)
        self.exact: set[int] | None = None if saturated else set(exact or ())
        if self.exact is not None and len(self.exact) > EXACT_LIMIT:
            self.exact = None
        self.dirty = False

    # -- updates ----------------------------------------------------------------------

    def add_hash(self, h: int) -> None:
        """Record one hashed element (the hot path in Recorder.record inlines this)."""
        registers = self.registers
        i = h & MASK
        rank = RANK_BASE - (h >> P).bit_length()
        if rank > registers[i]:
            registers[i] = rank
            self.dirty = True
        exact = self.exact
        if exact is not None and h not in exact:
            exact.add(h)
            self.dirty = True
            if len(exact) > EXACT_LIMIT:
                self.exact = None

    def add(self, url: str) -> None:
        self.add_hash(hash_url(url))

    def merge(self, other: Sketch) -> None:
        """Make this the union of both: element-wise max, union of the exact sets."""
        import numpy as np  # here: a crawl only adds, and numpy costs 0.1 s to import

        mine = np.frombuffer(self.registers, dtype=np.uint8)
        theirs = np.frombuffer(other.registers, dtype=np.uint8)
        changed = bool((theirs > mine).any())
        np.maximum(mine, theirs, out=mine)
        if self.exact is not None:
            if other.exact is None:
                self.exact, changed = None, True
            elif not other.exact <= self.exact:
                self.exact |= other.exact
                changed = True
                if len(self.exact) > EXACT_LIMIT:
                    self.exact = None
        if changed:
            self.dirty = True

    # -- reading ----------------------------------------------------------------------

    @property
    def saturated(self) -> bool:
        return self.exact is None

    def estimate(self) -> float:
        """Distinct elements: exact while small, else datasketch's HLL++ estimate."""
        if self.exact is not None:
            return float(len(self.exact))
        # Imported here: datasketch's package imports scipy (half a second), and only
        # readers estimate.
        import numpy as np
        from datasketch import HyperLogLogPlusPlus

        registers = np.frombuffer(self.registers, dtype=np.int8)
        estimate = float(HyperLogLogPlusPlus(reg=registers, hashfunc=hash64).count())
        # A saturated sketch has seen more than EXACT_LIMIT distinct elements.
        return max(estimate, EXACT_LIMIT + 1.0)

    def count(self) -> int:
        return round(self.estimate())

    # -- serialization (the Redis row) -------------------------------------------------

    def register_bytes(self) -> bytes:
        return bytes(self.registers)

    def exact_bytes(self) -> bytes | None:
        """The exact set as sorted 8-byte big-endian hashes; None once saturated."""
        if self.exact is None:
            return None
        return b"".join(h.to_bytes(HASH_BYTES, "big") for h in sorted(self.exact))

    @classmethod
    def from_bytes(cls, registers: bytes, exact: bytes | None) -> Sketch:
        """The inverse of register_bytes/exact_bytes (``exact`` None: saturated)."""
        if exact is None:
            return cls(registers, saturated=True)
        if len(exact) % HASH_BYTES:
            raise ValueError("exact set is not a whole number of 8-byte hashes")
        hashes = {
            int.from_bytes(exact[i : i + HASH_BYTES], "big")
            for i in range(0, len(exact), HASH_BYTES)
        }
        return cls(registers, hashes)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sketch):
            return NotImplemented
        return self.registers == other.registers and self.exact == other.exact

    __hash__ = None  # mutable

    def __repr__(self) -> str:
        state = "saturated" if self.exact is None else f"exact {len(self.exact)}"
        return f"<Sketch ~{self.estimate():.0f} distinct, {state}>"


def union(sketches) -> Sketch:
    """A new sketch that is the union of ``sketches`` (an iterable)."""
    result = Sketch()
    for sketch in sketches:
        result.merge(sketch)
    result.dirty = False
    return result
