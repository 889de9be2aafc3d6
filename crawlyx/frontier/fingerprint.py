"""Request fingerprints over the normalized URL.

The scheduler deduplicates on fingerprints, before any downloader middleware runs,
so normalization has to take effect here: two URLs that name the same resource
(query order, tracking parameters, trailing slash, default port...) get one
fingerprint, whoever created the request (the spider, a redirect, a retry). A folder's
index file is the folder's page: ``/docs/index.html`` and ``/docs/`` are one page,
fetched once, under whichever of the two the crawl met first (the URL is kept as
written: a server may serve only one of them).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from crawlyx.urls.normalize import normalize_url

if TYPE_CHECKING:  # the page workers fingerprint links and need no Scrapy
    from scrapy import Request


def url_fingerprint(url: str, method: str = "GET", body: bytes = b"") -> str:
    """The hex fingerprint of a request for ``url``; unparseable URLs keep their raw form."""
    try:
        url = normalize_url(url)
    except ValueError:
        pass
    return normalized_fingerprint(url, method, body)


INDEX_FILES = ("index.html", "index.htm")


def folder_page(url: str) -> str:
    """The normalized ``url`` of a folder's index file as its folder's: "/docs/index.html"
    is "/docs" (normalized, a folder has no trailing slash), "/index.html" is "/"."""
    head, sep, query = url.partition("?")
    folder, _, name = head.rpartition("/")
    if name not in INDEX_FILES:
        return url
    if "/" not in folder.partition("://")[2]:
        folder += "/"  # the site's root
    return folder + sep + query


def normalized_fingerprint(url: str, method: str = "GET", body: bytes = b"") -> str:
    """:func:`url_fingerprint` of a URL that is already normalized."""
    if "/index.htm" in url:
        url = folder_page(url)
    digest = hashlib.sha1(f"{method} {url}\n".encode())
    if body:
        digest.update(body)
    return digest.hexdigest()


class Fingerprinter:
    """Scrapy's ``REQUEST_FINGERPRINTER_CLASS`` interface over :func:`url_fingerprint`."""

    def __init__(self) -> None:
        self._cache: WeakKeyDictionary[Request, bytes] = WeakKeyDictionary()

    @classmethod
    def from_crawler(cls, crawler) -> Fingerprinter:
        return cls()

    def fingerprint(self, request: Request) -> bytes:
        fp = self._cache.get(request)
        if fp is None:
            fp = bytes.fromhex(url_fingerprint(request.url, request.method, request.body))
            self._cache[request] = fp
        return fp
