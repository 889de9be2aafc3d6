"""A response read into a page, and the page into its item.

:meth:`Pages.read` turns a response into a :class:`Read`: an HTML page read in a page
worker, or a document of CRAWLYX_DOCUMENTS read into one (crawlyx/content/documents/).
Or into what stands for it: nothing (a 304, a page that failed to read, the site's
not-found page under an unknown URL, a page another process has), the same page again
through the browser (an empty JavaScript shell under render=auto), or the pages a start
URL that is a sitemap lists.

:meth:`Pages.item` decides what a read page is in the output: its item; or no item, as
the alias of the canonical page holding its document (crawlyx/content/canonical.py), as
kept out by a robots directive (crawlyx/policy/optout.py), as over max_pages, or as a
refresh run's unchanged page. Every page read is sent as :data:`crawlyx.signals.page_read`
(the job's link graph records it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

from scrapy import Request
from scrapy.http import HtmlResponse

from crawlyx import render
from crawlyx.content.canonical import header_canonical
from crawlyx.content.documents import as_page, binary, document_body, kind_of
from crawlyx.content.documents.errors import Unreadable
from crawlyx.content.encoding import page_text
from crawlyx.content.workers import ReadTimeout
from crawlyx.frontier.fingerprint import normalized_fingerprint
from crawlyx.frontier.quota import PageQuota
from crawlyx.items import PageItem, page_item, response_facts
from crawlyx.render.fallback import through_browser
from crawlyx.signals import page_read
from crawlyx.urls.normalize import normalize_url


@dataclass
class Read:
    """A page read from a response."""

    request: Request
    url: str  # normalized
    depth: int
    referrer: str | None
    page: dict  # what the page reader gives: title, markdown, links...
    directives: set[str]  # its robots directives
    facts: dict  # crawlyx.items.response_facts
    kind: str  # "http" or "browser"
    follows: bool  # its links are followed
    holder: str | None = None  # the canonical page holding its document
    # The entries of the tables of contents it loads in a frame (crawlyx/spiders/frames.py).
    requests: list[Request] = field(default_factory=list)


class Pages:
    def __init__(self, spider):
        self.spider = spider

    @property
    def stats(self):
        return self.spider.crawler.stats  # the spider is built before its crawler is set

    async def read(self, response) -> Read | list:
        """The page of ``response``, or what stands for it."""
        spider = self.spider
        if spider.closing:
            # max_pages is reached: a page still in flight is not read, and stays for a
            # resumed job to fetch.
            spider.visited.unlease(response.request)
            return []
        url = normalize_url(response.url)
        if response.status == 304:
            spider.recrawl.not_modified(response, url)
            return []
        response = as_page(response)
        if not isinstance(response, HtmlResponse) or binary(response):
            # A document (a PDF, however labelled), or no page; a start URL may be a
            # sitemap or a feed, whose pages are the crawl's start.
            listed = await spider.sitemaps.start(response)
            if listed is not None:
                return listed
            return await self._document(response, url)
        return await self._html(response, url)

    async def _html(self, response, url: str) -> Read | list:
        spider = self.spider
        depth = response.meta.get("depth", 0)
        referrer = response.meta.get("crawlyx_referrer")
        browser = render.from_browser(response)
        if browser and url != normalize_url(response.request.url):
            # The browser followed a redirect (or the page's scripts changed its URL)
            # out of the scheduler's sight, within the scope (crawlyx.render.fallback):
            # the page is the one it ended on, if no one else has it.
            if not spider.visited.settle(normalized_fingerprint(url)):
                self.stats.inc_value("crawlyx/frontier/duplicates")
                return []
        try:
            page = await self.read_html(response)
        except ReadTimeout as exc:  # its worker was killed: the page is done, not retried
            spider.record_error(url, "read_timeout", str(exc), referrer)
            return []
        except Exception as exc:  # undecodable or pathological markup: this page only
            spider.record_error(url, "parse", f"{type(exc).__name__}: {exc}", referrer)
            return []
        spider.links.cap(page)
        page["canonical"] = page["canonical"] or header_canonical(response)
        directives = spider.opt_out.directives(response.headers, page["robots"])
        if not browser and self._wants_render(response, page, directives):
            self.stats.inc_value("crawlyx/render/requested")
            return [through_browser(response, spider.browser_meta)]
        if await self._soft_404(response, page):
            detail = "HTTP 200 with the site's not-found page (a soft 404)"
            spider.record_error(url, "http_4xx", detail, referrer, status=200, depth=depth)
            self.stats.inc_value("crawlyx/soft404/pages")
            return []
        if browser:
            self.stats.inc_value("crawlyx/render/rendered")
        kind = "browser" if browser else "http"
        read = await self._read(response, url, page, directives, kind)
        if page.get("frames") and read.follows:
            read.requests += await spider.frames.requests(page["frames"], url, depth)
        return read

    async def read_html(self, response) -> dict:
        """The HTML page of ``response``, read in a worker."""
        spider = self.spider
        return await spider.parts.workers.read(
            page_text(response), response.url, spider.scope.origin
        )

    async def _document(self, response, url: str) -> Read | list:
        """A response that is no HTML page: a document of CRAWLYX_DOCUMENTS read into a
        page, else recorded under the one class that says why it is none."""
        spider = self.spider
        depth = response.meta.get("depth", 0)
        referrer = response.meta.get("crawlyx_referrer")
        kind, what = kind_of(response, spider.documents)
        record = partial(
            spider.record_error, url, referrer=referrer, status=response.status, depth=depth
        )
        if kind is None:
            record("not_a_page", what)
            return []
        try:
            page = await spider.parts.workers.read_document(
                kind, document_body(kind, response), response.url, spider.scope.origin
            )
        except ReadTimeout as exc:
            record("read_timeout", str(exc))
            return []
        except Unreadable as exc:  # encrypted, broken, no text
            record("unreadable", str(exc))
            return []
        except Exception as exc:  # it killed its worker, or the reader failed
            record("parse", f"{type(exc).__name__}: {exc}")
            return []
        self.stats.inc_value(f"crawlyx/documents/{kind}")
        spider.links.cap(page)
        page["canonical"] = header_canonical(response)  # a document's only way to name one
        directives = spider.opt_out.directives(response.headers, page["robots"])
        return await self._read(response, url, page, directives, "http")

    async def _read(self, response, url, page, directives, kind) -> Read:
        depth = response.meta.get("depth", 0)
        facts = response_facts(response)
        follows = self.spider.links.follows(depth, directives)
        read = Read(
            response.request, url, depth, response.meta.get("crawlyx_referrer"), page,
            directives, facts, kind, follows,
        )  # fmt: skip
        read.holder = await self._holder(read)
        return read

    def _wants_render(self, response, page: dict, directives: set[str]) -> bool:
        """A page fetched over HTTP goes to the browser: render=auto and it is an empty
        JavaScript shell, or render=always (a request queued by an earlier run)."""
        mode = self.spider.render_mode
        if mode == "never" or response.meta.get(render.RENDER_META):
            return False  # a render marker: it was sent to the browser already
        if self.spider.opt_out.refused(directives):
            return False  # kept out of the output whatever the browser would show
        return mode == "always" or page["shell"]

    async def _soft_404(self, response, page) -> bool:
        """The page is the site's not-found page under an unknown URL answered 200
        (crawlyx/content/notfound.py). Never the start page, nor an empty app shell."""
        not_found = self.spider.not_found
        if not_found is None or response.meta.get("crawlyx_anchor") or page["shell"]:
            return False
        return await not_found.matches(self.spider.scope.origin, page)

    async def _holder(self, read: Read) -> str | None:
        """The URL whose item holds the read page's document when its canonical names
        another page of the site that confirms it (crawlyx/content/canonical.py), else
        None. Only for a page whose links are followed: its canonical is requested as
        one of them, so it is crawled."""
        spider, canonical = self.spider, read.page["canonical"]
        if spider.canonicals is None:
            return None
        spider.canonicals.read(read.url, read.facts["status"], canonical)
        if not canonical or not read.follows or spider.opt_out.refused(read.directives):
            return None
        holder = await spider.canonicals.holder(read.url, canonical)
        if holder is not None and spider.scope.traps.reason(holder) is not None:
            return None  # never crawled: the page keeps its document
        return holder

    # -- the output -------------------------------------------------------------------

    def item(self, read: Read) -> PageItem | None:
        """The read page's item, within the crawl's limits, or None."""
        spider, url, referrer = self.spider, read.url, read.referrer
        if read.holder is not None:
            detail = f"canonical {read.holder}"
            spider.record_error(url, "alias", detail, referrer, holder=read.holder)
            self._page_read(read)  # the audit knows it as the page it is
            return None
        refused = spider.opt_out.refused(read.directives)
        if refused:
            spider.record_error(url, "opted_out", f"robots directive {refused}", referrer)
            self._page_read(read)  # read, and kept out of the output
            return None
        fits, full = self._slot()
        item = None
        if fits:
            self._page_read(read)
            changed = spider.recrawl.fetched(url, read.page.get("digest", ""), read.facts)
            if spider.recrawl.emit(changed):
                item = page_item(
                    url, read.depth, referrer, read.page, read.facts, read.kind, changed
                )
            elif spider.quota is not None:  # a refresh run's unchanged page: slot unused
                spider.quota.put_back()
                full = False
        else:
            # Fetched while the crawl was closing: not emitted, so not done either;
            # resuming the job crawls it.
            spider.visited.unlease(read.request)
        if full:
            # Nothing more is handed out; what is in flight drains, then the crawl
            # closes (raising here would cancel this very item in the pipelines).
            spider.closing = True
        return item

    def _page_read(self, read: Read) -> None:
        self.spider.crawler.signals.send_catch_log(
            page_read, url=read.url, depth=read.depth, page=read.page,
            directives=read.directives, status=read.facts["status"],
        )  # fmt: skip

    def _slot(self) -> tuple[bool, bool]:
        """A slot of max_pages for a page: (it fits, no slot is left for this process)."""
        spider = self.spider
        if spider.args.max_pages is None:
            return True, False
        if spider.quota is None:
            state = spider.parts.state
            spider.quota = PageQuota(state.client, state.key("meta"), spider.args.max_pages)
        return spider.quota.take()
