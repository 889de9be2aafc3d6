"""A document's lines (:mod:`crawlyx.content.documents.pdf`) as markdown.

* Running headers and footers go (:mod:`crawlyx.content.documents.running`). A tagged
  PDF marks them itself.
* Headings: what the structure tree calls one (H1-H6); in a PDF without, lines set
  larger than the body text, a level per size, the largest first.
* Paragraphs: lines joined, where the tree keeps them in one paragraph or, without it,
  where they follow one another at the text's line spacing (a wider gap, or a line that
  ended short with a full stop, ends one), across a page break too when the sentence
  goes on; a word hyphenated across lines is joined again.
* Tables: from the tree's table cells, rows and columns as marked (GFM, the first row
  as the header); without a tree, from lines whose words line up in columns
  (:mod:`crawlyx.content.documents.tables`). Lists from the tree's list items, or lines
  opening with a bullet glyph, or with a number's label set apart from their text (a
  hanging indent: the item's lines after the first stand under its text, a bullet further
  right nests). Lines set in a fixed-pitch font are code, fenced, with their indentation.
* The table of contents: lines with a dot leader and a page number are a list, nested as
  they are indented, never headings, however they are set.
* The title page one shows: its largest text (:func:`page_title`).
"""

from __future__ import annotations

import re
from collections import Counter

from crawlyx.content.documents.pdf import Document, Line
from crawlyx.content.documents.running import drop_running
from crawlyx.content.documents.tables import (
    BULLETS,
    LEADER,
    ORDINAL,
    contents_entry,
    hanging,
    mark_tables,
)

HEADING_RATIO = 1.1  # a line this much larger than the body text is a heading
BOLD_HEADING_WORDS = 12  # a bold line of at most this many words, standing alone, is one
PARAGRAPH_GAP = 0.5  # a gap between lines past this many of their font size ends a paragraph
CODE_GAP = 1.5

_BULLET = re.compile(r"([•◦▪▫●○■□‣⁃∙·∗–\-*])\s+(?=\S)")
_LABEL_END = re.compile(r"[.,;:!?]$")
_SENTENCE_END = re.compile(r"[.!?:;\"”’)\]]$")
_SOFT_HYPHENS = ("\xad", "\x02", "\u2010")
_LETTERS = re.compile(r"[^\W\d_]+$")
_LEADING_LETTERS = re.compile(r"^[^\W\d_]+")
_WORDS = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")


def markdown(doc: Document) -> tuple[str, list[str], str | None]:
    """(the document as markdown, its headings' text, the title page one shows)."""
    pages = drop_running(doc.pages, doc.heights, doc.tagged)
    if not doc.tagged:
        mark_tables(pages)
    lines = [line for page in pages for line in page]
    if not lines:
        return "", [], None
    body = body_size(lines)
    # Page one as it is: its title may be what the pages after repeat as their header.
    title = page_title(next(page for page in doc.pages if page), body)
    levels = heading_levels(lines, body, doc.tagged)
    right = _right_edges(pages)
    # Without the tree's headings, a short bold line is one too, a level below the sizes.
    tree = doc.tagged and any(_role(line) and _role(line).heading for line in lines)
    builder = _Builder(levels, body, right, _lexicon(lines), bold=not tree)
    for line in lines:
        builder.add(line)
    blocks = builder.blocks
    headings = [block[2] for block in blocks if block[0] == "h"]
    parts, previous = [], None
    for block in blocks:
        text = render(block)
        if not text:
            continue
        if parts and block[0] == previous == "li":  # a list's items, line by line
            parts[-1] += "\n" + text
        else:
            parts.append(text)
        previous = block[0]
    return "\n\n".join(parts) + "\n", headings, title


TITLE_LINES = 3  # a title set over more lines than this is no title


def page_title(lines: list[Line], body: float) -> str | None:
    """The text set largest on the document's first page, larger than its body text: its
    title (a publisher's or an author's name, a logo's letters, stand smaller). Its lines
    that follow one another at that size are one title."""
    worded = [line for line in lines if sum(char.isalpha() for char in line.text) >= 3]
    if not worded:
        return None
    size = max(line.size for line in worded)
    if size < body * HEADING_RATIO:
        return None
    found: list[str] = []
    for line in lines:
        if line.size == size and line in worded:
            found.append(_words(line.text))
        elif found:
            break
    return " ".join(found) if len(found) <= TITLE_LINES else None


