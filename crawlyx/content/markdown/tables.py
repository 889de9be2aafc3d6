"""GFM tables rendered from a cell grid (colspan/rowspan expanded) and layout tables."""

from __future__ import annotations

from crawlyx.content.markdown.code import _LINENO_CLASSES, _classes
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
        if n_cells <= 1 or any(
            _LINENO_CLASSES.intersection(_classes(cell))
            for cells in cells_per_row
            for cell in cells
        ):
            return self._convert_layout_table(table, cells_per_row, parent_tags)

        row_tags = self._child_tags(self._child_tags(parent_tags, "table"), "tr")
        grid: list[list[str]] = []
        pending: dict[int, int] = {}  # column -> rows still covered by a rowspan
        for r, cells in enumerate(cells_per_row):
            row: list[str] = []
            col = 0
            for cell in cells:
                while pending.get(col):
                    row.append("")
                    pending[col] -= 1
                    col += 1
                row.append(self._cell_text(cell, row_tags))
                colspan = max(1, _span(cell, "colspan"))
                row.extend([""] * (colspan - 1))
                rowspan = _span(cell, "rowspan")
                if rowspan == 0:  # "until the end of the table section"
                    rowspan = len(rows) - r
                if rowspan > 1:
                    for c in range(col, col + colspan):
                        pending[c] = rowspan - 1
                col += colspan
            last_pending = max((c for c, left in pending.items() if left and c >= col), default=-1)
            while col <= last_pending:
                row.append("")
                if pending.get(col):
                    pending[col] -= 1
                col += 1
            if row:
                grid.append(row)

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
        Pygments/Rouge emit it) are rendered as a sequence of blocks, gutter cells dropped."""
        if not any(cells_per_row):
            return self.process_tag(table, parent_tags, as_name="div")
        parts = []
        for cells in cells_per_row:
            for cell in cells:
                if _LINENO_CLASSES.intersection(_classes(cell)):
                    continue
                parts.append(self.process_tag(cell, parent_tags, as_name="div"))
        text = _join_blocks([p for p in parts if p]).strip()
        return "\n\n" + text + "\n\n" if text else ""


def _table_rows(table: Element) -> list[Element]:
    rows = []
    for child in table.elements("tr", "thead", "tbody", "tfoot"):
        if child.name == "tr":
            rows.append(child)
        else:
            rows.extend(child.elements("tr"))
    return rows
