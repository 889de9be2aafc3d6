"""Main-content extraction quality on documentation sites built from their sources.

The sites are built offline (Sphinx, MkDocs...) outside this repository and described by a
manifest, a JSON list with one object per site:

- ``name``, ``generator``, ``theme``: labels;
- ``dir``: the built HTML root; every ``*.html`` under it is a page, except those matching
  a glob of ``exclude`` (relative paths, e.g. ``"search.html"``, ``"_static/*"``);
- ``url``: a base URL; a page's URL is this plus its relative path;
- ``main``: CSS selector of the generator's main-content element (Sphinx alabaster
  ``div.body``, furo ``article[role=main]``, MkDocs Material ``article.md-content__inner``);
  pages without it are skipped;
- ``drop``: CSS selectors, inside ``main``, of what is not content (permalink anchors,
  edit buttons, line numbers);
- ``chrome``: CSS selectors of the site's navigation, sidebars, header and footer.

The truth of a page is its main element, so every page is scored on:

- shingle precision, recall and F1 (``bench/quality.py``) against the text of ``main``;
- code: the fraction of its ``<pre>`` blocks whose text (whitespace-normalized, session
  prompts such as ``>>>`` and ``$`` ignored) is inside a fenced code block of the
  markdown, and of those with a language, the fraction whose fence says that language
  (see ``LANGUAGE_ALIASES``);
- tables: the fraction of its tables found as a GFM table holding at least 90 % of their
  non-empty cells;
- list items: the fraction of its ``<li>`` (their own text, up to a nested block) found on
  a markdown list item;
- leak: whether the markdown holds a snippet of the page's chrome, four words or more,
  that is neither in ``main`` nor in the page's ``<title>``.

Text is compared as words (``quality.tokens``: markdown syntax, escapes and link targets
removed; fence info strings and images too, see ``scored_text``), so formatting
differences are no misses.

    python bench/docs_quality.py --manifest ~/data/docs/manifest.json
    python bench/docs_quality.py --manifest M --trafilatura --worst 10 --dump /tmp/out
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import re
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from lxml import etree
from parsel import Selector

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [p for p in (str(ROOT), str(ROOT / "bench")) if p not in sys.path]

from quality import shingle_f1, tokens  # noqa: E402

Extractor = Callable[[str, str], str]

TABLE_CELLS_FOUND = 0.9  # a truth table is found if a GFM table holds this share of its cells
CHROME_MIN_WORDS = 4
CHROME_MAX_WORDS = 12  # longer chrome texts are cut to their first words
CHROME_PER_PAGE = 8

# Fence info strings and generator classes name languages in several ways. Each is
# lower-cased and mapped through this table before comparing. ``None``: the block says it
# has no language (Sphinx's ``default`` is the project's highlight_language, usually
# guessed by Pygments, so it names none either); such blocks count for code_kept, not for
# code_lang. Interactive sessions count as their language (``pycon`` is python,
# ``console`` is shell): a reader, or a model, treats them alike.
LANGUAGE_ALIASES: dict[str, str | None] = {
    **dict.fromkeys(
        ("default", "text", "none", "plain", "plaintext", "txt", "nohighlight", "output", "raw"),
        None,
    ),  # fmt: skip
    **dict.fromkeys(
        ("py", "py3", "python3", "pycon", "python-console", "ipython", "ipython3", "py3tb", "pytb"),
        "python",
    ),  # fmt: skip
    **dict.fromkeys(
        (
            "sh",
            "bash",
            "zsh",
            "shell",
            "console",
            "shell-session",
            "sh-session",
            "shellsession",
            "bash-session",
            "terminal",
        ),
        "shell",
    ),  # fmt: skip
    **dict.fromkeys(("js", "node", "javascript"), "javascript"),
    **dict.fromkeys(("ts", "typescript"), "typescript"),
    **dict.fromkeys(("yml", "yaml"), "yaml"),
    **dict.fromkeys(("md", "markdown"), "markdown"),
    **dict.fromkeys(
        ("html+jinja", "jinja", "jinja2", "html+django", "django", "htmldjango"), "jinja"
    ),  # fmt: skip
    **dict.fromkeys(("cfg", "dosini", "ini"), "ini"),
    **dict.fromkeys(("json", "jsonc", "json5"), "json"),
    **dict.fromkeys(("htm", "xhtml", "html"), "html"),
    **dict.fromkeys(("ps1", "pwsh", "powershell"), "powershell"),
    **dict.fromkeys(("bat", "batch", "doscon", "cmd"), "batch"),
}

_BLOCK = frozenset(
    "address article aside blockquote body caption center dd details dialog div dl dt "
    "fieldset figcaption figure footer form h1 h2 h3 h4 h5 h6 header hr li main nav ol p "
    "pre section summary table tbody td tfoot th thead tr ul".split()
)
# Inline elements drawn apart (tab labels, buttons): words on either side stay apart.
_SPACED = frozenset(("label", "button", "input", "select", "option", "img"))
_SKIP = frozenset(("script", "style", "template", "noscript", "svg", "head", "title"))
# Containers beyond which a class no longer describes a <pre> inside them.
_CONTENT_CONTAINER = frozenset(
    ("section", "article", "main", "body", "li", "dd", "td", "blockquote", "details")
)
_re_lang_class = re.compile(r"^(?:highlight|language|lang)-([\w+#.-]+)$")
_re_fence = re.compile(r"^(\s*)(`{3,}|~{3,})\s*\{?\s*\.?([^\s`{}]*)")
_re_fence_info = re.compile(r"^(\s*)(`{3,}|~{3,}).*$", re.M)
_re_image = re.compile(r"!\[[^\]]*\]\((?:[^()\s]|\([^()\s]*\))*(?:\s+\"[^\"]*\")?\)")
# A list item's marker, inside blockquotes or definitions (``:   - item``) perhaps.
_re_list_item = re.compile(r"^\s*(?:[>:]\s*)*(?:[-*+]|\d{1,9}[.)])\s+(.*)$")
_re_table_rule = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")
_re_cell_split = re.compile(r"(?<!\\)\|")
_re_heading = re.compile(r"^\s*#{1,6}\s")
# Prompts of interactive sessions (Python, shells, IPython): an extractor may drop them
# (they are not what a reader copies), so code is compared without them.
_re_prompt = re.compile(r"^[ \t]*(?:>>>|\.\.\.|\$|%|In \[\d+\]:|\.\.\.:)(?=[ \t]|$)[ \t]?", re.M)


@dataclass(frozen=True)
class DocPage:
    path: str  # relative to the site's root, with forward slashes
    url: str
    html: str


@dataclass
class Site:
    name: str
    generator: str
    theme: str
    root: Path
    url: str
    main: str
    drop: tuple[str, ...] = ()
    chrome: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    pages: list[DocPage] = field(default_factory=list)


@dataclass
class Truth:
    text: str
    code: list[tuple[str, str | None]]
    tables: list[list[list[str]]]
    list_items: list[str]
    chrome_strings: list[str]


def load_sites(manifest_path: Path | str) -> list[Site]:
    """The sites of the manifest, each with its pages (sorted by path)."""
    manifest_path = Path(manifest_path)
    sites = []
    for entry in json.loads(manifest_path.read_text(encoding="utf-8")):
        root = Path(entry["dir"])
        if not root.is_absolute():
            root = manifest_path.parent / root
        site = Site(
            name=entry["name"],
            generator=entry.get("generator", ""),
            theme=entry.get("theme", ""),
            root=root,
            url=entry["url"].rstrip("/") + "/",
            main=entry["main"],
            drop=tuple(entry.get("drop", ())),
            chrome=tuple(entry.get("chrome", ())),
            exclude=tuple(entry.get("exclude", ())),
        )
        for path in sorted(root.rglob("*.html")):
            rel = path.relative_to(root).as_posix()
            if any(fnmatch.fnmatch(rel, pattern) for pattern in site.exclude):
                continue
            html = path.read_text(encoding="utf-8", errors="replace")
            site.pages.append(DocPage(path=rel, url=site.url + rel, html=html))
        sites.append(site)
    return sites


# -- the truth: the main element's text, code, tables, list items; the chrome's text -------


def _norm(text: str) -> str:
    return " ".join(text.split())


def _words(text: str) -> str:
    """``text`` as comparable words: quality.tokens joined by spaces, padded by spaces.
    Backticks go first, so that ```name`s`` reads as ``names``."""
    return " " + " ".join(tokens(text.replace("`", ""))) + " "


def _classes(el: etree._Element) -> list[str]:
    return (el.get("class") or "").split()


def _remove(el: etree._Element) -> None:
    """Remove ``el`` from its tree, keeping its tail text."""
    parent = el.getparent()
    if parent is None:
        return
    if el.tail:
        prev = el.getprevious()
        if prev is not None:
            prev.tail = (prev.tail or "") + el.tail
        else:
            parent.text = (parent.text or "") + el.tail
    parent.remove(el)


def _blocks(el: etree._Element) -> list[str]:
    """The text of ``el`` as blocks: each block element starts a new one; whitespace is
    collapsed except in <pre>, <br> breaks a line."""
    out: list[str] = []
    current: list[str] = []

    def flush() -> None:
        text = "".join(current)
        current.clear()
        lines = [_norm(line) for line in text.split("\n")]
        text = "\n".join(line for line in lines if line)
        if text:
            out.append(text)

    def walk(node: etree._Element) -> None:
        tag = node.tag if isinstance(node.tag, str) else ""
        if tag in _SKIP or not tag:
            return
        if tag == "pre":
            flush()
            code = "".join(node.itertext())
            if code.strip():
                out.append(code.strip("\n"))
            return
        block = tag in _BLOCK
        if block:
            flush()
        elif tag in _SPACED:
            current.append(" ")
        if tag == "br":
            current.append("\n")
        elif tag in _SPACED:
            current.append(" ")
        if node.text:
            current.append(node.text.replace("\n", " "))
        for child in node:
            walk(child)
            if child.tail:
                current.append(child.tail.replace("\n", " "))
        if block:
            flush()
        elif tag in _SPACED:
            current.append(" ")

    walk(el)
    flush()
    return out


def _pre_language(pre: etree._Element, stop: etree._Element) -> str | None:
    """The language the generator's classes give ``pre`` (None when none or plain text)."""
    candidates: list[etree._Element] = [pre, *(c for c in pre if c.tag == "code")]
    node = pre.getparent()
    while node is not None and node is not stop and node.tag not in _CONTENT_CONTAINER:
        candidates.append(node)
        node = node.getparent()
    for el in candidates:
        for cls in _classes(el):
            match = _re_lang_class.match(cls)
            if match:
                return normalize_language(match.group(1))
    return None