def body_size(lines: list[Line]) -> float:
    """The size most of the text is set in."""
    sizes: Counter[float] = Counter()
    for line in lines:
        if not line.mono:
            sizes[line.size] += len(line.text)
    return sizes.most_common(1)[0][0] if sizes else lines[0].size


def heading_levels(lines: list[Line], body: float, tagged: bool) -> dict[float, int]:
    """Font size -> heading level, for a document whose tree names no heading."""
    if tagged and any(_role(line) and _role(line).heading for line in lines):
        return {}
    chars = sum(len(line.text) for line in lines)
    large: Counter[float] = Counter()
    for line in lines:
        if not line.mono and line.size >= body * HEADING_RATIO and len(line.text) <= 200:
            large[line.size] += len(line.text)
    sizes = sorted((size for size, n in large.items() if n <= 0.3 * chars), reverse=True)
    levels: dict[float, int] = {}
    level, previous = 0, None
    for size in sizes:
        if previous is None or previous - size > 0.6:  # sizes this close are one level
            level = min(6, level + 1)
        levels[size] = level
        previous = size
    return levels


def _right_edges(pages: list[list[Line]]) -> dict[int, float]:
    """Per page, how far right its text goes."""
    return {lines[0].page: max(line.x1 for line in lines) for lines in pages if lines}


def _bold_heading(line: Line, body: float) -> bool:
    """A line set in bold that reads as a heading: short, not a sentence or a label, not
    set smaller than the text (a button's label)."""
    text = line.text.strip()
    return (
        line.bold
        and not line.mono
        and line.size >= body - 0.5
        and len(line.words) <= BOLD_HEADING_WORDS
        and not _LABEL_END.search(text)
        and any(char.isalpha() for char in text)
    )


def _words(text: str) -> str:
    """The text's words, one space apart."""
    return " ".join(text.split())


def _role(line: Line):
    return next((role for _, role in line.words if role is not None), None)


def _lexicon(lines: list[Line]) -> set[str]:
    """The words of the document, lowercased, hyphenated ones both whole and in parts."""
    words = set()
    for line in lines:
        for word in _WORDS.findall(line.text.lower()):
            words.add(word)
    return words


