"""What reading one page costs a worker, on the synthetic site's 40 KB pages.

    python bench/read.py [--pages 200] [--repeat 5]

Prints milliseconds per page, best of ``--repeat`` passes on one core, for: crawlyx's
whole read (:func:`crawlyx.content.page.analyze`: one parse, metadata, links normalized and
fingerprinted, main content, markdown), the converter alone on the whole
page, stock markdownify on the whole page (what the plain Scrapy spider runs), and the
content signature a page whose URL has a pattern adds (crawlyx/urls/traps.py).
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from pathlib import Path

from markdownify import markdownify

from crawlyx.content.markdown import html_to_markdown
from crawlyx.content.page import analyze
from crawlyx.urls.traps import content_signature

ROOT = Path(__file__).resolve().parent.parent
BASE = "http://127.0.0.1:8000"


def _site(pages: int):
    spec = importlib.util.spec_from_file_location("bench_site", ROOT / "bench" / "site.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Site(max(pages, 2000), 1, 40, BASE)


def best_ms(fn, pages: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        for i, page in enumerate(pages):
            fn(page, f"{BASE}/p/{i}")
        best = min(best, (time.perf_counter() - started) / len(pages) * 1000)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    site = _site(args.pages)
    pages = [site.page(i * 7 % site.n).decode() for i in range(args.pages)]
    markdown = {page: analyze(page, BASE, BASE)["markdown"] for page in pages}
    rows = [
        ("crawlyx: read a page (analyze)", lambda page, url: analyze(page, url, BASE)),
        ("crawlyx converter, whole page", html_to_markdown),
        ("stock markdownify, whole page", lambda page, url: markdownify(page)),
        # What analyze adds for a page whose URL has a pattern (included above: no).
        ("content signature of its markdown", lambda page, url: content_signature(markdown[page])),
    ]
    print(f"{len(pages)} pages of ~{sum(map(len, pages)) // len(pages) // 1024} KB")
    for label, fn in rows:
        print(f"{label:<34} {best_ms(fn, pages, args.repeat):6.2f} ms per page")


if __name__ == "__main__":
    main()
