"""PDFs a site links are read into pages; documents that cannot be read, and responses of
every other type, are recorded under one class each. PDFs are made here: printed by
Chromium builds once (tests/data/printed/), or written object by object (tests/sites/pdfs.py)."""

from __future__ import annotations

import json
import subprocess

import pytest

from crawlyx.content.documents.errors import Unreadable
from crawlyx.content.documents.reader import read_docx, read_pdf, read_text
from tests.conftest import crawl_command, crawl_env
from tests.sites.pdfs import (
    PRINTED_BASE,
    PRINTED_BUILDS,
    encrypted_pdf,
    image_pdf,
    printed,
    text_pdf,
    word_document,
    word_paragraph,
    word_table,
)
from tests.sites.site import QuietHandler, Serving


def handbook() -> bytes:
    """An untagged PDF of three pages: headings only by their size, a running header and
    footer, a word hyphenated over two lines, a paragraph going on over a page break."""
    pages = []
    for n in range(1, 4):
        lines = [(72, 750, 9, "Acme Widget Handbook, revision 7"), (72, 40, 9, f"Page {n} of 3")]
        if n == 1:
            lines += [(72, 690, 20, "Acme Widget Handbook"), (72, 650, 14, "Getting started")]
            # A table drawn as text at columns, a cell wrapped over two lines.
            rows = [("Part", "Price", "Weight"), ("Gear wheel", "12.50", "40 g")]
            rows += [("Spring", "3.20", "5 g")]
            for r, row in enumerate(rows):
                lines += [
                    (x, 470 - 15 * r, 11, cell) for x, cell in zip((72, 250, 340), row, strict=True)
                ]
            lines.append((250, 430, 11, "(was 3.00)"))
        else:
            lines.append((72, 680, 11, ("", "", "and ends on the second page.", "right here.")[n]))
        lines += [
            (72, 620, 11, "The widget turns raw parts into finished goods. It needs a careful in-"),
            (72, 606, 11, f"stallation on a flat bench, step {n}, and nothing else to run well."),
            (72, 570, 11, "A second paragraph starts after a wider gap, and it ends here."),
            (72, 540, 14, f"Chapter {n} notes"),
            (72, 510, 10, "widget --start", "F3"),
            (90, 496, 10, "--verbose", "F3"),
            (72, 100, 11, "This paragraph runs on to the next page, where the"),
            (72, 86, 11, "sentence goes on"),
        ]
        pages.append(lines)
    return text_pdf(pages, title="handbook.docx")


NEWEST = PRINTED_BUILDS[-1]  # a build's PDF where the test is not of its layout

# The manual's headings at their levels, in its order, and its table, however it is printed.
MANUAL_HEADINGS = [
    "# Widget Manual", "## Installing the widget", "## Parts and prices",
    "### Starting it", "## Care",
]  # fmt: skip
MANUAL_TABLE = (
    "| Part | Price | Weight |\n| --- | --- | --- |\n| Gear wheel | 12.50 | 40 g |\n"
    "| Spring, large and very strong | 3.20 | 5 g |"
)


@pytest.mark.parametrize("build", PRINTED_BUILDS)
def test_a_printed_pdf_reads_as_markdown(build):
    page = read_pdf(printed(build, "manual.pdf"), f"{PRINTED_BASE}/m.pdf", PRINTED_BASE)
    md = page["markdown"]
    assert page["title"] == "Widget Manual" and page["lang"] == "en"
    # The tree's headings, at their levels, in the page's order.
    headings = [line for line in md.splitlines() if line.startswith("#")]
    assert headings == MANUAL_HEADINGS
    assert MANUAL_TABLE in md
    assert "- Keep the box\n- Read the parts list first" in md
    assert "```\nwidget --start\n  --verbose\n```" in md
    # Lines joined into paragraphs.
    assert "It has several sections, each with a heading" in md
    # The running header (repeated on each page), Chromium's date, title, URL and page
    # numbers: gone.
    assert "CONFIDENTIAL" not in md and "127.0.0.1" not in md and "1/3" not in md
    assert md.count("Widget Manual") == 1
    assert list(page["links"]) == [f"{PRINTED_BASE}/parts"]


