"""Main-content extraction quality on the hand-written corpus in ``tests/corpus``.

Each corpus page is ``NAME.html`` (a realistic page with site chrome), ``NAME.md`` (the ideal
markdown of its main content) and ``NAME.json`` (``url``, ``must`` and ``must_not``
substrings). The score is the F1 of word 4-shingles between the converter's output and the
ideal, counted as multisets, so leftover boilerplate lowers precision and lost content lowers
recall. Markdown syntax and link targets are ignored, so the score measures text, not format.

    python bench/quality.py                  # crawlyx.content.extract.page_markdown
    python bench/quality.py --whole-page     # baseline: html_to_markdown of the whole page
    python bench/quality.py --trafilatura    # comparison (pip install trafilatura first)
    python bench/quality.py --dump /tmp/out  # also write each output to /tmp/out/NAME.md
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = ROOT / "tests" / "corpus"

# "](target)" or "](target "title")" of a markdown link or image: the target is dropped,
# the link text stays.  Targets may contain balanced parentheses (Wikipedia URLs).
LINK_TARGET = re.compile(r"\]\((?:[^()\s]|\([^()\s]*\))*(?:\s+\"[^\"]*\")?\)")
_MARKDOWN_SYNTAX = str.maketrans({c: " " for c in "#*`|[]()>-_"})
_re_word = re.compile(r"\w+")
_re_ordered_marker = re.compile(r"^\s*\d{1,9}[.)](?=\s)", re.MULTILINE)  # "1. " of a list item


def tokens(text: str) -> list[str]:
    """Lower-cased words of ``text`` with markdown syntax and link targets removed."""
    text = _re_ordered_marker.sub(" ", LINK_TARGET.sub("] ", text))
    return _re_word.findall(text.translate(_MARKDOWN_SYNTAX).lower())


def shingles(text: str, n: int = 4) -> Counter[tuple[str, ...]]:
    """Multiset of the word n-grams of ``text`` (see :func:`tokens`).

    A text with fewer than ``n`` words (but at least one) is a single shorter shingle, so
    that short texts still compare.
    """
    if n < 1:
        raise ValueError("n must be at least 1")
    words = tokens(text)
    if not words:
        return Counter()
    if len(words) < n:
        return Counter([tuple(words)])
    return Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))


def shingle_f1(predicted: str, reference: str, n: int = 4) -> tuple[float, float, float]:
    """(precision, recall, F1) of ``predicted`` against ``reference`` over word n-gram
    multisets: a shingle repeated k times counts k times on each side.

    Two empty texts agree perfectly (1.0, 1.0, 1.0); an empty text against a non-empty one
    scores 0.0 throughout.
    """
    pred = shingles(predicted, n)
    ref = shingles(reference, n)
    if not pred and not ref:
        return 1.0, 1.0, 1.0
    if not pred or not ref:
        return 0.0, 0.0, 0.0
    overlap = sum((pred & ref).values())
    precision = overlap / sum(pred.values())
    recall = overlap / sum(ref.values())
    if not overlap:
        return precision, recall, 0.0
    return precision, recall, 2 * precision * recall / (precision + recall)


@dataclass(frozen=True)
class Page:
    name: str
    html: str
    ideal: str
    url: str
    must: tuple[str, ...]
    must_not: tuple[str, ...]


def load_corpus(corpus: Path = DEFAULT_CORPUS) -> list[Page]:
    """Every ``NAME.html`` in ``corpus`` with its ``NAME.md`` and ``NAME.json``, by name."""
    pages = []
    for html_path in sorted(Path(corpus).glob("*.html")):
        meta = json.loads(html_path.with_suffix(".json").read_text(encoding="utf-8"))
        pages.append(
            Page(
                name=html_path.stem,
                html=html_path.read_text(encoding="utf-8"),
                ideal=html_path.with_suffix(".md").read_text(encoding="utf-8"),
                url=meta["url"],
                must=tuple(meta.get("must", ())),
                must_not=tuple(meta.get("must_not", ())),
            )
        )
    return pages


Converter = Callable[[str, str], str]


def get_converter(kind: str = "crawlyx") -> tuple[str, Converter]:
    """(label, function(html, url) -> markdown) for ``kind``: ``crawlyx`` (main content),
    ``whole-page`` (the converter alone), or ``trafilatura`` (for comparison; installed
    separately, it is no dependency of crawlyx)."""
    if kind == "whole-page":
        from crawlyx.content.markdown import html_to_markdown

        return "crawlyx.content.markdown.html_to_markdown (whole page)", html_to_markdown
    if kind == "trafilatura":
        import trafilatura

        def convert(html: str, url: str) -> str:
            return trafilatura.extract(html, url=url, output_format="markdown",
                                       include_tables=True, include_links=True) or ""  # fmt: skip

        return f"trafilatura {trafilatura.__version__}", convert
    from crawlyx.content.extract import page_markdown

    return "crawlyx.content.extract.page_markdown", page_markdown


@dataclass(frozen=True)
class Result:
    page: Page
    output: str
    precision: float
    recall: float
    f1: float
    ms: float
    must_missing: tuple[str, ...]
    must_not_found: tuple[str, ...]


def evaluate(page: Page, convert: Converter, repeat: int = 1) -> Result:
    """Convert ``page`` (best time of ``repeat`` runs) and score the output."""
    best = float("inf")
    output = ""
    for _ in range(max(1, repeat)):
        start = time.perf_counter()
        output = convert(page.html, page.url)
        best = min(best, time.perf_counter() - start)
    precision, recall, f1 = shingle_f1(output, page.ideal)
    return Result(
        page=page,
        output=output,
        precision=precision,
        recall=recall,
        f1=f1,
        ms=best * 1000,
        must_missing=tuple(s for s in page.must if s not in output),
        must_not_found=tuple(s for s in page.must_not if s in output),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="corpus directory")
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--whole-page",
        dest="kind",
        action="store_const",
        const="whole-page",
        help="convert the whole page with html_to_markdown (the baseline)",
    )
    which.add_argument(
        "--trafilatura",
        dest="kind",
        action="store_const",
        const="trafilatura",
        help="trafilatura's markdown output, for comparison",
    )
    parser.add_argument("--repeat", type=int, default=3, help="timing runs per page (best kept)")
    parser.add_argument("--dump", type=Path, help="write each page's output to DIR/NAME.md")
    parser.add_argument("-v", "--verbose", action="store_true", help="list must/must_not misses")
    args = parser.parse_args(argv)

    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    label, convert = get_converter(args.kind or "crawlyx")
    pages = load_corpus(args.corpus)
    if not pages:
        print(f"no pages in {args.corpus}", file=sys.stderr)
        return 1
    convert(pages[0].html, pages[0].url)  # warm-up: lazy converter construction, imports
    if args.dump:
        args.dump.mkdir(parents=True, exist_ok=True)

    print(f"converter: {label}")
    width = max(len("page"), *(len(p.name) for p in pages))
    header = f"{'prec':>6} {'recall':>6} {'F1':>6} {'ms':>7}  {'must':>5} {'must_not':>8}"
    print(f"{'page':<{width}}  {header}")
    results = []
    for page in pages:
        r = evaluate(page, convert, args.repeat)
        results.append(r)
        must_ok = f"{len(page.must) - len(r.must_missing)}/{len(page.must)}"
        print(
            f"{page.name:<{width}}  {r.precision:6.3f} {r.recall:6.3f} {r.f1:6.3f} {r.ms:7.2f}"
            f"  {must_ok:>5} {len(r.must_not_found):>8}"
        )
        if args.verbose:
            for s in r.must_missing:
                print(f"    missing:   {s!r}")
            for s in r.must_not_found:
                print(f"    unwanted:  {s!r}")
        if args.dump:
            (args.dump / f"{page.name}.md").write_text(r.output, encoding="utf-8")

    def mean(attr: str) -> float:
        return sum(getattr(r, attr) for r in results) / len(results)

    print(
        f"{'mean':<{width}}  {mean('precision'):6.3f} {mean('recall'):6.3f} {mean('f1'):6.3f}"
        f" {mean('ms'):7.2f}"
    )
    print(f"mean F1: {mean('f1'):.3f} over {len(results)} pages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
