"""Near-duplicate pages: a MinHash per page, grouped with datasketch's LSH.

A page's signature is a one-permutation MinHash of its markdown's word 3-shingles (the
shingles of :func:`crawlyx.urls.traps.shingle_hashes`): each shingle's hash falls in one
of :data:`BINS` bins by its low bits, and a bin keeps the smallest hash it got. Two pages
agree on a bin with odds equal to their Jaccard similarity, as with a MinHash of BINS
permutations, for one hash per shingle instead of BINS: it is computed in the page
workers, on every page. Empty bins (short texts) take the next non-empty bin's value
(rotation densification), which keeps that property.
"""

from __future__ import annotations

import struct

from crawlyx.urls.traps import shingle_hashes

BINS = 64
_EMPTY = (1 << 64) - 1
_PACK = struct.Struct(f"<{BINS}Q")


def signature(text: str) -> bytes:
    """``text``'s MinHash: BINS little-endian unsigned 64-bit values (512 bytes)."""
    mins = [_EMPTY] * BINS
    for digest in shingle_hashes(text):
        value = int.from_bytes(digest, "little")
        b = value % BINS
        if value < mins[b]:
            mins[b] = value
    if all(v == _EMPTY for v in mins):
        return _PACK.pack(*mins)  # no words: every such page is alike
    for b in range(BINS):
        k = b
        while mins[k % BINS] == _EMPTY:
            k += 1
        mins[b] = mins[k % BINS]
    return _PACK.pack(*mins)


def values(sig: bytes) -> tuple[int, ...]:
    return _PACK.unpack(sig)


def similarity(a: bytes, b: bytes) -> float:
    """The estimated Jaccard similarity of two pages' shingles: the share of bins alike."""
    return sum(x == y for x, y in zip(values(a), values(b), strict=True)) / BINS
