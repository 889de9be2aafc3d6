"""The site audit over hand-built graphs: every finding with its exact rows, the
truncation path, and the same report whatever order the graph was recorded in."""

from __future__ import annotations

import json
import random
import string

from crawlyx.graph.audit import audit, audit_markdown
from crawlyx.graph.model import Graph, Node
from crawlyx.graph.neardup import signature
from crawlyx.graph.walk import distances

B = "http://s.test"


def page(graph: Graph, path: str, links=(), **fields) -> Node:
    """A fetched 200 page at ``path`` linking to ``links`` (paths; anchor: the path's
    last segment), titled and described after its path unless told otherwise."""
    node = graph.node(B + path)
    node.fetched, node.status = True, 200
    node.title = fields.pop("title", f"Title {path}")
    node.description = fields.pop("description", f"About {path}")
    node.content_hash = fields.pop("content_hash", f"hash{path}")
    for name, value in fields.items():
        setattr(node, name, value)
    for target in links:
        graph.node(B + target)
        graph.links.setdefault(B + path, {})[B + target] = target.rsplit("/", 1)[-1] or "home"
    return node


def hop(graph: Graph, path: str, to: str, status: int = 301) -> None:
    node = graph.node(B + path)
    node.status, node.redirect = status, B + to


def text(seed: int, n: int = 400) -> str:
    rng = random.Random(seed)
    vocabulary = ["".join(rng.choices(string.ascii_lowercase, k=6)) for _ in range(2000)]
    return " ".join(rng.choice(vocabulary) for _ in range(n))


def site_graph() -> Graph:
    """A site with every finding, each in a known place."""
    g = Graph(start=B + "/")
    home = ["/about", "/docs", "/missing", "/error", "/old", "/r1", "/loop-a", "/private/x"]
    home += ["/noidx", "/dup-a", "/dup-b", "/near-a", "/near-b", "/deep/1"]
    page(g, "/", home, title="Home", description="The home page")
    page(g, "/about", ["/", "/docs", "/timeout"], canonical=B + "/missing")
    # /docs: a canonical to a redirect; /docs/a: its title again, no description.
    page(g, "/docs", ["/about", "/docs/a", "/gone", "/missing"], canonical=B + "/old")
    page(g, "/docs/a", ["/docs"], title="Title /docs", description=None, canonical=B + "/docs")
    g.node(B + "/missing").status, g.node(B + "/missing").error = 404, "http_4xx"
    g.node(B + "/error").status, g.node(B + "/error").error = 500, "http_5xx"
    g.node(B + "/timeout").error = "timeout"
    hop(g, "/old", "/new")
    page(g, "/new", in_sitemap=True)
    hop(g, "/r1", "/r2")
    hop(g, "/r2", "/r3", status=302)
    page(g, "/r3")
    hop(g, "/gone", "/missing")  # a link to a redirect that ends at a 404
    hop(g, "/loop-a", "/loop-b")
    hop(g, "/loop-b", "/loop-a")
    g.node(B + "/private/x").error = "robots_disallowed"
    page(g, "/noidx", robots=("noindex", "nofollow"), error="opted_out")
    base, same = text(1), text(1).split()
    same[200] = "changed"
    page(g, "/dup-a", content_hash="h-dup", signature=signature(base))
    page(g, "/dup-b", content_hash="h-dup", signature=signature(base))
    page(g, "/near-a", signature=signature(base + " tail"))
    page(g, "/near-b", signature=signature(" ".join(same)))
    page(g, "/other", signature=signature(text(2)), in_sitemap=True)  # an orphan
    for i in range(1, 6):
        page(g, f"/deep/{i}", [f"/deep/{i + 1}"] if i < 5 else [])
    g.node(B + "/deep/3").title = None
    return g


