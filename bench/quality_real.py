"""Main-content extraction quality on real pages nobody here wrote, beside trafilatura.

The development sets are read from where they are (checkouts outside this repository;
their pages are never committed):

- ``--wcxb DIR``: a checkout of the WCXB benchmark (Murrough-Foley/web-content-extraction-
  benchmark). Only its ``dev/`` split is read: ``test/`` is held out. Score: its own word
  F1 (lower-cased ``\\w+`` tokens, multiset), averaged over pages, per page type too.
- ``--trafilatura-eval DIR``: a checkout of trafilatura (adbar/trafilatura): the pages in
  ``tests/eval`` and ``tests/cache``, the strings each must and must not contain in
  ``tests/evaldata.json``. Score: precision, recall and F1 of those strings over the whole
  set, as trafilatura's own evaluation counts them (whitespace-normalized substrings).
- ``--readability DIR``: a checkout of Mozilla's Readability (mozilla/readability): the
  pages in ``test/test-pages``, each with the article Readability's tests expect
  (``expected.html``, its text the truth: Readability's view of the article, a generous
  one: a sidebar it keeps counts as missed). Score: WCXB's word F1. Six of its 130 pages
  are Chinese or Japanese (kind ``cjk``: one ``\\w+`` token is a run of characters
  between punctuation, a clause); the rest are ``latin``.
- ``--docs MANIFEST``: documentation sites built from their sources
  (see ``bench/docs_quality.py``); truth is the generator's main element.

Markdown is compared as text: link targets, markdown syntax and escapes are removed before
scoring (``--raw`` scores the markdown as it is), so every extractor is judged on the
words it keeps. Each run prints crawlyx and (when installed) trafilatura side by side, with
milliseconds per page, then the worst pages of crawlyx with what went wrong.

    python bench/quality_real.py --wcxb ~/data/wcxb --trafilatura-eval ~/data/trafilatura
    python bench/quality_real.py --readability ~/data/readability
    python bench/quality_real.py --wcxb ~/data/wcxb --worst 20 --dump /tmp/out
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import statistics
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from docs_quality import extractors  # noqa: E402
from quality import LINK_TARGET  # noqa: E402

Extractor = Callable[[str, str], str]

# Markdown as text: link and image targets, emphasis, code and table marks, escapes.
_REFERENCE_DEF = re.compile(r"^\[\d+\]: \S+$", re.MULTILINE)
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>~])")
_LINE_MARKS = re.compile(r"^(?:\s*(?:#{1,6}|>|[-*+])\s+)+", re.MULTILINE)
_INLINE_MARKS = re.compile(r"(?<!\\)(?:\*\*|__|(?<!\w)[*_](?=\S)|(?<=\S)[*_](?!\w)|`+|~~|!?\[|\])")
_TABLE_RULE = re.compile(r"^\|?(?:\s*:?-{3,}:?\s*\|)+\s*$", re.MULTILINE)
_WORD = re.compile(r"\w+")
_SCRIPT_TAGS = re.compile(r"</?su[bp]>")  # the converter's superscripts and subscripts


def plain_text(markdown: str) -> str:
    """The text a reader sees in ``markdown``: no link targets, marks or escapes."""
    text = _REFERENCE_DEF.sub("", LINK_TARGET.sub("]", markdown))
    text = _TABLE_RULE.sub("", text)
    text = _LINE_MARKS.sub("", text)
    text = _INLINE_MARKS.sub("", _SCRIPT_TAGS.sub("", text).replace("|", " "))
    return _ESCAPE.sub(r"\1", text)


def word_f1(predicted: str, reference: str) -> tuple[float, float, float]:
    """WCXB's metric: precision, recall, F1 of lower-cased word multisets."""
    pred = Counter(_WORD.findall(_visible(predicted).lower()))
    ref = Counter(_WORD.findall(_visible(reference).lower()))
    if not ref:
        return (1.0, 1.0, 1.0) if not pred else (0.0, 0.0, 0.0)
    if not pred:
        return 0.0, 0.0, 0.0
    overlap = sum((pred & ref).values())
    p, r = overlap / sum(pred.values()), overlap / sum(ref.values())
    return p, r, (2 * p * r / (p + r) if overlap else 0.0)


def _visible(text: str) -> str:
    """``text`` without soft hyphens: invisible, yet ``\\w+`` would split a word at each,
    and a truth copied from the page may have them where an extractor removes them."""
    return text.replace("\xad", "")


def _norm(text: str) -> str:
    return " ".join(_visible(text).split())


@dataclass
class Page:
    name: str
    url: str
    html: str
    kind: str = ""
    reference: str = ""  # the main content as text (WCXB, docs)
    must: list[str] = field(default_factory=list)
    must_not: list[str] = field(default_factory=list)


def _decode(raw: bytes) -> str:
    from w3lib.encoding import html_to_unicode

    return html_to_unicode(None, raw)[1]