@pytest.mark.parametrize("build", PRINTED_BUILDS)
def test_a_pdf_printed_without_its_tree_reads_as_markdown(build):
    # As many tools write PDFs: headings only by their size, a table only by its columns,
    # the running header only by its repetition.
    pdf = printed(build, "manual-untagged.pdf")
    md = read_pdf(pdf, "http://127.0.0.1:9/m.pdf", "http://127.0.0.1:9")["markdown"]
    headings = [line for line in md.splitlines() if line.startswith("#")]
    assert headings == MANUAL_HEADINGS
    assert MANUAL_TABLE in md
    assert "It has several sections, each with a heading" in md
    assert "CONFIDENTIAL" not in md and "127.0.0.1" not in md and "1/3" not in md


@pytest.mark.parametrize("build", PRINTED_BUILDS)
def test_letters_set_apart_are_a_word_again(build):
    pdf = printed(build, "letters.pdf")
    md = read_pdf(pdf, "http://127.0.0.1:9/x.pdf", "http://127.0.0.1:9")["markdown"]
    # Letter-spaced, the text page has "C O P Y"; words a space apart stay words.
    # Words a space apart stay words, however narrow the space is set.
    assert md == (
        "Press COPY to copy it, a b c and d.\n\nJump to: A C F V\n\n"
        "Set close, x y z and w stay apart.\n"
    )


def _letters_pdf(word_spacing: float, letter_gap: int, tex: bool = False) -> bytes:
    """The letters page written by hand: a heading set 'letter_gap' thousandths of its size
    apart, then "a b c and d." with its spaces narrowed by 'word_spacing' points, or, as TeX
    writes, as words placed a third of the size apart with no space characters at all."""
    text = (72, 680, 12, "Press it, a b c and d.", "F1", 10 if tex else 0, word_spacing)
    return text_pdf([[(72, 700, 14, "SUMMARY", "F2", letter_gap), text]])


@pytest.mark.parametrize("word_spacing", [0, -1.5, -2.5])
@pytest.mark.parametrize("letter_gap", [50, 100, 150])
def test_letters_set_apart_in_any_layout(word_spacing, letter_gap):
    # Spaces the PDF draws are word ends however narrow the font sets them; narrow gaps the
    # text page made up between letters are letter gaps.
    md = read_pdf(_letters_pdf(word_spacing, letter_gap), "http://127.0.0.1:9/x.pdf", None)
    assert md["markdown"] == "# SUMMARY\n\nPress it, a b c and d.\n"


@pytest.mark.parametrize("letter_gap", [50, 150])
def test_letters_set_apart_on_a_page_without_spaces(letter_gap):
    # TeX draws no space: a gap is a letter gap when it is narrower than a word's.
    md = read_pdf(_letters_pdf(0, letter_gap, tex=True), "http://127.0.0.1:9/x.pdf", None)
    assert md["markdown"] == "# SUMMARY\n\nPress it, a b c and d.\n"


def test_an_untagged_pdf_reads_as_markdown():
    page = read_pdf(handbook(), "http://127.0.0.1:9/h.pdf", "http://127.0.0.1:9")
    md = page["markdown"]
    assert page["title"] == "Acme Widget Handbook"  # not the file name the metadata has
    headings = [line for line in md.splitlines() if line.startswith("#")]
    assert headings == [
        "# Acme Widget Handbook", "## Getting started",
        "## Chapter 1 notes", "## Chapter 2 notes", "## Chapter 3 notes",
    ]  # fmt: skip
    assert "It needs a careful installation on a flat bench, step 2, and" in md
    assert "\n\nA second paragraph starts after a wider gap" in md
    assert "to the next page, where the sentence goes on and ends on the second page." in md
    assert "```\nwidget --start\n   --verbose\n```" in md
    assert "revision" not in md and "Page 1" not in md and "of 3" not in md
    assert (
        "| Part | Price | Weight |\n| --- | --- | --- |\n| Gear wheel | 12.50 | 40 g |\n"
        "| Spring | 3.20 (was 3.00) | 5 g |"
    ) in md


