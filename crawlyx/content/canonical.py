"""Which page holds a document, from the rel=canonical its addresses give.

A page whose ``<link rel=canonical>`` names another URL of the site is the same document
under another address (a sort order, a tracking path, a print view). A response without
one may name it in a ``Link: <URL>; rel="canonical"`` header, as search engines read it
(a PDF, which has no ``<head>``, naming its HTML page). It is written once, under the
canonical URL, when that URL

* is in the crawl's scope (its origin and folder, allow/deny): a canonical elsewhere is never
  followed, and the page is written under its own URL;
* answers 200 itself, without a redirect, and names itself as its canonical. A canonical
  that names yet another URL is a chain: followed, as search engines do, up to
  :data:`MAX_HOPS` canonicals, to one that names itself; a loop, a longer chain, or a
  canonical that does not name itself (or names none) confirms nothing.

Anything else (a canonical that fails, redirects, is refused by robots.txt, or does not
confirm) is a hint not taken: the page is written under its own URL, never dropped for a
broken canonical. A page folded into its canonical is recorded in the errors file under
the ``alias`` class (detail ``canonical URL``) and is done; its links are followed as
any page's, and its canonical is requested through the frontier as one of them (so it
is crawled, and written, once). The audit's ``canonical`` section is unchanged: it
judges the graph, where the alias is recorded as the page it is.

A canonical is checked by fetching it (through every downloader middleware: robots.txt,
politeness, the SSRF guard; redirects not followed) the first time a page of this
process names it, unless this process has read it already; the answer is kept for the
crawl (at most :data:`MAX_KNOWN` URLs). That fetch is the crawl's fetch of the page: its
response is kept (:data:`KEPT_BYTES` at most, the oldest given up first) and handed to
the crawl's own request for that URL when it comes (:class:`Replay`, a downloader
middleware), so the site sees the page requested once. A page with no canonical, or one
naming itself, costs nothing. What this does not cover: the crawl's request for the page
taken by another process of the job, which fetches it again.
Stats: ``crawlyx/canonical/aliases``, ``checked``, ``replayed`` (checks that served the
crawl's fetch), and the pages kept under their own URL: ``off_scope``, ``unconfirmed``.
"""

from __future__ import annotations

import asyncio
import re
from collections import OrderedDict

from scrapy import Request
from scrapy.exceptions import NotConfigured
from scrapy.http import HtmlResponse

from crawlyx.render import RENDER_META
from crawlyx.urls.normalize import normalize_url

MAX_HOPS = 3  # canonicals followed along a chain to the one that names itself
MAX_KNOWN = 10_000  # canonical checks a process keeps (then it forgets them all)
KEPT_BYTES = 8 * 1024 * 1024  # checked responses kept for the crawl's own fetch
CHECK_META = "crawlyx_canonical_check"