def load_wcxb(root: Path) -> list[Page]:
    """WCXB's dev split (``dev/html/*.html.gz``, ``dev/ground-truth/*.json``)."""
    pages = []
    for truth_path in sorted((root / "dev" / "ground-truth").glob("*.json")):
        data = json.loads(truth_path.read_text(encoding="utf-8"))
        truth = data.get("ground_truth")
        if not isinstance(truth, dict):
            continue
        html_path = root / "dev" / "html" / f"{truth_path.stem}.html.gz"
        kind = ((data.get("_internal") or {}).get("page_type") or {}).get("primary", "article")
        pages.append(
            Page(
                name=truth_path.stem,
                url=data.get("url") or f"https://wcxb.test/{truth_path.stem}",
                html=_decode(gzip.decompress(html_path.read_bytes())),
                kind="collection" if kind == "category" else kind,
                reference=truth.get("main_content") or "",
                must=truth.get("with") or [],
                must_not=truth.get("without") or [],
            )
        )
    return pages


def load_trafilatura_eval(root: Path) -> list[Page]:
    """trafilatura's evaluation pages and their must/must-not strings."""
    tests = root / "tests"
    pages = []
    for url, item in sorted(json.loads((tests / "evaldata.json").read_text("utf-8")).items()):
        for folder in ("cache", "eval"):
            path = tests / folder / item["file"]
            if path.is_file():
                break
        else:
            continue
        pages.append(
            Page(
                name=item["file"],
                url=url,
                html=_decode(path.read_bytes()),
                must=item["with"],
                must_not=item["without"],
            )
        )
    return pages


# Chinese and Japanese characters (Readability's pages in those languages).
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")


def load_readability(root: Path) -> list[Page]:
    """Readability's test pages (``test/test-pages/*/source.html``) and their expected
    articles' text."""
    from lxml import html

    pages = []
    for folder in sorted((root / "test" / "test-pages").iterdir()):
        source, expected = folder / "source.html", folder / "expected.html"
        if not (source.is_file() and expected.is_file()):
            continue
        truth = html.fromstring(expected.read_bytes().decode("utf-8", "replace")).text_content()
        pages.append(
            Page(
                name=folder.name,
                url="http://fakehost/test/page.html",  # the base its tests read pages at
                html=source.read_bytes().decode("utf-8", "replace"),  # stored as UTF-8
                kind="cjk" if len(_CJK.findall(truth)) > 50 else "latin",
                reference=truth,
            )
        )
    return pages


@dataclass
class Outcome:
    page: Page
    output: str
    text: str
    ms: float
    scores: dict


def run(pages: list[Page], extract: Extractor, score, raw: bool) -> list[Outcome]:
    outcomes = []
    for page in pages:
        started = time.perf_counter()
        try:
            output = extract(page.html, page.url)
        except Exception as exc:  # a crash is a page lost, and named
            output = ""
            print(f"  {page.name}: {type(exc).__name__}: {exc}", file=sys.stderr)
        ms = (time.perf_counter() - started) * 1000
        text = output if raw else plain_text(output)
        outcomes.append(Outcome(page, output, text, ms, score(text, page)))
    return outcomes


def score_wcxb(text: str, page: Page) -> dict:
    p, r, f1 = word_f1(text, page.reference)
    return {"p": p, "r": r, "f1": f1}


def score_strings(text: str, page: Page) -> dict:
    text = _norm(text)
    tp = sum(_norm(s) in text for s in page.must)
    fp = sum(_norm(s) in text for s in page.must_not)
    return {"tp": tp, "fp": fp, "fn": len(page.must) - tp, "tn": len(page.must_not) - fp}


def _ms(outcomes: list[Outcome]) -> str:
    return f"{statistics.median(o.ms for o in outcomes):.1f}"


def report_wcxb(results: dict[str, list[Outcome]]) -> None:
    kinds = sorted({o.page.kind for o in next(iter(results.values()))})
    print(f"{'extractor':<20} {'type':<14} {'pages':>5} {'F1':>6} {'P':>6} {'R':>6} {'<half':>5}")
    for name, outcomes in results.items():
        by_kind: dict[str, list[Outcome]] = defaultdict(list)
        for o in outcomes:
            by_kind[o.page.kind].append(o)
        for kind in [*kinds, "all"]:
            group = outcomes if kind == "all" else by_kind[kind]
            f1, p, r = (statistics.fmean(o.scores[k] for o in group) for k in ("f1", "p", "r"))
            half = sum(o.scores["r"] < 0.5 for o in group)
            row = f"{len(group):>5} {f1:6.3f} {p:6.3f} {r:6.3f} {half:>5}"
            print(f"{name[:20]:<20} {kind:<14} {row}")
        print(f"{name[:20]:<20} median ms per page: {_ms(outcomes)}")


