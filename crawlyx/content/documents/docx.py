"""A Word document (.docx, Office Open XML) as markdown, in a worker process.

A .docx is a zip of XML parts: the body (``word/document.xml``) holds paragraphs, each
with its style (a heading's style has an outline level), list numbering and runs of
text, and tables. Read with lxml (no other library): headings at their outline level,
paragraphs, list items (numbered where the numbering says so, nested by level), GFM
tables, and the document's title, subject and language from its properties.
"""

from __future__ import annotations

import io
import re
import zipfile

from lxml import etree

from crawlyx.content.documents.errors import Unreadable

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
REL = "{http://schemas.openxmlformats.org/package/2006/relationships}"
DC = "{http://purl.org/dc/elements/1.1/}"
CFB = b"\xd0\xcf\x11\xe0"  # an OLE compound file: an encrypted .docx, or an old .doc
MAX_PART = 64 << 20  # bytes of one XML part, inflated: a zip bomb stops here
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)
_HEADING_STYLE = re.compile(r"heading\s*([1-9])|^title$", re.IGNORECASE)


def read(body: bytes) -> tuple[str, dict, list[str], list[str]]:
    """(markdown, metadata: title, description, lang; headings; link targets)."""
    if body.startswith(CFB):
        raise Unreadable("encrypted, or a Word 97-2003 file: not Office Open XML")
    try:
        archive = zipfile.ZipFile(io.BytesIO(body))
        document = _part(archive, "word/document.xml")
    except (zipfile.BadZipFile, KeyError, etree.XMLSyntaxError, OSError) as exc:
        raise Unreadable(f"broken Word document: {exc}") from None
    levels = _heading_styles(_optional(archive, "word/styles.xml"))
    numbering = _numbering(_optional(archive, "word/numbering.xml"))
    links = _links(_optional(archive, "word/_rels/document.xml.rels"))
    reader = _Body(levels, numbering, links)
    body_element = document.find(f"{W}body")
    if body_element is not None:
        reader.blocks(body_element)
    return "\n\n".join(reader.out) + "\n", _metadata(archive), reader.headings, reader.targets


def _part(archive: zipfile.ZipFile, name: str):
    info = archive.getinfo(name)
    if info.file_size > MAX_PART:
        raise Unreadable(f"{name} inflates to {info.file_size} bytes")
    with archive.open(info) as part:
        return etree.fromstring(part.read(MAX_PART + 1), _PARSER)


def _optional(archive: zipfile.ZipFile, name: str):
    try:
        return _part(archive, name)
    except (KeyError, etree.XMLSyntaxError):
        return None


def _heading_styles(styles) -> dict[str, int]:
    """Style id -> heading level, by the style's outline level or its name."""
    levels: dict[str, int] = {}
    if styles is None:
        return levels
    for style in styles.iter(f"{W}style"):
        sid = style.get(f"{W}styleId") or ""
        outline = style.find(f"{W}pPr/{W}outlineLvl")
        name = style.find(f"{W}name")
        match = _HEADING_STYLE.search(name.get(f"{W}val", "") if name is not None else "")
        if outline is not None and (outline.get(f"{W}val") or "").isdigit():
            level = int(outline.get(f"{W}val")) + 1
            if level <= 9:
                levels[sid] = level
        elif match:
            levels[sid] = int(match.group(1)) if match.group(1) else 1
    return levels


def _style_level(levels: dict[str, int], sid: str | None) -> int | None:
    """The heading level of the paragraph style ``sid``: the one styles.xml gives it, or,
    for a style it does not declare (a document written without styles.xml), the level
    its id names: Word's built-in heading styles have the same ids in every language
    ("Heading1" to "Heading9", "Title"), whatever their names."""
    if not sid:
        return None
    if sid in levels:
        return levels[sid]
    match = _HEADING_STYLE.search(sid)
    if match is None:
        return None
    return int(match.group(1)) if match.group(1) else 1


def _numbering(numbering) -> dict[tuple[str, str], bool]:
    """(numbering id, level) -> numbered (decimal, letters...) rather than bulleted."""
    found: dict[tuple[str, str], bool] = {}
    if numbering is None:
        return found
    abstract = {}
    for definition in numbering.iter(f"{W}abstractNum"):
        formats = {}
        for level in definition.iter(f"{W}lvl"):
            fmt = level.find(f"{W}numFmt")
            formats[level.get(f"{W}ilvl")] = fmt is not None and fmt.get(f"{W}val") != "bullet"
        abstract[definition.get(f"{W}abstractNumId")] = formats
    for num in numbering.iter(f"{W}num"):
        ref = num.find(f"{W}abstractNumId")
        formats = abstract.get(ref.get(f"{W}val") if ref is not None else None, {})
        for level, numbered in formats.items():
            found[num.get(f"{W}numId"), level] = numbered
    return found


