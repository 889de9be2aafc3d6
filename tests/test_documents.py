"""PDFs a site links are read into pages; documents that cannot be read, and responses of
every other type, are recorded under one class each. PDFs are made here: printed by
Chromium from HTML served on 127.0.0.1, or written object by object (tests/pdfs.py)."""

from __future__ import annotations

import pytest

from crawlyx.content.documents import Unreadable
from crawlyx.content.documents.reader import read_pdf
from tests.pdfs import encrypted_pdf, image_pdf, print_to_pdf, text_pdf

MANUAL = """<!doctype html><html lang="en"><head><title>Widget Manual</title><style>
body {{ font: 12pt serif; margin: 0 }}
.running {{ position: fixed; top: 0; left: 0; font: 9pt sans-serif }}
main {{ padding-top: 2em }}
section + section {{ break-before: page }}
td, th {{ border: 1px solid #999; padding: 3px }}
</style></head><body>
<div class="running">ACME CONFIDENTIAL handbook</div>
<main>
<section><h1>Widget Manual</h1>
<p>This manual explains how the widget works and how to keep it running for years. It has
several sections, each with a heading of its own, and a table of the parts with prices.</p>
<h2>Installing the widget</h2>
<p>Unpack the widget carefully. The widget needs a flat surface and a power outlet close
by; an extension cord will do if the outlet is far. Never install it near water.</p>
<ul><li>Keep the box</li><li>Read the <a href="{base}/parts">parts list</a> first</li></ul>
</section>
<section><h2>Parts and prices</h2>
<table><tr><th>Part</th><th>Price</th><th>Weight</th></tr>
<tr><td>Gear wheel</td><td>12.50</td><td>40 g</td></tr>
<tr><td>Spring, large and very strong</td><td>3.20</td><td>5 g</td></tr></table>
<h3>Starting it</h3>
<pre>widget --start
  --verbose</pre>
</section>
<section><h2>Care</h2><p>Dust the widget once a week with a dry cloth.</p></section>
</main></body></html>"""


def handbook() -> bytes:
    """An untagged PDF of three pages: headings only by their size, a running header and
    footer, a word hyphenated over two lines, a paragraph going on over a page break."""
    pages = []
    for n in range(1, 4):
        lines = [(72, 750, 9, "Acme Widget Handbook, revision 7"), (72, 40, 9, f"Page {n} of 3")]
        if n == 1:
            lines += [(72, 690, 20, "Acme Widget Handbook"), (72, 650, 14, "Getting started")]
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


@pytest.fixture(scope="module")
def manual_pdf():
    from crawlyx import render
    from crawlyx.settings import CRAWLYX_CHROMIUM_PATH as path

    if not render.browser_available(path):
        pytest.skip(f"Chromium is not installed at {path}")
    return lambda base: print_to_pdf(path, MANUAL.format(base=base))


def test_a_printed_pdf_reads_as_markdown(manual_pdf):
    page = read_pdf(
        manual_pdf("http://127.0.0.1:9"), "http://127.0.0.1:9/m.pdf", "http://127.0.0.1:9"
    )
    md = page["markdown"]
    assert page["title"] == "Widget Manual" and page["lang"] == "en"
    # The tree's headings, at their levels, in the page's order.
    headings = [line for line in md.splitlines() if line.startswith("#")]
    assert headings == [
        "# Widget Manual", "## Installing the widget", "## Parts and prices",
        "### Starting it", "## Care",
    ]  # fmt: skip
    assert (
        "| Part | Price | Weight |\n| --- | --- | --- |\n| Gear wheel | 12.50 | 40 g |\n"
        "| Spring, large and very strong | 3.20 | 5 g |"
    ) in md
    assert "- Keep the box\n- Read the parts list first" in md
    assert "```\nwidget --start\n  --verbose\n```" in md
    # Lines joined into paragraphs.
    assert "It has several sections, each with a heading" in md
    # The running header (repeated on each page), Chromium's date, title, URL and page
    # numbers: gone.
    assert "CONFIDENTIAL" not in md and "127.0.0.1" not in md and "1/3" not in md
    assert md.count("Widget Manual") == 1
    assert list(page["links"]) == ["http://127.0.0.1:9/parts"]


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