@pytest.mark.parametrize(
    "body, detail",
    [
        (encrypted_pdf(), "encrypted: the PDF needs a password"),
        (b"%PDF-1.4 not a PDF after all", "broken PDF"),
        (image_pdf(), "no text: its pages are images"),
        (text_pdf([[]]), "no text in the PDF"),
    ],
)
def test_an_unreadable_pdf_says_why(body, detail):
    with pytest.raises(Unreadable, match=detail):
        read_pdf(body, "http://127.0.0.1:9/x.pdf", "http://127.0.0.1:9")


def guide() -> bytes:
    """A Word document: a title, headings, a nested list, a numbered one, a table, a link."""
    p = word_paragraph
    body = "".join(
        [
            p("Widget Guide", "Title"),
            p("The guide says how to |run| the widget, step by step."),
            p("Setting up", "Heading1"),
            p("Unpack it", num=(1, 0)),
            p("Keep the box", num=(1, 1)),
            p("Plug it in", num=(1, 0)),
            p("Parts", "Heading2"),
            word_table([("Part", "Price"), ("Gear wheel", "12.50"), ("Spring", "3.20")]),
            p("Turn it on", num=(2, 0)),
        ]
    )
    return word_document(body, link="http://127.0.0.1:9/parts")


def test_a_word_document_reads_as_markdown():
    page = read_docx(guide(), "http://127.0.0.1:9/guide.docx", "http://127.0.0.1:9")
    assert page["title"] == "Widget Guide" and page["lang"] == "en-GB"
    assert page["markdown"] == (
        "# Widget Guide\n\nThe guide says how to run the widget, step by step.\n\n"
        "# Setting up\n\n- Unpack it\n  - Keep the box\n- Plug it in\n\n## Parts\n\n"
        "| Part | Price |\n| --- | --- |\n| Gear wheel | 12.50 |\n| Spring | 3.20 |\n\n"
        "1. Turn it on\n\na link\n"
    )
    assert list(page["links"]) == ["http://127.0.0.1:9/parts"]


@pytest.mark.parametrize(
    "body, detail",
    [
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(512), "encrypted, or a Word 97-2003 file"),
        (b"PK\x03\x04 cut short", "broken Word document"),
        (word_document(""), "no text in the Word document"),
    ],
)
def test_an_unreadable_word_document_says_why(body, detail):
    with pytest.raises(Unreadable, match=detail):
        read_docx(body, "http://127.0.0.1:9/x.docx", "http://127.0.0.1:9")


HOME = """<html><head><title>Home</title></head><body><h1>Home</h1><p>Files.</p>
<a href="/manual.pdf">manual</a> <a href="/handbook">handbook</a>
<a href="/guide.docx">guide</a> <a href="/sheet.xlsx">sheet</a>
<a href="/secret.pdf">secret</a> <a href="/broken.pdf">broken</a> <a href="/scan.pdf">scan</a>
<a href="/private.pdf">private</a> <a href="/logo.png">logo</a> <a href="/bundle.zip">zip</a>
<a href="/data.json">data</a> <a href="/prices">prices</a></body></html>"""

PARTS = "<html><head><title>Parts</title></head><body><h1>Parts</h1><p>Gears.</p></body></html>"


XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
PRICES = "Gears cost more this year than they did last year, and springs less."