def test_every_finding_with_its_rows():
    report = audit(site_graph())
    assert report["schema"] == 1 and report["graph_truncated"] is False
    assert report["skipped"] == [] and report["sources_complete"] is True
    assert report["broken_links"] == [
        {"url": B + "/error", "status": 500, "error": "http_5xx",
         "sources": [{"url": B + "/", "anchor": "error", "via": None}]},
        {"url": B + "/missing", "status": 404, "error": "http_4xx",
         "sources": [{"url": B + "/", "anchor": "missing", "via": None},
                     {"url": B + "/docs", "anchor": "missing", "via": None},
                     {"url": B + "/docs", "anchor": "gone", "via": B + "/gone"}]},
        {"url": B + "/timeout", "status": None, "error": "timeout",
         "sources": [{"url": B + "/about", "anchor": "timeout", "via": None}]},
    ]  # fmt: skip
    redirects = report["redirects"]
    assert redirects["chains"] == [
        {"url": B + "/r1",
         "hops": [{"url": B + "/r1", "status": 301}, {"url": B + "/r2", "status": 302}],
         "final": B + "/r3", "final_status": 200},
    ]  # fmt: skip
    assert redirects["loops"] == [{"loop": [B + "/loop-a", B + "/loop-b", B + "/loop-a"]}]
    assert redirects["links_to_redirects"] == [
        {"source": B + "/", "target": B + "/loop-a", "anchor": "loop-a", "final": None},
        {"source": B + "/", "target": B + "/old", "anchor": "old", "final": B + "/new"},
        {"source": B + "/", "target": B + "/r1", "anchor": "r1", "final": B + "/r3"},
        {"source": B + "/docs", "target": B + "/gone", "anchor": "gone", "final": B + "/missing"},
    ]
    # /new is in the sitemap too, but linked (through /old).
    assert report["orphans"] == [{"url": B + "/other", "status": 200}]
    assert report["noindex"] == [{"url": B + "/noidx", "robots": ["nofollow", "noindex"]}]
    assert report["robots_blocked"] == [
        {"url": B + "/private/x", "sources": [{"url": B + "/", "anchor": "x", "via": None}]}
    ]
    rows = {row["url"]: row["problem"] for row in report["canonical"]}
    assert rows == {B + "/about": "non_200", B + "/docs": "redirect", B + "/docs/a": "chained"}
    assert report["canonical"][2] == {
        "url": B + "/docs/a", "canonical": B + "/docs", "problem": "chained",
        "canonical_status": 200, "canonical_error": None, "canonical_redirect": None,
        "canonical_canonical": B + "/old",
    }  # fmt: skip

    dup = report["duplicates"]
    assert dup["exact"] == [{"content_hash": "h-dup", "urls": [B + "/dup-a", B + "/dup-b"]}]
    # /dup-b is /dup-a's exact duplicate: not repeated among the near-duplicates.
    [near] = dup["near"]
    assert near["urls"] == [B + "/dup-a", B + "/near-a", B + "/near-b"]
    assert 0.9 <= near["min_similarity"] < 1.0
    assert dup["titles"] == {
        "duplicate": [{"title": "Title /docs", "urls": [B + "/docs", B + "/docs/a"]}],
        "missing": [{"url": B + "/deep/3"}],
    }
    assert dup["descriptions"] == {"duplicate": [], "missing": [{"url": B + "/docs/a"}]}

    depth = report["depth"]
    assert depth["max_depth"] == 4
    # 0: /; 1: the 8 pages it links and /new and /r3 (through redirects); 2: /docs/a
    # and /deep/2; then /deep/3, /deep/4, /deep/5.
    assert depth["distribution"] == {"0": 1, "1": 10, "2": 2, "3": 1, "4": 1, "5": 1}
    assert depth["unreachable"] == [B + "/other"]
    assert depth["too_deep"] == [{"url": B + "/deep/5", "depth": 5}]

    assert report["summary"] == {
        "urls": 27, "pages": 17, "links": 26, "broken_links": 3, "redirect_chains": 1,
        "redirect_loops": 1, "links_to_redirects": 4, "orphans": 1, "noindex": 1,
        "robots_blocked": 1, "canonical": 3, "exact_duplicate_groups": 1,
        "near_duplicate_groups": 1, "duplicate_titles": 1, "missing_titles": 1,
        "duplicate_descriptions": 0, "missing_descriptions": 1, "too_deep": 1,
    }  # fmt: skip
    json.dumps(report)  # the report is JSON as it is


def test_truncated_graph_skips_what_needs_the_whole_graph():
    graph = site_graph()
    graph.truncated = True
    report = audit(graph)
    assert report["graph_truncated"] is True
    assert report["skipped"] == ["orphans", "depth"] and report["sources_complete"] is False
    assert report["orphans"] is None and report["depth"] is None
    assert report["summary"]["orphans"] is None and report["summary"]["too_deep"] is None
    # What a node knows of itself is still reported.
    assert report["summary"]["broken_links"] == 3 and report["summary"]["noindex"] == 1
    text = audit_markdown(report)
    assert "The link graph was truncated: not checked: orphans, depth" in text
    assert "| orphans (in the sitemap, linked from no page) | not checked |" in text


def shuffled(graph: Graph, seed: int, links: bool = True) -> Graph:
    """The same graph, its nodes and pages inserted in another order, and each page's
    links too unless ``links`` is false (their order is the page's, not the recording's)."""
    rng = random.Random(seed)
    copy = Graph(start=graph.start, truncated=graph.truncated)
    urls = list(graph.nodes)
    rng.shuffle(urls)
    copy.nodes = {url: graph.nodes[url] for url in urls}
    sources = list(graph.links)
    rng.shuffle(sources)
    for source in sources:
        targets = list(graph.links[source].items())
        if links:
            rng.shuffle(targets)
        copy.links[source] = dict(targets)
    return copy


def test_the_same_graph_in_any_order_gives_the_same_report():
    graph = site_graph()
    expected = json.dumps(audit(graph))
    for seed in range(5):
        assert json.dumps(audit(shuffled(graph, seed))) == expected


def test_markdown_summary_lists_counts_and_rows():
    text = audit_markdown(audit(site_graph()))
    assert text.startswith(f"# Site audit: {B}/\n")
    assert "| broken links | 3 |" in text
    assert "| pages deeper than the maximum depth | 1 |" in text
    assert f"- {B}/missing (http_4xx), linked from 3 pages" in text
    assert f"- {B}/r1 -> {B}/r2 -> {B}/r3" in text
    assert f"- {B}/loop-a -> {B}/loop-b -> {B}/loop-a" in text


def test_depth_counts_redirect_hops_as_the_link_that_led_there():
    g = Graph(start=B + "/")
    page(g, "/", ["/a"])
    hop(g, "/a", "/b")
    hop(g, "/b", "/c")
    page(g, "/c", ["/d"])
    page(g, "/d", ["/"])  # a cycle back to the start
    assert distances(g) == {B + "/": 0, B + "/a": 1, B + "/b": 1, B + "/c": 1, B + "/d": 2}
    report = audit(g, max_depth=1)
    assert report["depth"]["distribution"] == {"0": 1, "1": 1, "2": 1}
    assert report["depth"]["too_deep"] == [{"url": B + "/d", "depth": 2}]
    assert report["redirects"]["chains"][0]["final"] == B + "/c"


def test_an_empty_graph_is_audited():
    report = audit(Graph(start=B + "/"))
    assert report["summary"]["pages"] == 0 and report["broken_links"] == []
    assert report["depth"]["distribution"] == {}
