"""A table of contents loaded in a noscript frame (mdBook's ``toc.html``) is a link source
of the pages that embed it: read once, never a page, its nesting the site tree's shape.

Unit tests of the outline reader and the graph's model, then crawls of the book fixture
(tests/sites/book_site.py) from the command line."""

from __future__ import annotations

import json
import sys

from crawlyx.content.extract import parse_document
from crawlyx.content.outline import read_outline
from crawlyx.content.page import FRAMES_PER_PAGE, analyze, noscript_frames
from crawlyx.graph.audit import audit, audit_markdown
from crawlyx.graph.model import Graph
from crawlyx.graph.outline import apply_outlines
from crawlyx.graph.tree import build_tree
from crawlyx.graph.walk import distances
from tests.graph.test_audit import B, hop, page
from tests.graph.test_audit_crawl import run
from tests.sites.book_site import CHAPTERS, TOC, BookSite

# -- the outline reader ------------------------------------------------------------------


def entries(html: str, url: str = B + "/toc.html") -> list[tuple[str, str | None, str]]:
    """(path, parent path, anchor) of each entry."""
    cut = len(B)
    return [
        (link[cut:], parent[cut:] if parent else None, anchor)
        for link, _raw, _fp, parent, anchor in read_outline(html, url, B)["entries"]
    ]


def test_the_outline_of_an_mdbook_table_nests_sections_under_their_chapters():
    assert entries(TOC) == [
        ("/", None, "Introduction"),
        ("/start.html", None, "1. Getting started"),
        ("/start/install.html", "/start.html", "1.1. Installation"),
        ("/start/hello.html", "/start.html", "1.2. Hello, world"),
        ("/start/hello/cargo.html", "/start/hello.html", "1.2.1. Hello, Cargo"),
        ("/guess.html", None, "2. A guessing game"),
        ("/concepts.html", None, "3. Common concepts"),
        ("/concepts/variables.html", "/concepts.html", "3.1. Variables"),
        ("/concepts/types.html", "/concepts.html", "3.2. Data types"),
        ("/concepts/functions.html", "/concepts.html", "3.3. Functions"),
        ("/ownership.html", None, "4. Ownership"),
        ("/ownership/borrowing.html", "/ownership.html", "4.1. Borrowing"),
    ]
    assert read_outline(TOC, B + "/toc.html", B)["robots"] == [("robots", "noindex")]


def test_the_outline_of_lists_labels_and_links_outside_lists():
    html = """<html><body><a href="/">Home</a>
    <ul><li><a href="/guide/">Guide</a><ul>
          <li><a href="/guide/a">A</a> <a href="/guide/a-more">more</a></li>
          <li>Reference<ul><li><a href="/guide/ref">Ref</a></li></ul></li>
          <li><a href="/guide/">Guide again</a></li></ul></li>
        <li><a href="https://elsewhere.example/x">Elsewhere</a></li>
        <li><a href="/faq">FAQ</a></li>
        <ul><li><a href="/faq/one">One</a></li></ul></ul></body></html>"""
    assert entries(html) == [
        ("/", None, "Home"),
        ("/guide", None, "Guide"),
        ("/guide/a", "/guide", "A"),
        ("/guide/a-more", "/guide", "more"),  # a second link of an item: beside the first
        ("/guide/ref", "/guide", "Ref"),  # under a label: at the label's level
        ("/faq", None, "FAQ"),
        ("/faq/one", "/faq", "One"),  # a list right in a list: under the item before
    ]


def test_frames_are_read_only_from_noscript_and_on_the_origin():
    html = """<html><head><noscript><iframe src="/head-toc.html"></iframe></noscript></head>
    <body><iframe src="/video.html"></iframe>
    <noscript><iframe src="toc.html#top"></iframe><iframe src="https://ads.example/f">
    </iframe><iframe src="toc.html"></iframe><p><iframe src="more/toc.html"></iframe></p>
    </noscript></body></html>"""
    doc = parse_document(html)
    found = noscript_frames(doc, B + "/book/ch1.html", B)
    assert found == [
        [B + "/head-toc.html", B + "/head-toc.html"],
        [B + "/book/toc.html", B + "/book/toc.html"],
        [B + "/book/more/toc.html", B + "/book/more/toc.html"],
    ]
    many = "".join(f'<iframe src="/t{i}.html"></iframe>' for i in range(10))
    doc = parse_document(f"<html><body><noscript>{many}</noscript><p>x</p></body></html>")
    assert len(noscript_frames(doc, B + "/", B)) == FRAMES_PER_PAGE
    # A page read as a whole gives its frames; one without noscript, none.
    assert analyze(html, B + "/book/ch1.html", B)["frames"] == found
    plain = "<html><body><iframe src='/x'></iframe></body></html>"
    assert analyze(plain, B + "/", B)["frames"] == []


