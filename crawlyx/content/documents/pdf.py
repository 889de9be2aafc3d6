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

from crawlyx.content.documents.errors import Unreadable
from crawlyx.content.documents.tree import Role, roles

# A fixed-pitch font by its name, when its descriptor does not say so (TeX's Type 1 fonts
# rarely do): the usual names, and TeX's typewriter faces, "TT" before the design size
# (CMTT10, CMSLTT10, CMITT10, SFTT1000, TXTT, LMMono10, NimbusMonL), after a subset's tag.
_MONO_FONT = re.compile(
    r"mono|courier|consol|menlo|code|fixed|typewriter|nimbusmon"
    r"|^(?:[A-Z]{6}\+)?(?:cm|sf|ec|tc|tx|lm)?(?:sl|i|b)?tt(?:\d|-|$)",
    re.IGNORECASE,
)
# PDFium joins a line ending in a hyphen to the next when that starts in lower case, with
# U+FFFE for the hyphen: two lines here, the hyphen for the layout to judge.
HYPHEN_BREAK = "\ufffe"
_LINE_BREAK = re.compile(r"\r\n|\r|\n|\ufffe")
_WORD = re.compile(r"\S+")
# Letters set apart (CSS letter-spacing: "C O P Y", "C O PY"), which the text page spaces
# as words. A space the PDF itself holds is a word's end, however narrow the font sets it
# ("a b c and d" and an index's "A C F V" stay). A space the text page made up for a gap
# (PDFium's generated characters) joins letters of one block of the structure tree when
# the gap is narrower than LETTER_GAP of the font size: TeX, which draws no spaces, sets
# words further apart (a quarter of the size and more), and so do a table's columns mostly.
_LETTER_SPACED = re.compile(r"(?<!\S)(?:[^\W\d_] ){2,}[^\W\d_]")
LETTER_GAP = 0.2

FIXED_PITCH = 1  # PDF font descriptor flag


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
    # (left, right) of each word, on a page without a structure tree (its tables are found
    # by their columns: crawlyx/content/documents/tables.py)
    spans: list = field(default_factory=list)


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
    broken = 0
    for index in range(len(pdf)):
        try:
            page = pdf[index]
        except pdfium.PdfiumError:  # a page that does not load: the others may
            broken += 1
            continue
        try:
            marked = roles(page)
            textpage = page.get_textpage()
            try:
                lines = _lines(textpage, index, marked)
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
    if broken and not pages:
        raise Unreadable(f"broken PDF: none of its {broken} pages loads")
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
    words, sizes, spans = [], {}, []
    for match in _WORD.finditer(segment):
        index = _index(tp, offset + match.start(), same)
        if index < 0:
            continue
        role = None
        if roles:
            obj = raw.FPDFText_GetTextObject(tp, index)
            if obj:
                role = roles.get(raw.FPDFPageObj_GetMarkedContentID(obj))
        else:
            end = _index(tp, offset + match.end() - 1, same)
            spans.append((_box(tp, index)[0], _box(tp, end)[1] if end >= 0 else 0.0))
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
    size = max(sizes, key=sizes.get)
    if " " in segment and _LETTER_SPACED.search(segment):
        segment, words, spans = _join_letters(tp, segment, offset, same, size, words, spans)
    bold = _bold(tp, first, name)
    if bold and len(words) > 1:  # the whole line: its last word too
        last_word = _index(tp, offset + words[-1][0], same)
        bold = _bold(tp, last_word, _font_name(tp, last_word, ctypes.c_int(0)))
    return Line(
        text=segment,
        page=page,
        x0=x0,
        x1=max(x1, x0),
        top=max(t0, t1),
        bottom=min(b0, b1),
        size=size,
        mono=mono,
        bold=bold,
        words=words,
        spans=spans if len(spans) == len(words) else [],
    )


def _join_letters(tp, segment: str, offset: int, same: bool, size: float, words, spans):
    """The line with its runs of letters set apart joined into words: (text, words, spans).
    A run: single letters, the last of them maybe two or three (the text page spaced some
    pairs only: "C O PY"), four letters at least, each gap one the text page made up,
    narrower than LETTER_GAP of the font size, within one block of the structure tree."""
    tokens = [(m.start(), m.end()) for m in _WORD.finditer(segment)]
    blocks = {start: role.block for start, role in words if role is not None}
    groups, index = [], 0
    while index < len(tokens):
        run = index
        while run + 1 < len(tokens) and _single(segment, tokens[run]):
            start, end = tokens[run + 1]
            if not segment[start:end].isalpha() or end - start > 3:
                break
            if blocks.get(start) != blocks.get(tokens[run][0]):
                break
            if not _made_up(tp, offset, same, tokens[run][1], start):
                break
            left = _box(tp, _index(tp, offset + start, same))[0]
            right = _box(tp, _index(tp, offset + tokens[run][1] - 1, same))[1]
            if left - right > LETTER_GAP * size:
                break
            run += 1
        letters = sum(end - start for start, end in tokens[index : run + 1])
        if run - index >= 2 and letters >= 4:
            groups.append((tokens[index][0], tokens[run][1], run - index))
        index = run + 1
    for first, last, removed in reversed(groups):
        joined = segment[first:last].replace(" ", "")
        segment = segment[:first] + joined + segment[last:]
        kept_words, kept_spans = [], []
        for number, (start, role) in enumerate(words):
            if first < start < last:
                if spans:  # the run's first word reaches to its last letter
                    kept_spans[-1] = (kept_spans[-1][0], spans[number][1])
                continue
            kept_words.append((start - removed if start >= last else start, role))
            if spans:
                kept_spans.append(spans[number])
        words, spans = kept_words, kept_spans
    return segment, words, spans


def _made_up(tp, offset: int, same: bool, start: int, end: int) -> bool:
    """Whether every character of the segment's ``start:end`` (the blank between two
    words) is one the text page generated, none the PDF draws."""
    return all(
        raw.FPDFText_IsGenerated(tp, _index(tp, offset + position, same)) == 1
        for position in range(start, end)
    )


def _single(segment: str, token: tuple[int, int]) -> bool:
    return token[1] - token[0] == 1 and segment[token[0]].isalpha()


def _bold(tp, index: int, name: str) -> bool:
    return raw.FPDFText_GetFontWeight(tp, index) >= 600 or "bold" in name.lower()


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
