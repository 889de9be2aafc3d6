"""Blocks that repeat across many pages of one crawl: site-level boilerplate.

A single-page extractor cannot tell the site's sidebar promo or its "about us" blurb
from content; a crawler sees them on page after page. Each page's markdown is split
into blocks (fenced code kept whole); a paragraph, list or quote already seen on at
least ``min_pages`` pages, and on ``share`` of all pages so far, is dropped. Headings,
code and tables are structure or data and always stay, as does the first block (the
title). The first pages of a crawl cannot be judged yet and keep their blocks.

Counts are per process and bounded: when the table is full, blocks seen only once
are forgotten.
"""

from __future__ import annotations


def split_blocks(markdown: str) -> list[str]:
    """Blank-line separated blocks; a fenced code block is one block."""
    blocks: list[str] = []
    current: list[str] = []
    fence = ""
    for line in markdown.split("\n"):
        stripped = line.lstrip()
        if fence:
            current.append(line)
            if stripped.startswith(fence) and not stripped[len(fence) :].strip():
                fence = ""
            continue
        if stripped.startswith(("```", "~~~")):
            marker = stripped[0]
            fence = marker * (len(stripped) - len(stripped.lstrip(marker)))
            current.append(line)
            continue
        if line.strip():
            current.append(line)
        elif current:
            blocks.append("\n".join(current))
            current = []
    if current:
        blocks.append("\n".join(current))
    return blocks


def _judged(block: str) -> bool:
    """Paragraphs, lists and quotes are judged; headings, code and tables never."""
    return not block.startswith(("#", "```", "~~~", "|"))


class RepeatedBlocks:
    def __init__(self, min_pages: int = 5, share: float = 0.2, capacity: int = 1 << 16):
        self.min_pages = min_pages
        self.share = share
        self.capacity = capacity
        self.pages = 0
        self.counts: dict[int, int] = {}

    def filter(self, markdown: str) -> tuple[str, int]:
        """The markdown without the site's repeated blocks, and how many were dropped."""
        blocks = split_blocks(markdown)
        self.pages += 1
        counts = self.counts
        if len(counts) > self.capacity:
            self.counts = counts = {k: n for k, n in counts.items() if n > 1}
        keys = [hash(b) if i and _judged(b) else None for i, b in enumerate(blocks)]
        for key in set(keys) - {None}:
            counts[key] = counts.get(key, 0) + 1
        threshold = max(self.min_pages, self.share * self.pages)
        kept = [b for b, k in zip(blocks, keys, strict=True) if k is None or counts[k] < threshold]
        dropped = len(blocks) - len(kept)
        if not dropped:
            return markdown, 0
        return "\n\n".join(kept) + "\n", dropped