class DocumentSite(Serving):
    def __init__(self):
        self.bodies: dict[str, tuple[str, bytes, dict]] = {}
        site = self

        class Handler(QuietHandler):
            def do_GET(self):  # noqa: N802
                if self.path not in site.bodies:
                    return self.reply(404, "not found")
                ctype, body, headers = site.bodies[self.path]
                return self.reply(200, body, ctype, headers)

        super().__init__(Handler)
        pdf = "application/pdf"
        self.bodies.update(
            {
                "/": ("text/html", HOME.encode(), {}),
                "/parts": ("text/html", PARTS.encode(), {}),
                # A PDF by its first bytes: its Content-Type says nothing.
                "/handbook": ("application/octet-stream", handbook(), {}),
                "/secret.pdf": (pdf, encrypted_pdf(), {}),
                "/broken.pdf": (pdf, b"%PDF-1.4 cut short", {}),
                "/scan.pdf": (pdf, image_pdf(), {}),
                "/private.pdf": (pdf, handbook(), {"X-Robots-Tag": "noindex"}),
                # 4 MiB that crawlyx stops reading at its headers.
                "/logo.png": ("image/png", b"\x89PNG\r\n\x1a\n" + bytes(4 << 20), {}),
                "/bundle.zip": ("application/zip", b"PK\x03\x04" + bytes(1 << 17), {}),
                "/data.json": ("application/json", b'{"a": 1}', {}),
                # A Word document by its name and first bytes: its Content-Type says nothing.
                "/guide.docx": ("application/octet-stream", guide(), {}),
                "/sheet.xlsx": (XLSX, b"PK\x03\x04" + bytes(1 << 17), {}),
                # A PDF labelled as a page: read as what it is.
                "/prices": ("text/html", text_pdf([[(72, 700, 11, PRICES)]]), {}),
            }
        )


def _errors(path) -> dict[str, tuple[str, str]]:
    lines = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    found = {line["url"]: (line["class"], line["detail"]) for line in lines}
    assert len(found) == len(lines), "a URL recorded twice"
    return found


def test_documents_in_a_crawl(crawl, tmp_path):
    with DocumentSite() as site:
        base = site.base
        site.bodies["/manual.pdf"] = ("application/pdf", printed(NEWEST, "manual.pdf", base), {})
        errors = tmp_path / "errors.jsonl"
        result = crawl(f"start={base}/", f"errors={errors}")
        assert result.returncode == 0, result.log[-3000:]
        items = {item["url"]: item for item in result.items}
        # The PDFs read are pages; a link in one is followed.
        pages = ("/", "/guide.docx", "/handbook", "/manual.pdf", "/parts", "/prices")
        assert sorted(items) == [f"{base}{p}" for p in pages]
        manual = items[f"{base}/manual.pdf"]
        assert manual["title"] == "Widget Manual" and manual["status"] == 200
        assert manual["markdown"].startswith("# Widget Manual\n")
        assert "| Gear wheel | 12.50 | 40 g |" in manual["markdown"]
        assert manual["links"] == [f"{base}/parts"] and manual["render"] == "http"
        assert items[f"{base}/parts"]["referrer"] == f"{base}/manual.pdf"
        assert "## Chapter 3 notes" in items[f"{base}/handbook"]["markdown"]
        assert PRICES in items[f"{base}/prices"]["markdown"]
        assert result.stat("crawlyx/documents/pdf") == "4"  # the opted-out one was read too
        assert result.stat("crawlyx/documents/docx") == "1"
        assert "| Gear wheel | 12.50 |" in items[f"{base}/guide.docx"]["markdown"]
        # Every other response: one line, one class.
        found = _errors(errors)
        assert {url.removeprefix(base): cls for url, (cls, _) in found.items()} == {
            "/secret.pdf": "unreadable",
            "/broken.pdf": "unreadable",
            "/scan.pdf": "unreadable",
            "/private.pdf": "opted_out",
            "/logo.png": "not_a_page",
            "/bundle.zip": "not_a_page",
            "/data.json": "not_a_page",
            "/sheet.xlsx": "not_a_page",
        }
        assert found[f"{base}/secret.pdf"][1] == "encrypted: the PDF needs a password"
        assert found[f"{base}/logo.png"][1] == "image/png: an image, not a page"
        assert found[f"{base}/bundle.zip"][1] == "application/zip: an archive, not a page"
        assert result.stat("crawlyx/error/unreadable") == "3"
        assert found[f"{base}/sheet.xlsx"][1] == f"{XLSX}: an office document, not a page"
        assert result.stat("crawlyx/error/not_a_page") == "4"
        # Told by their headers, those over 64 KiB were not downloaded past them (a
        # shorter body comes with its headers: /data.json is read and named).
        assert result.stat("crawlyx/download/stopped_at_headers") == "3"
        assert int(result.stat("downloader/response_bytes")) < 1 << 20

        # With documents off, a PDF is no page either: recorded, not read.
        errors_off = tmp_path / "errors-off.jsonl"
        off = crawl(f"start={base}/", f"errors={errors_off}", settings={"CRAWLYX_DOCUMENTS": ""})
        assert off.returncode == 0, off.log[-3000:]
        assert sorted(off.urls) == [f"{base}/"]
        found = _errors(errors_off)
        assert found[f"{base}/manual.pdf"] == (
            "not_a_page",
            "application/pdf: a PDF (not in CRAWLYX_DOCUMENTS)",
        )
        assert found[f"{base}/handbook"][0] == "not_a_page"
        assert found[f"{base}/guide.docx"] == (
            "not_a_page",
            "application/octet-stream: a Word document (not in CRAWLYX_DOCUMENTS)",
        )
        assert found[f"{base}/prices"] == (
            "not_a_page",
            "text/html: a PDF (not in CRAWLYX_DOCUMENTS)",
        )
        assert len(found) == 12  # every link of the home page
        assert off.stat("crawlyx/documents/pdf") is None
        # The PDFs, under 64 KiB, came with their headers: only the three big files stopped.
        assert off.stat("crawlyx/download/stopped_at_headers") == "3"

        # A start URL its headers name as no page (and no sitemap) is not downloaded either.
        start = crawl(f"start={base}/logo.png", f"errors={tmp_path / 'errors-start.jsonl'}")
        assert start.urls == [] and start.stat("crawlyx/download/stopped_at_headers") == "1"