def normalize_language(name: str | None) -> str | None:
    """A language name or fence info string as compared: lower-cased, aliases resolved."""
    if not name:
        return None
    name = name.strip().lower().lstrip(".{").rstrip("}")
    if not name:
        return None
    return LANGUAGE_ALIASES.get(name, name)


def _table_rows(table: etree._Element) -> list[list[str]]:
    rows = []
    for tr in table.iter("tr"):
        owner = next(tr.iterancestors("table"), None)
        if owner is not table:
            continue
        cells = [_norm(" ".join(_blocks(cell))) for cell in tr if cell.tag in ("td", "th")]
        if cells:
            rows.append(cells)
    return rows


def _li_text(li: etree._Element) -> str:
    """The item's own text: its inline text up to the first nested block; when it starts
    with a block (<p>, <div>), that block's."""
    parts: list[str] = []

    def walk(node: etree._Element) -> bool:  # True: stop
        if node.text:
            parts.append(node.text)
        for child in node:
            tag = child.tag if isinstance(child.tag, str) else ""
            if tag in _SKIP or not tag:
                pass
            elif tag in _BLOCK:
                if _norm("".join(parts)) or tag in ("ul", "ol", "pre", "table", "dl"):
                    return True
                if walk(child):
                    return True
            elif walk(child):
                return True
            if child.tail:
                parts.append(child.tail)
        return False

    walk(li)
    return _norm("".join(parts))


