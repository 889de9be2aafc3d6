"""The job's link graph: recorded in Redis by the crawl, loaded back as a Graph."""

from __future__ import annotations

import subprocess
import uuid

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from crawlyx import settings as project
from crawlyx.addon import Addon
from crawlyx.content.page import ANCHOR_MAX_CHARS, analyze
from crawlyx.frontier.state import State
from crawlyx.graph.model import Node
from crawlyx.graph.recorder import GraphRecorder
from crawlyx.graph.store import GraphStore, Record
from crawlyx.urls.normalize import normalize_url
from tests.conftest import (
    Gate,
    crawl_command,
    crawl_env,
    free_port,
    lease_owners,
    past_the_start,
    read_items,
)
from tests.sites.site import QuietHandler, Serving, SiteServer

B = "http://site.test"


@pytest.fixture
def store(redis_client):
    state = State(redis_client, f"graph-{uuid.uuid4().hex[:8]}")
    yield GraphStore(state, max_edges=1000)
    state.delete_all()


def page(url, depth=None, links=None, **fields):
    if depth is not None:
        fields["p"] = depth
    return Record(B + url, fields, {B + t: a for t, a in (links or {}).items()})


def edges(graph) -> set[tuple[str, str]]:
    return {(s[len(B) :], t[len(B) :]) for s, targets in graph.links.items() for t in targets}


# -- the store ---------------------------------------------------------------------------


def test_the_same_links_recorded_again_change_nothing(store, redis_client):
    assert store.record([page("/a", 1, {"/b": "Bee", "/c": "Sea"})]) == (2, False)
    before = redis_client.hgetall(store.links_key)
    # The same page again (another process, a refetch), even with other links: no-op.
    assert store.record([page("/a", 1, {"/b": "Bee", "/c": "Sea"})]) == (0, False)
    assert store.record([page("/a", 1, {"/b": "other", "/d": "Dee"})]) == (0, False)
    assert redis_client.hgetall(store.links_key) == before
    assert redis_client.hget(store.meta_key, "edges") == b"2"
    graph = store.load()
    assert graph.links == {B + "/a": {B + "/b": "Bee", B + "/c": "Sea"}}
    assert set(graph.nodes) == {B + "/a", B + "/b", B + "/c"}  # linked URLs are nodes


def test_a_links_usual_text_is_stored_once(store, redis_client):
    nav = {"/docs": "Documentation", "/blog": "Blog", "/img": ""}
    store.record([page("/a", links=nav), page("/b", links={**nav, "/blog": "Our \1blog"})])
    graph = store.load()
    assert graph.links[B + "/a"] == {
        B + "/docs": "Documentation",
        B + "/blog": "Blog",
        B + "/img": "",
    }
    assert graph.links[B + "/b"][B + "/blog"] == "Our blog"  # its own text, not the label
    assert graph.links[B + "/b"][B + "/docs"] == "Documentation"
    # /b's "Documentation" is one byte: its target's label.
    packed = redis_client.hget(store.links_key, redis_client.hget(store.ids_key, B + "/b"))
    assert b"Documentation" not in packed and b"Our blog" in packed


def test_cycles_and_self_links_are_kept(store):
    store.record([page("/a", links={"/b": "b"}), page("/b", links={"/a": "a", "/b": "me"})])
    graph = store.load()
    assert edges(graph) == {("/a", "/b"), ("/b", "/a"), ("/b", "/b")}
    assert set(graph.inlinks()[B + "/b"]) == {B + "/a", B + "/b"}


def test_depth_is_the_smallest_recorded(store):
    store.record([page("/x", 3)])
    store.record([page("/x", 1), page("/x", 2)])
    # No start URL recorded: the depths are the crawl's own.
    assert store.load().nodes[B + "/x"].depth == 1


