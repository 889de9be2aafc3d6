"""crawlyx's components, wired into a crawl by one Scrapy add-on.

``ADDONS = {"crawlyx.addon.Addon": 0}`` (crawlyx/settings.py) is what makes a crawl a
crawlyx crawl: the scheduler over the visited table, the SSRF guard's resolver, the
downloader and spider middlewares, the markdown pipeline, the extensions. Every one of
them is set at the add-on's priority, below the project's settings: a profile or
``-s`` can still replace one, or turn it off (``{"crawlyx.middlewares.robots.RobotsMiddleware":
None}`` in ``DOWNLOADER_MIDDLEWARES``). The settings each component reads are its own
``CRAWLYX_*`` settings (crawlyx/settings.py), checked by the component itself.

Scrapy builds a crawl's spider first, then applies the add-ons, then builds every other
component (Crawler.crawl in Scrapy 2.19). So the add-on sees the spider's arguments
through the spider: the browser's download handlers are installed only when the crawl
may render, and the slow parts (the embedded Redis, the page workers) start booting
here, while Scrapy builds the rest.
"""

from __future__ import annotations

from crawlyx import log, render
from crawlyx.breadth.bots import BotTable
from crawlyx.breadth.extension import Breadth
from crawlyx.config import check_known, check_types
from crawlyx.content.documents import document_types
from crawlyx.content.workers import PageWorkers
from crawlyx.cost.model import Prices
from crawlyx.demand.extension import Demand
from crawlyx.exporters import FEED_EXPORTERS
from crawlyx.extensions.metrics import Metrics
from crawlyx.frontier.checks import check_redis_url
from crawlyx.frontier.jobs import ttl_seconds
from crawlyx.graph.extension import Audit
from crawlyx.graph.recorder import GraphRecorder
from crawlyx.middlewares.window import WindowMiddleware
from crawlyx.parts import CrawlParts
from crawlyx.policy.optout import OptOut
from crawlyx.urls.traps import PatternTraps

# Read by the crawler process before any crawler (and its add-ons) exists.
PRE_CRAWLER_SETTINGS = {
    # scrapy-playwright (rendering) runs only on the asyncio reactor.
    "TWISTED_REACTOR": "twisted.internet.asyncioreactor.AsyncioSelectorReactor",
    # The address checked is the address connected to: the SSRF guard's resolver answers
    # the HTTP handler's only lookup (TWISTED_DNS_RESOLVER replaces the deprecated
    # DNS_RESOLVER).
    "TWISTED_DNS_RESOLVER": "crawlyx.policy.ssrf.SSRFResolver",
}

SETTINGS = {
    "SCHEDULER": "crawlyx.frontier.scheduler.Scheduler",
    "REQUEST_FINGERPRINTER_CLASS": "crawlyx.frontier.fingerprint.Fingerprinter",
    "ROBOTSTXT_OBEY": False,  # crawlyx's RobotsMiddleware replaces Scrapy's
    # Scrapy 2.19's RemoteControl executes posted Python code: never on in crawlyx.
    "REMOTE_CONTROL_ENABLED": False,
    "TELNETCONSOLE_ENABLED": False,
}

COMPONENTS = {
    "DOWNLOADER_MIDDLEWARES": {
        # Before robots.txt (a refused host gets no robots.txt request) and HttpProxyMiddleware.
        "crawlyx.middlewares.ssrf.SSRFMiddleware": 50,
        "crawlyx.middlewares.robots.RobotsMiddleware": 100,
        # The last before the downloader: after the robots middleware (100), so robots.txt
        # and its Crawl-delay are known; its gate hands a request straight to its slot;
        # and its process_exception sees every failed attempt before RetryMiddleware
        # (550) turns it into a retry.
        "crawlyx.middlewares.window.WindowMiddleware": 950,
        # Just before it: a page a canonical check fetched already is not fetched again.
        "crawlyx.content.canonical.Replay": 940,
        # Every redirect hop is held to the crawl's scope, allow/deny and trap rules.
        "scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware": None,
        "crawlyx.middlewares.redirect.MetaRefreshMiddleware": 580,
        "scrapy.downloadermiddlewares.redirect.RedirectMiddleware": None,
        "crawlyx.middlewares.redirect.RedirectMiddleware": 600,
        # Below RetryMiddleware (550) and the redirects: what the browser fails on, once
        # they give up, is fetched again over plain HTTP. Off unless the crawl renders.
        "crawlyx.render.fallback.RenderFallback": 540,
    },
    "SPIDER_MIDDLEWARES": {
        "crawlyx.middlewares.lease.LeaseMiddleware": 10,
        # The nearest the spider: the start page fixes the scope before it is read, and
        # its seeds go through every other middleware as the spider's requests do.
        "crawlyx.spiders.start.StartPage": 950,
        # Depth is set by the spider itself (sitemap-listed pages are depth 1).
        "scrapy.spidermiddlewares.depth.DepthMiddleware": None,
    },
    "ITEM_PIPELINES": {
        "crawlyx.pipelines.markdown.MarkdownPipeline": 300,
        # After the markdown's hash is taken: a page with another's markdown is dropped.
        "crawlyx.pipelines.copies.CopiesPipeline": 310,
        # -a chunks=N: after the copies, so a copy dropped costs no chunking.
        "crawlyx.pipelines.chunks.ChunksPipeline": 320,
        # The last: just before the feed exporter writes the item.
        "crawlyx.pipelines.lease.LeaseCheck": 1000,
    },
    "EXTENSIONS": {
        "scrapy.extensions.logstats.LogStats": None,  # the progress line replaces it
        "scrapy.extensions.telnet.TelnetConsole": None,
        "crawlyx.extensions.unread.UnreadBodies": 480,
        "crawlyx.extensions.collector.Collector": 490,
        "crawlyx.extensions.progress.Progress": 500,
        "crawlyx.breadth.extension.Breadth": 510,
        "crawlyx.demand.extension.Demand": 515,
        "crawlyx.extensions.metrics.Metrics": 520,
        "crawlyx.extensions.report.Report": 530,
        "crawlyx.graph.extension.Audit": 540,
    },
    # Only http(s) is fetched: Scrapy's data, file, s3 and ftp handlers would read the
    # crawl host's own files or connect where no crawl rule looks. With rendering on,
    # crawlyx.render installs the browser's handler for http and https.
    "DOWNLOAD_HANDLERS": {"data": None, "file": None, "s3": None, "ftp": None},
    # Local feed files get each item at once, not when a buffer fills (crawlyx/feeds.py).
    "FEED_STORAGES": {
        "": "crawlyx.feeds.FileFeedStorage",
        "file": "crawlyx.feeds.FileFeedStorage",
    },
    # Markdown feeds: one file in reading order (md), a file per page (mdfiles).
    "FEED_EXPORTERS": FEED_EXPORTERS,
}


