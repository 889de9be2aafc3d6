"""Sitemaps: read in the page workers, gzipped or not, indexes followed, size capped."""

from __future__ import annotations

import asyncio
import gzip

import pytest

from crawlyx.content.sitemap import NotASitemap, read_sitemap
from crawlyx.content.workers import PageWorkers
from tests.site import QuietHandler, Serving, _sitemap


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


class _GzippedSitemapHandler(QuietHandler):
    def do_GET(self):  # noqa: N802
        b = f"http://127.0.0.1:{self.server.server_address[1]}"
        documents = {
            "/robots.txt": ("text/plain", f"User-agent: *\nAllow: /\nSitemap: {b}/index.xml.gz\n"),
            "/index.xml.gz": ("application/x-gzip", _sitemap("sitemapindex", [b + "/pages.gz"])),
            "/pages.gz": ("application/x-gzip", _sitemap("urlset", [b + "/a", b + "/b"])),
        }
        if self.path in documents:
            ctype, text = documents[self.path]
            body = gzip.compress(text.encode()) if ctype.endswith("gzip") else text
            return self.reply(200, body, ctype)
        if self.path in ("/", "/a", "/b"):
            return self.reply(200, f"<html><body><h1>Page {self.path}</h1></body></html>")
        return self.reply(404, "not found")


def test_a_crawl_reads_gzipped_sitemaps_in_the_workers(crawl):
    # Robots.txt names a gzipped sitemap index; its gzipped sitemap lists two pages that
    # no page links to.
    with Serving(_GzippedSitemapHandler) as site:
        result = crawl(f"start={site.base}/")
    assert result.returncode == 0, result.log[-2000:]
    assert sorted(result.urls) == [f"{site.base}/", f"{site.base}/a", f"{site.base}/b"]
    assert result.stat("crawlyx/workers/sitemaps") == "2"  # the index and its sitemap