def test_depth_is_the_shortest_link_distance_from_the_start(store):
    store.set_start(B + "/")
    store.record(
        [
            page("/", 0, {"/a": "", "/hop": ""}, f=1),
            page("/a", 1, {"/b": ""}, f=1),
            page("/b", 2, {"/c": "", "/a": ""}, f=1),
            page("/c", 3),  # the crawl met it at 3 first
            Record(B + "/hop", {"r": B + "/c", "s": 301}),  # a hop is not a click
            page("/sitemap-only", 1),  # the sitemap's depth, no link to it
        ]
    )
    depths = {url[len(B) :]: node.depth for url, node in store.load().nodes.items()}
    assert depths == {"/": 0, "/a": 1, "/hop": 1, "/b": 2, "/c": 1, "/sitemap-only": None}


def test_edges_stop_at_the_bound_and_the_graph_says_truncated(redis_client):
    store = GraphStore(State(redis_client, f"graph-{uuid.uuid4().hex[:8]}"), max_edges=5)
    try:
        assert store.record([page("/a", links={"/1": "", "/2": "", "/3": ""})]) == (3, False)
        assert store.record([page("/b", links={"/4": "", "/5": "", "/6": ""})]) == (2, True)
        assert store.record([page("/c", links={"/7": ""}), page("/d")]) == (0, True)
        graph = store.load()
        assert graph.truncated
        assert edges(graph) == {
            ("/a", "/1"),
            ("/a", "/2"),
            ("/a", "/3"),
            ("/b", "/4"),
            ("/b", "/5"),
        }
        assert B + "/6" not in graph.nodes and B + "/7" not in graph.nodes
        assert B + "/d" in graph.nodes  # outcomes are still recorded
    finally:
        store.state.delete_all()


def test_load_round_trips_every_node_field(store):
    signature = bytes(range(256)) * 2
    fields = {
        "s": 200, "f": 1, "c": B + "/canonical", "b": ["noindex", "nofollow"], "h": "ab" * 32,
        "t": "Tïtle / one", "d": "A \"quoted\" description", "p": 2, "m": 1, "e": "opted_out",
        "u": "The first paragraph.",
    }  # fmt: skip
    store.record([Record(B + "/page", fields, {B + "/x": "Ünïcode anchor"}, signature)])
    store.record([Record(B + "/moved", {"s": 308, "r": "https://elsewhere.test/x", "p": 1})])
    graph = store.load()
    assert graph.nodes[B + "/page"] == Node(
        url=B + "/page", status=200, error="opted_out", redirect=None, fetched=True,
        canonical=B + "/canonical", robots=("noindex", "nofollow"), content_hash="ab" * 32,
        signature=signature, title="Tïtle / one", description='A "quoted" description',
        depth=2, in_sitemap=True, summary="The first paragraph.",
    )  # fmt: skip
    assert graph.nodes[B + "/moved"] == Node(
        url=B + "/moved", status=308, redirect="https://elsewhere.test/x", depth=1
    )
    assert graph.links == {B + "/page": {B + "/x": "Ünïcode anchor"}}


def test_load_reads_in_batches(store, monkeypatch):
    monkeypatch.setattr(GraphStore, "SCAN_BATCH", 7)
    store.record([page(f"/{i}", 1, {f"/{i + 1}": str(i)}) for i in range(100)])
    graph = store.load()
    assert len(graph.nodes) == 101 and len(graph.links) == 100
    assert graph.links[B + "/42"] == {B + "/43": "42"}


def test_the_graph_keys_are_the_jobs(store, redis_client):
    store.record([page("/a", links={"/b": ""})])
    store.state.expire_all(600)
    assert all(0 < redis_client.ttl(key) <= 600 for key in store.keys if redis_client.exists(key))
    store.state.delete_all()  # what scrapy jobs --drop does
    assert not any(redis_client.exists(key) for key in store.keys)


# -- the crawl process's side ------------------------------------------------------------


def test_a_redis_outage_drops_the_batch_and_counts_it():
    settings = {name: value for name, value in vars(project).items() if name.isupper()}
    crawler = get_crawler(settings_dict=settings)
    crawler._apply_settings()
    recorder = GraphRecorder(crawler, 100)
    dead = redis.Redis(port=free_port(), retry=Retry(NoBackoff(), 0))
    recorder._store = GraphStore(State(dead, "down"), 100)
    recorder.pending = [page("/a", 1, {"/b": ""}), page("/b", 2)]
    recorder.flush()  # no exception: the crawl goes on
    assert recorder.pending == []
    assert crawler.stats.get_value("crawlyx/graph/record_failures") == 2
    assert crawler.stats.get_value("crawlyx/redis/errors") == 1


