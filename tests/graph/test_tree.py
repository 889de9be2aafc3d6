"""The site tree from hand-built graphs (cycles, shared parents, redirects, unlinked
pages), the same tree whatever the recording order, and its outputs: the outline,
llms.txt and llms-full.txt."""

from __future__ import annotations

import io

from crawlyx.graph.model import Graph
from crawlyx.graph.tree import build_tree, llms_txt, tree_markdown, write_llms_full
from tests.graph.test_audit import B, hop, page, shuffled


def tree_graph() -> Graph:
    g = Graph(start=B + "/")
    page(g, "/", ["/b", "/a", "/blog", "/noidx", "/contact"], title="Home", description="Hi.")
    page(g, "/a", ["/c", "/a/x", "/missing"])
    page(g, "/b", ["/c", "/d"])  # /c is shared: /b comes first in the home page's links
    page(g, "/c", ["/", "/a"])  # cycles back
    page(g, "/d", ["/old"])
    hop(g, "/old", "/e")  # /e is reached through a redirect
    page(g, "/e", ["/d"])
    page(g, "/a/x", description=None, title="[x] & co")
    page(g, "/blog", ["/blog/2", "/blog/1"])
    page(g, "/blog/1", ["/blog/2"])
    page(g, "/blog/2", ["/blog/1"])
    page(g, "/noidx", ["/hidden-child"], robots=("noindex",), error="opted_out")
    page(g, "/hidden-child")
    page(g, "/contact")
    g.node(B + "/missing").status = 404
    page(g, "/lost", ["/lost/child"], in_sitemap=True)  # linked from no page
    page(g, "/lost/child", ["/lost"])
    page(g, "/alone", in_sitemap=True)
    return g


def outline(tree) -> list[tuple[int, str]]:
    return [(level, node.url[len(B) :]) for level, node in tree.walk()]


# In the site's reading order: each page's links as it writes them, breadth first.
EXPECTED = [
    (0, "/"),
    (1, "/b"),
    (2, "/c"),
    (2, "/d"),
    (3, "/e"),
    (1, "/a"),
    (2, "/a/x"),
    (1, "/blog"),
    (2, "/blog/2"),
    (2, "/blog/1"),
    (1, "/noidx"),
    (2, "/hidden-child"),
    (1, "/contact"),
    # Not reached from the start: /alone, which no such page links, first; /lost and
    # /lost/child link each other: the first by path roots them.
    (0, "/alone"),
    (0, "/lost"),
    (1, "/lost/child"),
]


def test_tree_breaks_cycles_and_shared_parents_in_reading_order():
    tree = build_tree(tree_graph())
    assert outline(tree) == EXPECTED
    assert [node.url for node in tree.unlinked] == [B + "/alone", B + "/lost"]


def test_same_tree_whatever_order_the_graph_was_recorded_in():
    graph = tree_graph()
    expected = tree_markdown(build_tree(graph), graph)
    for seed in range(8):
        other = shuffled(graph, seed, links=False)
        tree = build_tree(other)
        assert outline(tree) == EXPECTED
        assert tree_markdown(tree, other) == expected


def test_tree_markdown_is_an_outline_of_titles_and_urls():
    graph = tree_graph()
    text = tree_markdown(build_tree(graph), graph)
    lines = text.splitlines()
    assert lines[0] == "# Home"
    assert f"- [Home]({B}/)" in lines
    assert f"    - [\\[x\\] & co]({B}/a/x)" in lines
    assert f"      - [Title /e]({B}/e)" in lines
    assert lines[-5:] == [
        "## Not linked from the start page",
        "",
        f"- [Title /alone]({B}/alone)",
        f"- [Title /lost]({B}/lost)",
        f"  - [Title /lost/child]({B}/lost/child)",
    ]


