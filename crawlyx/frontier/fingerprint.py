"""Request fingerprints over the normalized URL.

The scheduler deduplicates on fingerprints, before any downloader middleware runs,
so normalization has to take effect here: two URLs that name the same resource
(query order, tracking parameters, trailing slash, default port...) get one
fingerprint, whoever created the request (the spider, a redirect, a retry).
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


def normalized_fingerprint(url: str, method: str = "GET", body: bytes = b"") -> str:
    """:func:`url_fingerprint` of a URL that is already normalized."""
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