def test_the_graph_settings():
    settings = {name: value for name, value in vars(project).items() if name.isupper()}
    crawler = get_crawler(settings_dict={**settings, "CRAWLYX_GRAPH_ENABLED": False})
    assert crawler.crawlyx.graph is None
    crawler = get_crawler(settings_dict=settings)
    assert crawler.crawlyx.graph is crawler.crawlyx.graph  # one per crawl
    with pytest.raises(ValueError, match="CRAWLYX_GRAPH_MAX_EDGES"):
        Addon.check_settings(Settings({**settings, "CRAWLYX_GRAPH_MAX_EDGES": -1}))


def test_links_carry_their_first_anchor_text():
    html = f"""<html><body>
    <a href="/a"> </a><a href="/a">  Read <b>the</b>
      docs </a><a href="/a">later text</a>
    <a href="/logo"><img src="l.png" alt=" Our  logo "></a>
    <map><area href="/area" alt="Area"></map>
    <a href="/long">{"x" * 500}</a><a href="/bare"></a>
    </body></html>"""
    data = analyze(html, B + "/p", B)
    assert data["anchors"] == {
        B + "/a": "Read the docs",
        B + "/logo": "Our logo",
        B + "/area": "Area",
        B + "/long": "x" * ANCHOR_MAX_CHARS,
    }
    assert set(data["links"]) == {B + p for p in ("/a", "/logo", "/area", "/long", "/bare")}
    assert "neardup" not in data  # only when the graph asks for it
    assert len(analyze(html, B + "/p", B, neardup=True)["neardup"]) == 684  # 512 bytes, base64


def test_a_pages_links_are_the_same_whichever_page_of_its_folder_came_before():
    """Links are resolved once per folder of the site: the same href on a page elsewhere
    (or, for a bare query, on another page of the folder) still goes where it says."""
    hrefs = ["x.html", "../up.html", "/root", "?page=2", " ?q", "\x01?c", "//other.example/o",
             B + "/abs", "sub/./y/../z", "#top", "x.html?utm_medium=one", "/root?fbclid=2#f",
             "?utm_source=nav&page=3", "sub/?gclid=4&b=1&utm_term=t"]  # fmt: skip
    html = "<html><body>" + "".join(f'<a href="{h}">{i}</a>' for i, h in enumerate(hrefs))
    pages = [B + "/docs/a/one.html", B + "/docs/a/two.html?v=1", B + "/docs/b/three.html"]
    read = [set(analyze(html, url, B)["links"]) for url in pages * 2]
    for url, links in zip(pages * 2, read, strict=True):
        expected = {normalize_url(h.strip(), url) for h in hrefs if not h.startswith(("/", "#"))}
        assert links == {*expected, B + "/root"}
    assert B + "/docs/a/two.html?page=2" in read[1]
    assert B + "/docs/a/two.html?page=3" in read[1]
    assert B + "/docs/a/one.html?page=3" in read[0]
    assert read[0] != read[1] != read[2]  # the folder, and for a bare query the page


# -- crawls ------------------------------------------------------------------------------


def crawl_graph(redis_url, tmp_path, site, job, settings=None, processes=1):
    """Crawl ``site`` as job ``job`` with ``processes`` processes; (graph, items, logs).
    Several: each leases pages (the site holds them until then: see tests/conftest.py)."""
    settings = {"CRAWLYX_REDIS_URL": redis_url, **(settings or {})}
    gate = Gate(site, "respond", past_the_start) if processes > 1 else None
    procs, outs = [], []
    for i in range(processes):
        out = tmp_path / f"{job}-{i}.jsonl"
        agent = {"USER_AGENT": f"crawlyx-test-{i}"}
        command = crawl_command(
            out,
            f"start=http://127.0.0.1:{site.port}/start",
            f"job={job}",
            settings={**settings, **agent},
        )
        procs.append(
            subprocess.Popen(
                command, cwd=tmp_path, env=crawl_env(), stderr=subprocess.PIPE, text=True
            )
        )
        outs.append(out)
    client = redis.Redis.from_url(redis_url)
    try:
        every = gate is None or gate.open_when(
            lambda: len(lease_owners([client], job)) == processes
        )
        logs = [proc.communicate(timeout=180)[1] for proc in procs]
        assert every, f"not all {processes} processes leased a page"
        assert [proc.returncode for proc in procs] == [0] * processes, [log[-2000:] for log in logs]
        graph = GraphStore(State(client, job), 0).load()
    finally:
        client.close()
    return graph, [item for out in outs for item in read_items(out)], logs