def _chrome_strings(page: Selector, site: Site, main: etree._Element, main_words: str) -> list[str]:
    title = _words(" ".join(page.css("title ::text").getall()))
    per_selector: list[list[str]] = []
    for css in site.chrome:
        found: list[str] = []
        for sel in page.css(css):
            el = sel.root
            if el is main or any(a is el for a in main.iterancestors()):
                continue  # a chrome selector that holds the main element says nothing
            if any(a is main for a in el.iterancestors()):
                continue
            for block in _blocks(el):
                for line in block.split("\n"):
                    words = tokens(line)[:CHROME_MAX_WORDS]
                    if len(words) < CHROME_MIN_WORDS:
                        continue
                    snippet = " ".join(words)
                    padded = f" {snippet} "
                    if padded in main_words or padded in title or snippet in found:
                        continue
                    found.append(snippet)
        found.sort(key=lambda s: (-len(s.split()), s))
        per_selector.append(found)
    chosen: list[str] = []
    for rank in range(max((len(f) for f in per_selector), default=0)):
        for found in per_selector:
            if rank < len(found) and found[rank] not in chosen:
                chosen.append(found[rank])
    return chosen[:CHROME_PER_PAGE]


def truth(page: DocPage, site: Site) -> Truth | None:
    """The truth of ``page``: its main element, the ``drop`` selectors removed. None when
    the page has no main element or no words in it."""
    doc = Selector(text=page.html)
    mains = doc.css(site.main)
    if not mains:
        return None
    main_sel = mains[0]
    main = main_sel.root
    for css in site.drop:
        for sel in main_sel.css(css):
            if sel.root is not main:
                _remove(sel.root)
    text = "\n\n".join(_blocks(main))
    if not tokens(text):
        return None  # an empty main element (a home page drawn by its template)
    code = []
    for pre in main.iter("pre"):
        if any(a.tag == "pre" for a in pre.iterancestors()):
            continue
        source = "".join(pre.itertext())
        if source.strip():
            code.append((source.strip("\n"), _pre_language(pre, main)))
    tables = []
    for table in main.iter("table"):
        if "highlighttable" in _classes(table) or table.find(".//pre") is not None:
            continue  # line-numbered code, or a layout around code
        if any(a.tag == "table" for a in table.iterancestors()):
            continue
        rows = _table_rows(table)
        if any(cell for row in rows for cell in row):
            tables.append(rows)
    items = [t for t in (_li_text(li) for li in main.iter("li")) if t]
    return Truth(
        text=text,
        code=code,
        tables=tables,
        list_items=items,
        chrome_strings=_chrome_strings(doc, site, main, _words(text)),
    )


