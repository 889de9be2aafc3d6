"""Reading a sitemap document: gunzipped if need be, parsed, its locations listed.

The sitemap protocol's three forms are read: the XML ``urlset`` (and ``sitemapindex``), a
text file of one URL per line, and an RSS 2.0, RSS 1.0 or Atom feed (its entries' links).

Runs in a worker process (see :mod:`crawlyx.content.workers`): a sitemap may be 10 MiB of XML,
gzipped, and reading it would otherwise hold up the crawl process. A plain function of
its arguments, so it pickles and runs anywhere.

Read with lxml as Scrapy's own sitemap reader reads (recovering, no entities resolved,
no DTD loaded), without importing Scrapy: the page workers would carry it for that alone
(27 MB each).
"""

from __future__ import annotations

import zlib
from io import BytesIO

import lxml.etree

# What a sitemap is served as: XML, a feed, gzipped, plain text.
SITEMAP_TYPES = frozenset(
    {
        "application/xml",
        "text/xml",
        "application/rss+xml",
        "application/atom+xml",
        "application/rdf+xml",
        "application/gzip",
        "application/x-gzip",
        "text/plain",
    }
)

_GZIP_MAGIC = b"\x1f\x8b\x08"
_CHUNK = 1 << 16


class NotASitemap(ValueError):
    """The document cannot be read as a sitemap; the message says why."""


def read_sitemap(body: bytes, max_bytes: int) -> tuple[str, list[str]]:
    """The document's type (``urlset`` or ``sitemapindex``; a text sitemap or a feed is a
    ``urlset``) and the locations it lists, stripped, in order. A gzipped document is
    gunzipped up to ``max_bytes`` (0: no cap)."""
    if body[:3] == _GZIP_MAGIC:
        try:
            body = gunzip(body, max_bytes)
        except Exception as exc:
            raise NotASitemap("bad or oversized gzip") from exc
    if not body.lstrip(_LEADING).startswith(b"<"):
        return "urlset", _text_locations(body)
    try:
        return _locations(body)
    except Exception as exc:
        raise NotASitemap("not a sitemap document") from exc


_LEADING = b"\xef\xbb\xbf \t\r\n"  # a byte order mark, blank lines


def _text_locations(body: bytes) -> list[str]:
    """The URLs of a text sitemap, one a line. Most of its lines must be URLs: a page of
    text (a "not found" served as the sitemap) is none."""
    lines = [line.strip() for line in body.decode("utf-8-sig", "replace").splitlines()]
    lines = [line for line in lines if line]
    urls = [line for line in lines if line.startswith(("http://", "https://"))]
    if not urls or len(urls) * 2 < len(lines):
        raise NotASitemap("not a sitemap document")
    return urls


def gunzip(data: bytes, max_bytes: int) -> bytes:
    """``data`` gunzipped, at most ``max_bytes`` of it (0: no cap; ValueError past it).
    A truncated or corrupt end keeps what came before it, as browsers do."""
    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out, size = [], 0
    for at in range(0, len(data), _CHUNK):
        try:
            chunk = inflate.decompress(
                data[at : at + _CHUNK], max_bytes + 1 - size if max_bytes else 0
            )
        except zlib.error:
            if size:
                break
            raise
        size += len(chunk)
        if max_bytes and size > max_bytes:
            raise ValueError(f"gunzipped past {max_bytes} bytes")
        out.append(chunk)
        if inflate.eof:
            break
    return b"".join(out)


def _locations(body: bytes) -> tuple[str, list[str]]:
    events = lxml.etree.iterparse(
        BytesIO(body),
        events=("start", "end"),
        recover=True,
        remove_comments=True,
        resolve_entities=False,
        remove_blank_text=True,
        collect_ids=False,
        remove_pis=True,
    )
    _, root = next(events)
    kind, locations = _name(root), []
    if kind in _FEEDS:
        return "urlset", _feed_links(events)
    for event, element in events:
        if event != "end" or _name(element) not in ("url", "sitemap"):
            continue
        for child in element:
            if _name(child) == "loc":
                locations.append((child.text or "").strip())
                break
        element.clear()
    return kind, locations


_FEEDS = ("rss", "RDF", "feed")  # RSS 2.0, RSS 1.0, Atom


def _feed_links(events) -> list[str]:
    """The link of each entry of a feed: an RSS item's ``<link>`` text, an Atom entry's
    ``<link href>`` (its ``alternate``, the default relation)."""
    links = []
    for event, element in events:
        if event != "end" or _name(element) not in ("item", "entry"):
            continue
        for child in element:
            if _name(child) != "link":
                continue
            link = (child.text or "").strip()
            if not link and child.get("rel", "alternate") == "alternate":
                link = (child.get("href") or "").strip()
            if link:
                links.append(link)
                break
        element.clear()
    return links


def _name(element) -> str:
    tag = element.tag
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""
