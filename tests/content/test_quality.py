"""Main-content extraction quality on the hand-written corpus in tests/corpus.

For every page, ``crawlyx.content.extract.page_markdown`` must keep the ``must``
substrings, drop the ``must_not`` ones (site chrome, comments, related links, hidden text)
and reach a word 4-shingle F1 of at least 0.90 against the ideal markdown.
``bench/quality.py`` prints the same scores as a table.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"
MIN_F1 = 0.90


def _load_quality():
    name = "crawlyx_bench_quality"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / "quality.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


quality = _load_quality()
shingle_f1 = quality.shingle_f1
PAGES = quality.load_corpus(CORPUS)
by_page = pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])


def visible_text(html: str) -> str:
    """All text of the document outside script/style, whitespace collapsed."""
    soup = BeautifulSoup(html, "lxml")
    for el in soup(["script", "style", "template", "noscript"]):
        el.decompose()
    return " ".join(soup.get_text("").split())


def outside_code(markdown: str) -> str:
    """The markdown with each fenced code block replaced by a NUL character."""
    return "\0".join(markdown.split("```")[::2])


# ---------------------------------------------------------------------------- the corpus
def test_corpus_has_all_pages():
    assert len(PAGES) >= 12
    for html_path in CORPUS.glob("*.html"):
        assert html_path.with_suffix(".md").is_file(), html_path.name
        assert html_path.with_suffix(".json").is_file(), html_path.name
    for path in CORPUS.glob("*.*"):
        assert path.with_suffix(".html").is_file(), f"{path.name} has no page"


@by_page
def test_corpus_page_is_consistent(page):
    """The ideal keeps every must and no must_not; every must_not is really on the page."""
    assert 5_000 <= len(page.html.encode()) <= 40_000
    assert page.url.startswith("https://")
    assert 4 <= len(page.must) <= 8 and 4 <= len(page.must_not) <= 8
    prose = outside_code(page.ideal)
    assert page.ideal.startswith("# ") and "\n# " not in prose, "one top-level heading, first"
    assert page.ideal.endswith("\n") and "\n\n\n" not in prose
    assert [s for s in page.must if s not in page.ideal] == []
    assert [s for s in page.must_not if s in page.ideal] == []
    text = visible_text(page.html)
    assert [s for s in page.must_not if s not in text] == []


# ---------------------------------------------------------------------------- extraction
@by_page
def test_page_markdown_quality(page):
    from crawlyx.content.extract import page_markdown

    out = page_markdown(page.html, page.url)
    problems = [f"missing: {s!r}" for s in page.must if s not in out]
    problems += [f"boilerplate kept: {s!r}" for s in page.must_not if s in out]
    precision, recall, f1 = shingle_f1(out, page.ideal)
    if f1 < MIN_F1:
        problems.append(
            f"shingle F1 {f1:.3f} < {MIN_F1} (precision {precision:.3f}, recall {recall:.3f})"
        )
    assert not problems, f"{page.name}:\n  " + "\n  ".join(problems)


# ---------------------------------------------------------------------------- the scorer
def test_shingle_f1_identical_texts():
    text = "The quick brown fox jumps over the lazy dog near the river bank."
    assert shingle_f1(text, text) == (1.0, 1.0, 1.0)


def test_shingle_f1_disjoint_texts():
    assert shingle_f1("alpha beta gamma delta epsilon", "one two three four five") == (
        0.0,
        0.0,
        0.0,
    )


def test_shingle_f1_half_overlap():
    # reference 4-shingles: w1-w4, w2-w5, w3-w6, w4-w7; the prediction shares the first two
    # of its four (w1-w4, w2-w5; then w3 w4 w5 x1, w4 w5 x1 x2)
    reference = "w1 w2 w3 w4 w5 w6 w7"
    predicted = "w1 w2 w3 w4 w5 x1 x2"
    assert shingle_f1(predicted, reference) == (0.5, 0.5, 0.5)


def test_shingle_f1_asymmetric_overlap():
    # predicted: 2 shingles, reference: 3, one shared -> P = 1/2, R = 1/3, F1 = 2/5
    precision, recall, f1 = shingle_f1("a b c d e", "a b c d x y")
    assert precision == pytest.approx(1 / 2)
    assert recall == pytest.approx(1 / 3)
    assert f1 == pytest.approx(0.4)


def test_shingle_f1_counts_repeats():
    # multiset: the repeated sentence only matches once
    precision, recall, f1 = shingle_f1("a b c d a b c d", "a b c d")
    assert (precision, recall) == (pytest.approx(1 / 5), 1.0)
    assert f1 == pytest.approx(2 * 0.2 / 1.2)


def test_shingle_f1_ignores_markdown_and_link_targets():
    predicted = "## Hello, *World*!\n\n- See [the docs](https://example.com/a_(b)/c?x=1) `now`."
    reference = "hello world see the docs now"
    assert shingle_f1(predicted, reference) == (1.0, 1.0, 1.0)
    table = "| Weight | 1.2 kg |\n| --- | --- |\n| Colour | green |"
    assert shingle_f1(table, "Weight 1.2 kg Colour green") == (1.0, 1.0, 1.0)


def test_shingle_f1_empty_and_short_inputs():
    assert shingle_f1("", "") == (1.0, 1.0, 1.0)
    assert shingle_f1("  ## ", "---") == (1.0, 1.0, 1.0)  # nothing but syntax on both sides
    assert shingle_f1("", "some reference text here") == (0.0, 0.0, 0.0)
    assert shingle_f1("some predicted text here", "") == (0.0, 0.0, 0.0)
    assert shingle_f1("two words", "Two words.") == (1.0, 1.0, 1.0)  # shorter than n
    assert quality.shingles("one two three four five", n=4) == {
        ("one", "two", "three", "four"): 1,
        ("two", "three", "four", "five"): 1,
    }