def report_strings(results: dict[str, list[Outcome]]) -> None:
    print(f"{'extractor':<20} {'pages':>5} {'P':>6} {'R':>6} {'F1':>6} {'ms':>6}")
    for name, outcomes in results.items():
        tp, fp, fn = (sum(o.scores[k] for o in outcomes) for k in ("tp", "fp", "fn"))
        p, r = tp / max(tp + fp, 1), tp / max(tp + fn, 1)
        f1 = 2 * p * r / (p + r) if p + r else 0.0
        print(f"{name[:20]:<20} {len(outcomes):>5} {p:6.3f} {r:6.3f} {f1:6.3f} {_ms(outcomes):>6}")


def diagnose(o: Outcome) -> str:
    """One line on what went wrong with a page."""
    words = len(o.text.split())
    if not words:
        return "empty output"
    s = o.scores
    if "f1" in s:
        if s["r"] < 0.5 and s["p"] < 0.5:
            return f"wrong block ({words} words)"
        if s["r"] < 0.5:
            return f"lost content: kept {words} words of {len(o.page.reference.split())}"
        if s["p"] < 0.5:
            return f"kept boilerplate: {words} words for {len(o.page.reference.split())}"
        return f"partly off (P {s['p']:.2f} R {s['r']:.2f})"
    parts = []
    if s["fn"]:
        missing = [m for m in o.page.must if _norm(m) not in _norm(o.text)]
        parts.append(f"missing {missing[0][:40]!r}")
    if s["fp"]:
        found = [m for m in o.page.must_not if _norm(m) in _norm(o.text)]
        parts.append(f"kept {found[0][:40]!r}")
    return "; ".join(parts)


def worst(outcomes: list[Outcome], n: int) -> None:
    if "f1" in outcomes[0].scores:
        ranked = sorted(outcomes, key=lambda o: o.scores["f1"])
        label = lambda o: f"F1 {o.scores['f1']:.2f}"  # noqa: E731
    else:
        ranked = sorted(outcomes, key=lambda o: -(o.scores["fn"] + o.scores["fp"]))
        label = lambda o: f"miss {o.scores['fn']} leak {o.scores['fp']}"  # noqa: E731
    print(f"worst {n} pages for crawlyx:")
    for o in ranked[:n]:
        kind = f" [{o.page.kind}]" if o.page.kind else ""
        print(f"  {o.page.name}{kind} {label(o)}: {diagnose(o)}; starts {o.text[:60]!r}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wcxb", type=Path, help="a checkout of the WCXB benchmark (dev/)")
    parser.add_argument("--trafilatura-eval", type=Path, help="a checkout of trafilatura")
    parser.add_argument("--readability", type=Path, help="a checkout of mozilla/readability")
    parser.add_argument("--docs", type=Path, help="manifest of built documentation sites")
    parser.add_argument("--no-trafilatura", action="store_true", help="crawlyx alone")
    parser.add_argument("--raw", action="store_true", help="score the markdown as it is")
    parser.add_argument("--worst", type=int, default=10, help="list this many worst pages")
    parser.add_argument("--kind", help="WCXB: only pages of this type")
    parser.add_argument("--only", help="only pages whose name contains this")
    parser.add_argument("--dump", type=Path, help="write crawlyx's markdown to DIR/SET/NAME.md")
    args = parser.parse_args(argv)
    if not (args.wcxb or args.trafilatura_eval or args.readability or args.docs):
        parser.error(
            "name at least one development set: --wcxb, --trafilatura-eval, --readability, --docs"
        )

    found = extractors(not args.no_trafilatura)
    sets = []
    if args.wcxb:
        sets.append(("wcxb-dev", load_wcxb(args.wcxb), score_wcxb, report_wcxb))
    if args.trafilatura_eval:
        pages = load_trafilatura_eval(args.trafilatura_eval)
        sets.append(("trafilatura-eval", pages, score_strings, report_strings))
    if args.readability:
        pages = load_readability(args.readability)
        sets.append(("readability", pages, score_wcxb, report_wcxb))
    for name, pages, score, report in sets:
        pages = [p for p in pages if (not args.kind or p.kind == args.kind)]
        pages = [p for p in pages if (not args.only or args.only in p.name)]
        print(f"\n== {name}: {len(pages)} pages")
        results = {label: run(pages, extract, score, args.raw) for label, extract in found.items()}
        report(results)
        worst(results["crawlyx"], args.worst)
        if args.dump:
            folder = args.dump / name
            folder.mkdir(parents=True, exist_ok=True)
            for o in results["crawlyx"]:
                (folder / f"{Path(o.page.name).stem}.md").write_text(o.output, "utf-8")
    if args.docs:
        import docs_quality

        docs_quality.main(["--manifest", str(args.docs), "--worst", str(args.worst)]
                          + ([] if args.no_trafilatura else ["--trafilatura"]))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
