"""The parts every component of a crawl shares, owned by the crawlyx add-on.

One crawl has one Redis connection and key namespace (:class:`~crawlyx.frontier.state.State`),
one crawl core batching its Redis work, one visited table, one lease keeper (the lease
middleware), one link-graph recorder and one pool of page workers. The add-on
(crawlyx/addon.py) owns them: it starts the slow ones (the embedded Redis, the workers)
while Scrapy builds the components, each part is built from the crawler's settings when a
component first needs it, and all are closed once the engine stops: the workers first, the
Redis state last, after every component's ``spider_closed`` handler has run and the core has
sent what it holds.

The add-on hands them over as ``crawler.crawlyx``, as Scrapy hands over ``crawler.stats``:
each component reads it once, in its ``from_crawler`` (through :func:`shared_parts`, which
says when the add-on is missing), and is given it, or the part it needs, through its
``__init__``; it keeps the :class:`CrawlParts` and reads ``self.parts.visited`` when it
needs the visited table, so that each part is still built when first used. The spider,
which Scrapy builds before the add-on, reads ``crawler.crawlyx`` when it first uses the
parts, and so does the recrawl it builds with its crawler. The parts are handed what they
need (the recorder its state), so that no part imports this module back.
"""

from __future__ import annotations

from functools import cached_property

from scrapy import signals

from crawlyx.content.workers import PageWorkers
from crawlyx.frontier.embedded import EmbeddedRedis, boot_embedded
from crawlyx.frontier.shards import frontier_shards
from crawlyx.frontier.state import State, is_cluster
from crawlyx.frontier.visited import VisitedTable
from crawlyx.graph.recorder import GraphRecorder


class CrawlParts:
    def __init__(self, crawler):
        self.crawler = crawler
        self.embedded: EmbeddedRedis | None = None
        # The lease middleware (crawlyx.middlewares.lease), set by its from_crawler: the
        # leases the pages' items carry until they are out.
        self.leases = None
        self.closed = False
        crawler.signals.connect(self.close, signal=signals.engine_stopped)

    def start(self) -> None:
        """Start booting the embedded Redis and the page workers, which take a while.
        The graph recorder is built now too: it subscribes to the crawl's signals before
        anything can fail."""
        self.embedded = boot_embedded(self.crawler.settings)
        self.workers.warm_up()
        _ = self.graph

    @cached_property
    def state(self) -> State:
        job = getattr(self.crawler.spider, "job", None)
        if not job:
            raise RuntimeError("crawlyx components need a spider with a job name")
        return State.connect(self.crawler.settings, job, self.embedded)

    @cached_property
    def core(self):
        return self.state.core(self.crawler.stats)

    @cached_property
    def visited(self) -> VisitedTable:
        settings = self.crawler.settings
        self.state.fix_shards(frontier_shards(settings, is_cluster(self.state.client)))
        # A loop across fetches is looked for as far as a redirect chain is followed.
        hops = settings.getint("REDIRECT_MAX_TIMES")
        return VisitedTable(self.state, stats=self.crawler.stats, loop_hops=hops, core=self.core)

    @cached_property
    def graph(self) -> GraphRecorder | None:
        """The link-graph recorder, or None with CRAWLYX_GRAPH_ENABLED off."""
        if not self.crawler.settings.getbool("CRAWLYX_GRAPH_ENABLED"):
            return None
        return GraphRecorder.from_crawler(self.crawler, lambda: self.state)

    @cached_property
    def workers(self) -> PageWorkers:
        return PageWorkers.from_crawler(self.crawler)

    def close(self) -> None:
        """Close what was built, once: when the engine stops, or (from the crawl command)
        after a crawl that failed before it had an engine, whose page workers would
        otherwise wait for the crawl process to end while it waits for them."""
        if self.closed:
            return
        self.closed = True
        built = self.__dict__
        if "workers" in built:
            self.workers.close()
        if "state" in built:
            self.state.close()  # sends what the core still holds first


def shared_parts(crawler) -> CrawlParts:
    """The shared parts of ``crawler``'s crawl: ``crawler.crawlyx``, set by its crawlyx
    add-on (as Scrapy sets ``crawler.stats``)."""
    parts = getattr(crawler, "crawlyx", None)
    if parts is None:
        raise RuntimeError(
            "crawlyx components need the crawlyx add-on: ADDONS = {'crawlyx.addon.Addon': 0}"
        )
    return parts