def test_a_crawl_records_its_graph(redis_url, tmp_path):
    # Linked from the home page: a redirect to the start page (claimed before anything
    # links to it), a redirect loop, a redirect off the crawl's origin.
    away = f"http://127.0.0.2:{free_port()}/outside"  # refused: never requested
    redirects = {"/back-home": "/", "/loop-a": "/loop-b", "/loop-b": "/loop-a", "/away": away}
    with SiteServer(redirects=redirects) as site:
        graph, items, _ = crawl_graph(redis_url, tmp_path, site, f"g-{uuid.uuid4().hex[:6]}")
    base = site.base
    nodes = {url[len(base) :]: node for url, node in graph.nodes.items()}
    links = {
        s[len(base) :]: {t[len(base) :]: a for t, a in ts.items()} for s, ts in graph.links.items()
    }
    inlinks = {t[len(base) :]: {s[len(base) :] for s in ss} for t, ss in graph.inlinks().items()}
    assert graph.start == base + "/" and not graph.truncated
    # Every hop where it happens, its target claimed already or not.
    assert (nodes["/back-home"].status, nodes["/back-home"].redirect) == (302, base + "/")
    assert (nodes["/old"].status, nodes["/old"].redirect) == (301, base + "/new")
    assert (nodes["/redirect-me"].status, nodes["/redirect-me"].redirect) == (302, base + "/about")
    assert not nodes["/old"].fetched and nodes["/new"].fetched
    assert (nodes["/loop-a"].redirect, nodes["/loop-b"].redirect) == (
        base + "/loop-b",
        base + "/loop-a",
    )
    assert nodes["/loop-a"].error == nodes["/loop-b"].error == "trap"
    assert (nodes["/away"].redirect, nodes["/away"].error) == (away, "out_of_scope")
    assert away not in graph.nodes  # off the origin: not part of the graph
    # Cycles, and anchor texts (the fixture's are the hrefs as written).
    assert links["/cycle/a"] == {"/cycle/b": "/cycle/b"}
    assert links["/cycle/b"] == {"/cycle/a": "/cycle/a", "/cycle/b": "/cycle/b/"}
    assert links["/"]["/~user/page"] == "/%7Euser/page"  # the first link to it
    # In-links from the recorded edges: a page the sitemap lists too is linked all the same.
    assert nodes["/docs/intro?a=1&b=2"].in_sitemap
    assert inlinks["/docs/intro?a=1&b=2"] == {"/", "/about"}
    assert nodes["/orphan"].in_sitemap and nodes["/orphan"].fetched
    assert "/orphan" not in inlinks and nodes["/orphan"].depth is None
    assert not nodes["/about"].in_sitemap
    # Depth: the shortest link distance from the start.
    assert [nodes[p].depth for p in ("/", "/about", "/deep/1", "/deep/4", "/cycle/b")] == [
        0,
        1,
        1,
        4,
        2,
    ]
    # Failed and skipped URLs, and a response that is not a page.
    assert (nodes["/missing"].error, nodes["/missing"].status) == ("http_4xx", 404)
    assert nodes["/private/secret"].error == "robots_disallowed"
    assert (nodes["/file.pdf"].status, nodes["/file.pdf"].fetched) == (200, False)
    # Every page emitted is a fetched node, with what its item says.
    fetched = {url for url, node in graph.nodes.items() if node.fetched}
    assert fetched == {item["url"] for item in items} == site.expected_pages()
    for item in items:
        node = graph.nodes[item["url"]]
        assert (node.status, node.title, node.description) == (
            200,
            item["title"],
            item["description"],
        )
        assert node.content_hash == item["content_hash"]
        assert len(node.signature) == 512