# -- the graph's model -------------------------------------------------------------------


def book_graph(frames: bool = True) -> Graph:
    """The fixture book as the crawl records it: each page links to the chapters before
    and after it, and embeds toc.html."""
    g = Graph(start=B + "/")
    paths = [path for path, _, _ in CHAPTERS]
    for i, path in enumerate(paths):
        page(g, path, paths[max(i - 1, 0) : i] + paths[i + 1 : i + 2])
        if frames:
            g.nodes[B + path].frames = (B + "/toc.html",)
    return g


def toc_outline() -> dict[str, list]:
    return {B + "/toc.html": read_outline(TOC, B + "/toc.html", B)["entries"]}


def shape(tree) -> list[tuple[int, str]]:
    return [(level, node.url[len(B) :]) for level, node in tree.walk()]


# In the table's order: the book's reading order.
BOOK_TREE = [
    (0, "/"),
    (1, "/start.html"),
    (2, "/start/install.html"),
    (2, "/start/hello.html"),
    # The next chapter's "previous" link reaches it at depth 2; the table keeps it here.
    (3, "/start/hello/cargo.html"),
    (1, "/guess.html"),
    (1, "/concepts.html"),
    (2, "/concepts/variables.html"),
    (2, "/concepts/types.html"),
    (2, "/concepts/functions.html"),
    (1, "/ownership.html"),
    (2, "/ownership/borrowing.html"),
]


def test_the_table_shapes_the_tree_and_the_depths():
    plain = book_graph(frames=False)
    assert max(distances(plain).values()) == len(CHAPTERS) - 1  # a chain
    g = book_graph()
    apply_outlines(g, toc_outline())
    assert shape(build_tree(g)) == BOOK_TREE
    depths = distances(g)
    assert depths[B + "/guess.html"] == 1 and depths[B + "/start/install.html"] == 2
    assert depths[B + "/start/hello/cargo.html"] == 2  # through /guess.html's "previous"
    # Top-level entries are links of every page that embeds the table; sections of
    # their chapter's page only; a page's own anchor text stays.
    assert g.links[B + "/concepts/types.html"][B + "/ownership.html"] == "4. Ownership"
    assert B + "/start/install.html" not in g.links[B + "/concepts/types.html"]
    assert g.links[B + "/start.html"][B + "/start/install.html"] == "install.html"  # its own
    assert g.links[B + "/start.html"][B + "/start/hello.html"] == "1.2. Hello, world"
    assert B + "/toc.html" not in g.nodes  # the table's document is no node


def test_a_table_no_page_embeds_adds_nothing():
    g = book_graph(frames=False)
    before = {url: dict(links) for url, links in g.links.items()}
    apply_outlines(g, toc_outline())
    assert g.links == before and g.outline == {}


def test_a_section_under_a_failed_chapter_hangs_from_the_pages_above():
    g = book_graph()
    g.nodes[B + "/concepts.html"].status = 404  # its sections go to the top level
    g.nodes[B + "/concepts.html"].fetched = False
    hop(g, "/start/hello.html", "/start/hello/index.html")  # a redirect leads to its page
    page(g, "/start/hello/index.html", [])
    g.nodes[B + "/start/hello/index.html"].frames = (B + "/toc.html",)
    apply_outlines(g, toc_outline())
    assert g.outline[B + "/start/hello/cargo.html"] == B + "/start/hello/index.html"
    assert B + "/concepts/types.html" in g.links[B + "/"]
    tree = shape(build_tree(g))
    assert (1, "/concepts/types.html") in tree
    assert tree[tree.index((2, "/start/hello/index.html")) + 1] == (3, "/start/hello/cargo.html")


def test_a_table_that_nests_a_page_under_its_own_subtree_leaves_it_in_place():
    # The start does not embed the table; /a (top level) is linked from /c, which the
    # table nests under /b, under /a: following the table would make a cycle.
    g = Graph(start=B + "/")
    page(g, "/", ["/c"])
    for path in ("/a", "/b", "/c"):
        page(g, path, ["/a"] if path == "/c" else [])
        g.nodes[B + path].frames = (B + "/t",)
    toc = [[B + "/a", "", "", None, "A"], [B + "/b", "", "", B + "/a", "B"]]
    toc.append([B + "/c", "", "", B + "/b", "C"])
    apply_outlines(g, {B + "/t": toc})
    assert shape(build_tree(g)) == [(0, "/"), (1, "/c"), (2, "/a"), (3, "/b")]