# -- the markdown: fenced code, GFM tables, list items --------------------------------------


def fenced_blocks(markdown: str) -> list[tuple[str, str | None]]:
    """(text, info string's first word or None) of each fenced code block."""
    blocks: list[tuple[str, str | None]] = []
    lines = markdown.split("\n")
    i = 0
    while i < len(lines):
        match = _re_fence.match(lines[i])
        if not match:
            i += 1
            continue
        indent, fence, info = len(match.group(1)), match.group(2), match.group(3)
        body: list[str] = []
        i += 1
        while i < len(lines):
            stripped = lines[i].strip()
            if stripped.startswith(fence) and not stripped.strip(fence[0]):
                break
            line = lines[i]
            body.append(line[min(indent, len(line) - len(line.lstrip(" "))) :])
            i += 1
        i += 1
        blocks.append(("\n".join(body), info or None))
    return blocks


def _outside_fences(markdown: str) -> list[str]:
    """The lines of ``markdown`` outside fenced code blocks."""
    out = []
    fence = None
    for line in markdown.split("\n"):
        if fence:
            stripped = line.strip()
            if stripped.startswith(fence) and not stripped.strip(fence[0]):
                fence = None
            continue
        match = _re_fence.match(line)
        if match:
            fence = match.group(2)
            continue
        out.append(line)
    return out