def _links(rels) -> dict[str, str]:
    if rels is None:
        return {}
    return {
        rel.get("Id"): rel.get("Target")
        for rel in rels.iter(f"{REL}Relationship")
        if rel.get("TargetMode") == "External" and rel.get("Target")
    }


def _metadata(archive: zipfile.ZipFile) -> dict:
    core = _optional(archive, "docProps/core.xml")

    def text(tag):
        element = core.find(tag) if core is not None else None
        value = " ".join((element.text or "").split()) if element is not None else ""
        return value or None

    return {
        "title": text(f"{DC}title"),
        "description": text(f"{DC}description") or text(f"{DC}subject"),
        "lang": text(f"{DC}language"),
    }


class _Body:
    def __init__(self, levels: dict[str, int], numbering: dict, links: dict[str, str]):
        self.levels = levels
        self.numbering = numbering
        self.links = links
        self.out: list[str] = []
        self.headings: list[str] = []
        self.targets: list[str] = []

    def blocks(self, parent) -> None:
        for child in parent:
            if child.tag == f"{W}p":
                self.paragraph(child)
            elif child.tag == f"{W}tbl":
                self.table(child)
            elif child.tag == f"{W}sdt":  # a content control (a table of contents...)
                content = child.find(f"{W}sdtContent")
                if content is not None:
                    self.blocks(content)

    def text(self, element) -> str:
        parts = []
        for node in element.iter(f"{W}t", f"{W}tab", f"{W}br", f"{W}cr", f"{W}hyperlink"):
            if node.tag == f"{W}t":
                parts.append(node.text or "")
            elif node.tag == f"{W}hyperlink":
                target = self.links.get(node.get(f"{R}id"))
                if target:
                    self.targets.append(target)
            else:
                parts.append(" ")
        return " ".join("".join(parts).split())

    def paragraph(self, p) -> None:
        text = self.text(p)
        if not text:
            return
        props = p.find(f"{W}pPr")
        style = props.find(f"{W}pStyle") if props is not None else None
        level = _style_level(self.levels, style.get(f"{W}val")) if style is not None else None
        outline = props.find(f"{W}outlineLvl") if props is not None else None
        if level is None and outline is not None and (outline.get(f"{W}val") or "").isdigit():
            level = int(outline.get(f"{W}val")) + 1 if int(outline.get(f"{W}val")) < 9 else None
        numbered = props.find(f"{W}numPr") if props is not None else None
        if level:
            self.headings.append(text)
            self.out.append(f"{'#' * min(level, 6)} {text}")
        elif numbered is not None:
            ilvl = numbered.find(f"{W}ilvl")
            num = numbered.find(f"{W}numId")
            depth = ilvl.get(f"{W}val", "0") if ilvl is not None else "0"
            key = (num.get(f"{W}val") if num is not None else None, depth)
            marker = "1." if self.numbering.get(key) else "-"
            item = f"{'  ' * int(depth) if depth.isdigit() else ''}{marker} {text}"
            if self.out and _is_item(self.out[-1]):
                self.out[-1] += "\n" + item
            else:
                self.out.append(item)
        else:
            self.out.append(text)

    def table(self, table) -> None:
        rows = []
        for tr in table.iter(f"{W}tr"):
            if tr.getparent() is not table:
                continue  # a nested table's row: in its cell's text
            cells = [self.text(tc).replace("|", "\\|") for tc in tr.findall(f"{W}tc")]
            rows.append(cells)
        width = max((len(row) for row in rows), default=0)
        if width < 2 or len(rows) < 2:
            self.out.extend(cell for row in rows for cell in row if cell)
            return
        rows = [row + [""] * (width - len(row)) for row in rows]
        lines = ["| " + " | ".join(rows[0]) + " |", "| " + " | ".join(["---"] * width) + " |"]
        lines += ["| " + " | ".join(row) + " |" for row in rows[1:]]
        self.out.append("\n".join(lines))


def _is_item(block: str) -> bool:
    last = block.rsplit("\n", 1)[-1].lstrip()
    return last.startswith("- ") or last.startswith("1. ")
