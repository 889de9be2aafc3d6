"""A PDF's text as lines, read with PDFium (pypdfium2), in a worker process.

PDFium lays a page's characters out into lines (its text page: spaces and line breaks
where the glyphs' positions say so) fast, in C. Of each line only a few characters are
looked at from Python: where the line starts and ends, its font (size, weight, fixed
pitch), and the marked content each word belongs to. A tagged PDF (what Word, LibreOffice
and Chromium write) maps marked content to its structure tree: headings, paragraphs, list
items, table cells, and content outside the tree (page headers, footers, numbers) that is
no part of the text. :mod:`crawlyx.content.documents.layout` makes markdown of the lines.
"""

from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass, field

import pypdfium2 as pdfium
import pypdfium2.raw as raw

from crawlyx.content.documents import Unreadable

# Structure roles (PDF 32000 14.8.4), and the names some writers use without a role map.
_HEADING = re.compile(r"(?:H|Heading\s*)([1-6])", re.IGNORECASE)
_BLOCKS = frozenset({"P", "LI", "LBody", "TD", "TH", "Caption", "BlockQuote", "Title", "H"})
_MONO_FONT = re.compile(r"mono|courier|consol|menlo|code|fixed|typewriter", re.IGNORECASE)
# PDFium joins a line ending in a hyphen to the next when that starts in lower case, with
# U+FFFE for the hyphen: two lines here, the hyphen for the layout to judge.
HYPHEN_BREAK = "\ufffe"
_LINE_BREAK = re.compile(r"\r\n|\r|\n|\ufffe")
_WORD = re.compile(r"\S+")

FIXED_PITCH = 1  # PDF font descriptor flag


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


@dataclass(slots=True)
class Line:
    """A line of a page's text page, where it is (PDF points, y up) and how it is set."""

    text: str
    page: int
    x0: float
    x1: float
    top: float
    bottom: float
    size: float
    mono: bool = False
    bold: bool = False
    # (start offset in text, role or None) of each word: None outside the structure tree
    words: list = field(default_factory=list)


@dataclass(slots=True)
class Document:
    title: str | None
    description: str | None
    lang: str | None
    pages: list  # per page, its lines in reading order
    heights: list  # per page, its height
    tagged: bool  # its structure tree holds its text
    images: bool  # some page draws an image
    links: list  # URIs of its link annotations


def read(body: bytes) -> Document:
    """The document's lines and metadata; :class:`Unreadable` for a PDF that PDFium
    cannot open (broken, or encrypted with a password)."""
    try:
        pdf = pdfium.PdfDocument(body)
    except pdfium.PdfiumError as exc:
        code = getattr(exc, "err_code", None)
        if code == raw.FPDF_ERR_PASSWORD:
            raise Unreadable("encrypted: the PDF needs a password") from None
        if code == raw.FPDF_ERR_SECURITY:
            raise Unreadable("encrypted with an unsupported security handler") from None
        raise Unreadable(f"broken PDF: {exc}") from None
    try:
        return _read(pdf)
    finally:
        pdf.close()


def _read(pdf) -> Document:
    meta = pdf.get_metadata_dict(skip_empty=True)
    pages, heights, links = [], [], []
    tagged_words = all_words = 0
    images = False
    for index in range(len(pdf)):
        page = pdf[index]
        try:
            roles = _roles(page)
            textpage = page.get_textpage()
            try:
                lines = _lines(textpage, index, roles)
            finally:
                textpage.close()
            if not images and not any(line.text.strip() for line in lines):
                images = _has_images(page)
            links += _uris(pdf, page)
            heights.append(page.get_height())
        finally:
            page.close()
        for line in lines:
            all_words += len(line.words)
            tagged_words += sum(1 for _, role in line.words if role is not None)
        pages.append(lines)
    tagged = bool(all_words) and tagged_words >= 0.5 * all_words
    if tagged:  # content outside the tree is pagination (headers, footers): not text
        pages = [_in_tree(lines) for lines in pages]
    return Document(
        title=meta.get("Title"),
        description=meta.get("Subject"),
        lang=_language(pdf),
        pages=pages,
        heights=heights,
        tagged=tagged,
        images=images,
        links=links,
    )


def _in_tree(lines: list[Line]) -> list[Line]:
    """A tagged page's lines in the tree's order, without those outside it."""
    kept = [line for line in lines if any(role is not None for _, role in line.words)]
    return sorted(kept, key=_order)


def _order(line: Line) -> int:
    return next(role.order for _, role in line.words if role is not None)


# -- the text page ---------------------------------------------------------------------

_c_double = ctypes.c_double


def _lines(textpage, page: int, roles: dict[int, Role]) -> list[Line]:
    tp = textpage.raw
    count = raw.FPDFText_CountChars(tp)
    if count <= 0:
        return []
    text = textpage.get_text_range()
    same = len(text) == count  # text index = char index (nearly always)
    lines = []
    start = 0
    for brk in _LINE_BREAK.finditer(text + "\n"):
        segment = text[start : brk.start()]
        if brk.group() == HYPHEN_BREAK:  # PDFium joined a word hyphenated over two lines
            segment += "-"
        offset = start
        start = brk.end()
        if not segment.strip():
            continue
        line = _line(tp, segment, offset, same, page, roles)
        if line is not None:
            lines.append(line)
    return lines


