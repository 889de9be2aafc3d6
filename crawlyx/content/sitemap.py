"""Reading a sitemap document: gunzipped if need be, parsed, its locations listed.

Runs in a worker process (see :mod:`crawlyx.content.workers`): a sitemap may be 10 MiB of XML,
gzipped, and reading it would otherwise hold up the crawl process. A plain function of
its arguments, so it pickles and runs anywhere.
"""

from __future__ import annotations

from scrapy.utils.gz import gunzip
from scrapy.utils.sitemap import Sitemap

_GZIP_MAGIC = b"\x1f\x8b\x08"


class NotASitemap(ValueError):
    """The document cannot be read as a sitemap; the message says why."""


def read_sitemap(body: bytes, max_bytes: int) -> tuple[str, list[str]]:
    """The document's type (``urlset`` or ``sitemapindex``) and the locations it lists,
    stripped, in order. A gzipped document is gunzipped up to ``max_bytes`` (0: no cap)."""
    if body[:3] == _GZIP_MAGIC:
        try:
            body = gunzip(body, max_size=max_bytes)
        except Exception as exc:
            raise NotASitemap("bad or oversized gzip") from exc
    try:
        sitemap = Sitemap(body)
        return sitemap.type, [entry.get("loc", "").strip() for entry in sitemap]
    except Exception as exc:
        raise NotASitemap("not a sitemap document") from exc