class _Builder:
    """Blocks from lines in reading order: ("h", level, text), ("p", text), ("li",
    depth, marker, text), ("code", [lines]), ("table", rows)."""

    def __init__(
        self, levels: dict[float, int], body: float, right: dict, lexicon: set[str], bold: bool
    ):
        self.levels = levels
        self.bold = bold
        self.body = body
        self.right = right
        self.lexicon = lexicon
        self.blocks: list = []
        self.last: Line | None = None  # the line the last block ended with
        self.block_id = -2  # the tree's block the last block is in
        self.item = -1  # the tree's list item the last block is in
        self.tables: dict[tuple[int, int], dict] = {}
        # Where the bullets of the untagged list being read stand, outermost first: a
        # bullet further right is an item of a list nested in the last one.
        self.bullets: list[float] = []

    def add(self, line: Line) -> None:
        role = _role(line)
        level = role.heading if role is not None else self.levels.get(line.size, 0)
        if not level and role is None and self.bold and _bold_heading(line, self.body):
            level = min(6, 1 + max((v for k, v in self.levels.items() if k > line.size), default=0))
        if contents_entry(line) and not (role is not None and role.heading):
            self._contents(line)
        elif level and not line.mono:  # a heading in a table cell too (a table for layout)
            self._heading(line, level, role)
        elif role is not None and role.table >= 0 and role.cell >= 0:
            self._table(line, role)
        elif line.mono:
            self._code(line)
        elif role is not None and role.item >= 0:
            self._item(line, role)
        else:
            self._text(line, role)
        self.last = line

    # -- kinds of block ----------------------------------------------------------------

    def _heading(self, line: Line, level: int, role) -> None:
        text = _words(line.text)
        block = self.blocks[-1] if self.blocks else None
        if block and block[0] == "h" and block[1] == level and self._same_block(line, role):
            block[2] = f"{block[2]} {text}"
        else:
            self.blocks.append(["h", level, text])
        self.bullets = []
        self.block_id = role.block if role is not None else -1

    def _contents(self, line: Line) -> None:
        """An entry of the table of contents: an item of a list nested as the entries are
        indented, its dot leader made one ellipsis, its page number kept."""
        text = _words(line.text)
        match = LEADER.search(text)
        self._bullet(line, f"{text[: match.start()].rstrip()} … {match.group(1)}")

    def _code(self, line: Line) -> None:
        block = self.blocks[-1] if self.blocks else None
        last = self.last
        if (
            block
            and block[0] == "code"
            and last is not None
            and last.page == line.page
            and last.bottom - line.top <= CODE_GAP * line.size
        ) or (block and block[0] == "code" and last is not None and last.page != line.page):
            block[1].append(line)
        else:
            self.blocks.append(["code", [line]])
        self.block_id = -1

    def _item(self, line: Line, role) -> None:
        words = line.words
        text = line.text
        marker = "-"
        labels = [start for start, r in words if r is not None and r.label]
        if labels:  # the item's label is text: a bullet goes, a number is the marker
            end = next((start for start, r in words if r is None or not r.label), len(text))
            label = text[:end].strip()
            text = text[end:]
            ordinal = ORDINAL.fullmatch(label)
            if ordinal and ordinal.group(1).isdigit():
                marker = f"{ordinal.group(1)}."
        text = _words(text)
        block = self.blocks[-1] if self.blocks else None
        if block and block[0] == "li" and role.item == self.item and not labels:
            block[3] = self._join(block[3], text)
        else:
            self.blocks.append(["li", max(0, role.depth - 1), marker, text])
        self.item = role.item
        self.block_id = role.block

    def _text(self, line: Line, role) -> None:
        text = _words(line.text)
        bullet = _BULLET.match(text) if role is None else None
        block = self.blocks[-1] if self.blocks else None
        label = ORDINAL.match(text) if role is None and bullet is None else None
        if bullet and self._bulleted(line, bullet.group(1), block):
            self._bullet(line, text[bullet.end() :])
        elif label and label.end() < len(text) and text[label.end()] == " " and hanging(line):
            # A numbered item: its label apart from its text, as a bullet is.
            number = label.group(1)
            rest = text[label.end() :].strip()
            self._bullet(line, rest if number.isdigit() else f"{label.group()} {rest}")
            if number.isdigit():
                self.blocks[-1][2] = f"{number}."
        elif block and block[0] in ("p", "li") and self._continues(line, role, block):
            block[-1] = self._join(block[-1], text)
        else:
            self.blocks.append(["p", text])
            self.bullets = []
        self.block_id = role.block if role is not None else -1

    def _bulleted(self, line: Line, glyph: str, block) -> bool:
        """A line of an untagged page that opens with a bullet is a list item: a bullet
        glyph, or a dash (TeX's second level: "–") in a list already, or set apart from
        its text by more than a space (a hanging indent: the item's text starts at a tab
        stop, its lines after the first under it, not under the bullet)."""
        if glyph in BULLETS:
            return True
        if block is not None and block[0] == "li" and self.bullets:
            return line.x0 > self.bullets[0] + line.size / 2
        return hanging(line)

    def _bullet(self, line: Line, text: str) -> None:
        """An item of an untagged list, nested by where its bullet stands."""
        tolerance = line.size / 2
        while self.bullets and line.x0 < self.bullets[-1] - tolerance:
            self.bullets.pop()
        if not self.bullets or line.x0 > self.bullets[-1] + tolerance:
            self.bullets.append(line.x0)
        self.blocks.append(["li", len(self.bullets) - 1, "-", text])
        self.item = -1

    def _table(self, line: Line, role) -> None:
        key = (line.page, role.table)
        block = self.tables.get(key)
        if block is None or self.blocks[-1] is not block:  # new, or resumed after a heading
            block = self.tables[key] = ["table", {}]
            self.blocks.append(block)
        table = block[1]
        text, words = line.text, line.words
        cell, previous = (role.row, role.cell), None
        for index, (start, word_role) in enumerate(words):
            end = words[index + 1][0] if index + 1 < len(words) else len(text)
            if word_role is not None and word_role.table == role.table and word_role.cell >= 0:
                cell = (word_role.row, word_role.cell)
            pieces = table.setdefault(cell, [])
            word = text[start:end].strip()
            if cell != previous and pieces and pieces[-1].endswith("-"):
                pieces[-1] = self._join_cell(pieces[-1], word)
            else:
                pieces.append(word)
            previous = cell
        self.block_id = -1

    # -- joining -------------------------------------------------------------------------

    def _same_block(self, line: Line, role) -> bool:
        last = self.last
        if last is None or last.page != line.page:
            return False
        if role is not None and role.block >= 0 and self.block_id >= 0:
            return role.block == self.block_id
        return last.bottom - line.top <= PARAGRAPH_GAP * max(line.size, last.size)

    def _continues(self, line: Line, role, block) -> bool:
        """The line goes on the paragraph (or untagged list item) the last line was in."""
        last = self.last
        if last is None or last.mono:
            return False
        previous = block[-1]
        if last.page != line.page:  # a paragraph goes on over the page break
            return not _SENTENCE_END.search(previous) and (
                line.text.lstrip()[:1].islower() or previous.endswith(("-",) + _SOFT_HYPHENS)
            )
        if role is not None and role.block >= 0 and self.block_id >= 0:
            return role.block == self.block_id
        if block[0] == "li" and line.x0 <= last.x0 - line.size and self.item >= 0:
            return False
        # An untagged item's lines after the first hang under its text: a line back at
        # its bullet, or left of it, is the text after the list.
        if block[0] == "li" and self.item < 0 and self.bullets:
            if line.x0 <= self.bullets[-1] + line.size / 2:
                return False
        if abs(line.size - last.size) > 0.15 * last.size:
            return False
        if last.bottom - line.top > PARAGRAPH_GAP * max(line.size, last.size):
            return False
        # A line that ended well short of the text's right edge, with a full stop,
        # ended its paragraph.
        short = last.x1 < self.right.get(last.page, last.x1) - 4 * last.size
        return not (short and _SENTENCE_END.search(previous))

    def _join_cell(self, text: str, more: str) -> str:
        """A word of a cell hyphenated over its lines: joined when the document spells it
        whole elsewhere, else its hyphen kept ("low-level": a cell's narrow column breaks
        compounds at their hyphen more often than prose does)."""
        head, tail = _LETTERS.search(text[:-1]), _LEADING_LETTERS.match(more)
        if head and tail and (head.group() + tail.group()).lower() in self.lexicon:
            return text[:-1] + more
        return text + more

    def _join(self, text: str, more: str) -> str:
        if not text:
            return more
        if text.endswith(_SOFT_HYPHENS):
            return text[:-1] + more
        if text.endswith("-") and len(text) > 1 and text[-2].isalpha() and more[:1].islower():
            head = _LETTERS.search(text[:-1])
            tail = _LEADING_LETTERS.match(more)
            if head and tail:
                whole = (head.group() + tail.group()).lower()
                hyphenated = f"{head.group()}-{tail.group()}".lower()
                if hyphenated in self.lexicon and whole not in self.lexicon:
                    return text + more  # a compound's own hyphen, at the line's end
            return text[:-1] + more
        if text.endswith("-") and len(text) > 1 and text[-2].isalnum() and more[:1].isalnum():
            return text + more  # a hyphen of its own at the line's end ("DE-AC03", "X-")
        return f"{text} {more}"