def _index(tp, text_index: int, same: bool) -> int:
    return text_index if same else raw.FPDFText_GetCharIndexFromTextIndex(tp, text_index)


def _line(tp, segment: str, offset: int, same: bool, page: int, roles) -> Line | None:
    words, sizes = [], {}
    for match in _WORD.finditer(segment):
        index = _index(tp, offset + match.start(), same)
        if index < 0:
            continue
        role = None
        if roles:
            obj = raw.FPDFText_GetTextObject(tp, index)
            if obj:
                role = roles.get(raw.FPDFPageObj_GetMarkedContentID(obj))
        words.append((match.start(), role))
        size = round(raw.FPDFText_GetFontSize(tp, index), 1)
        sizes[size] = sizes.get(size, 0) + len(match.group())
    if not words:
        return None
    stripped = segment.rstrip()
    first = _index(tp, offset + words[0][0], same)
    last = _index(tp, offset + len(stripped) - 1, same)
    x0, _, b0, t0 = _box(tp, first)
    _, x1, b1, t1 = _box(tp, last)
    flags = ctypes.c_int(0)
    name = _font_name(tp, first, flags)
    mono = bool(flags.value & FIXED_PITCH) or bool(_MONO_FONT.search(name))
    if mono and len(words) > 1:  # prose that opens with a code word is prose
        last_flags = ctypes.c_int(0)
        last_name = _font_name(tp, _index(tp, offset + words[-1][0], same), last_flags)
        mono = bool(last_flags.value & FIXED_PITCH) or bool(_MONO_FONT.search(last_name))
    bold = raw.FPDFText_GetFontWeight(tp, first) >= 600 or "bold" in name.lower()
    return Line(
        text=segment,
        page=page,
        x0=x0,
        x1=max(x1, x0),
        top=max(t0, t1),
        bottom=min(b0, b1),
        size=max(sizes, key=sizes.get),
        mono=mono,
        bold=bold,
        words=words,
    )


def _box(tp, index: int) -> tuple[float, float, float, float]:
    """(left, right, bottom, top) of the character's box at its font's full height."""
    rect = raw.FS_RECTF()
    if raw.FPDFText_GetLooseCharBox(tp, index, rect):
        return rect.left, rect.right, rect.bottom, rect.top
    left, right, bottom, top = _c_double(), _c_double(), _c_double(), _c_double()
    raw.FPDFText_GetCharBox(
        tp, index, ctypes.byref(left), ctypes.byref(right), ctypes.byref(bottom), ctypes.byref(top)
    )
    return left.value, right.value, bottom.value, top.value


def _font_name(tp, index: int, flags) -> str:
    size = raw.FPDFText_GetFontInfo(tp, index, None, 0, ctypes.byref(flags))
    if size <= 1:
        return ""
    buffer = ctypes.create_string_buffer(size)
    raw.FPDFText_GetFontInfo(tp, index, buffer, size, ctypes.byref(flags))
    return buffer.value.decode("utf-8", "replace")


# -- the structure tree ----------------------------------------------------------------


def _roles(page) -> dict[int, Role]:
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


# -- the rest ----------------------------------------------------------------------------


def _has_images(page) -> bool:
    for index in range(raw.FPDFPage_CountObjects(page.raw)):
        obj = raw.FPDFPage_GetObject(page.raw, index)
        if raw.FPDFPageObj_GetType(obj) == raw.FPDF_PAGEOBJ_IMAGE:
            return True
    return False


MAX_LINKS = 10_000  # link annotations read per document


def _uris(pdf, page) -> list[str]:
    found = []
    position, link = ctypes.c_int(0), raw.FPDF_LINK()
    while len(found) < MAX_LINKS and raw.FPDFLink_Enumerate(
        page.raw, ctypes.byref(position), ctypes.byref(link)
    ):
        action = raw.FPDFLink_GetAction(link)
        if not action or raw.FPDFAction_GetType(action) != raw.PDFACTION_URI:
            continue
        size = raw.FPDFAction_GetURIPath(pdf.raw, action, None, 0)
        if size <= 1:
            continue
        buffer = ctypes.create_string_buffer(size)
        raw.FPDFAction_GetURIPath(pdf.raw, action, buffer, size)
        found.append(buffer.value.decode("latin-1"))
    return found


def _language(pdf) -> str | None:
    try:
        size = raw.FPDFCatalog_GetLanguage(pdf.raw, None, 0)
        if size <= 2:
            return None
        buffer = ctypes.create_string_buffer(size)
        wide = ctypes.cast(buffer, ctypes.POINTER(raw.FPDF_WCHAR))
        raw.FPDFCatalog_GetLanguage(pdf.raw, wide, size)
        return buffer.raw[: size - 2].decode("utf-16-le", "replace").strip() or None
    except AttributeError:  # an older PDFium
        return None