def gfm_tables(markdown: str) -> list[list[list[str]]]:
    """The GFM tables of ``markdown`` as rows of cell texts (the rule row left out)."""
    lines = _outside_fences(markdown)
    tables = []
    i = 0
    while i + 1 < len(lines):
        head, rule = lines[i].strip(), lines[i + 1].strip()
        if "|" in head and "|" in rule and "-" in rule and _re_table_rule.match(rule):
            rows = [head]
            i += 2
            while i < len(lines) and "|" in lines[i] and lines[i].strip():
                rows.append(lines[i].strip())
                i += 1
            table = []
            for row in rows:
                cells = _re_cell_split.split(row)
                if row.startswith("|"):
                    cells = cells[1:]
                if row.endswith("|") and not row.endswith("\\|"):
                    cells = cells[:-1]
                table.append([c.strip() for c in cells])
            tables.append(table)
        else:
            i += 1
    return tables


def list_items(markdown: str) -> list[str]:
    """The text of each markdown list item: its marker line and lazy continuation lines."""
    items: list[str] = []
    current: list[str] | None = None
    for line in _outside_fences(markdown):
        match = _re_list_item.match(line)
        if match:
            if current is not None:
                items.append(" ".join(current))
            current = [match.group(1)]
        elif current is not None and line.strip() and not _re_heading.match(line):
            if line.lstrip().startswith("|"):
                items.append(" ".join(current))
                current = None
            else:
                current.append(line.strip())
        elif current is not None:
            items.append(" ".join(current))
            current = None
    if current is not None:
        items.append(" ".join(current))
    return items


def scored_text(markdown: str) -> str:
    """``markdown`` as its shingles are counted: without the fences' info strings (a
    language is no word of the page), without images (their alt text is not in the
    truth, which is the page's text) and without backticks (```name`s`` is ``names``)."""
    markdown = _re_fence_info.sub("", _re_image.sub(" ", markdown))
    return markdown.replace("`", "")


def _code(text: str) -> str:
    """Code as compared: session prompts removed, whitespace collapsed."""
    return _norm(_re_prompt.sub("", text))


def _table_found(rows: list[list[str]], candidates: list[list[str]]) -> bool:
    cells = [_words(cell) for row in rows for cell in row if tokens(cell)]
    if not cells:
        return True
    for md_cells in candidates:
        held = sum(1 for cell in cells if any(cell in md for md in md_cells))
        if held >= TABLE_CELLS_FOUND * len(cells):
            return True
    return False


def score(markdown: str, truth: Truth) -> dict:
    """The scores of ``markdown`` against ``truth``: precision, recall, f1; code_kept,
    code_lang, tables, list_items (fractions, None when the page has none to count, with
    their counts in ``*_n`` / ``*_total``); leak (bool) and leaked (the chrome found)."""
    precision, recall, f1 = shingle_f1(scored_text(markdown), truth.text)
    fences = [(_code(text), normalize_language(info)) for text, info in fenced_blocks(markdown)]
    raw_fences = [_norm(text) for text, _ in fenced_blocks(markdown)]
    kept = lang_total = lang_ok = unprompted = 0
    for source, language in truth.code:
        wanted = _code(source)
        # the smallest fence holding the block: not an example that quotes it, say
        holding = [(len(text), info) for text, info in fences if wanted in text]
        if not holding:
            continue
        where = min(holding, key=lambda h: h[0])[1]
        kept += 1
        exact = _norm(source)
        unprompted += exact != wanted and not any(exact in text for text in raw_fences)
        if language is not None:
            lang_total += 1
            lang_ok += where == language
    md_tables = [[_words(c) for row in table for c in row] for table in gfm_tables(markdown)]
    tables_found = sum(_table_found(rows, md_tables) for rows in truth.tables)
    md_items = [_words(item) for item in list_items(markdown)]
    items_found = 0
    for item in truth.list_items:
        words = _words(item)
        if words.strip() and any(words in md for md in md_items):
            items_found += 1
    items_total = sum(1 for item in truth.list_items if tokens(item))
    md_words = _words(scored_text(markdown))
    leaked = [s for s in truth.chrome_strings if f" {s} " in md_words]

    def share(n: int, total: int) -> float | None:
        return n / total if total else None

    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "code_kept": share(kept, len(truth.code)),
        "code_lang": share(lang_ok, lang_total),
        "tables": share(tables_found, len(truth.tables)),
        "list_items": share(items_found, items_total),
        "leak": bool(leaked),
        "leaked": leaked,
        "code_n": kept,
        "code_unprompted": unprompted,  # kept, but without their session prompts
        "code_total": len(truth.code),
        "code_lang_n": lang_ok,
        "code_lang_total": lang_total,
        "tables_n": tables_found,
        "tables_total": len(truth.tables),
        "list_items_n": items_found,
        "list_items_total": items_total,
    }


