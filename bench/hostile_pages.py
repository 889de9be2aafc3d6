"""What reading a hostile page costs a worker: page shapes that grow faster than the page.

    python bench/hostile_pages.py [--sizes 1,4] [--worst 6] [--budget 10] [--only NAME]
    python bench/hostile_pages.py --kill [--pages 400]

Each shape is generated at each size (MiB) and read in-process by the function the page
workers run (:func:`crawlyx.content.workers.read_page`, as a crawl calls it: main content,
inline links, near-duplicate signature). Printed per shape and size: seconds (the whole
call, with the memory a big page gives back after its read, which the budget does not
count), seconds per MiB, and what came out (markdown characters, links). A shape whose
seconds per MiB at the largest size are more than twice those at the smallest is flagged
``GROWS``. The ``--worst`` shapes (most seconds per MiB at the largest size) are read
again at 16 MiB (``DOWNLOAD_MAXSIZE``, the largest page a crawl reads), flagged ``OVER``
past the read budget (``CRAWLYX_READ_TIMEOUT``, ``--budget``). The source-code views are
also read at 3 and 8 MiB.

``--kill`` measures instead what a read over the budget costs the other reads: a pool of
two workers reads ``--pages`` pages of the synthetic site with and without a page that
runs past a 1 s budget among them, and prints the wall times, the pages read again and
that none is lost.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.util
import time
from pathlib import Path

from crawlyx.content.workers import PageWorkers, ReadTimeout, read_page
from crawlyx.settings import CRAWLYX_MAX_LINKS_PER_PAGE as MAX_LINKS
from crawlyx.settings import CRAWLYX_READ_TIMEOUT

MIB = 1 << 20
URL = "http://127.0.0.1:8000/page"
SCOPE = "http://127.0.0.1:8000"
ROOT = Path(__file__).resolve().parent.parent


def _page(body: str, title: str = "A hostile page") -> str:
    return (
        f"<!doctype html><html lang='en'><head><title>{title}</title></head><body>"
        f"<h1>{title}</h1><p>What follows is what the page is made of, shown once.</p>"
        f"{body}</body></html>"
    )


def _repeat(unit, size: int) -> str:
    """``unit(i)`` for i = 0, 1, ... until ``size`` characters."""
    parts, total, i = [], 0, 0
    while total < size:
        part = unit(i)
        parts.append(part)
        total += len(part)
        i += 1
    return "".join(parts)


# -- the shapes: each a function of the page's size in characters -----------------------


def source_view(size: int) -> str:
    """A source file's page: one <pre><code>, a numbered anchor per line, highlighted
    spans (as Pygments, rustdoc, javadoc's src-html and code hosts write them)."""

    def line(i: int) -> str:
        return (
            f'<a id="L{i}" class="lineno" href="#L{i}"></a><span class="k">def</span> '
            f'<span class="nf">step_{i}</span>(<span class="n">value</span>): '
            f'<span class="k">return</span> <span class="n">value</span> '
            f'<span class="o">+</span> <span class="mi">{i}</span>\n'
        )

    return _page(f'<pre><code class="language-python">{_repeat(line, size)}</code></pre>')


def source_view_plain(size: int) -> str:
    """The same view of a file its highlighter leaves plain (text, data, a language it
    does not know): an anchor per line, then the line."""

    def line(i: int) -> str:
        return (
            f'<a id="L{i}" class="lineno" href="#L{i}"></a>step {i}: check the value, then use it\n'
        )

    return _page(f"<pre><code>{_repeat(line, size)}</code></pre>")


def source_table(size: int) -> str:
    """A code host's file view: a table row per line, its number in a cell of its own."""

    def row(i: int) -> str:
        return (
            f'<tr><td id="L{i}" class="blob-num js-line-number" data-line-number="{i}"></td>'
            f'<td id="LC{i}" class="blob-code blob-code-inner"><span class="pl-k">def</span> '
            f'<span class="pl-en">step_{i}</span>(value): <span class="pl-k">return</span> '
            f"value + {i}</td></tr>\n"
        )

    return _page(f'<table class="highlight"><tbody>{_repeat(row, size)}</tbody></table>')


def table(size: int) -> str:
    """A data table of 50 columns."""
    head = "<tr>" + "".join(f"<th>Column {c}</th>" for c in range(50)) + "</tr>\n"
    body = _repeat(
        lambda i: "<tr>" + "".join(f"<td>{i}.{c}</td>" for c in range(50)) + "</tr>\n", size
    )
    return _page(f"<table>{head}{body}</table>")


def nested_divs(size: int) -> str:
    """<div>s nested around one word, thousands deep."""
    n = size // 11
    return _page("<div>" * n + "needle" + "</div>" * n)


def deep_inline(size: int) -> str:
    """<b><i><span> nested thousands deep around one word."""
    n = size // 28
    return _page("<p>" + "<b><i><span>" * n + "needle" + "</span></i></b>" * n + "</p>")


def links(size: int) -> str:
    """A list of links, 100,000 at 4 MiB."""
    return _page(
        "<ul>" + _repeat(lambda i: f'<li><a href="/p/{i}">Page {i}</a></li>', size) + "</ul>"
    )


def paragraphs(size: int) -> str:
    """Paragraphs, 100,000 at 4 MiB."""
    return _page(_repeat(lambda i: f"<p>Paragraph {i} says a few words here.</p>\n", size))


def ordered_list(size: int) -> str:
    """One ordered list of short items."""
    return _page("<ol>" + _repeat(lambda i: f"<li>Item {i}</li>", size) + "</ol>")


def sibling_lists(size: int) -> str:
    """Lists side by side, one item each."""
    return _page(_repeat(lambda i: f"<ul><li>Item {i}</li></ul>", size))


def text_only(size: int) -> str:
    """Text without a single tag."""
    words = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor "
    return words * (size // len(words))


def long_word(size: int) -> str:
    """One word the length of the page."""
    return _page(f"<p>{'x' * size}</p>")


def long_attributes(size: int) -> str:
    """Attribute values megabytes long (a data: URI, inline state)."""
    value = "a" * (size // 2)
    return _page(
        f'<p data-state="{value}">Text beside the state.</p>'
        f'<a href="data:text/plain,{value}">a link</a><p>The end.</p>'
    )


def end_tags(size: int) -> str:
    """A paragraph, then "</body>" over and over."""
    return "<html><body><p>The page's only words.</p>" + "</body>" * (size // 7)


def stray_end_tags(size: int) -> str:
    """End tags of elements that were never opened, between words."""
    return _page(_repeat(lambda i: f"word {i}</span></div></p>", size))


def wbr(size: int) -> str:
    """Long words broken with <wbr> (libxml2 nests what follows each inside it)."""
    return _page(
        _repeat(lambda i: f"<p>https://example.com/<wbr>path/<wbr>to/<wbr>page{i}</p>", size)
    )


def open_controls(size: int) -> str:
    """Buttons left open around text (each holds more than a control's words)."""
    words = " ".join(f"word{i}" for i in range(60))
    return _page(_repeat(lambda i: f"<button>{words} {i}</button>", size))


def hidden_blocks(size: int) -> str:
    """Blocks hidden until scripts run, each beside a visible one."""
    return _page(
        _repeat(lambda i: f"<div hidden><p>Hidden {i}</p></div><div><p>Shown {i}.</p></div>", size)
    )


def figures(size: int) -> str:
    """Figures: an image and its alt text each."""
    return _page(
        _repeat(lambda i: f'<figure><img src="/i/{i}.png" alt="Photo {i}"></figure>', size)
    )


def wide_spans(size: int) -> str:
    """Table rows of one cell spanning 1,000 columns."""
    return _page(
        "<table>" + _repeat(lambda i: f'<tr><td colspan="1000">{i}</td></tr>', size) + "</table>"
    )


def nested_lists(size: int) -> str:
    """Lists nested in list items, thousands deep."""
    n = size // 21
    return _page("<ul><li>top" * n + "</li></ul>" * n)


def nested_named(size: int) -> str:
    """Containers named like boilerplate ("sidebar"), nested a few hundred deep, around
    an article."""
    depth = 400
    text = _repeat(lambda i: f"<p>Sentence {i} of the article, which goes on a while.</p>", size)
    return _page('<div class="sidebar">' * depth + text + "</div>" * depth)


def comments(size: int) -> str:
    """HTML comments between words."""
    return _page(_repeat(lambda i: f"word {i} <!-- a comment that says nothing -->", size))


def scripts(size: int) -> str:
    """Inline scripts between paragraphs."""
    return _page(_repeat(lambda i: f"<p>Text {i}.</p><script>var x{i} = '<div>';</script>", size))


def entities(size: int) -> str:
    """Text written in character references."""
    return _page("<p>" + _repeat(lambda i: "&lt;&amp;&#x41;&eacute;&#8212; ", size) + "</p>")


SHAPES = {
    name: globals()[name]
    for name in (
        "source_view", "source_view_plain", "source_table", "table", "nested_divs",
        "deep_inline", "links", "paragraphs", "ordered_list", "sibling_lists", "text_only",
        "long_word", "long_attributes", "end_tags", "stray_end_tags", "wbr", "open_controls",
        "hidden_blocks", "figures", "wide_spans", "nested_lists", "nested_named",
        "comments", "scripts", "entities",
    )
}  # fmt: skip
EXTRA_SIZES = {"source_view": (3, 8), "source_view_plain": (3, 8)}  # MiB, besides --sizes


def read(shape: str, mib: float) -> tuple[float, dict, int]:
    page = SHAPES[shape](int(mib * MIB))
    gc.collect()
    started = time.perf_counter()
    data = read_page(
        page, URL, SCOPE, main_content=True, links="inline", neardup=True, max_links=MAX_LINKS
    )
    return time.perf_counter() - started, data, len(page)


def row(shape: str, mib: float, budget: float) -> float:
    seconds, data, chars = read(shape, mib)
    per_mib = seconds / (chars / MIB)
    over = "  OVER" if budget and seconds > budget else ""
    print(
        f"{shape:18} {chars / MIB:6.1f} {seconds:8.2f} {per_mib:7.3f} "
        f"{len(data['markdown']):>11,} {len(data['links']):>8,}{over}",
        flush=True,
    )
    return per_mib


def shapes(args) -> None:
    sizes = [float(s) for s in args.sizes.split(",")]
    names = [n for n in SHAPES if not args.only or args.only in n]
    read_page(_page(""), URL, SCOPE)  # the reading code imported, not counted in a shape
    print(f"{'shape':18} {'MiB':>6} {'s':>8} {'s/MiB':>7} {'markdown':>11} {'links':>8}")
    growth: dict[str, float] = {}
    for name in names:
        per_mib = [row(name, mib, args.budget) for mib in sizes]
        for mib in EXTRA_SIZES.get(name, ()):
            row(name, mib, args.budget)
        growth[name] = per_mib[-1]
        if per_mib[-1] > 2 * per_mib[0]:
            print(f"{name:18} GROWS: {per_mib[-1] / per_mib[0]:.1f}x the s/MiB at {sizes[0]:g} MiB")
    worst = sorted(growth, key=growth.get, reverse=True)[: args.worst]
    if worst:
        print(f"\nat 16 MiB (budget {args.budget:g} s):")
        for name in worst:
            row(name, 16, args.budget)


def _site_pages(count: int) -> list[str]:
    spec = importlib.util.spec_from_file_location("bench_site", ROOT / "bench" / "site.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    site = module.Site(max(count, 2000), 1, 40, SCOPE)
    return [site.page(i * 7 % site.n).decode() for i in range(count)]


async def _read_all(workers: PageWorkers, pages: list[str]) -> list:
    return await asyncio.gather(
        *(workers.read(page, f"{SCOPE}/p/{i}", SCOPE) for i, page in enumerate(pages)),
        return_exceptions=True,
    )


def kill_cost(args) -> None:
    """Wall time of reading the synthetic site's pages with and without a page over
    the budget among them (each run in a pool already started)."""
    pages = _site_pages(args.pages)
    slow = paragraphs(16 * MIB)  # some seconds: past a 1 s budget
    for label, batch in (("without", pages), ("with", pages[:1] + [slow] + pages[1:])):
        workers = PageWorkers(2, main_content=True, links="inline", neardup=True, timeout=1.0)
        try:
            asyncio.run(_read_all(workers, pages[:8]))  # workers started and warm
            started = time.perf_counter()
            results = asyncio.run(_read_all(workers, batch))
            wall = time.perf_counter() - started
        finally:
            workers.close()
        timeouts = sum(isinstance(r, ReadTimeout) for r in results)
        failed = sum(isinstance(r, BaseException) for r in results) - timeouts
        print(
            f"{label:8} a page over budget: {len(batch):5} pages in {wall:6.2f} s, "
            f"{timeouts} over budget, {failed} failed, {workers.resubmitted} read again"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1,4", help="MiB, comma-separated")
    parser.add_argument("--worst", type=int, default=6, help="shapes read again at 16 MiB")
    parser.add_argument(
        "--budget", type=float, default=CRAWLYX_READ_TIMEOUT, help="the read budget, seconds"
    )
    parser.add_argument("--only", help="only shapes whose name contains this")
    parser.add_argument("--kill", action="store_true", help="what a read over budget costs")
    parser.add_argument("--pages", type=int, default=400, help="pages read with --kill")
    args = parser.parse_args()
    if args.kill:
        kill_cost(args)
    else:
        shapes(args)


if __name__ == "__main__":
    main()