def test_an_unknown_document_type_stops_the_crawl(tmp_path):
    command = crawl_command(
        tmp_path / "out.jsonl",
        "start=http://127.0.0.1:9/",
        settings={"CRAWLYX_DOCUMENTS": "pdf,odt"},
    )
    proc = subprocess.run(command, env=crawl_env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    known = "known: pdf, docx, markdown, text"
    assert f"CRAWLYX_DOCUMENTS: unknown document type 'odt'; {known}" in proc.stderr


def test_a_pdf_has_the_read_budget_and_the_size_cap_of_a_page(crawl, tmp_path):
    line = "Line {} of page {}, with a few more words for the reader to read."
    # 150 pages: a second's read and more on any machine, far past the budget of 0.1 s.
    pages = [[(72, 760 - 14 * i, 11, line.format(i, n)) for i in range(50)] for n in range(150)]
    long = text_pdf(pages)
    with DocumentSite() as site:
        url = f"{site.base}/long.pdf"
        site.bodies["/long.pdf"] = ("application/pdf", long, {})
        errors = tmp_path / "slow.jsonl"
        slow = crawl(f"start={url}", f"errors={errors}", settings={"CRAWLYX_READ_TIMEOUT": 0.1})
        assert slow.returncode == 0, slow.log[-3000:]
        assert slow.items == []
        assert _errors(errors)[url][0] == "read_timeout"
        # Without the budget, it is a page (no limit: however slow the machine).
        whole = crawl(f"start={url}", settings={"CRAWLYX_READ_TIMEOUT": 0})
        assert [item["url"] for item in whole.items] == [url]
        assert "Line 20 of page 149, with a few more words" in whole.items[0]["markdown"]
        errors = tmp_path / "large.jsonl"
        large = crawl(f"start={url}", f"errors={errors}", settings={"DOWNLOAD_MAXSIZE": 100_000})
        assert large.items == []
        assert _errors(errors)[url][0] == "too_large"


def test_documents_in_a_crawl_that_renders_every_page(chromium, crawl, tmp_path):
    # The browser shows a PDF in its viewer: the document is fetched again over plain
    # HTTP and read as what it is, with no failure of the browser recorded.
    with DocumentSite() as site:
        base = site.base
        site.bodies["/manual.pdf"] = ("application/pdf", printed(NEWEST, "manual.pdf", base), {})
        errors = tmp_path / "errors.jsonl"
        result = crawl(f"start={base}/", "render=always", f"errors={errors}")
        assert result.returncode == 0, result.log[-3000:]
        items = {item["url"]: item for item in result.items}
        pages = ("/", "/guide.docx", "/handbook", "/manual.pdf", "/parts", "/prices")
        assert sorted(items) == [f"{base}{p}" for p in pages]
        assert items[f"{base}/"]["render"] == "browser"
        manual = items[f"{base}/manual.pdf"]
        assert manual["render"] == "http" and manual["title"] == "Widget Manual"
        found = _errors(errors)
        assert found[f"{base}/secret.pdf"][0] == found[f"{base}/scan.pdf"][0] == "unreadable"
        assert "render" not in {cls for cls, _ in found.values()}


def test_markdown_and_plain_text_read_as_they_are():
    source = """---
title: "Getting started"
description: How to begin
---

# Welcome

Read the [install guide](install.md "Install"), the [API](/api/index.md) and [more][r].
![the logo](logo.png) See <https://example.org/faq> or https://example.org/notes.txt.
Elsewhere: [a friend](https://friend.example/) and [mail](mailto:a@example.org).

[r]: ./reference.md
"""
    page = read_text(source, "https://example.org/docs/start.md", "https://example.org")
    assert (page["title"], page["description"]) == ("Getting started", "How to begin")
    # Its links' and images' targets are absolute, as an HTML page's; code is as written.
    assert page["markdown"].startswith(
        '# Welcome\n\nRead the [install guide](https://example.org/docs/install.md "Install"),'
        " the [API](https://example.org/api/index.md) and [more][r].\n"
        "![the logo](https://example.org/docs/logo.png) See <https://example.org/faq>"
    )
    assert "[mail](mailto:a@example.org)" in page["markdown"]
    assert page["markdown"].endswith("\n[r]: https://example.org/docs/reference.md")
    assert "title:" not in page["markdown"]
    # Links written in markdown or bare, on the crawl's origin; not the image.
    assert list(page["links"]) == [
        "https://example.org/docs/install.md",
        "https://example.org/api/index.md",
        "https://example.org/faq",
        "https://example.org/notes.txt",
        "https://example.org/docs/reference.md",
    ]
    # No front matter: the first heading is the title, setext or ATX.
    text = "Release notes\r\n=============\r\n\r\nVersion 2 fixes the widget's spring.\r\n"
    notes = read_text(text, "https://example.org/notes.txt", "https://example.org")
    assert notes["title"] == "Release notes"
    assert (
        notes["markdown"] == "Release notes\n=============\n\nVersion 2 fixes the widget's spring."
    )
    with pytest.raises(Unreadable, match="no text"):
        read_text("\ufeff---\ntitle: x\n---\n\n  \n", "https://example.org/e.md", None)
    # What code holds is neither a heading nor a link; the text after it is read again.
    text = (
        "```sh\n# install it\ncurl https://example.org/get.sh\n```\n\n"
        "Install\n=======\n\nWrite `[x](/not.md)`, then see [usage](usage.md).\n\n"
        "~~~~\nx = '[y](/nor.md)'\n~~~\nstill code\n~~~~\nThe [end](end.md).\n"
        "```\nan unclosed block: [z](/nor-this.md)\n"
    )
    page = read_text(text, "https://example.org/install.md", "https://example.org")
    assert page["title"] == "Install"
    assert list(page["links"]) == ["https://example.org/usage.md", "https://example.org/end.md"]
    absolute = text.replace("(usage.md)", "(https://example.org/usage.md)")
    assert page["markdown"] == absolute.replace("(end.md)", "(https://example.org/end.md)").strip()


LLMS_TXT = """# Widget

> The widget's documentation, for language models.

## Docs

- [Introduction]({base}/docs/intro.md): what the widget is
- [Changes]({base}/changes.txt)
- [Source]({base}/source.md)
"""
HOME_TEXT = b"""<html><body><a href="/llms.txt">for LLMs</a> <a href="/dump.txt">dump</a>
<a href="/blank.txt">blank</a> <a href="/old.html">old</a></body></html>"""
# An HTML page a server labels text/plain, as it labels every file: a page, not its markup.
OLD_HTML = b"""<!-- built 2009 -->\n<!DOCTYPE html><html><head><title>Old</title></head>
<body><h1>Old page</h1><p>Served as plain text.</p></body></html>"""
INTRO_MD = "# Introduction\n\nThe widget turns parts into goods. See the [parts](../parts).\n"
CHANGES = "Version 2 fixes the spring.\nVersion 1 was the first one released.\n"


def test_markdown_and_text_documents_in_a_crawl(crawl, tmp_path):
    with DocumentSite() as site:
        base = site.base
        site.bodies.update(
            {
                "/": ("text/html", HOME_TEXT, {}),
                "/llms.txt": ("text/plain; charset=utf-8", LLMS_TXT.format(base=base).encode(), {}),
                "/docs/intro.md": ("text/markdown", INTRO_MD.encode(), {}),
                # Labelled Latin-1, written in UTF-8; and a .md file served as bytes.
                "/changes.txt": (
                    "text/plain; charset=iso-8859-1",
                    "Café. ".encode() + CHANGES.encode(),
                    {},
                ),
                "/source.md": (
                    "application/octet-stream",
                    b"# Source\n\nThe code is on the bench.",
                    {},
                ),
                "/dump.txt": ("text/plain", bytes(range(256)) * 8, {}),  # no text
                "/blank.txt": ("text/plain", b" \n", {}),
                "/old.html": ("text/plain", OLD_HTML, {}),
            }
        )
        errors = tmp_path / "errors.jsonl"
        result = crawl(f"start={base}/", f"errors={errors}")
        assert result.returncode == 0, result.log[-3000:]
        items = {item["url"].removeprefix(base): item for item in result.items}
        assert sorted(items) == [
            "/",
            "/changes.txt",
            "/docs/intro.md",
            "/llms.txt",
            "/old.html",
            "/parts",
            "/source.md",
        ]
        old = items["/old.html"]
        assert (old["title"], old["markdown"]) == ("Old", "# Old page\n\nServed as plain text.\n")
        assert items["/llms.txt"]["title"] == "Widget"
        assert items["/llms.txt"]["markdown"] == LLMS_TXT.format(base=base).strip()
        intro = INTRO_MD.replace("(../parts)", f"({base}/parts)")  # made absolute
        assert items["/docs/intro.md"]["markdown"] == intro.strip()
        assert items["/parts"]["referrer"] == f"{base}/docs/intro.md"
        assert items["/changes.txt"]["markdown"].startswith("Café. Version 2 fixes the spring.")
        assert items["/source.md"]["title"] == "Source"
        assert result.stat("crawlyx/documents/markdown") == "2"
        assert result.stat("crawlyx/documents/text") == "2"
        assert _errors(errors) == {
            f"{base}/dump.txt": ("not_a_page", "text/plain: binary data, not a page"),
            f"{base}/blank.txt": ("not_a_page", "text/plain: no content, not a page"),
        }

        # Left out of CRAWLYX_DOCUMENTS, each is named, not read.
        errors_off = tmp_path / "errors-off.jsonl"
        off = crawl(f"start={base}/", f"errors={errors_off}", settings={"CRAWLYX_DOCUMENTS": "pdf"})
        assert off.returncode == 0, off.log[-3000:]
        assert _errors(errors_off)[f"{base}/llms.txt"] == (
            "not_a_page",
            "text/plain: plain text (not in CRAWLYX_DOCUMENTS)",
        )


def test_a_word_document_without_its_styles_keeps_its_headings():
    # Written without styles.xml: the built-in heading styles' ids, and a paragraph's own
    # outline level, still say which paragraphs are headings.
    p = word_paragraph
    body = p("Widget Guide", "Title") + p("Setting up", "Heading1") + p("Parts", "Heading2")
    body += p("The widget needs a bench.")
    body += '<w:p><w:pPr><w:outlineLvl w:val="1"/></w:pPr><w:r><w:t>Care</w:t></w:r></w:p>'
    page = read_docx(word_document(body, styles=False), "http://127.0.0.1:9/g.docx", None)
    assert page["markdown"] == (
        "# Widget Guide\n\n# Setting up\n\n## Parts\n\nThe widget needs a bench.\n\n## Care\n"
    )
