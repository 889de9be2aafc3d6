"""The crawl's side of the link graph: what each component learns, sent to Redis in batches.

The spider records each page it reads (out-links with anchor text, status, title,
description, canonical, robots directives, depth, near-duplicate signature, the tables
of contents it loads in a noscript frame), the pages a sitemap lists, and once the
outline of each such table (:mod:`crawlyx.graph.outline`); the redirect middlewares
every hop, followed or refused; the error log every failed or skipped URL's class; the
markdown pipeline each page's content hash. Only URLs on the crawl's origin are
recorded (links leaving the site are not part of the graph).

What a node says, as recorded: ``fetched``, the page was read (its item emitted, or
kept out by a robots directive: then ``error`` is ``opted_out`` and ``robots`` holds the
directive); ``status``, the HTTP status of the URL's own response (a page's, a hop's
3xx, an HTTP error's, a response that is not HTML; none for a meta refresh or a URL
never answered); ``error``, the error log's class for the URL (a browser failure
whose page was read over plain HTTP is none); ``redirect``, the hop's target as
written, normalized (off the origin too); ``depth``, the smallest crawl depth the
URL was requested at (sitemap-listed pages are 1) until
:meth:`crawlyx.graph.store.GraphStore.load` makes it the link distance. A page's
links are all its links on the origin: allow/deny, nofollow and max_depth decide what
is followed, not what is linked.

Records are kept in memory and sent with the crawl core's next batch
(:mod:`crawlyx.frontier.core`), :data:`GraphRecorder.BATCH` to a script call, before the
releases of the pages they describe: the crawl process is the one that cannot spread
over cores, and a round trip per page would cost it more than the recording. A process
killed outright loses what it had not sent, only for pages still leased (fetched again
on resume). A batch Redis refuses (unreachable, stalled) is dropped, logged and counted
in ``crawlyx/graph/record_failures``: the graph is incomplete, the crawl goes on.

Stats: ``crawlyx/graph/pages`` (pages recorded), ``crawlyx/graph/edges`` (edges this
process added), ``crawlyx/graph/truncated`` (1 once the graph reached
``CRAWLYX_GRAPH_MAX_EDGES``), ``crawlyx/graph/record_failures`` (records dropped).
"""

from __future__ import annotations

import logging
import re
from base64 import b64decode

from redis.exceptions import NoScriptError
from scrapy import signals

from crawlyx.errors import ALIASES
from crawlyx.frontier.state import REDIS_DOWN, outage
from crawlyx.graph.store import GraphStore, Record, recorded
from crawlyx.signals import page_not_modified, page_read, sitemap_listed, start_fixed, url_failed
from crawlyx.urls.normalize import normalize_url

logger = logging.getLogger(__name__)