def test_llms_txt_sections_from_the_top_levels():
    graph = tree_graph()
    assert llms_txt(build_tree(graph), graph) == "\n".join(
        [
            "# Home",
            "",
            "> Hi.",
            "",
            "## Overview",
            "",
            f"- [Home]({B}/): Hi.",
            f"- [Title /contact]({B}/contact): About /contact",
            "",
            "## Title /b",
            "",
            f"- [Title /b]({B}/b): About /b",
            f"- [Title /c]({B}/c): About /c",
            f"- [Title /d]({B}/d): About /d",
            f"- [Title /e]({B}/e): About /e",
            "",
            "## Title /a",
            "",
            f"- [Title /a]({B}/a): About /a",
            f"- [\\[x\\] & co]({B}/a/x)",
            "",
            "## Title /blog",
            "",
            f"- [Title /blog]({B}/blog): About /blog",
            f"- [Title /blog/2]({B}/blog/2): About /blog/2",
            f"- [Title /blog/1]({B}/blog/1): About /blog/1",
            "",
            # /noidx is left out, the page under it is not.
            "## Title /noidx",
            "",
            f"- [Title /hidden-child]({B}/hidden-child): About /hidden-child",
            "",
            "## Other pages",
            "",
            f"- [Title /alone]({B}/alone): About /alone",
            f"- [Title /lost]({B}/lost): About /lost",
            f"- [Title /lost/child]({B}/lost/child): About /lost/child",
            "",
        ]
    )


def test_llms_txt_of_a_site_without_a_start_page():
    g = Graph(start=B + "/")
    g.node(B + "/").status = 500
    assert llms_txt(build_tree(g), g) == "# s.test\n\n> The pages of s.test.\n"


def test_llms_full_concatenates_stored_markdown_in_tree_order():
    graph = tree_graph()
    stored = {B + "/": "# Home\n\nWelcome.\n", B + "/b": "# B\n", B + "/noidx": "# secret"}
    stored[B + "/lost/child"] = "child text"
    out = io.StringIO()
    written = write_llms_full(build_tree(graph), graph, stored.get, out)
    assert written == 3  # /noidx opted out; pages without stored markdown skipped
    assert out.getvalue() == (
        f"Source: {B}/\n\n# Home\n\nWelcome.\n"
        f"\n---\n\nSource: {B}/b\n\n# B\n"
        f"\n---\n\nSource: {B}/lost/child\n\nchild text\n"
    )


def test_the_sites_name_shared_by_most_titles_is_the_h1_and_leaves_the_titles():
    g = Graph(start=B + "/")
    page(g, "/", ["/a", "/b", "/c"], title="Welcome | Acme Docs", description="Docs.")
    page(g, "/a", title="Install | Acme Docs")
    page(g, "/b", title="Use it | Acme Docs")
    page(g, "/c", title="Acme Docs")  # the name alone stays whole
    text = llms_txt(build_tree(g), g)
    assert text.startswith("# Acme Docs\n\n> Docs.\n")
    assert f"- [Welcome]({B}/): Docs." in text and f"- [Install]({B}/a)" in text
    assert f"- [Acme Docs]({B}/c)" in text
    # Fewer than half the titles share a part: the start page's title is the name.
    page(g, "/a", title="Install")
    page(g, "/b", title="Use it - Guide")
    assert llms_txt(build_tree(g), g).startswith("# Welcome | Acme Docs\n")


def test_without_a_description_the_summary_is_the_start_pages_first_paragraph():
    from crawlyx.graph.recorder import lede

    markdown = (
        "# Acme\n\n[Home](/) | [Docs](/docs)\n\n- a list\n\n"
        "Acme makes [rockets](/rockets) for coyotes. It has done so since 1949, and more."
    )
    g = Graph(start=B + "/")
    page(g, "/", title="Acme", description=None)
    g.nodes[B + "/"].summary = lede(markdown)
    assert "\n> Acme makes rockets for coyotes. It has done so since 1949, and more.\n" in (
        llms_txt(build_tree(g), g)
    )
    assert lede("# Only a heading\n\n- and a list") is None
    assert lede("word " * 100, limit=50).endswith("…")


def test_a_page_written_under_another_url_is_not_listed_as_one():
    # /contact's document is written under /a (a copy): llms.txt and llms-full.txt leave it
    # out, the tree says where it is.
    graph = tree_graph()
    graph.nodes[B + "/contact"].written_as = B + "/a"
    tree = build_tree(graph)
    assert f"- [Title /contact]({B}/contact)" not in llms_txt(tree, graph)
    assert f"  - [Title /contact]({B}/contact) (written as {B}/a)" in tree_markdown(tree, graph)
    out = io.StringIO()
    written = write_llms_full(tree, graph, lambda url: f"# {url}", out)
    assert written == len(EXPECTED) - 2  # nor /noidx, opted out
    assert f"Source: {B}/contact\n" not in out.getvalue()
