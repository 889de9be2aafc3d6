"""Real PDFs read into markdown, scored against their own text layer, per maker.

    python bench/pdfs_real.py DIR [--show NAME]

Every ``*.pdf`` under DIR (manuals made by TeX, Apache FOP, LibreOffice, Chromium...: the
maker is read from the PDF's Producer) is read by crawlyx's reader
(:func:`crawlyx.content.documents.reader.read_pdf`, what a page worker runs) and scored
against what the PDF's text layer says (poppler's ``pdftotext``, and PDFium's characters
for fonts and sizes), with checks that need no hand-made truth:

* word F1: multisets of lowercased words, against ``pdftotext`` (running headers and
  footers included there, so dropping them costs a little recall), and against it less
  the running lines found below;
* lists: lines of the text layer that start with a bullet glyph whose words are a
  markdown list item's, and rows of a table holding only a bullet (``| • |``: a list read
  as a table);
* code: lines set wholly in a fixed-pitch font (two words or more) found inside fenced
  code;
* title: the item's title shares most of its words with the largest text on page one;
* running headers: lines at the top or bottom of pages whose text, digits masked, is on a
  third of the pages or more (four pages at least), or on three when it starts or ends
  with a number (a chapter's header with its page number); a header left is one of them found in
  the markdown with its page's number, or (without digits) more than twice;
* TOC headings: markdown headings with a dot leader and a page number;
* ms per PDF page.
"""

from __future__ import annotations

import argparse
import ctypes
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pypdfium2 as pdfium  # noqa: E402
import pypdfium2.raw as raw  # noqa: E402
from documents import f1, norm  # noqa: E402  (bench/documents.py: the same word F1)

from crawlyx.content.documents.errors import Unreadable  # noqa: E402
from crawlyx.content.documents.reader import read_pdf  # noqa: E402

FOLIO = re.compile(r"^\d+\s|\s\d+$")  # a line that starts or ends with its page's number
BULLETS = "•◦▪▫●○■□‣⁃∙·∗"
MONO = re.compile(r"mono|courier|typewriter|consol|menlo|cmtt|sftt|tt\d|code", re.I)
MAKERS = [
    ("TeX", re.compile(r"tex|dvipdf", re.I)),
    ("FOP", re.compile(r"\bFOP\b", re.I)),
    ("LibreOffice/Word", re.compile(r"libreoffice|openoffice|microsoft|word", re.I)),
    ("Chromium", re.compile(r"skia|chrom", re.I)),
]


def maker(path: Path) -> str:
    info = subprocess.run(["pdfinfo", str(path)], capture_output=True, text=True).stdout
    producer = " ".join(re.findall(r"^(?:Producer|Creator):\s*(.*)$", info, re.M))
    return next((name for name, pattern in MAKERS if pattern.search(producer)), "other")


def meta_title(path: Path) -> str | None:
    info = subprocess.run(["pdfinfo", str(path)], capture_output=True, text=True).stdout
    found = re.search(r"^Title:\s*(.*)$", info, re.M)
    title = found.group(1).strip() if found else ""
    return None if not title or re.search(r"\.(?:docx?|odt|html?|tex|dvi)$", title) else title


def text_pages(path: Path) -> list[str]:
    out = subprocess.run(["pdftotext", "-enc", "UTF-8", str(path), "-"], capture_output=True)
    return out.stdout.decode("utf-8", "replace").split("\f")