class GraphRecorder:
    BATCH = 64  # records per script call (a page is one or two)

    def __init__(self, crawler, max_edges: int, state=None):
        self.crawler = crawler
        self.max_edges = max_edges
        self._state = state  # a callable: the crawl's State, once the job has one
        self.pending: list[Record] = []
        self._store: GraphStore | None = None
        self._core = None
        self.start: str | None = None  # the start page, once this process has read it

    @staticmethod
    def check_settings(settings) -> int:
        """CRAWLYX_GRAPH_MAX_EDGES; ValueError if negative."""
        max_edges = settings.getint("CRAWLYX_GRAPH_MAX_EDGES")
        if max_edges < 0:
            raise ValueError(f"CRAWLYX_GRAPH_MAX_EDGES ({max_edges}) must be 0 or more")
        return max_edges

    @classmethod
    def from_crawler(cls, crawler, state) -> GraphRecorder:
        """``state``: a callable giving the crawl's State (crawlyx.parts)."""
        recorder = cls(crawler, cls.check_settings(crawler.settings), state)
        crawler.signals.connect(recorder.spider_closed, signal=signals.spider_closed)
        for handler, signal in (
            (recorder.url_failed, url_failed),
            (recorder.anchor, start_fixed),
            (recorder.page, page_read),
            (recorder.page_not_modified, page_not_modified),
            (recorder.sitemap, sitemap_listed),
        ):
            crawler.signals.connect(handler, signal=signal)
        return recorder

    def url_failed(self, url, error_class, status=None, depth=None, holder=None, **kwargs):
        """A URL's outcome (crawlyx.errors): its class, or the page an alias's document is
        written under (the graph keeps an alias as the page it is)."""
        if error_class not in ALIASES:
            self.outcome(url, error_class, status=status, depth=depth)
        elif holder is not None:
            self.written_as(url, holder)

    def page_not_modified(self, url, depth, **kwargs):
        """Not read again: its links are not known this run."""
        self.outcome(url, status=304, depth=depth)

    @property
    def stats(self):
        return self.crawler.stats  # set once the crawl starts, after the spider is built

    @property
    def store(self) -> GraphStore:
        if self._store is None:
            self._store = GraphStore(self._state(), self.max_edges)
        return self._store

    @property
    def core(self):
        """The crawl core of the store's state, which this recorder is a party of."""
        if self._core is None:
            self._core = self.store.state.core(self.stats)
            self._core.register(self)
        return self._core

    def spider_closed(self, spider):
        self.flush()

    # -- what the components learn ----------------------------------------------------

    def page(self, url: str, depth: int, page: dict, directives, status: int, **kwargs) -> None:
        """A page read (its item emitted, or kept out by a robots directive)."""
        fields = {"s": status, "f": 1, "p": depth}
        for key, name in (("t", "title"), ("d", "description")):
            if page.get(name):
                fields[key] = page[name]
        if page.get("canonical"):
            try:  # on the origin or not: a canonical elsewhere is a finding of its own
                fields["c"] = normalize_url(page["canonical"])
            except ValueError:
                pass
        if directives:
            fields["b"] = sorted(directives)
        if page.get("frames"):  # tables of contents it loads in a noscript frame
            fields["i"] = [frame for frame, _ in page["frames"]]
        summary = url == self.start and not page.get("description") and lede(page["markdown"])
        if summary:
            fields["u"] = summary
        anchors = page.get("anchors") or {}
        links = {link: anchors.get(link, "") for link in page["links"]}
        signature = page.get("neardup")
        signature = b64decode(signature) if signature else None
        self.stats.inc_value("crawlyx/graph/pages")
        self._add(Record(url, fields, links, signature))

    def hop(self, source: str, target: str, reason, depth: int | None) -> None:
        """``source`` (requested at ``depth``) redirected to ``target`` (``reason``: the
        status, or a word for a meta refresh, whose page's status is not known here)."""
        source = self._internal(source)
        if source is None:
            return
        try:
            target = normalize_url(target)
        except ValueError:
            pass  # a Location no URL parser takes: kept as written
        if target == source:
            return  # another spelling of the same page (/docs -> /docs/)
        fields = {"r": target}
        if isinstance(reason, int):
            fields["s"] = reason
        if depth is not None:
            fields["p"] = depth
        self._add(Record(source, fields))
        if self._internal(target):
            self._add(Record(target))  # a node, even if nothing else comes of it

    def anchor(self, response, **kwargs) -> None:
        """The start URL's response: the graph's start, and the hops of its redirects
        that were on the crawl's origin (unknown while they were followed)."""
        url = self.start = normalize_url(response.url)
        try:
            self.store.set_start(url)
        except REDIS_DOWN as exc:
            self._failed("recording the start URL", exc, 1)
        chain = [*response.meta.get("redirect_urls", ()), response.url]
        reasons = response.meta.get("redirect_reasons", ())
        for source, target, reason in zip(chain, chain[1:], reasons, strict=False):
            self.hop(source, target, reason, response.meta.get("depth"))

    def outline(self, frame: str) -> dict | None:
        """The outline of the table of contents at ``frame`` (normalized) the job has
        recorded (:meth:`GraphStore.set_outline`), or None: none yet, or Redis did not
        answer. One call, the first time a process meets the table."""
        try:
            return self.store.outline(frame)
        except REDIS_DOWN as exc:
            outage(self.stats, "reading a table of contents", exc)
            return None

    def set_outline(self, frame: str, outline: dict) -> None:
        """Record the outline read from the table of contents at ``frame``: once a crawl
        (every process reads it from here), not in the batches."""
        try:
            self.store.set_outline(frame, outline)
        except REDIS_DOWN as exc:
            self._failed("recording a table of contents", exc, 1)

    def outcome(self, url: str, error_class=None, *, status=None, depth=None) -> None:
        """A URL's error class (a failed or skipped URL), status (an HTTP error's, or a
        response that is not a page's), the depth it was requested at. ``render`` is no
        failure of the URL (the page was read over plain HTTP): not recorded."""
        if error_class == "render":
            return
        url = self._internal(url)
        if url is None:
            return
        fields = {"e": error_class} if error_class else {}
        if status is not None:
            fields["s"] = status
        if depth is not None:
            fields["p"] = depth
        self._add(Record(url, fields))

    def written_as(self, url: str, holder: str) -> None:
        """The page at ``url`` is no item of its own: its document is written under
        ``holder`` (a copy, an alias of its canonical)."""
        self._add(Record(url, {"w": holder}))

    def content_hash(self, url: str, digest: str) -> None:
        self._add(Record(url, {"h": digest}))

    def sitemap(self, urls, **kwargs) -> None:
        """URLs (normalized, on the origin) a sitemap lists."""
        for url in urls:
            self._add(Record(url, {"m": 1}))

    def _internal(self, url: str) -> str | None:
        """``url`` normalized, if it is on the crawl's origin."""
        spider = self.crawler.spider
        try:
            url = normalize_url(url)
        except ValueError:
            return None
        return url if spider is not None and spider.scope.contains(url) else None

    # -- sending ----------------------------------------------------------------------

    def _add(self, record: Record) -> None:
        self.pending.append(record)
        self.core.wake()

    def flush(self) -> None:
        """Send what is pending now, and wait for it."""
        self.core.drain()

    def take(self):
        """The crawl core's party: every pending record, in script calls of BATCH."""
        if not self.pending:
            return None
        pending, self.pending, n = self.pending, [], self.BATCH
        batches = [pending[i : i + n] for i in range(0, len(pending), n)]
        store, core = self.store, self.core

        def commands(pipe) -> int:
            for batch in batches:
                store.record(batch, client=pipe, core=core)
            return len(batches)

        def handle(results) -> None:
            if isinstance(results, Exception):
                results = [results] * len(batches)
            for batch, result in zip(batches, results, strict=True):
                self._recorded(batch, result)

        return commands, handle

    def _recorded(self, batch: list[Record], result) -> None:
        if isinstance(result, NoScriptError):  # Redis restarted: sent again
            self.pending[:0] = batch
            return
        if isinstance(result, REDIS_DOWN):  # the core logged and counted the outage
            self.stats.inc_value("crawlyx/graph/record_failures", len(batch))
            return
        if isinstance(result, Exception):  # never the crawl's end: the graph's only
            logger.error("Link graph: Redis refused %d records: %s", len(batch), result)
            self.stats.inc_value("crawlyx/graph/record_failures", len(batch))
            return
        kept, truncated = recorded(result)
        self.stats.inc_value("crawlyx/graph/edges", kept)
        if truncated and not self.stats.get_value("crawlyx/graph/truncated"):
            self.stats.set_value("crawlyx/graph/truncated", 1)
            logger.warning(
                "Link graph: CRAWLYX_GRAPH_MAX_EDGES (%d) reached; links past it are not recorded",
                self.max_edges,
            )

    def _failed(self, doing: str, exc: Exception, records: int) -> None:
        outage(self.stats, doing, exc)
        self.stats.inc_value("crawlyx/graph/record_failures", records)


_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")  # [text](url), ![alt](src)
_LIST = re.compile(r"([-*+]|[0-9]+[.)])\s")  # a list item's marker


def lede(markdown: str, limit: int = 300) -> str | None:
    """The first paragraph of prose in ``markdown`` (not a heading, list, quote, table or
    code), links reduced to their text, cut at a sentence end within ``limit``."""
    for block in markdown.split("\n\n"):
        block = block.strip()
        if not block or block[0] in "#>|`<!~" or _LIST.match(block):
            continue
        text = " ".join(_LINK.sub(r"\1", block).replace("**", "").replace("__", "").split())
        if len(text) < 40:
            continue
        if len(text) > limit:
            cut = text.rfind(". ", 0, limit)
            text = text[: cut + 1] if cut > 0 else text[:limit].rsplit(" ", 1)[0] + "…"
        return text
    return None