# -- rendering -------------------------------------------------------------------------


def render(block) -> str:
    kind = block[0]
    if kind == "h":
        return f"{'#' * block[1]} {block[2]}"
    if kind == "p":
        return block[1]
    if kind == "li":
        return f"{'  ' * block[1]}{block[2]} {block[3]}"
    if kind == "code":
        return _code(block[1])
    return _table(block[1])


def _code(lines: list[Line]) -> str:
    left = min(line.x0 for line in lines)
    widths = [
        (line.x1 - line.x0) / len(line.text.strip()) for line in lines if len(line.text.strip()) > 4
    ]
    width = sorted(widths)[len(widths) // 2] if widths else 0
    rows = []
    for line in lines:
        indent = round((line.x0 - left) / width) if width > 0 else 0
        rows.append(" " * min(indent, 40) + line.text.strip())
    fence = "````" if any("```" in row for row in rows) else "```"
    return "\n".join([fence, *rows, fence])


LAYOUT_CELL_WORDS = 50  # a cell with more words holds prose: the table is for layout


def _table(cells: dict[tuple[int, int], list[str]]) -> str:
    if not cells:
        return ""
    rows = sorted({row for row, _ in cells})
    columns = sorted({col for (_, col), words in cells.items() if any(words)})
    grid = [[_cell(cells.get((row, col), [])) for col in columns] for row in rows]
    if (
        len(rows) < 2
        or len(columns) < 2
        or any(len(cell.split()) > LAYOUT_CELL_WORDS for row in grid for cell in row)
        or sum(1 for row in grid if sum(1 for cell in row if cell) < 2) * 2 > len(grid)
    ):  # a table for layout (prose in it, rows of one cell): its text, row by row
        return "\n\n".join(" ".join(filter(None, row)) for row in grid if any(row))
    lines = [_row(grid[0]), _row(["---"] * len(columns))]
    lines += [_row(row) for row in grid[1:]]
    return "\n".join(lines)


def _cell(words: list[str]) -> str:
    return _words(" ".join(words)).replace("|", "\\|")


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"
