"""Sitemaps: read in the page workers, gzipped or not, indexes followed, size capped."""

from __future__ import annotations

import asyncio
import gzip

import pytest

from crawlyx.content.sitemap import NotASitemap, read_sitemap
from crawlyx.content.workers import PageWorkers
from tests.sites.site import QuietHandler, Serving, _sitemap


def _read_in_workers(body: bytes, max_bytes: int):
    workers = PageWorkers(1, main_content=True, links="inline")
    try:
        return asyncio.run(workers.read_sitemap(body, max_bytes))
    finally:
        workers.close()


def test_a_gzipped_sitemap_is_read_in_a_worker():
    urls = [f"http://127.0.0.1:9/p/{i}?a=1&b=2" for i in range(3)]
    body = gzip.compress(_sitemap("urlset", urls).encode())
    assert _read_in_workers(body, 1 << 20) == ("urlset", urls)
    index = _sitemap("sitemapindex", ["http://127.0.0.1:9/more.xml"]).encode()
    assert read_sitemap(index, 0) == ("sitemapindex", ["http://127.0.0.1:9/more.xml"])


def test_an_unreadable_sitemap_says_why():
    big = gzip.compress(_sitemap("urlset", ["http://127.0.0.1:9/" + "x" * 2000]).encode())
    with pytest.raises(NotASitemap, match="bad or oversized gzip"):
        _read_in_workers(big, 1000)
    with pytest.raises(NotASitemap, match="bad or oversized gzip"):
        read_sitemap(b"\x1f\x8b\x08 not gzip at all", 1 << 20)
    with pytest.raises(NotASitemap, match="not a sitemap document"):
        read_sitemap(b"not xml at all", 1 << 20)


B = "http://127.0.0.1:9"
RSS = f"""<?xml version="1.0"?><rss version="2.0"><channel><link>{B}/</link>
<atom:link xmlns:atom="http://www.w3.org/2005/Atom" href="{B}/feed" rel="self"/>
<item><title>A</title><link>{B}/post-a</link></item><item><guid>no link</guid></item>
</channel></rss>"""
ATOM = f"""<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><link href="{B}/"/>
<entry><link rel="edit" href="{B}/edit/b"/><link href="{B}/post-b"/></entry>
<entry><link rel="alternate" type="text/html" href="{B}/post-c"/></entry></feed>"""


def test_text_sitemaps_and_feeds_list_their_pages():
    # The sitemap protocol's other forms: a URL a line (after a byte order mark), and feeds.
    text = f"\ufeff{B}/a\n{B}/b\r\n\n".encode()
    assert read_sitemap(text, 0) == ("urlset", [f"{B}/a", f"{B}/b"])
    assert read_sitemap(RSS.encode(), 0) == ("urlset", [f"{B}/post-a"])
    assert read_sitemap(ATOM.encode(), 0) == ("urlset", [f"{B}/post-b", f"{B}/post-c"])
    # A page of text served as the sitemap lists nothing.
    for body in (b"Not found", b"Moved: see http://127.0.0.1:9/ for more\nor ask us\nthanks"):
        with pytest.raises(NotASitemap, match="not a sitemap document"):
            read_sitemap(body, 1 << 20)


class _GzippedSitemapHandler(QuietHandler):
    def do_GET(self):  # noqa: N802
        b = f"http://127.0.0.1:{self.server.server_address[1]}"
        documents = {
            "/robots.txt": (
                "text/plain",
                f"User-agent: *\nAllow: /\nSitemap: {b}/index.xml.gz\nSitemap: {b}/pages.txt\n"
                f"Sitemap: {b}/feed.xml\n",
            ),
            "/index.xml.gz": ("application/x-gzip", _sitemap("sitemapindex", [b + "/pages.gz"])),
            "/pages.gz": ("application/x-gzip", _sitemap("urlset", [b + "/a", b + "/b"])),
            "/pages.txt": ("text/plain", f"{b}/c\n"),
            "/feed.xml": ("application/rss+xml", RSS.replace(B, b).replace("/post-a", "/d")),
            "/elsewhere.xml": ("application/xml", _sitemap("urlset", ["http://localhost/a"])),
        }
        if self.path in documents:
            ctype, text = documents[self.path]
            body = gzip.compress(text.encode()) if ctype.endswith("gzip") else text
            return self.reply(200, body, ctype)
        if self.path in ("/", "/a", "/b", "/c", "/d"):
            return self.reply(200, f"<html><body><h1>Page {self.path}</h1></body></html>")
        return self.reply(404, "not found")


def test_a_crawl_reads_gzipped_sitemaps_in_the_workers(crawl):
    # Robots.txt names a gzipped sitemap index, whose gzipped sitemap lists two pages that
    # no page links to, a text sitemap and a feed, which list one each.
    with Serving(_GzippedSitemapHandler) as site:
        result = crawl(f"start={site.base}/")
    assert result.returncode == 0, result.log[-2000:]
    assert sorted(result.urls) == [f"{site.base}/{path}" for path in ("", "a", "b", "c", "d")]
    assert result.stat("crawlyx/workers/sitemaps") == "4"  # the index and three sitemaps


def test_a_start_url_that_is_a_sitemap_or_a_feed_starts_from_its_pages(crawl, tmp_path):
    # A user may give the site's sitemap (an index, gzipped), a text sitemap or a feed as
    # the start: its pages are crawled, and it is no page that failed.
    with Serving(_GzippedSitemapHandler) as site:
        for path, pages in (
            ("index.xml.gz", ["a", "b"]),
            ("pages.txt", ["c"]),
            ("feed.xml", ["d"]),
        ):
            errors = tmp_path / f"errors-{pages[0]}.jsonl"
            result = crawl(f"start={site.base}/{path}", "sitemap=0", f"errors={errors}")
            assert result.returncode == 0, result.log[-2000:]
            assert sorted(result.urls) == [f"{site.base}/{page}" for page in pages]
            assert not errors.exists() or not errors.read_text()
        # One of another host's pages: nothing to crawl, and the log says why.
        result = crawl(f"start={site.base}/elsewhere.xml", "sitemap=0")
        assert result.returncode == 0 and result.urls == []
        assert "The start sitemap lists no URL of the crawl's scope" in result.log
