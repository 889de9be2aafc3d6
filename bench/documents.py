"""PDFs read into markdown: word F1 against the page's own text, headings kept, ms a page.

    python bench/documents.py [--per-set 0] [--cache DIR] [--libraries] [--untagged]

Real HTML documentation installed on this machine (the Java SE API docs, the libstdc++
manual, the Node.js API docs, the Valgrind and libffi manuals: ``/usr/share/doc``) is
served on 127.0.0.1 and printed to PDF by headless Chromium (``--print-to-pdf``, with
its running header and footer: date, title, URL, page numbers), so the truth is known:
the page's own text, as Chromium lays it out for print (``innerText`` under print media,
read through Playwright from the same browser), and its headings (``h1``-``h6``).

For each PDF: crawlyx's reader (:func:`crawlyx.content.documents.reader.read_pdf`, what
a page worker runs) in this process, its word F1 against the truth (multisets of
lowercased words), whether every heading of the page is a markdown heading, and the time
per PDF page. ``--libraries`` also times the plain text other PDF libraries extract
(pypdfium2's text page, pdfminer.six, pypdf; those installed), for the same F1.

Chromium's PDFs are tagged: their structure tree names headings, tables and lists.
``--untagged`` prints them without it (``--disable-pdf-tagging``), as many tools write
PDFs: headings then come from font sizes, tables from columns, running headers and
footers from their repetition.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from crawlyx.content.documents.errors import Unreadable  # noqa: E402
from crawlyx.content.documents.reader import read_pdf  # noqa: E402

CHROMIUM = "/usr/lib/chromium/chromium"
DOCS = Path("/usr/share/doc")
# (set, folder under /usr/share/doc, glob, pages taken by default)
SETS = [
    ("Java SE 17 API", "openjdk-17-jre-headless/api/java.base/java", "**/*.html", 24),
    ("libstdc++ manual", "gcc-12-base/libstdc++/manual", "*.html", 8),
    ("Node.js API", "nodejs/api", "*.html", 8),
    ("Valgrind manual", "valgrind/html", "*.html", 5),
    ("libffi manual", "libffi8/html", "*.html", 5),
]
MAX_BYTES = 150_000  # HTML pages past this are skipped (a whole book on one page)
WORD = re.compile(r"\w+")


def pick(folder: Path, pattern: str, count: int) -> list[Path]:
    """``count`` pages spread evenly over the folder's sorted list (no class-use pages)."""
    found = sorted(
        p
        for p in folder.glob(pattern)
        if "class-use" not in p.parts and p.stat().st_size <= MAX_BYTES
    )
    if len(found) <= count:
        return found
    step = len(found) / count
    return [found[int(i * step)] for i in range(count)]


