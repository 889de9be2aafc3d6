"""A tagged PDF's structure tree, as PDFium gives it for a page: what each piece of
marked content on the page is (a heading, a table cell, a list item...), in the tree's
(reading) order."""

from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass

import pypdfium2.raw as raw

# Structure roles (PDF 32000 14.8.4), and the names some writers use without a role map.
_HEADING = re.compile(r"(?:H|Heading\s*)([1-6])", re.IGNORECASE)
_BLOCKS = frozenset({"P", "LI", "LBody", "TD", "TH", "Caption", "BlockQuote", "Title", "H"})


@dataclass(slots=True)
class Role:
    """What the structure tree says of one marked-content id on a page."""

    order: int  # position in the tree's (reading) order
    block: int = -1  # the nearest block element's id (a paragraph, a cell...), -1: none
    heading: int = 0  # 1-6 inside a heading
    table: int = -1  # the table's id, -1: none
    row: int = -1  # the row's index in its table
    cell: int = -1  # the cell's index in its row
    header: bool = False  # a header cell
    item: int = -1  # the list item's id, -1: none
    depth: int = 0  # lists it is nested in
    label: bool = False  # a list item's label (bullet, number)
    claims: int = 0  # ids the element it is from has (see _Walk.element)


def roles(page) -> dict[int, Role]:
    """Marked-content id -> :class:`Role`, from the page's structure tree (empty for an
    untagged page)."""
    tree = raw.FPDF_StructTree_GetForPage(page.raw)
    if not tree:
        return {}
    try:
        walk = _Walk()
        for index in range(raw.FPDF_StructTree_CountChildren(tree)):
            element = raw.FPDF_StructTree_GetChildAtIndex(tree, index)
            if element:
                walk.element(element, Role(order=0), 0)
        return walk.roles
    finally:
        raw.FPDF_StructTree_Close(tree)


_COPIED = ("block", "heading", "table", "row", "cell", "header", "item", "depth", "label")


class _Walk:
    MAX_DEPTH = 200  # a structure tree is not a call stack's worth deep

    def __init__(self):
        self.roles: dict[int, Role] = {}
        self.ids = 0
        self.claims = 0  # ids claimed so far: the tree's reading order
        self.rows: dict[int, int] = {}  # table id -> rows met
        self.cells: dict[int, int] = {}  # (row's) table id -> cells met in the row

    def next_id(self) -> int:
        self.ids += 1
        return self.ids

    def element(self, element, context: Role, level: int) -> None:
        if level > self.MAX_DEPTH:
            return
        kind = _string(raw.FPDF_StructElement_GetType, element)
        role = Role(**{name: getattr(context, name) for name in _COPIED}, order=0)
        heading = _HEADING.fullmatch(kind)
        if heading:
            role.heading = int(heading.group(1))
        elif kind == "Title":
            role.heading = 1
        if kind in _BLOCKS or heading:
            role.block = self.next_id()
        if kind == "Table":
            role.table = self.next_id()
            self.rows[role.table] = 0
        elif kind == "TR" and role.table >= 0:
            role.row = self.rows[role.table]
            self.rows[role.table] += 1
            self.cells[role.table] = 0
        elif kind in ("TD", "TH") and role.table >= 0:
            role.cell = self.cells.get(role.table, 0)
            self.cells[role.table] = role.cell + 1
            role.header = kind == "TH"
        elif kind == "L":
            role.depth += 1
        elif kind == "LI":
            role.item = self.next_id()
        elif kind == "Lbl":
            role.label = True
        mcids = [
            raw.FPDF_StructElement_GetMarkedContentIdAtIndex(element, index)
            for index in range(raw.FPDF_StructElement_GetMarkedContentIdCount(element))
        ]
        mcids = [mcid for mcid in mcids if mcid >= 0]
        for mcid in mcids:
            # An element's content on other pages is listed with this page's (by the
            # other pages' ids), and PDFium does not say which page an id is on: of the
            # elements that claim an id, the one with fewest ids has it (an element
            # split over pages, or repeated on each as a running header, has more).
            claim = self.roles.get(mcid)
            if claim is None or len(mcids) < claim.claims:
                self.roles[mcid] = Role(
                    **{name: getattr(role, name) for name in _COPIED}, order=self.claims
                )
                self.roles[mcid].claims = len(mcids)
                self.claims += 1
        for index in range(raw.FPDF_StructElement_CountChildren(element)):
            child = raw.FPDF_StructElement_GetChildAtIndex(element, index)
            if child:
                self.element(child, role, level + 1)


def _string(function, element) -> str:
    size = function(element, None, 0)
    if size <= 2:
        return ""
    buffer = ctypes.create_string_buffer(size)
    function(element, buffer, size)
    return buffer.raw[: size - 2].decode("utf-16-le", "replace")
