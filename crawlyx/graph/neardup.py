"""Near-duplicate pages: a MinHash per page, grouped with datasketch's LSH.

A page's signature is a one-permutation MinHash of its markdown's word 3-shingles: each
shingle's 64-bit hash falls in one of :data:`BINS` bins by its low bits, and a bin keeps
the smallest hash it got. Two pages agree on a bin with odds equal to their Jaccard
similarity, as with a MinHash of BINS permutations, for one hash per shingle instead of
BINS. Empty bins (short texts) take the next non-empty bin's value (rotation
densification), which keeps that property.

It is computed in the page workers, on every page, so it is made cheap: words are split
on whitespace, lowercased, digits masked (pages alike but for a counter or a date are
alike); each word is hashed (CRC-32, the same in every process), and the shingles' hashes
are mixed from their words' with numpy (a third of a millisecond for a 30,000-character
page, a tenth of reading it).
"""

from __future__ import annotations

import struct
import zlib

BINS = 64
_EMPTY = (1 << 64) - 1
_PACK = struct.Struct(f"<{BINS}Q")
# Odd multipliers: a shingle's hash depends on its words and their order.
_K1, _K2, _K3 = 0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B1
_M1, _M2 = 0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53
_S = 33
# ASCII letters lowercased, digits masked, and the four separators that str.split() counts
# as whitespace (bytes.split() does not) made spaces.
_ASCII_WORDS = bytes.maketrans(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZ123456789\x1c\x1d\x1e\x1f",
    b"abcdefghijklmnopqrstuvwxyz000000000    ",
)


def signature(text: str) -> bytes:
    """``text``'s MinHash: BINS little-endian unsigned 64-bit values (512 bytes)."""
    # numpy here: the workers have it (crawlyx.content.workers); the crawl process,
    # which compares signatures at most, does without.
    import numpy as np

    k1, k2, k3, m1, m2, s = map(np.uint64, (_K1, _K2, _K3, _M1, _M2, _S))
    if text.isascii():
        # Lowercased, digits masked, and split as str.split() does, in one pass over
        # bytes (at a third of the cost of the str methods).
        words = text.encode().translate(_ASCII_WORDS).split()
    else:
        text = text.lower()
        for digit in "123456789":  # str.translate is eight times slower
            text = text.replace(digit, "0")
        words = list(map(str.encode, text.split()))
    if not words:
        return _PACK.pack(*[_EMPTY] * BINS)  # no words: every such page is alike
    h = np.fromiter(map(zlib.crc32, words), dtype=np.uint64, count=len(words))
    if len(h) < 3:
        h = np.concatenate([h, np.zeros(3 - len(h), dtype=np.uint64)])
    x = h[:-2] * k1 + h[1:-1] * k2 + h[2:] * k3  # wraps around, as meant
    x ^= x >> s  # the finalizer of MurmurHash3: every bit of x depends on every word bit
    x *= m1
    x ^= x >> s
    x *= m2
    x ^= x >> s
    mins = np.full(BINS, _EMPTY, dtype=np.uint64)
    np.minimum.at(mins, (x % np.uint64(BINS)).astype(np.intp), x)
    values = mins.tolist()
    for b in range(BINS):
        k = b
        while values[k % BINS] == _EMPTY:
            k += 1
        values[b] = values[k % BINS]
    return _PACK.pack(*values)


def values(sig: bytes) -> tuple[int, ...]:
    return _PACK.unpack(sig)


def similarity(a: bytes, b: bytes) -> float:
    """The estimated Jaccard similarity of two pages' shingles: the share of bins alike."""
    return sum(x == y for x, y in zip(values(a), values(b), strict=True)) / BINS