# -- running the extractors -----------------------------------------------------------------


def extractors(with_trafilatura: bool) -> dict[str, Extractor]:
    """crawlyx, and trafilatura (markdown with tables, links and formatting) when asked."""
    from crawlyx.content.extract import page_markdown

    found: dict[str, Extractor] = {"crawlyx": page_markdown}
    if with_trafilatura:
        try:
            import trafilatura
        except ImportError:
            print("trafilatura is not installed: crawlyx alone", file=sys.stderr)
            return found

        def trafilatura_markdown(html: str, url: str) -> str:
            return trafilatura.extract(html, url=url, output_format="markdown",
                                       include_tables=True, include_links=True,
                                       include_formatting=True) or ""  # fmt: skip

        found[f"trafilatura {trafilatura.__version__}"] = trafilatura_markdown
    return found


@dataclass
class Outcome:
    site: Site
    page: DocPage
    truth: Truth
    markdown: str
    ms: float
    scores: dict


def run_site(site: Site, extract: Extractor) -> tuple[list[Outcome], int]:
    """Every page of ``site`` through ``extract``, scored; and how many pages had no main."""
    outcomes = []
    missing = 0
    for page, page_truth in _truths(site):
        if page_truth is None:
            missing += 1
            continue
        start = time.perf_counter()
        markdown = extract(page.html, page.url) or ""
        ms = (time.perf_counter() - start) * 1000
        outcomes.append(Outcome(site, page, page_truth, markdown, ms, score(markdown, page_truth)))
    return outcomes, missing


_truth_cache: dict[tuple[str, str], Truth | None] = {}


def _truths(site: Site) -> Iterator[tuple[DocPage, Truth | None]]:
    for page in site.pages:
        key = (site.name, page.path)
        if key not in _truth_cache:
            _truth_cache[key] = truth(page, site)
        yield page, _truth_cache[key]


def summary(outcomes: list[Outcome]) -> dict:
    """Means of P/R/F1 over pages; code, tables and list items over the whole site."""

    def mean(key: str) -> float:
        return statistics.fmean(o.scores[key] for o in outcomes) if outcomes else 0.0

    def ratio(key: str) -> float | None:
        total = sum(o.scores[f"{key}_total"] for o in outcomes)
        return sum(o.scores[f"{key}_n"] for o in outcomes) / total if total else None

    return {
        "pages": len(outcomes),
        "f1": mean("f1"),
        "precision": mean("precision"),
        "recall": mean("recall"),
        "code_kept": ratio("code"),
        "code_lang": ratio("code_lang"),
        "tables": ratio("tables"),
        "list_items": ratio("list_items"),
        "leaks": sum(o.scores["leak"] for o in outcomes),
        "ms": statistics.median(o.ms for o in outcomes) if outcomes else 0.0,
        "code_total": sum(o.scores["code_total"] for o in outcomes),
        "tables_total": sum(o.scores["tables_total"] for o in outcomes),
        "list_items_total": sum(o.scores["list_items_total"] for o in outcomes),
    }


def _pct(value: float | None) -> str:
    return "   -" if value is None else f"{value * 100:3.0f}%"


HEADER = (
    f"{'site':<12} {'extractor':<18} {'pages':>5} {'F1':>6} {'P':>6} {'R':>6} "
    f"{'code':>5} {'lang':>5} {'tabl':>5} {'list':>5} {'leaks':>5} {'ms':>6}"
)


