"""The links a read page leads to, as the requests the crawl makes for them.

A page's links are followed within max_depth and unless a robots ``nofollow`` says
otherwise (CRAWLYX_OBEY_NOFOLLOW). Of them, the scheduler is offered those in the crawl
(allow/deny; on a refresh run, pages the registry does not know yet) that this process
has not offered already (navigation on every page stops here; the scheduler's claim
decides the rest), but for those the trap rules refuse (recorded once, under ``trap``).
"""

from __future__ import annotations

from itertools import islice

from scrapy import Request

from crawlyx.frontier.fingerprint import normalized_fingerprint
from crawlyx.urls.traps import HOPS_META


class Links:
    def __init__(self, spider):
        self.spider = spider

    def request(
        self, url, depth, referrer, anchor=False, callback=None, headers=None, meta=None
    ) -> Request:
        """A request for the page at ``url``, handled by the spider (a sitemap's with
        ``callback``); through the browser with render=always."""
        spider = self.spider
        meta = {"depth": depth, "crawlyx_referrer": referrer, **(meta or {})}
        if anchor:
            meta["crawlyx_anchor"] = True
        if callback is None and spider.render_mode == "always":  # pages, not sitemaps
            meta.update(spider.browser_meta)
        callback = callback or spider.parse
        return Request(url, callback, headers=headers, errback=spider.on_error, meta=meta)

    def follows(self, depth: int, directives: set[str]) -> bool:
        """The links of a page read at ``depth`` with robots ``directives`` are followed."""
        max_depth, opt_out = self.spider.args.max_depth, self.spider.opt_out
        if max_depth is not None and depth >= max_depth:
            return False
        return not (opt_out.nofollow and "nofollow" in directives)

    def cap(self, page: dict) -> None:
        """A page's first CRAWLYX_MAX_LINKS_PER_PAGE links, in page order, are followed,
        recorded and listed in its item; the rest are counted (by the page's reader, which
        stops at the cap: the link elements after it)."""
        links, capped, most = page["links"], page.pop("links_capped", 0), self.spider.max_links
        if len(links) > most:
            page["links"] = dict(islice(links.items(), most))
            capped += len(links) - most
        if capped:
            self.spider.crawler.stats.inc_value("crawlyx/links/capped", capped)

    def follow(self, read) -> list[Request]:
        """The requests a read page (:class:`crawlyx.spiders.pages.Read`) leads to: the
        entries of the tables of contents it loads, its links, and the page holding its
        document."""
        requests = read.requests
        if not read.follows:
            return requests
        depth, url = read.depth + 1, read.url
        offered = self._offered(read.page["links"])
        hops = read.request.meta.get(HOPS_META, 0)
        state, traps = self.spider.parts.state, self.spider.pattern_traps
        chain = traps.page(state, url, read.page.get("signature"), hops, offered)
        requests += self._requests(offered, depth, url, chain)
        holder = read.holder
        if holder is not None and holder in offered:  # requested as one of its links
            self.spider.crawler.stats.inc_value("crawlyx/frontier/duplicates")
        elif holder is not None:
            # The holder is crawled as a link of this page, if no one has it yet.
            requests += self.requests(
                {holder: (holder, normalized_fingerprint(holder))}, depth, url
            )
        return requests

    def requests(self, links: dict, depth: int, referrer: str) -> list[Request]:
        """Requests for ``links`` (normalized URL -> (URL to fetch, fingerprint)) of the
        page at ``referrer``, met at ``depth``, that are offered and no trap."""
        return self._requests(self._offered(links), depth, referrer)

    def _offered(self, links: dict) -> dict:
        """Of ``links``, those to offer the scheduler: in the crawl (allow/deny, a refresh
        run's due), not known to this process already."""
        spider = self.spider
        seen, scope, offered, skipped = spider.visited, spider.scope, {}, 0
        new = spider.recrawl.new(list(links))  # a refresh run fetches known pages when due
        for link, (raw, fp) in links.items():
            if link not in new or not scope.allowed(link):
                continue
            # Links this process already offered (navigation on every page) stop
            # here; the scheduler's claim decides the rest.
            if seen.known(fp):
                skipped += 1
                continue
            offered[link] = raw, fp
        spider.crawler.stats.inc_value("crawlyx/frontier/duplicates", skipped)
        return offered

    def _requests(self, offered: dict, depth: int, referrer: str, chain=None) -> list[Request]:
        """Requests for the ``offered`` links of the page at ``referrer``, but for those
        the trap rules refuse (recorded)."""
        spider, requests = self.spider, []
        traps, patterns = spider.scope.traps, spider.pattern_traps
        for link, (raw, fp) in offered.items():
            trap = traps.reason(link) or patterns.reason(link, chain)
            if trap is not None:
                spider.visited.remember(fp)  # reported once, not from every page linking it
                spider.record_error(link, "trap", trap, referrer)
                continue
            meta = patterns.meta(link, chain)
            requests.append(self.request(raw, depth=depth, referrer=referrer, meta=meta))
        return requests
