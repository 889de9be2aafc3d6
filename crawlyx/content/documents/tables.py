"""Tables in a PDF without a structure tree, found by their columns.

A line whose words part into runs with gaps wider than a space's (:data:`COLUMN_GAP`) is
a row; rows that follow one another at the text's line spacing, two or more, whose runs
line up (the columns: where the runs of the rows overlap, left to right), are a table.
A line of one run under a row, in a column other than the first, is that cell's text
going on (a cell wrapped over lines). The words of a table's lines are given the roles a
tagged PDF's table cells have (:class:`crawlyx.content.documents.tree.Role`), and the
layout makes the table of them as of a tagged one's.
"""

from __future__ import annotations

import re

from crawlyx.content.documents.pdf import Line
from crawlyx.content.documents.tree import Role

# A gap between words parts cells when it is wider than this many of the text's spaces, and
# than MIN_COLUMN_GAP of the font size: a space is about a quarter of it (0.24 in Chromium's
# serif), a table's columns are set apart by their cells' padding (0.44 with 3 px and a
# border, at 16 px). Prose whose spaces stretch stays one run (EVEN_GAPS), and lines of prose
# do not line up into columns.
COLUMN_GAP = 1.7
MIN_COLUMN_GAP = 0.35
# A line whose gaps are all alike (within this ratio) is justified prose, not cells.
EVEN_GAPS = 1.3
ROW_GAP = 1.0  # rows of a table are at most this many font sizes apart (box to box)
WRAP_GAP = 0.4  # a cell's text going on over lines: the lines at most this far apart


# Glyphs that mark a list's items. A line opening with one, set apart from its text (a
# hanging indent), is a list item: its gap is no column, so it is never a table's row.
BULLETS = "•◦▪▫●○■□‣⁃∙·∗"
HANGING_GAP = 0.6  # of the font size: a label's gap to its item's text, wider than a space


# A numbered item's label: "1.", "2)", "(a)", "iv.".
ORDINAL = re.compile(r"\(?(\d{1,3}|[a-zA-Z]|[ivxlc]{1,5})[.)]")


def bulleted(line: Line) -> bool:
    """The line opens with a bullet glyph standing alone, or with a number's label set
    apart from its text by more than a space (a numbered item's hanging indent)."""
    if not line.words:
        return False
    first = line.text[line.words[0][0] :].split(None, 1)[0]
    return first in BULLETS or (bool(ORDINAL.fullmatch(first)) and hanging(line))


def hanging(line: Line) -> bool:
    """The line's first word stands apart from the next by more than a space."""
    spans = line.spans
    return len(spans) > 1 and spans[1][0] - spans[0][1] > HANGING_GAP * line.size


# An entry of a table of contents: its title, a dot leader (dots, maybe spaced: ". . ."),
# its page number (roman in the front matter). Never a heading nor a table's row, however
# it is set: a book's contents repeats its headings, set like them.
LEADER = re.compile(r"\s*(?:\.\s*){3,}([\divxlcIVXLC]{1,6})\s*$")


def contents_entry(line: Line) -> bool:
    return bool(LEADER.search(line.text)) and any(char.isalpha() for char in line.text)


def space(pages: list[list[Line]]) -> float:
    """The text's space between words, in font sizes: the median gap."""
    gaps = sorted(
        (b[0] - a[1]) / line.size
        for lines in pages
        for line in lines
        if not line.mono and line.size > 0
        for a, b in zip(line.spans, line.spans[1:], strict=False)
    )
    return gaps[len(gaps) // 2] if gaps else 0.25


def runs(line: Line, space: float = 0.25) -> list[tuple[int, int, float, float]]:
    """(first word, last word + 1, left, right) of the line's runs of words."""
    spans = line.spans
    gaps = [b[0] - a[1] for a, b in zip(spans, spans[1:], strict=False)]
    if len(gaps) >= 3 and max(gaps) <= EVEN_GAPS * max(min(gaps), 0.01):
        return [(0, len(spans), spans[0][0], spans[-1][1])]  # justified: one run
    parting = max(COLUMN_GAP * space, MIN_COLUMN_GAP) * line.size
    found: list[tuple[int, int, float, float]] = []
    for index, (left, right) in enumerate(spans):
        if found and left - found[-1][3] <= parting:
            first, _, start, _ = found[-1]
            found[-1] = (first, index + 1, start, max(right, found[-1][3]))
        else:
            found.append((index, index + 1, left, right))
    return found


def mark_tables(pages: list[list[Line]]) -> int:
    """Give the words of the tables on the pages their cells' roles; the tables found."""
    tables = 0
    text_space = space(pages)
    for lines in pages:
        table: list[tuple[Line, list]] = []
        for line in [*lines, None]:
            readable = line is not None and line.spans and not line.mono and not bulleted(line)
            readable = readable and not contents_entry(line)
            parts = runs(line, text_space) if readable else []
            if table and line is not None and _goes_on(table, line, parts):
                table.append((line, parts))
                continue
            if _mark(table, tables):
                tables += 1
            table = [(line, parts)] if len(parts) >= 2 else []
    return tables


def _goes_on(table: list, line: Line, parts: list) -> bool:
    last = table[-1][0]
    gap = last.bottom - line.top
    if len(parts) >= 2:
        return gap <= ROW_GAP * max(line.size, last.size)
    first_column = min(p[2] for _, row in table for p in row)
    return (
        len(parts) == 1
        and gap <= WRAP_GAP * line.size
        and parts[0][2] > first_column + line.size  # not in the first column
    )


def _mark(table: list[tuple[Line, list]], number: int) -> bool:
    """Mark the lines of ``table`` as table ``number`` if they make one."""
    rows = [parts for _, parts in table if len(parts) >= 2]
    if len(rows) < 2:
        return False
    columns = _columns([part for parts in rows for part in parts])
    if len(columns) < 2:
        return False
    row = -1
    for line, parts in table:
        if len(parts) >= 2:
            row += 1
        for first, end, left, right in parts:
            column = _column(columns, left, right)
            role = Role(order=0, table=number, row=row, cell=column)
            for index in range(first, end):
                start, _ = line.words[index]
                line.words[index] = (start, role)
    return True


def _columns(parts: list[tuple[int, int, float, float]]) -> list[tuple[float, float]]:
    """Where the runs overlap, left to right: the table's columns."""
    spans = sorted((left, right) for _, _, left, right in parts)
    columns = [list(spans[0])]
    for left, right in spans[1:]:
        if left <= columns[-1][1]:
            columns[-1][1] = max(columns[-1][1], right)
        else:
            columns.append([left, right])
    return [(left, right) for left, right in columns]


def _column(columns: list[tuple[float, float]], left: float, right: float) -> int:
    """The column a run from ``left`` to ``right`` overlaps most."""
    best, most = 0, -1.0
    for index, (start, end) in enumerate(columns):
        overlap = min(end, right) - max(start, left)
        if overlap > most:
            best, most = index, overlap
    return best
