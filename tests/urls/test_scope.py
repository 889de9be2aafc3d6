"""A crawl stays in the folder it was started in: a host that publishes several books and
its API docs side by side, crawled from one book's folder, gives that book alone. The
origin with ``-a scope=origin``, a path of the user's with ``-a scope=/path/``; links out
of the folder stay in the link graph for the audit, never fetched."""

from __future__ import annotations

import json
import re
import threading
from collections import Counter

import pytest

from crawlyx.arguments import ArgumentError, CrawlArgs
from crawlyx.urls.scope import root_of
from tests.sites.site import QuietHandler, Serving

# path -> the paths it links (every page links the next book and the API, as a docs
# host's menu does); a path ending in "/" is its folder's index page.
LINKS = {
    "/book/": ["/book/intro.html", "/book/ch1/", "/std/index.html", "/other/", "/book"],
    "/book/intro.html": ["/book/ch1/", "/book/gone.html", "/other/missing.html"],
    "/book/ch1/": ["/book/ch1/part.html", "/book/", "/std/index.html"],
    "/book/ch1/part.html": ["../intro.html", "/bookshelf.html"],
    "/other/": ["/other/page.html", "/book/"],
    "/other/page.html": ["/std/index.html"],
    "/std/index.html": ["/std/vec.html"],
    "/std/vec.html": [],
    "/bookshelf.html": [],
    "/": ["/book/", "/other/", "/std/index.html"],
}
SITEMAP_LISTS = ["/book/listed.html", "/std/listed.html"]
REDIRECTS = {"/latest/": "/book/", "/book": "/book/"}
BOOK = {"/book/", "/book/intro.html", "/book/ch1/", "/book/ch1/part.html", "/book/listed.html"}


class BooksSite(Serving):
    def __init__(self):
        self.counts: Counter[str] = Counter()
        lock, counts = threading.Lock(), self.counts
        extra = {path: [] for path in SITEMAP_LISTS}

        class Handler(QuietHandler):
            def do_GET(self):  # noqa: N802
                path = self.path.split("?")[0]
                with lock:
                    counts[path] += 1
                base = f"http://127.0.0.1:{self.server.server_address[1]}"
                if path == "/robots.txt":
                    return self.reply(200, f"Sitemap: {base}/sitemap.xml\n", "text/plain")
                if path == "/sitemap.xml":
                    urls = "".join(f"<url><loc>{base}{p}</loc></url>" for p in SITEMAP_LISTS)
                    body = f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}'
                    return self.reply(200, body + "</urlset>", "application/xml")
                if path in REDIRECTS:
                    return self.reply(301, headers={"Location": REDIRECTS[path]})
                links = {**LINKS, **extra}.get(path)
                if links is None:
                    return self.reply(404, "<html><body><h1>Not found</h1></body></html>")
                anchors = "".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
                title = f"Page {path}"
                words = " ".join(f"word{i}" for i in range(40))
                body = (
                    f"<!doctype html><html><head><title>{title}</title></head><body>"
                    f"<main><h1>{title}</h1><p>{words}</p><ul>{anchors}</ul></main></body></html>"
                )
                return self.reply(200, body)

        super().__init__(Handler)


def fetched(site: BooksSite) -> set[str]:
    return {path for path in site.counts if path not in ("/robots.txt", "/sitemap.xml")}


def paths(result, base: str) -> set[str]:
    return {url.removeprefix(base) or "/" for url in result.urls}


JOB_LINE = re.compile(r"crawlyx: job (\S+) \(resume with -a job=\1\), scope (\S+)")


def test_a_crawl_stays_in_the_folder_it_was_started_in(crawl, tmp_path):
    with BooksSite() as site:
        audit = tmp_path / "audit.json"
        result = crawl(f"start={site.base}/book/", f"audit={audit}")
        assert result.returncode == 0, result.log[-3000:]
        # The book's pages (its folder's own page once: /book and /book/ are one), the
        # one its sitemap lists in the folder; no sibling book, API page or shelf.
        assert sorted(paths(result, site.base)) == sorted({p.rstrip("/") for p in BOOK}), (
            result.log[-3000:]
        )
        assert fetched(site) <= BOOK | {"/book/gone.html", "/book"}
        assert site.counts["/book/gone.html"] == 1
        assert not fetched(site) & {"/std/index.html", "/other/", "/std/listed.html"}
        assert JOB_LINE.search(result.log).group(2) == f"{site.base}/book/"
        # Links out of the folder are the site's: in the graph, never fetched.
        report = json.loads(audit.read_text())
        broken = {row["url"].removeprefix(site.base) for row in report["broken_links"]}
        assert broken == {"/book/gone.html"}
        # An orphan of the book (listed, never linked); not one of another part of the site.
        orphans = [row["url"].removeprefix(site.base) for row in report["orphans"]]
        assert orphans == ["/book/listed.html"]


def test_scope_origin_crawls_the_host(crawl):
    with BooksSite() as site:
        result = crawl(f"start={site.base}/book/", "scope=origin")
        assert result.returncode == 0, result.log[-3000:]
        found = paths(result, site.base)
        assert {"/std/index.html", "/std/vec.html", "/other", "/bookshelf.html"} <= found
        assert {"/std/listed.html", "/book/listed.html"} <= found
        assert JOB_LINE.search(result.log).group(2) == f"{site.base}/"


def test_scope_a_path_of_the_users(crawl):
    with BooksSite() as site:
        result = crawl(f"start={site.base}/std/index.html", "scope=/std")
        assert result.returncode == 0, result.log[-3000:]
        assert paths(result, site.base) == {"/std/index.html", "/std/vec.html", "/std/listed.html"}


def test_the_start_urls_redirects_move_the_scope(crawl):
    with BooksSite() as site:
        result = crawl(f"start={site.base}/latest/")
        assert result.returncode == 0, result.log[-3000:]
        assert paths(result, site.base) == {p.rstrip("/") for p in BOOK}
        assert JOB_LINE.search(result.log).group(2) == f"{site.base}/latest/"
        assert f"crawlyx: scope {site.base}/book/ (the start URL redirects)" in result.log


@pytest.mark.parametrize(
    "start, scope, root",
    [
        ("https://h.example/guide/", None, "https://h.example/guide/"),
        ("https://h.example/guide/intro.html?x=1", None, "https://h.example/guide/"),
        ("https://h.example/guide", None, "https://h.example/"),
        ("https://h.example/", "folder", "https://h.example/"),
        ("https://h.example/a/b/", "origin", "https://h.example/"),
        ("https://h.example/a/b/", "/a", "https://h.example/a/"),
        ("https://h.example/a/b/", "/A%7e/", "https://h.example/A~/"),
    ],
)
def test_the_root_of_a_scope(start, scope, root):
    args = CrawlArgs.parse(start=start, scope=scope)
    assert root_of(args.start, args.scope) == root


@pytest.mark.parametrize("scope", ["elsewhere", "docs/", "//evil.example/", "/a?b", "https://x/"])
def test_a_bad_scope_is_refused(scope):
    with pytest.raises(ArgumentError, match="^scope: "):
        CrawlArgs.parse(start="https://h.example/", scope=scope)