def test_the_outline_is_recorded_once_and_loaded_with_the_graph(redis_client):
    from crawlyx.frontier.state import State
    from crawlyx.graph.store import GraphStore, Record

    state = State(redis_client, "outline-store")
    state.delete_all()
    store = GraphStore(state, max_edges=1000)
    store.set_start(B + "/")
    paths = [path for path, _, _ in CHAPTERS]
    records = [
        Record(B + path, {"f": 1, "s": 200, "i": [B + "/toc.html"]}, {B + nxt: "Next"})
        for path, nxt in zip(paths, paths[1:] + ["/"], strict=True)
    ]
    store.record(records)
    assert store.outline(B + "/toc.html") is None
    outline = {"entries": toc_outline()[B + "/toc.html"], "follow": True}
    store.set_outline(B + "/toc.html", outline)
    assert store.outline(B + "/toc.html") == outline
    graph = store.load()
    assert graph.nodes[B + "/guess.html"].frames == (B + "/toc.html",)
    assert shape(build_tree(graph)) == BOOK_TREE
    assert graph.nodes[B + "/start/install.html"].depth == 2
    state.delete_all()


# -- crawls ------------------------------------------------------------------------------


def audit_outputs(redis_url, job, tmp_path) -> tuple[dict, str, str]:
    """``scrapy audit`` of ``job``: the audit, the tree and llms.txt."""
    paths = [tmp_path / f"{job}.{ext}" for ext in ("json", "tree.md", "llms.txt")]
    command = [sys.executable, "-m", "scrapy", "audit", job, "-o", str(paths[0]),
               "--tree", str(paths[1]), "--llms-txt", str(paths[2]),
               "-s", f"CRAWLYX_REDIS_URL={redis_url}"]  # fmt: skip
    result = run(command, tmp_path)
    assert result.returncode == 0, result.stderr
    return json.loads(paths[0].read_text()), paths[1].read_text(), paths[2].read_text()


def test_a_book_is_crawled_through_its_noscript_table_of_contents(crawl, redis_url, tmp_path):
    with BookSite() as site:
        result = crawl(f"start={site.base}/", "job=book", "sitemap=0")
        assert result.returncode == 0, result.log[-3000:]
        assert sorted(result.urls) == sorted(site.base + path for path, _, _ in CHAPTERS)
        assert site.counts["/toc.html"] == 1  # shared by every page, fetched once
        assert site.counts["/player/embed.html"] == 0  # an iframe outside noscript
        assert all(count == 1 for path, count in site.counts.items() if path != "/robots.txt")
    assert result.stat("crawlyx/frames/read") == "1"
    assert result.stat("crawlyx/frames/entries") == str(len(CHAPTERS))
    # The table's entries were followed from the page that embeds it, a hop down the
    # table for each level: the start page's next chapter, its sections, theirs.
    depth = {item["url"][len(site.base) :]: item["depth"] for item in result.items}
    assert depth["/start.html"] == 1 and depth["/concepts/types.html"] == 2
    assert depth["/start/hello/cargo.html"] == 3
    # An item lists the page's own links.
    intro = next(item for item in result.items if item["url"] == site.base + "/")
    assert intro["links"] == [site.base + "/start.html"]

    report, tree, llms = audit_outputs(redis_url, "book", tmp_path)
    assert report["summary"]["pages"] == len(CHAPTERS)  # the table is no page
    assert report["depth"]["distribution"] == {"0": 1, "1": 4, "2": 7}
    assert report["depth"]["too_deep"] == [] and report["orphans"] == []
    assert report["broken_links"] == []
    b = site.base
    assert tree.splitlines() == [
        "# The Book",
        "",
        f"- [Introduction]({b}/)",
        f"  - [Getting started]({b}/start.html)",
        f"    - [Installation]({b}/start/install.html)",
        f"    - [Hello, world]({b}/start/hello.html)",
        f"      - [Hello, Cargo]({b}/start/hello/cargo.html)",
        f"  - [A guessing game]({b}/guess.html)",
        f"  - [Common concepts]({b}/concepts.html)",
        f"    - [Variables]({b}/concepts/variables.html)",
        f"    - [Data types]({b}/concepts/types.html)",
        f"    - [Functions]({b}/concepts/functions.html)",
        f"  - [Ownership]({b}/ownership.html)",
        f"    - [Borrowing]({b}/ownership/borrowing.html)",
    ]
    # llms.txt and llms-full.txt follow it too.
    sections = [line for line in llms.splitlines() if line.startswith("## ")]
    assert sections == [
        "## Overview", "## Getting started", "## Common concepts", "## Ownership"
    ]  # fmt: skip
    # llms.txt: a section per chapter with sections, in the table's nesting.
    assert "\n## Getting started\n\n- [Getting started]" in llms
    start = llms.index("\n## Getting started\n")
    assert f"- [Hello, Cargo]({b}/start/hello/cargo.html)" in llms[start:]
    assert "\n## Overview\n\n" in llms and f"- [A guessing game]({b}/guess.html)" in llms