class SmallSite(QuietHandler):
    """Four pages, one of them kept out of the output by its robots meta tag."""

    PAGES = {
        "/": ["/a", "/b", "/noindex"],
        "/a": ["/", "/b"],
        "/b": ["/a"],
        "/noindex": ["/a"],
    }

    CANONICAL = {
        "/a": '<link rel="canonical" href="/a?utm_source=x">',
        "/b": '<link rel="canonical" href="https://Elsewhere.example/b">',
    }

    def do_GET(self):  # noqa: N802
        links = self.PAGES.get(self.path)
        if links is None:
            return self.reply(404, "not found")
        meta = '<meta name="robots" content="noindex">' if self.path == "/noindex" else ""
        meta += self.CANONICAL.get(self.path, "")
        anchors = "".join(f'<a href="{link}">to {link}</a>' for link in links)
        self.reply(
            200, f"<html><head>{meta}<title>{self.path}</title></head><body>{anchors}</body></html>"
        )


def test_opted_out_pages_are_fetched_and_a_full_graph_says_truncated(redis_url, tmp_path):
    job = f"g-{uuid.uuid4().hex[:6]}"
    out = tmp_path / "pages.jsonl"
    settings = {"CRAWLYX_REDIS_URL": redis_url, "CRAWLYX_GRAPH_MAX_EDGES": 5}
    with Serving(SmallSite) as site:
        command = crawl_command(out, f"start={site.base}/", f"job={job}", settings=settings)
        proc = subprocess.run(
            command, cwd=tmp_path, env=crawl_env(), capture_output=True, text=True, timeout=120
        )
    assert proc.returncode == 0, proc.stderr[-2000:]
    client = redis.Redis.from_url(redis_url)
    try:
        graph = GraphStore(State(client, job), 0).load()
    finally:
        client.close()
    noindex = graph.nodes[site.base + "/noindex"]
    assert noindex.fetched and "noindex" in noindex.robots and noindex.error == "opted_out"
    assert site.base + "/noindex" not in {item["url"] for item in read_items(out)}
    assert graph.nodes[site.base + "/a"].robots == ()
    # Canonicals, normalized, on the origin or not.
    assert graph.nodes[site.base + "/a"].canonical == site.base + "/a"
    assert graph.nodes[site.base + "/b"].canonical == "https://elsewhere.example/b"
    # 7 links on the pages, 5 kept.
    assert graph.truncated and sum(map(len, graph.links.values())) == 5
    assert "'crawlyx/graph/truncated': 1" in proc.stderr


COMPARED = ("status", "error", "redirect", "fetched", "canonical", "robots", "signature",
            "title", "description", "depth", "in_sitemap")  # fmt: skip


def test_two_processes_build_the_graph_one_process_builds(redis_url, tmp_path):
    # Two requests at a time per host, slow pages: both processes get a share.
    slow = {"CRAWLYX_WINDOW_MIN": 1, "CRAWLYX_WINDOW_START": 2, "CRAWLYX_WINDOW_MAX": 2}
    with SiteServer(generated=150, latency=0.1) as site:
        one, _, _ = crawl_graph(redis_url, tmp_path, site, f"g1-{uuid.uuid4().hex[:6]}")
        two, items, _ = crawl_graph(
            redis_url, tmp_path, site, f"g2-{uuid.uuid4().hex[:6]}", slow, 2
        )
        shares = {agent: len(rids) for agent, rids in site.agents.items() if "-1" in agent}
    assert shares and all(shares.values()), site.agents.keys()  # the second process worked
    assert {item["url"] for item in items} == site.expected_pages()
    assert (one.start, one.truncated, one.links) == (two.start, two.truncated, two.links)
    assert set(one.nodes) == set(two.nodes)
    for url, node in one.nodes.items():
        assert [getattr(node, f) for f in COMPARED] == [
            getattr(two.nodes[url], f) for f in COMPARED
        ], url
        # Boilerplate is dropped by what each process has seen: hashes may differ, not be missing.
        assert (node.content_hash is None) == (two.nodes[url].content_hash is None)
