"""PDFs as TeX and word processors make them, without a structure tree: bullet lists, code
in a typewriter face, running headers that name the chapter and the page, a table of
contents, the title on page one. The PDFs are written here (tests/sites/pdfs.py)."""

from __future__ import annotations

from crawlyx.content.documents.reader import read_pdf
from tests.sites.pdfs import text_pdf

URL, SCOPE = "http://127.0.0.1:9/book.pdf", "http://127.0.0.1:9"


def _read(pages, title=None) -> dict:
    return read_pdf(text_pdf(pages, title=title), URL, SCOPE)


def test_bullets_with_a_hanging_indent_are_a_list_not_a_table():
    lines = [(72, 700, 11, "The encodings built in are these:")]
    for n, (x, text) in enumerate(
        [
            (84, "iso8859-1: ISO Latin-1 (Western Europe);"),
            (84, "koi8-r: KOI8 Russian, an item whose"),
        ]
    ):
        lines += [(x, 680 - 28 * n, 11, "•"), (x + 14, 680 - 28 * n, 11, text)]
    lines.append((98, 638, 11, "lines after the first hang under its text."))
    lines += [(98, 624, 11, "–"), (110, 624, 11, "a nested item")]
    lines.append((72, 600, 11, "The text after the list goes on at the margin."))
    md = _read([lines])["markdown"]
    assert "|" not in md
    assert (
        "- iso8859-1: ISO Latin-1 (Western Europe);\n"
        "- koi8-r: KOI8 Russian, an item whose lines after" in md
    )
    assert "\n  - a nested item\n\nThe text after the list" in md


def test_lines_in_a_typewriter_face_are_fenced_code_with_their_indentation():
    lines = [
        (72, 700, 11, "Here is the scanner:"),
        (72, 680, 10, "int main()", "F4"),
        (72, 668, 10, "{", "F4"),
        (96, 656, 10, "yylex();", "F4"),
        (72, 644, 10, "}", "F4"),
    ]
    md = _read([lines])["markdown"]
    fenced = md.split("```\n")[1].splitlines()
    assert fenced[:2] == ["int main()", "{"] and fenced[3] == "}"
    assert fenced[2].startswith("    yylex();".rjust(12)[:4]) and fenced[2].strip() == "yylex();"


def _book() -> list[list[tuple]]:
    """Six pages: a title page, a table of contents with dot leaders, and chapters whose
    header names the chapter and the page (on the chapter's pages only)."""
    pages = [
        [
            (150, 600, 24, "The Widget Reference"),
            (150, 560, 12, "Acme Press"),
            (72, 500, 11, "This manual documents the widget."),
        ],
        [
            (72, 700, 16, "Table of Contents"),
            (72, 670, 11, "1 Starting . . . . . . . . . . . . . . . . . 3"),
            (84, 655, 11, "1.1 Parts . . . . . . . . . . . . . . . . . 3"),
            (72, 640, 11, "2 Stopping . . . . . . . . . . . . . . . . 5"),
        ],
    ]
    for page in range(2, 6):
        chapter = "Chapter 1: Starting" if page < 4 else "Chapter 2: Stopping"
        lines = [(72, 750, 10, f"{chapter} {page + 1}" if page % 2 else f"{page + 1} {chapter}")]
        if page in (2, 4):
            lines.append((72, 690, 16, chapter.split(": ")[0] + " " + chapter.split(": ")[1]))
        lines += [
            (72, 660, 11, f"Text of page {page + 1} explains the widget at some length,"),
            (72, 646, 11, "as a manual does, and ends its paragraph here."),
        ]
        pages.append(lines)
    return pages


def test_running_headers_naming_the_chapter_and_the_page_go():
    md = _read(_book())["markdown"]
    assert "Chapter 1: Starting" not in md and "Chapter 2: Stopping" not in md
    assert md.count("Text of page") == 4


def test_the_table_of_contents_is_a_list_not_headings():
    md = _read(_book())["markdown"]
    assert "- 1 Starting … 3\n  - 1.1 Parts … 3\n- 2 Stopping … 5" in md
    assert "# 1 Starting" not in md


def test_the_largest_text_on_page_one_is_the_title():
    page = _read(_book(), title="")
    assert page["title"] == "The Widget Reference"
    assert page["markdown"].startswith("# The Widget Reference\n")


def test_a_title_the_pages_after_repeat_as_their_header_is_still_the_title():
    # A specification: its title atop page one, the same words atop every page after.
    pages = [
        [
            (72, 740, 20, "Shared Widget Database"),
            (72, 700, 14, "Widget Group (http://widgets.example)", "F2"),
            (72, 660, 11, "This is version 0.21 of the specification of the database."),
        ]
    ]
    for n in range(2, 5):
        pages.append(
            [
                (72, 750, 10, "Shared Widget Database"),
                (72, 660, 11, f"Section {n} says what the database holds, at length."),
                (300, 40, 10, str(n)),
            ]
        )
    page = _read(pages)
    assert page["title"] == "Shared Widget Database"
    assert page["markdown"].count("Shared Widget Database") == 1


def test_numbered_items_with_a_hanging_indent_are_a_numbered_list():
    lines = [(72, 700, 11, "The conditions are these:")]
    for n, text in enumerate(["Keep the notice, this list of con-", "Do not use the name."]):
        lines += [(84, 680 - 28 * n, 11, f"{n + 1}."), (104, 680 - 28 * n, 11, text)]
    lines.append((104, 666, 11, "ditions and the disclaimer."))
    md = _read([sorted(lines, key=lambda line: -line[1])])["markdown"]
    assert "|" not in md
    assert "1. Keep the notice, this list of conditions and the disclaimer.\n2. Do not" in md


def test_a_word_hyphenated_in_a_table_cell_is_joined_again():
    # Joined where the document spells it whole elsewhere; a compound keeps its hyphen.
    rows = [("Program", "What it does"), ("lalign", "Finds alignments with the sim2 imple-")]
    lines = [
        (x, 700 - 15 * r, 11, cell)
        for r, row in enumerate(rows)
        for x, cell in zip((72, 200), row, strict=True)
    ]
    lines += [
        (200, 670, 11, "mentation of the algorithm."),
        (72, 655, 11, "ssearch"),
        (200, 655, 11, "Searches low-"),
        (200, 640, 11, "level code."),
        (72, 600, 11, "The implementation is old."),
    ]
    md = _read([lines])["markdown"]
    assert "| lalign | Finds alignments with the sim2 implementation of the algorithm. |" in md
    assert "| ssearch | Searches low-level code. |" in md