def running_lines(pages: list[str], first: bool = False) -> list[tuple[int, str]]:
    """(page, line) of the text layer's running headers and footers (with ``first``, a
    page's first line too, digits masked, when three pages or more open with it: a
    chapter's name apart from its folio, and a chapter's opening "Chapter 3" too)."""
    bands = []
    for page in pages:
        lines = [" ".join(line.split()) for line in page.splitlines() if line.strip()]
        bands.append(lines[:2] + lines[-2:] if len(lines) > 4 else lines)
    seen = Counter()
    for lines in bands:
        seen.update({re.sub(r"\d+", "#", line.lower()) for line in lines})
    needed = max(4, len(pages) // 3)
    found = []
    for index, lines in enumerate(bands):
        for line in lines:
            key = re.sub(r"\d+", "#", line.lower())
            # a book's header names its chapter: on fewer pages, but with the page number
            # (or its folio apart, the chapter's name as the page's first line)
            often = seen[key] >= needed or (
                (_runs(line, index, bands) or (first and line == lines[0])) and seen[key] >= 3
            )
            if often and len(norm(line)) >= 3 and re.search(r"[^\W\d]{3}", line):
                found.append((index, line))
    return found


def _runs(line: str, page: int, bands: list[list[str]]) -> bool:
    """The line's number at its start or end runs with the pages: the next page's line
    or the page after's carries it plus one or two (a folio, not "Chapter 3")."""
    match = FOLIO.search(line)
    if match is None:
        return False
    number, key = int(match.group().strip()), re.sub(r"\d+", "#", line.lower())
    for ahead in (1, 2):
        for other in bands[page + ahead] if page + ahead < len(bands) else []:
            found = FOLIO.search(other)
            same = re.sub(r"\d+", "#", other.lower()) == key
            if found and same and int(found.group().strip()) == number + ahead:
                return True
    return False


def _without(page: str, running: set[str]) -> str:
    """The page's text without its running lines (among its first and last two)."""
    lines = page.splitlines()
    kept = [line for line in lines if " ".join(line.split()) not in running]
    return "\n".join(kept)


def headers_left(markdown: str, pages: list[str], running: list[tuple[int, str]]) -> int:
    """Running lines found in the markdown: one with digits (its page's number) found
    there at all, one without more often than the text layer has it outside the bands."""
    text = norm(markdown)
    body = norm("\n".join(pages))
    left = 0
    plain = Counter(line for _, line in running if not FOLIO.search(line))
    for line, bands in plain.items():
        pattern = rf"(?<!\w){re.escape(norm(line))}(?!\w)"
        if len(re.findall(pattern, text)) > len(re.findall(pattern, body)) - bands + 1:
            left += 1
    numbered = {line for _, line in running if FOLIO.search(line)}
    for line in numbered:
        if re.search(rf"(?<!\w){re.escape(norm(line))}(?!\w)", text):
            left += 1
    return left


def fenced(markdown: str) -> tuple[str, list[str]]:
    """(the text inside fenced code, the lines of list items)."""
    code, items, fence = [], [], None
    for line in markdown.splitlines():
        if line.startswith("```"):
            fence = None if fence else line
        elif fence:
            code.append(line)
        elif re.match(r"\s*(?:[-*+]|\d+[.)])\s", line):
            items.append(line)
    return norm("\n".join(code)), items


def layer(path: Path) -> tuple[list[str], str, int]:
    """(lines set wholly in a fixed-pitch font, the largest text on page one, pages)."""
    pdf = pdfium.PdfDocument(str(path))
    mono_lines, title = [], ""
    try:
        for index in range(len(pdf)):
            page = pdf[index]
            textpage = page.get_textpage()
            text = textpage.get_text_range()
            same = len(text) == raw.FPDFText_CountChars(textpage.raw)
            if same:
                position = 0
                for line in text.splitlines(keepends=True):
                    stripped = line.strip()
                    if len(stripped.split()) >= 2 and _mono(textpage.raw, position, line):
                        mono_lines.append(stripped)
                    position += len(line)
            if index == 0:
                title = _largest(textpage.raw, text) if same else ""
            textpage.close()
            page.close()
        return mono_lines, title, len(pdf)
    finally:
        pdf.close()


def _font(tp, index: int) -> tuple[str, int]:
    flags = ctypes.c_int(0)
    size = raw.FPDFText_GetFontInfo(tp, index, None, 0, ctypes.byref(flags))
    if size <= 1:
        return "", 0
    buffer = ctypes.create_string_buffer(size)
    raw.FPDFText_GetFontInfo(tp, index, buffer, size, ctypes.byref(flags))
    return buffer.value.decode("utf-8", "replace"), flags.value


def _mono(tp, position: int, line: str) -> bool:
    for offset, char in enumerate(line):
        if char.isspace():
            continue
        name, flags = _font(tp, position + offset)
        if not (flags & 1 or MONO.search(name)):
            return False
    return True


def _largest(tp, text: str) -> str:
    sizes = [raw.FPDFText_GetFontSize(tp, i) if not c.isspace() else 0 for i, c in enumerate(text)]
    if not sizes:
        return ""
    top = max(sizes)
    kept = (c if s >= top - 0.5 or c == " " else "\n" for c, s in zip(text, sizes, strict=True))
    return "".join(kept)


def title_ok(title: str | None, largest: str, meta: str | None) -> bool:
    """The title is the largest text on page one, or the PDF's own Title (not a file's
    name), most of its words."""
    got = set(norm(title or "").split())
    if not got:
        return False
    for want in (largest, meta or ""):
        want = set(norm(want).split())
        if want and len(want & got) >= 0.6 * max(len(want), len(got)):
            return True
    return not norm(largest)


def toc_headings(markdown: str) -> int:
    """Headings that are entries of the table of contents: a dot leader and a number."""
    heads = [line for line in markdown.splitlines() if re.match(r"#+ ", line)]
    return sum(1 for h in heads if re.search(r"(?:\.\s*){3,}[\divxlc]+\s*$", h, re.I))


def score(path: Path) -> dict:
    data = path.read_bytes()
    pages = text_pages(path)
    truth = "\n".join(pages)
    running = running_lines(pages)
    loose = running_lines(pages, first=True)
    bare = "\n".join(
        _without(page, {line for n, line in loose if n == i}) for i, page in enumerate(pages)
    )
    mono_lines, largest, count = layer(path)
    start = time.perf_counter()
    try:
        item = read_pdf(data, "http://example.com/doc.pdf", "http://example.com")
    except Unreadable:
        item = {"markdown": "", "title": None}
    seconds = time.perf_counter() - start
    md = item["markdown"]
    code, items = fenced(md)
    item_text = {norm(line) for line in items}
    bullets = [
        norm(line.strip()[1:])
        for page in pages
        for line in page.splitlines()
        if line.strip()[:1] in BULLETS and len(norm(line)) > 3
    ]
    in_list = sum(1 for b in bullets if any(t.startswith(b[:40]) for t in item_text))
    mono = [norm(line) for line in mono_lines if norm(line)]
    return {
        "pages": count,
        "seconds": seconds,
        "f1": f1(md, truth),
        "f1_bare": f1(md, bare),
        "bullets": len(bullets),
        "in_list": in_list,
        "bullet_rows": len(re.findall(r"^\|\s*[" + BULLETS + r"]\s*\|", md, re.M)),
        "mono": len(mono),
        "fenced": sum(1 for line in mono if line in code),
        "title": title_ok(item["title"], largest, meta_title(path)),
        "title_text": item["title"],
        "largest": " ".join(largest.split()),
        "headers": headers_left(md, pages, running),
        "toc": toc_headings(md),
        "markdown": md,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    parser.add_argument("--show", help="print the markdown of the PDF whose name has this")
    parser.add_argument("--each", action="store_true", help="a line per PDF")
    args = parser.parse_args()
    rows: dict[str, Counter] = {}
    for path in sorted(Path(args.folder).rglob("*.pdf")):
        result = score(path)
        if args.show and args.show in path.name:
            print(result["markdown"])
            return
        if args.each:
            print(
                f"{path.name[:44]:44} f1 {result['f1']:.3f}/{result['f1_bare']:.3f} lists "
                f"{result['in_list']}/{result['bullets']} code {result['fenced']}/{result['mono']}"
                f" title {'ok' if result['title'] else 'NO'} ({result['title_text']!r} / "
                f"{result['largest'][:40]!r}) headers {result['headers']} toc {result['toc']}"
            )
        for key in (maker(path), "all"):
            row = rows.setdefault(key, Counter())
            row["docs"] += 1
            for name in ("pages", "seconds", "f1", "f1_bare", "bullets", "in_list", "bullet_rows"):
                row[name] += result[name]
            for name in ("mono", "fenced", "headers", "toc"):
                row[name] += result[name]
            row["titles"] += result["title"]
            row["clean"] += result["headers"] == 0
    print(
        "| maker | PDFs | pages | word F1 | word F1, layer less its running lines"
        " | bullet lines as list items | `| • |` rows"
        " | fixed-pitch lines fenced | titles | PDFs without a running header"
        " | TOC headings | ms per page |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for key, row in sorted(rows.items(), key=lambda kv: (kv[0] == "all", kv[0])):
        print(
            f"| {key} | {row['docs']} | {row['pages']} | {row['f1'] / row['docs']:.3f}"
            f" | {row['f1_bare'] / row['docs']:.3f}"
            f" | {row['in_list']}/{row['bullets']} | {row['bullet_rows']}"
            f" | {row['fenced']}/{row['mono']} | {row['titles']}/{row['docs']}"
            f" | {row['clean']}/{row['docs']} | {row['toc']}"
            f" | {1000 * row['seconds'] / max(row['pages'], 1):.1f} |"
        )


if __name__ == "__main__":
    main()