class Canonicals:
    def __init__(self, crawler, scope):
        self.crawler = crawler
        self.scope = scope
        # URL -> a future of (status, the canonical it names, normalized, or None), or
        # None when the check failed (an error, a refusal).
        self.known: dict[str, asyncio.Future] = {}
        # URL -> the response of its check, until the crawl's own request takes it.
        self.kept: OrderedDict[str, object] = OrderedDict()
        self.kept_bytes = 0

    @property
    def stats(self):  # set once the crawl starts
        return self.crawler.stats

    def read(self, url: str, status: int, canonical: str | None) -> None:
        """A page this process read: what it says of itself, for the pages naming it."""
        if url not in self.known and len(self.known) < MAX_KNOWN:
            future = asyncio.get_running_loop().create_future()
            future.set_result((status, _normalized(canonical)))
            self.known[url] = future

    async def holder(self, url: str, canonical: str | None) -> str | None:
        """The URL the page at ``url`` naming ``canonical`` is an alias of, or None
        when it is written under its own."""
        target = _normalized(canonical)
        if target is None or target == url:
            return None
        seen = {url}
        for _ in range(MAX_HOPS):
            if not (self.scope.contains(target) and self.scope.allowed(target)):
                self.stats.inc_value("crawlyx/canonical/off_scope")
                return None
            if target in seen:  # a loop
                break
            seen.add(target)
            answer = await self._check(target, url)
            if answer is None or answer[0] != 200 or answer[1] is None:
                break
            if answer[1] == target:  # it names itself: confirmed
                self.stats.inc_value("crawlyx/canonical/aliases")
                return target
            target = answer[1]  # a chain
        self.stats.inc_value("crawlyx/canonical/unconfirmed")
        return None

    async def _check(self, url: str, referrer: str):
        future = self.known.get(url)
        if future is None:
            if len(self.known) >= MAX_KNOWN:
                self.known.clear()
            future = self.known[url] = asyncio.get_running_loop().create_future()
            answer = None
            try:
                answer = await self._fetch(url, referrer)
            finally:  # the pages waiting for it go on, whatever happened
                future.set_result(answer)
        return await asyncio.shield(future)

    async def _fetch(self, url: str, referrer: str):
        """(status, its canonical) of ``url``, fetched; None if the fetch failed."""
        self.stats.inc_value("crawlyx/canonical/checked")
        meta = {"crawlyx_referrer": referrer, "dont_redirect": True, CHECK_META: True}
        request = Request(url, meta=meta, dont_filter=True)
        try:
            response = await self.crawler.engine.download_async(request)
        except Exception:  # refused (robots.txt, the SSRF guard), or failed
            return None
        self._keep(url, response)
        if normalize_url(response.url) != url:
            return response.status, None
        href = None
        if isinstance(response, HtmlResponse):
            href = response.css('link[rel~="canonical"]::attr(href)').get()
        if href:
            return response.status, _normalized(response.urljoin(href.strip()))
        return response.status, _normalized(header_canonical(response))

    def _keep(self, url: str, response) -> None:
        if len(response.body) > KEPT_BYTES:
            return
        self.kept[url] = response
        self.kept_bytes += len(response.body)
        while self.kept_bytes > KEPT_BYTES:
            _, oldest = self.kept.popitem(last=False)
            self.kept_bytes -= len(oldest.body)

    def take(self, request):
        """The checked response that answers ``request``, the crawl's own fetch of the
        page, or None. A rendered page's request is the browser's to answer."""
        if request.method != "GET" or request.meta.get(RENDER_META) or CHECK_META in request.meta:
            return None
        response = self.kept.pop(normalize_url(request.url), None)
        if response is None:
            return None
        self.kept_bytes -= len(response.body)
        self.stats.inc_value("crawlyx/canonical/replayed")
        return response.replace(request=request)


class Replay:
    """Answers the crawl's request for a page whose canonical check fetched it already
    with that response (:meth:`Canonicals.take`): the page is fetched once. The last
    before the politeness window, so robots.txt and the SSRF guard see the request as
    any other; the response then goes through every middleware's process_response, as a
    downloaded one does."""

    def __init__(self, crawler):
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler):
        if not crawler.settings.getbool("CRAWLYX_CANONICAL_ENABLED"):
            raise NotConfigured("CRAWLYX_CANONICAL_ENABLED is off")
        return cls(crawler)

    def process_request(self, request):
        canonicals = getattr(self.crawler.spider, "canonicals", None)
        if canonicals is None or not canonicals.kept:
            return None
        return canonicals.take(request)


# One link of a Link header: <URL>, then its parameters up to the next link.
_LINK = re.compile(r'<([^>]*)>((?:[^,"]|"[^"]*")*)')
_REL_CANONICAL = re.compile(r';\s*rel\s*=\s*"?[^";]*\bcanonical\b', re.IGNORECASE)


def header_canonical(response) -> str | None:
    """The URL a ``Link`` header of ``response`` names as canonical, absolute, or None."""
    for value in response.headers.getlist(b"Link"):
        for target, params in _LINK.findall(value.decode("latin-1")):
            if _REL_CANONICAL.search(params) and target.strip():
                return response.urljoin(target.strip())
    return None


def _normalized(url: str | None) -> str | None:
    if not url:
        return None
    try:
        return normalize_url(url)
    except Exception:  # not a URL crawlyx can read: names nothing
        return None
