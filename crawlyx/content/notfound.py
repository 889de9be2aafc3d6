"""The site's not-found page, for a server that answers 200 with it (a "soft 404").

A server that answers every unknown URL with its not-found page and a 200 makes each of
them a page: a broken link is then no broken link to the audit, the page is written as
content, and the relative links of its template ("docs/", "blog/") resolve under each
unknown URL to more unknown URLs, for ever (a template of three such links made 5,250
"pages" of one probe site before the path rules stopped it).

So each process asks, once per crawl and before it reads its first page, for a URL of
the crawl's origin that no site has (:data:`PROBE` and a random token), without following
a redirect. A 404 (most servers) or a redirect says nothing more is needed. A 200 is the
site's not-found page: it is read like any page, and a page read later with the same
title and the same words (:data:`SIMILARITY` of them shared; link targets aside, which
differ with each address the template is served at) is that page under another address. The
spider records it as ``http_4xx`` (detail: a soft 404), neither writes it nor follows its
links. ``CRAWLYX_SOFT404_PROBE=false`` turns the probe off. Stats:
``crawlyx/soft404/probed``, ``crawlyx/soft404/found`` (the site answers 200),
``crawlyx/soft404/pages``.
"""

from __future__ import annotations

import asyncio
import re
import secrets
from collections import Counter

from scrapy import Request
from scrapy.http import HtmlResponse

PROBE = "/crawlyx-not-found-"  # and a random token: a path no site has
SIMILARITY = 0.8


class NotFound:
    """The not-found page of the crawl's origin, asked for once (see above). ``read``: an
    async function reading a response into a page (the spider's workers)."""

    def __init__(self, crawler, read):
        self.crawler = crawler
        self.read = read
        self.page: asyncio.Future | None = None  # of the page, or None: no soft 404

    async def matches(self, origin: str, page: dict) -> bool:
        """``page`` is the origin's not-found page."""
        if self.page is None:
            self.page = asyncio.get_running_loop().create_future()
            found = None
            try:
                found = await self._probe(origin)
            finally:  # the pages waiting for it go on, whatever happened
                self.page.set_result(found)
        found = await asyncio.shield(self.page)
        if found is None or page["title"] != found["title"]:
            return False
        words, theirs = _words(page["markdown"]), found["words"]
        shared = sum((words & theirs).values())
        return shared >= SIMILARITY * max(words.total(), theirs.total(), 1)

    async def _probe(self, origin: str) -> dict | None:
        stats = self.crawler.stats
        stats.inc_value("crawlyx/soft404/probed")
        url = origin + PROBE + secrets.token_hex(8)
        request = Request(url, meta={"dont_redirect": True}, dont_filter=True)
        try:
            response = await self.crawler.engine.download_async(request)
        except Exception:  # refused (robots.txt), or failed: nothing to compare with
            return None
        if response.status != 200 or not isinstance(response, HtmlResponse):
            return None
        try:
            found = await self.read(response)
        except Exception:
            return None
        stats.inc_value("crawlyx/soft404/found")
        return {"title": found["title"], "words": _words(found["markdown"])}


_LINK_TARGET = re.compile(r"\]\([^()\s]*(?:\([^()\s]*\)[^()\s]*)*\)")


def _words(markdown: str) -> Counter:
    return Counter(_LINK_TARGET.sub("]", markdown).lower().split())