def test_an_iframe_outside_noscript_is_no_link_source(crawl, redis_url, tmp_path):
    with BookSite(noscript=False) as site:
        result = crawl(f"start={site.base}/", "job=book-plain", "sitemap=0")
        assert result.returncode == 0, result.log[-3000:]
        assert site.counts["/toc.html"] == 0
        assert site.counts["/player/embed.html"] == 0
    assert len(result.items) == len(CHAPTERS)  # through the prev/next chain
    report, tree, _ = audit_outputs(redis_url, "book-plain", tmp_path)
    assert report["depth"]["distribution"] == {str(d): 1 for d in range(len(CHAPTERS))}
    assert tree.splitlines()[-1].startswith("  " * (len(CHAPTERS) - 1) + "- [Borrowing]")


def test_a_table_that_fails_is_an_error_of_its_own_url(crawl, tmp_path):
    errors = tmp_path / "errors.jsonl"
    with BookSite(toc=False) as site:
        result = crawl(f"start={site.base}/", "sitemap=0", f"errors={errors}")
        assert result.returncode == 0, result.log[-3000:]
        assert site.counts["/toc.html"] == 1  # not asked again by every page
    assert len(result.items) == len(CHAPTERS)  # the prev/next chain still leads on
    lines = [json.loads(line) for line in errors.read_text().splitlines()]
    assert [(e["url"], e["class"], e["referrer"]) for e in lines] == [
        (site.base + "/toc.html", "http_4xx", site.base + "/")
    ]
    assert result.stat("crawlyx/frames/failed") == "1"


def test_a_resumed_job_reads_the_table_from_the_graph_not_again(crawl, redis_url, tmp_path):
    with BookSite() as site:
        first = crawl(f"start={site.base}/", "job=book-resumed", "sitemap=0", "max_pages=2")
        assert first.returncode == 0, first.log[-3000:]
        assert len(first.items) == 2 and site.counts["/toc.html"] == 1
        second = crawl(f"start={site.base}/", "job=book-resumed", "sitemap=0")
        assert second.returncode == 0, second.log[-3000:]
        assert site.counts["/toc.html"] == 1
    urls = sorted(first.urls + second.urls)
    assert urls == sorted(site.base + path for path, _, _ in CHAPTERS)
    _, tree, _ = audit_outputs(redis_url, "book-resumed", tmp_path)
    assert f"      - [Hello, Cargo]({site.base}/start/hello/cargo.html)" in tree.splitlines()


def test_a_broken_entry_of_the_table_is_one_link_to_fix():
    # Every page shows the table and its link to /guess.html, which is gone: reported once,
    # at the table, with how many pages show it; the pages that link to it themselves
    # (the chapters before and after it, by their own prev/next links) as its sources.
    g = book_graph()
    guess = g.nodes[B + "/guess.html"]
    guess.status, guess.fetched = 404, False
    apply_outlines(g, toc_outline())
    rows = audit(g)["broken_links"]
    assert [row["url"] for row in rows] == [B + "/guess.html"]
    sources = {source["url"]: source for source in rows[0]["sources"]}
    assert sorted(sources) == [B + "/concepts.html", B + "/start/hello/cargo.html", B + "/toc.html"]
    table = sources[B + "/toc.html"]
    assert table["anchor"] == "2. A guessing game" and table["shown_on"] == len(CHAPTERS) - 1
    assert "shown_on" not in sources[B + "/concepts.html"]
    text = audit_markdown(audit(g))
    assert (
        f"- {B}/guess.html (404), linked from the table of contents {B}/toc.html "
        f"(shown on {len(CHAPTERS) - 1} pages) and 2 pages"
    ) in text