def summary_line(site: str, label: str, s: dict) -> str:
    return (
        f"{site:<12} {label[:18]:<18} {s['pages']:>5} {s['f1']:6.3f} {s['precision']:6.3f} "
        f"{s['recall']:6.3f} {_pct(s['code_kept']):>5} {_pct(s['code_lang']):>5} "
        f"{_pct(s['tables']):>5} {_pct(s['list_items']):>5} {s['leaks']:>5} {s['ms']:6.1f}"
    )


def diagnose(o: Outcome) -> str:
    """What went wrong on a page, in a few words."""
    s = o.scores
    notes = []
    if not o.markdown.strip():
        return "empty output"
    if s["recall"] < 0.9:
        notes.append(f"recall {s['recall']:.2f}")
    if s["precision"] < 0.9:
        notes.append(f"precision {s['precision']:.2f}")
    for key, label in (("code", "code"), ("code_lang", "lang"), ("tables", "tables"),
                       ("list_items", "list items")):  # fmt: skip
        n, total = s[f"{key}_n"], s[f"{key}_total"]
        if n < total:
            notes.append(f"{label} {n}/{total}")
    if s["code_unprompted"]:
        notes.append(f"prompts dropped in {s['code_unprompted']} code")
    if s["leaked"]:
        notes.append(f"leaked {s['leaked'][0]!r}")
    words_out, words_truth = len(tokens(o.markdown)), len(tokens(o.truth.text))
    notes.append(f"{words_out} words out of {words_truth}")
    return ", ".join(notes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--manifest", type=Path, required=True, help="the sites' manifest")
    parser.add_argument("--trafilatura", action="store_true", help="trafilatura side by side")
    parser.add_argument("--worst", type=int, default=10, help="worst crawlyx pages per site")
    parser.add_argument("--site", action="append", help="only this site (repeatable)")
    parser.add_argument("--dump", type=Path, help="write DIR/SITE/PAGE.{md,truth.txt}")
    args = parser.parse_args(argv)

    sites = [s for s in load_sites(args.manifest) if not args.site or s.name in args.site]
    if not sites:
        print(f"no sites in {args.manifest}", file=sys.stderr)
        return 1
    found = extractors(args.trafilatura)
    for extract in found.values():  # warm-up: imports, lazy construction
        page = next((p for s in sites for p in s.pages), None)
        if page is not None:
            extract(page.html, page.url)

    results: dict[str, dict[str, list[Outcome]]] = {}
    print(HEADER)
    for site in sites:
        results[site.name] = {}
        for label, extract in found.items():
            outcomes, missing = run_site(site, extract)
            results[site.name][label] = outcomes
            line = summary_line(site.name, label, summary(outcomes))
            print(line + (f"  ({missing} pages without main content skipped)" if missing else ""))
    if len(sites) > 1:
        for label in found:
            every = [o for per in results.values() for o in per[label]]
            print(summary_line("all", label, summary(every)))
    print(
        "\nF1/P/R: shingle scores, mean over pages; code: truth <pre> blocks kept in a fence;"
        " lang: fence language right (of kept blocks with one); tabl: tables found as GFM;"
        " list: <li> found on a list item; leaks: pages with chrome text; ms: median per page"
    )
    for site in sites:
        outcomes = results[site.name]["crawlyx"]
        s = summary(outcomes)
        print(
            f"\n{site.name} ({site.generator}, {site.theme}): {s['pages']} pages,"
            f" {s['code_total']} code blocks, {s['tables_total']} tables,"
            f" {s['list_items_total']} list items"
        )
        if args.worst > 0:
            print(f"worst {args.worst} pages for crawlyx:")
            ranked = sorted(outcomes, key=lambda o: (o.scores["f1"], o.page.path))
            for o in ranked[: args.worst]:
                print(f"  {o.page.path}  F1 {o.scores['f1']:.3f}: {diagnose(o)}")
        if args.dump:
            for label, label_outcomes in results[site.name].items():
                folder = args.dump / site.name / label.split()[0]
                for o in label_outcomes:
                    out = folder / o.page.path
                    out.parent.mkdir(parents=True, exist_ok=True)
                    out.with_suffix(".md").write_text(o.markdown, encoding="utf-8")
                    if label == "crawlyx":
                        out.with_suffix(".truth.txt").write_text(o.truth.text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