# Off, and taken out of Scrapy's base lists rather than set to None in the lists above:
# Scrapy imports an entry set to None to match it with its base entry, and these import
# what the crawl's start then waits for (aiohttp's web server, tldextract: 275 ms).
# RemoteControl is never on (see REMOTE_CONTROL_ENABLED above); cookies are on when the
# project or the command line turn them on.
UNLOADED = {
    "EXTENSIONS_BASE": ("scrapy.extensions.remote_control.RemoteControl", None),
    "DOWNLOADER_MIDDLEWARES_BASE": (
        "scrapy.downloadermiddlewares.cookies.CookiesMiddleware",
        "COOKIES_ENABLED",
    ),
}


def set_entries(settings, name: str, entries: dict) -> None:
    """Each of ``entries`` in the dict setting ``name``, at the add-on's priority: an
    entry the project or the command line set for the same key stays."""
    values = settings[name]
    for key, value in entries.items():
        values.set(key, value, priority="addon")


class Addon:
    def __init__(self, crawler):
        self.crawler = crawler
        # What the components share (crawlyx/parts.py), handed to them as Scrapy hands
        # them crawler.stats: each reads crawler.crawlyx once, in its from_crawler.
        self.parts = crawler.crawlyx = CrawlParts(crawler)

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    @classmethod
    def update_pre_crawler_settings(cls, settings) -> None:
        for name, value in PRE_CRAWLER_SETTINGS.items():
            settings.set(name, value, priority="addon")

    def update_settings(self, settings) -> None:
        for name, value in SETTINGS.items():
            settings.set(name, value, priority="addon")
        for name, entries in COMPONENTS.items():
            set_entries(settings, name, entries)
        for name, (path, enabled) in UNLOADED.items():
            if path in settings[name] and not (enabled and settings.getbool(enabled)):
                settings[name].delete(path, priority="addon")  # not again: a copy of settings
        spider = self.crawler.spider
        if spider is None:  # a crawler built for its components alone (a test, a tool)
            return
        if getattr(spider, "render_mode", "never") != "never":
            render.install(settings, spider.render_mode)
        # Both take a while to boot: start them now, while Scrapy builds the components.
        self.parts.start()

    @staticmethod
    def check_settings(settings) -> None:
        """Raise ``ValueError`` (one line naming the setting) for a bad setting of a
        component this add-on wires, before anything starts: a name crawlyx does not
        declare first, then the checks no component owns, then each component's own,
        with the code it reads them with. A component that is off is checked too: a
        wrong value is wrong whether or not this crawl reads it."""
        check_known(settings)
        check_types(settings)
        check_redis_url(settings)
        PageWorkers.from_settings(settings)  # starts nothing until a page is read
        document_types(settings)
        OptOut.from_settings(settings)
        BotTable.from_settings(settings)  # read by `scrapy visits`
        ttl_seconds(settings)
        Metrics.check_settings(settings)
        Prices.from_settings(settings)
        log.check_settings(settings)
        Audit.check_settings(settings)
        WindowMiddleware.check_settings(settings)
        Breadth.check_settings(settings)
        Demand.check_settings(settings)
        render.check_settings(settings)
        GraphRecorder.check_settings(settings)
        PatternTraps.check_settings(settings)