def serve(root: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def print_pdf(url: str, out: Path, tagged: bool = True) -> None:
    with tempfile.TemporaryDirectory() as profile:
        command = [
            CHROMIUM, "--headless", "--disable-gpu", "--no-first-run",
            "--disable-background-networking", "--disable-component-update",
            f"--user-data-dir={profile}", f"--print-to-pdf={out}", url,
        ]  # fmt: skip
        if not tagged:
            command.insert(1, "--disable-pdf-tagging")
        if os.geteuid() == 0:
            command.insert(1, "--no-sandbox")
        subprocess.run(command, capture_output=True, timeout=120, check=True)


TRUTH_JS = """() => {
  const headings = [...document.querySelectorAll('h1,h2,h3,h4,h5,h6')]
    .filter(h => h.offsetParent !== null || getComputedStyle(h).position === 'fixed')
    .map(h => h.innerText.replace(/\\s+/g, ' ').trim()).filter(Boolean);
  return {text: document.body.innerText, headings};
}"""


def truths(urls: list[str]) -> dict[str, dict]:
    """Each page's text and headings as printed: Chromium under print media."""
    from playwright.sync_api import sync_playwright

    found = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page()
        page.emulate_media(media="print")
        for url in urls:
            page.goto(url, wait_until="load")
            found[url] = page.evaluate(TRUTH_JS)
        browser.close()
    return found


def words(text: str) -> Counter:
    return Counter(WORD.findall(text.lower()))


def f1(got: str, truth: str) -> float:
    a, b = words(got), words(truth)
    overlap = sum((a & b).values())
    if not overlap:
        return 0.0
    precision, recall = overlap / sum(a.values()), overlap / sum(b.values())
    return 2 * precision * recall / (precision + recall)


def norm(text: str) -> str:
    return " ".join(WORD.findall(text.lower()))


def heading_lines(markdown: str) -> list[str]:
    """The markdown's ATX headings (not lines of its fenced code that start with #)."""
    found, fence = [], None
    for line in markdown.splitlines():
        if line.startswith("```"):
            marker = line[: len(line) - len(line.lstrip("`"))]
            fence = None if fence is not None and marker.startswith(fence) else fence or marker
        elif fence is None and re.match(r"#{1,6} ", line):
            found.append(line)
    return found


def headings_kept(markdown: str, headings: list[str]) -> tuple[int, int, int, int]:
    """(the page's headings that are markdown headings, its headings; the markdown's
    headings that are the page's, the markdown's headings)."""
    ours = [norm(line.lstrip("#")) for line in heading_lines(markdown)]
    wanted = [norm(h) for h in headings if norm(h)]
    theirs = set(wanted)
    mine = set(ours)
    kept = sum(1 for h in wanted if h in mine)
    return kept, len(wanted), sum(1 for h in ours if h in theirs), len(ours)


# -- other libraries' plain text ---------------------------------------------------------


def _pypdfium2(data: bytes) -> str:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(data)
    try:
        return "\n".join(pdf[i].get_textpage().get_text_range() for i in range(len(pdf)))
    finally:
        pdf.close()


def _pdfminer(data: bytes) -> str:
    import io

    from pdfminer.high_level import extract_text

    return extract_text(io.BytesIO(data))


def _pypdf(data: bytes) -> str:
    import io

    from pypdf import PdfReader

    return "\n".join(page.extract_text() or "" for page in PdfReader(io.BytesIO(data)).pages)


LIBRARIES = {"pypdfium2": _pypdfium2, "pdfminer.six": _pdfminer, "pypdf": _pypdf}
MODULES = {"pypdfium2": "pypdfium2", "pdfminer.six": "pdfminer", "pypdf": "pypdf"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-set", type=int, default=0, help="pages per set (0: defaults)")
    parser.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "crawlyx-pdfs"))
    parser.add_argument("--libraries", action="store_true", help="other libraries' plain text")
    parser.add_argument("--untagged", action="store_true", help="PDFs without a structure tree")
    args = parser.parse_args()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    server, base = serve(DOCS)
    pages = []  # (set, url, pdf path)
    for name, folder, pattern, count in SETS:
        root = DOCS / folder
        if not root.is_dir():
            print(f"skipping {name}: {root} is not installed", file=sys.stderr)
            continue
        for path in pick(root, pattern, args.per_set or count):
            rel = path.relative_to(DOCS).as_posix()
            suffix = ".untagged.pdf" if args.untagged else ".pdf"
            out = cache / (rel.replace("/", "_") + suffix)
            if not out.exists():
                print_pdf(f"{base}/{rel}", out, tagged=not args.untagged)
            pages.append((name, f"{base}/{rel}", out))
    truth = truths([url for _, url, _ in pages])
    server.shutdown()

    import pypdfium2 as pdfium

    rows: dict[str, dict] = {}
    libraries = {}
    if args.libraries:
        libraries = {n: f for n, f in LIBRARIES.items() if importlib.util.find_spec(MODULES[n])}
    for name, url, path in pages:
        data = path.read_bytes()
        pdf = pdfium.PdfDocument(data)
        count = len(pdf)
        pdf.close()
        start = time.perf_counter()
        try:
            md = read_pdf(data, url, url.rsplit("/", 1)[0])["markdown"]
        except Unreadable:
            md = ""
        seconds = time.perf_counter() - start
        kept, total, right, made = headings_kept(md, truth[url]["headings"])
        for key in (name, "all"):
            row = rows.setdefault(key, Counter())
            row["docs"] += 1
            row["pdf_pages"] += count
            row["seconds"] += seconds
            row["f1"] += f1(md, truth[url]["text"])
            row["headings"] += total
            row["kept"] += kept
            row["all_kept"] += kept == total
            row["right"] += right
            row["made"] += made
            for lib, extract in libraries.items():
                start = time.perf_counter()
                text = extract(data)
                row[f"{lib} seconds"] += time.perf_counter() - start
                row[f"{lib} f1"] += f1(text, truth[url]["text"])
    print("| set | HTML pages | PDF pages | word F1 | pages with every heading | headings kept"
          " | headings made that are the page's | ms per PDF page |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for key, row in sorted(rows.items(), key=lambda kv: kv[0] == "all"):
        print(
            f"| {key} | {row['docs']} | {row['pdf_pages']} | {row['f1'] / row['docs']:.3f}"
            f" | {row['all_kept'] / row['docs']:.0%} | {row['kept']}/{row['headings']}"
            f" | {row['right']}/{row['made']}"
            f" | {1000 * row['seconds'] / row['pdf_pages']:.1f} |"
        )
    if libraries:
        row = rows["all"]
        print("\n| reader | word F1 | ms per PDF page |\n| --- | --- | --- |")
        print(
            f"| crawlyx (pypdfium2 + layout) | {row['f1'] / row['docs']:.3f}"
            f" | {1000 * row['seconds'] / row['pdf_pages']:.1f} |"
        )
        for lib in libraries:
            print(
                f"| {lib}, plain text | {row[f'{lib} f1'] / row['docs']:.3f}"
                f" | {1000 * row[f'{lib} seconds'] / row['pdf_pages']:.1f} |"
            )


if __name__ == "__main__":
    main()
