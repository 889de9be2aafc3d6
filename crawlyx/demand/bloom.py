"""One Bloom filter over ``m`` bits, and the hash every process and machine shares.

Layout (the contract between writers and readers; rows carry ``m`` and ``k`` in their
key, so a change of sizing starts new rows instead of misreading old ones):

- **Hash**: :func:`digest`, BLAKE2b-128 of the UTF-8 normalized URL: standard, keyless,
  the same on every machine and Python (never :func:`hash`, salted per process).
  Its two little-endian 64-bit halves ``h1, h2`` give the ``k`` bit positions by
  double hashing: ``a = h1 mod m``, ``b = 1 + h2 mod (m - 1)``, position ``i`` is
  ``(a + i·b) mod m``. With ``m < 2³²`` every step fits 64 bits, so the vectorized
  path (numpy, at flush) and the plain one (a query) compute the same positions.
- **Bits**: position ``p`` is bit ``p & 7`` (least significant first) of byte ``p >> 3``
  in ``(m + 7) // 8`` bytes: any ``m``, not only multiples of 8, the last byte partly
  used.

Sizing (:func:`geometry`): for ``n`` distinct URLs and a false-positive rate ``p``,
``m = ⌈-n·ln p / ln²2⌉`` bits and ``k = round(m/n · ln 2)`` hashes (``p = 0.01`` gives
9.6 bits and 7 hashes per URL). Past ``n`` the filter keeps working, with more false
positives, never a false negative.
"""

from __future__ import annotations

import math
from hashlib import blake2b

DIGEST_BYTES = 16
MAX_BITS = (1 << 32) - 1  # positions stay below 2³², steps within 64 bits
MIN_BITS = 64
MAX_HASHES = 32


def digest(url: str) -> bytes:
    """The 128-bit hash of a normalized URL (the hot path in the recorder inlines it)."""
    return blake2b(url.encode("utf-8", "surrogatepass"), digest_size=DIGEST_BYTES).digest()


def geometry(urls: int, fp_rate: float) -> tuple[int, int]:
    """``(m bits, k hashes)`` for ``urls`` distinct URLs at ``fp_rate`` false positives."""
    if urls < 1:
        raise ValueError("the distinct URLs per slice must be 1 or more")
    if not 0 < fp_rate < 1:
        raise ValueError("the false-positive rate must be between 0 and 1")
    bits = max(MIN_BITS, math.ceil(-urls * math.log(fp_rate) / math.log(2) ** 2))
    if bits > MAX_BITS:
        raise ValueError(f"{bits} bits per slice, more than {MAX_BITS}: size for fewer URLs")
    hashes = min(MAX_HASHES, max(1, round(bits / urls * math.log(2))))
    return bits, hashes


def byte_size(bits: int) -> int:
    """Bytes holding ``bits`` bits: rounded up."""
    return (bits + 7) >> 3


def positions(value: bytes, bits: int, hashes: int) -> list[int]:
    """The ``hashes`` bit positions of one digest in a filter of ``bits`` bits."""
    a = int.from_bytes(value[:8], "little") % bits
    b = 1 + int.from_bytes(value[8:16], "little") % (bits - 1)
    return [(a + i * b) % bits for i in range(hashes)]


def contains(data: bytes | bytearray, where: list[int]) -> bool:
    """Whether every bit at ``where`` (:func:`positions`) is set in ``data``."""
    for p in where:
        if not data[p >> 3] >> (p & 7) & 1:
            return False
    return True


def add_digests(data: bytearray, bits: int, hashes: int, values) -> None:
    """Set the bits of every digest in ``values`` (an iterable of 16-byte digests),
    vectorized: the flush path, where a slice's pending URLs become bits."""
    import numpy as np  # here: numpy costs 0.1 s to import, and only flushes need it

    joined = b"".join(values)
    if not joined:
        return
    halves = np.frombuffer(joined, dtype="<u8").reshape(-1, 2)
    m = np.uint64(bits)
    a = halves[:, 0] % m
    b = np.uint64(1) + halves[:, 1] % np.uint64(bits - 1)
    target = np.frombuffer(data, dtype=np.uint8)
    for i in range(hashes):
        p = (a + np.uint64(i) * b) % m
        masks = np.left_shift(1, (p & np.uint64(7)).astype(np.uint8)).astype(np.uint8)
        np.bitwise_or.at(target, (p >> np.uint64(3)).astype(np.intp), masks)


def union_into(target: bytearray, other: bytes) -> None:
    """``target |= other``, byte for byte (filters of the same geometry)."""
    import numpy as np

    if len(target) != len(other):
        raise ValueError(f"a filter of {len(target)} bytes cannot merge one of {len(other)}")
    mine = np.frombuffer(target, dtype=np.uint8)
    np.bitwise_or(mine, np.frombuffer(other, dtype=np.uint8), out=mine)
