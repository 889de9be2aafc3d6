"""GFM tables rendered from a cell grid (colspan/rowspan expanded) and layout tables."""

from __future__ import annotations

from crawlyx.content.markdown.code import (
    _CHROMA_LINENOS,
    _LINENO_CLASSES,
    _classes,
    _language_from,
    fenced,
)
from crawlyx.content.markdown.text import _join_blocks, _re_all_whitespace
from crawlyx.content.markdown.tree import Element

_MAX_SPAN = 1000  # HTML caps colspan at 1000


def _span(cell: Element, attr: str, default: int = 1) -> int:
    value = cell.get(attr)
    if isinstance(value, str):
        value = value.strip()
        if value.isdigit():
            return min(int(value), _MAX_SPAN)
    return default


class TableMixin:
    """Table methods of :class:`~crawlyx.content.markdown.converter.CrawlyxMarkdownConverter`."""

    def convert_inline_table_part(self, el, text, parent_tags):
        """Tables nested in a cell (or a link) are flattened to text."""
        return " " + text + " "

    def _convert_table(self, table: Element, parent_tags: frozenset) -> str:
        rows = _table_rows(table)
        caption_text = ""
        for caption in table.elements("caption")[:1]:
            caption_text = self.process_tag(caption, parent_tags, as_name="div").strip()

        cells_per_row = [tr.elements("td", "th") for tr in rows]
        n_cells = sum(map(len, cells_per_row))
        if n_cells <= 1 or any(_is_gutter(cell) for cells in cells_per_row for cell in cells):
            return self._convert_layout_table(table, cells_per_row, parent_tags)

        row_tags = self._child_tags(self._child_tags(parent_tags, "table"), "tr")
        texts = [[self._cell_text(cell, row_tags) for cell in cells] for cells in cells_per_row]
        limit = max(GRID_FACTOR * n_cells, GRID_CELLS)
        grid = _grid(cells_per_row, texts, limit, spans=True) or _grid(
            cells_per_row, texts, limit, spans=False
        )
        if grid is None:
            return self._convert_layout_table(table, cells_per_row, parent_tags)
        if not any(any(row) for row in grid):
            return "\n\n" + caption_text + "\n\n" if caption_text else ""
        width = max(map(len, grid))
        lines = []
        for i, row in enumerate(grid):
            row += [""] * (width - len(row))
            lines.append("| " + " | ".join(row) + " |")
            if i == 0:
                lines.append("| " + " | ".join(["---"] * width) + " |")
        body = "\n".join(lines)
        if caption_text:
            body = caption_text + "\n\n" + body
        return "\n\n" + body + "\n\n"

    def _cell_text(self, cell: Element, row_tags: frozenset) -> str:
        text = self.process_tag(cell, row_tags)
        text = _re_all_whitespace.sub(" ", text).strip()
        return text.replace("|", "\\|")

    def _convert_layout_table(self, table, cells_per_row, parent_tags) -> str:
        """Tables used for layout (a single cell, or code next to a line-number gutter as
        Pygments/Rouge emit it) are rendered as a sequence of blocks, gutter cells dropped.
        A code host's file view, a line of code per row beside its number, is one code
        block of those lines."""
        if not any(cells_per_row):
            return self.process_tag(table, parent_tags, as_name="div")
        cells = [cell for cells in cells_per_row for cell in cells if not _is_gutter(cell)]
        if len(cells) < sum(map(len, cells_per_row)) and not any(map(_holds_pre, cells)):
            verbatim = self._child_tags(parent_tags, "pre")
            lines = [self.process_tag(cell, verbatim).rstrip("\n") for cell in cells]
            code = "\n".join(lines).strip("\n")
            return fenced(code, _language_from(table)) if code.strip() else ""
        parts = [self.process_tag(cell, parent_tags, as_name="div") for cell in cells]
        text = _join_blocks([p for p in parts if p]).strip()
        return "\n\n" + text + "\n\n" if text else ""


# A table's grid (its cells with colspan and rowspan expanded, its rows padded to the
# widest) may hold this many times its cells, or GRID_CELLS in all. Past that (a row of
# one cell spanning 1,000 columns, repeated) the spans are left out, and if the grid is
# still too big (one row far wider than the others) the cells are rendered as blocks.
GRID_FACTOR = 4
GRID_CELLS = 10_000


def _grid(cells_per_row, texts, limit: int, spans: bool) -> list[list[str]] | None:
    """The rows of the table's grid, or None past ``limit`` cells."""
    grid: list[list[str]] = []
    pending: dict[int, int] = {}  # column -> rows still covered by a rowspan
    size = width = 0
    for r, (cells, row_texts) in enumerate(zip(cells_per_row, texts, strict=True)):
        row: list[str] = []
        col = 0
        for cell, text in zip(cells, row_texts, strict=True):
            while pending.get(col):
                row.append("")
                _covered(pending, col)
                col += 1
            row.append(text)
            colspan = max(1, _span(cell, "colspan")) if spans else 1
            row.extend([""] * (colspan - 1))
            rowspan = _span(cell, "rowspan") if spans else 1
            if rowspan == 0:  # "until the end of the table section"
                rowspan = len(cells_per_row) - r
            if rowspan > 1:
                for c in range(col, col + colspan):
                    pending[c] = rowspan - 1
            col += colspan
            if len(row) > limit:
                return None
        last_pending = max((c for c in pending if c >= col), default=-1)
        while col <= last_pending:
            row.append("")
            if pending.get(col):
                _covered(pending, col)
            col += 1
        if row:
            grid.append(row)
            size += len(row)
            width = max(width, len(row))
            if size > limit or width * len(grid) > limit:
                return None
    return grid


def _covered(pending: dict[int, int], col: int) -> None:
    """One more row of column ``col`` covered by a rowspan (gone once none is left)."""
    if pending[col] > 1:
        pending[col] -= 1
    else:
        del pending[col]


def _is_gutter(cell: Element) -> bool:
    """A cell of a code listing's line-number gutter: named so, or (Chroma's, named as the
    code's cell is) holding line numbers alone."""
    classes = _classes(cell)
    if not _LINENO_CLASSES.isdisjoint(classes):
        return True
    if "lntd" not in classes:
        return False
    numbers = False
    stack = [cell]
    while stack:
        el = stack.pop()
        if not _CHROMA_LINENOS.isdisjoint(_classes(el)):
            numbers = True
            continue
        for child in el.contents:
            if type(child) is Element:
                stack.append(child)
            elif child.strip():
                return False  # code, not a number
    return numbers


def _holds_pre(cell: Element) -> bool:
    stack = [cell]
    while stack:
        for child in stack.pop().elements():
            if child.name == "pre":
                return True
            stack.append(child)
    return False


def _table_rows(table: Element) -> list[Element]:
    rows = []
    for child in table.elements("tr", "thead", "tbody", "tfoot"):
        if child.name == "tr":
            rows.append(child)
        else:
            rows.extend(child.elements("tr"))
    return rows
