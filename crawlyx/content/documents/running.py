"""Running headers and footers: the lines a PDF repeats on its pages, no part of its text.

A line near the top or the bottom of its page (within :data:`BAND` of its height) goes when:

* its text, digits masked (page numbers, dates), is there on half the pages or more: a
  document's title, "Page 3 of 9";
* it is a bare page number ("3", "- 3 -", "3/9"), or ends with one of the pages' ("x.html
  1/3"), or starts with when it was printed ("12/3/26, 5:52 AM Title"): a header even in
  a document of one page;
* it starts or ends with a number that goes up with the page, the same number of pages
  ahead of or behind it on three pages or more (its folio: "Chapter 4: Functions 17",
  "18 The Reference Manual"): a book's header names its chapter, so its text repeats on
  the chapter's pages only, but its page number runs through the whole book;
* it is one of the page's first or last two lines, set apart from the text by a gap, at
  the same place with the same text (digits masked) on three pages or more: a chapter's
  name in a header whose page number is in the footer.

The document's title on page one stays, even when the pages after repeat it as their
header: set larger than any other text of the page, it is the title, not its header.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from crawlyx.content.documents.pdf import Line

BAND = 0.12  # of a page's height, at its top and its bottom: where headers and footers sit
FOLIO_PAGES = 3  # pages whose line carries the same folio, at least, for a running one
OUTER_LINES = 2  # lines at a page's top, and at its bottom, that may be its header or footer
APART = 0.8  # of the font size: the gap that sets a header or a footer apart from the text
PLACE = 2.0  # points: lines at the same place on their pages are at most this far apart

_PAGE_NUMBER = re.compile(
    r"[-–—\s]*(?:page\s*)?\d{1,5}(?:\s*(?:/|of)\s*\d{1,5})?[-–—\s]*", re.IGNORECASE
)
_PAGE_OF = re.compile(r"(?:^|\s)(?:page\s*)?\d{1,5}\s*(?:/|of)\s*\d{1,5}$", re.IGNORECASE)
_PRINTED = re.compile(r"^\d{1,4}[/.-]\d{1,2}[/.-]\d{1,4},?\s+\d{1,2}:\d\d\b")
_DIGITS = re.compile(r"\d+")
_FOLIO = re.compile(r"^\s*(\d{1,5})\s|\s(\d{1,5})\s*$")


def key(text: str) -> str:
    """The line's text, its digits masked, its spaces and case aside."""
    return _DIGITS.sub("#", " ".join(text.split()).lower())


def drop_running(
    pages: list[list[Line]], heights: list[float], tagged: bool = False
) -> list[list[Line]]:
    """The pages without their running headers and footers, nor bare page numbers. A
    tagged PDF leaves its pagination out of its tree: the folios and the lines at the
    same place are looked for in an untagged one only."""

    def banded(line: Line, height: float) -> bool:
        return line.bottom >= height * (1 - BAND) or line.top <= height * BAND

    seen: Counter[str] = Counter()
    for lines, height in zip(pages, heights, strict=True):
        seen.update({key(line.text) for line in lines if banded(line, height)})
    needed = max(2, math.ceil(len(pages) / 2))
    folios = set() if tagged else _folios(pages, heights, banded)
    outer = set() if tagged else _outer(pages)
    title = _title(pages[0]) if pages else set()
    kept = []
    for number, (lines, height) in enumerate(zip(pages, heights, strict=True)):
        ends = _ends(lines)
        kept.append(
            [
                line
                for line in lines
                if (number == 0 and id(line) in title)
                or not banded(line, height)
                or (
                    (seen[key(line.text)] < needed or len(pages) < 2)
                    and not _PAGE_NUMBER.fullmatch(line.text)
                    and not _PAGE_OF.search(line.text.strip())
                    and not _PRINTED.match(line.text.strip())
                    and _folio(line, number) not in folios
                    and _place(line, ends.get(id(line))) not in outer
                )
            ]
        )
    return kept


def _folio(line: Line, page: int) -> int | None:
    """How many pages the number the line starts or ends with is ahead of its page."""
    match = _FOLIO.search(line.text)
    if match is None:
        return None
    return int(match.group(1) or match.group(2)) - page


def _folios(pages: list[list[Line]], heights: list[float], banded) -> set[int]:
    """The offsets of page numbers that run through the document's headers or footers."""
    pages_of: dict[int, set[int]] = {}
    for number, (lines, height) in enumerate(zip(pages, heights, strict=True)):
        for line in lines:
            offset = _folio(line, number) if banded(line, height) else None
            if offset is not None:
                pages_of.setdefault(offset, set()).add(number)
    return {offset for offset, found in pages_of.items() if len(found) >= FOLIO_PAGES}


def _ends(lines: list[Line]) -> dict[int, str]:
    """The page's header and footer lines, by id, and which side each is on: at most its
    first two and last two lines, those set apart from the text by a gap wider than its
    lines' spacing (a header may be set over two lines: a chapter's long name)."""
    ends: dict[int, str] = {}
    by_top = sorted(lines, key=lambda line: line.top, reverse=True)
    for side, ordered in (("top", by_top), ("bottom", by_top[::-1])):
        for count in range(1, OUTER_LINES + 1):
            if len(ordered) <= count:
                break
            inner, outer = ordered[count], ordered[count - 1]
            gap = outer.bottom - inner.top if side == "top" else inner.bottom - outer.top
            if gap > APART * max(inner.size, outer.size):
                ends.update({id(line): side for line in ordered[:count]})
                break
    return ends


def _place(line: Line, side: str | None) -> tuple | None:
    """(top or bottom, where, its text masked) of a page's first or last line."""
    if side is None:
        return None
    return side, round(line.top / PLACE), round(line.x0 / PLACE), key(line.text)


def _outer(pages: list[list[Line]]) -> set[tuple]:
    """The first and last lines that stand at the same place with the same text on
    three pages or more."""
    count: Counter[tuple] = Counter()
    for lines in pages:
        ends = _ends(lines)
        for line in lines:
            if id(line) in ends:
                count[_place(line, ends[id(line)])] += 1
    return {place for place, n in count.items() if n >= FOLIO_PAGES}


def _title(lines: list[Line]) -> set[int]:
    """Page one's lines set larger than any other there, by a fifth: the title (ids)."""
    sizes = sorted({line.size for line in lines}, reverse=True)
    if len(sizes) < 2 or sizes[0] < 1.2 * sizes[1]:
        return set()
    return {id(line) for line in lines if line.size == sizes[0]}
