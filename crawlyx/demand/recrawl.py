"""Crawling a site again: the pages that are due, asked for conditionally, and what changed.

Every page a crawl reads is recorded in its site's registry (:mod:`.registry`): when it
was fetched, a hash of its markdown, its ETag and Last-Modified, its interval and so
when it is next due. A refresh run (``-a refresh=1``) starts from the start URL as any
crawl does and then asks for the pages that are due (``-a refresh=all``: every page the
registry knows), with ``If-None-Match`` and ``If-Modified-Since``; it follows links only
to pages the registry does not know yet (a known page is fetched when it is due, not
because something links it). When none is due, it says how many pages the registry
knows and when the first comes due, at the start and again at the end.

Unchanged means a 304, or the same markdown hash. Unchanged pages are not emitted
unless ``-a emit=all``, which also drops the conditional headers (a 304 has nothing to
emit). A known page that answers 404 or 410 is gone: it leaves the registry and is
recorded under the ``gone`` class.

When the page was due, the rung ladder (:mod:`.ladder`, CRAWLYX_DEMAND_ENABLED) decides
its next interval first, from the visit ring; a dry run moves only the shadow interval.
The histogram (the counterfactual one in a dry run) is logged every
CRAWLYX_DEMAND_STATS_INTERVAL, on a timer of its own, whether or not pages come due.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from datetime import UTC, datetime
from functools import cached_property

from crawlyx.demand.ladder import RungHistogram, label, ladder_for, step
from crawlyx.demand.registry import Page, Registry, registry_state
from crawlyx.demand.tracker import DemandTracker
from crawlyx.errors import record_error
from crawlyx.frontier.core import retryable
from crawlyx.items import response_facts
from crawlyx.parts import shared_parts
from crawlyx.signals import page_not_modified
from crawlyx.urls.normalize import url_origin

logger = logging.getLogger(__name__)

GONE = (404, 410)
HISTOGRAM_TTL = 60.0  # seconds a site's rung histogram (the backstop's input) is reused
COLD_KICK = 1.0  # a cold ring is read again at most this often


class Recrawl:
    def __init__(self, crawler, refresh: str | None = None, emit_all: bool = False):
        self.crawler = crawler
        self.settings = crawler.settings
        self.refresh = refresh  # None: a full crawl; "due" or "all" (CrawlArgs.refresh)
        self.emit_all = emit_all
        self.ladder = ladder_for(self.settings)  # checked at start (crawlyx.addon)
        self.registries: dict[str, Registry] = {}
        self.histograms: dict[str, tuple[float, RungHistogram]] = {}
        self.logged_at: float | None = None  # when the rung histogram was last logged
        self._rows: list[tuple] = []  # registry rows for the crawl core's next batch
        self._unwritten: list[tuple] = []  # (registry, URL) of copies, for that batch too
        self.core = None
        # The process's visit ring the ladder reads: the demand extension's, handed over
        # when the spider opens (see :meth:`_demand`).
        self.demand: DemandTracker | None = None
        self.idle: dict[str, str] = {}  # site -> why a refresh run found nothing due

    @cached_property
    def parts(self):
        """The crawl's shared parts (crawlyx/parts.py). Built with the spider, before the
        add-on, this reaches them as the spider does: when it first uses them."""
        return shared_parts(self.crawler)

    # -- the registry ---------------------------------------------------------------------

    def registry(self, url: str) -> Registry:
        site = url_origin(url)
        registry = self.registries.get(site)
        if registry is None:
            state = registry_state(self.parts.state.client)
            registry = self.registries[site] = Registry.from_settings(state, site, self.settings)
            moved = registry.apply_base() if self.refresh else 0
            if moved:
                logger.info(
                    "%s: %d pages brought forward to the base interval, %s",
                    site, moved, label(registry.base),
                )  # fmt: skip
        return registry

    def fetched(self, url: str, digest: str, facts: dict, now: float | None = None):
        """Record a page read from ``url`` (emitted, or unchanged) whose markdown hashes
        to ``digest``: its rung moves if it was due, and it is due again one interval
        from now. True when the page is new or its markdown changed: in a refresh run at
        once (one round trip: what is emitted depends on it); otherwise the row goes with
        the crawl core's next batch, and this is a future of the answer (every page is
        emitted anyway: the markdown pipeline waits for it, off the reactor's path)."""
        now = time.time() if now is None else now
        self._step(url, now)
        etag, modified = facts.get("etag") or "", facts.get("last_modified") or ""
        registry = self.registry(url)
        core = self._core()
        if self.refresh or not core.live:
            changed = registry.fetched(url, now, digest, etag, modified)
            self._count(changed)
            return changed
        answer = asyncio.get_running_loop().create_future()
        self._rows.append((answer, registry, url, now, digest, etag, modified))
        core.wake()
        return answer

    def unwritten(self, url: str) -> None:
        """The page read from ``url`` was not written: another page holds its document (a
        copy). The next crawl fetches it without conditions and writes it unless it is a
        copy still (its twin may have changed meanwhile)."""
        registry, core = self.registry(url), self._core()
        if not core.live:
            registry.unwritten(url)
            return
        self._unwritten.append((registry, url))
        core.wake()

    def _count(self, changed) -> None:
        """A refresh run counts what changed; a full crawl reads every page and emits it,
        and has no refresh stats."""
        if self.refresh:
            self.crawler.stats.inc_value(f"crawlyx/refresh/{'changed' if changed else 'unchanged'}")

    def _core(self):
        if self.core is None:
            self.core = self.parts.core
            self.core.register(self)
        return self.core

    def take(self):
        """The crawl core's party: the registry rows of the pages read since the last batch."""
        if not self._rows and not self._unwritten:
            return None
        rows, self._rows = self._rows, []
        unwritten, self._unwritten = self._unwritten, []
        core = self.core

        def commands(pipe) -> int:
            for _, registry, *row in rows:
                registry.fetched(*row, client=pipe, core=core)
            for registry, url in unwritten:
                registry.unwritten(url, client=pipe, core=core)
            return len(rows) + len(unwritten)

        def handle(results) -> None:
            if isinstance(results, Exception):
                results = [results] * (len(rows) + len(unwritten))
            results, copies = results[: len(rows)], results[len(rows) :]
            for copy, result in zip(unwritten, copies, strict=True):
                if retryable(result):
                    self._unwritten.append(copy)  # sent again with the next batch
                elif isinstance(result, Exception):
                    logger.error("The page registry refused a copy's row: %s", result)
            failed = []
            for row, result in zip(rows, results, strict=True):
                if retryable(result):
                    failed.append(row)  # sent again with the next batch
                    continue
                if isinstance(result, Exception):
                    logger.error("The page registry refused a row: %s", result)
                    changed = True  # not known: said to have changed rather than not
                else:
                    changed = bool(result)
                    self._count(changed)
                if not row[0].done():
                    row[0].set_result(changed)
            self._rows[:0] = failed

        return commands, handle

    def not_modified(self, response, url: str, now: float | None = None) -> None:
        """A 304 Not Modified answered for the page at ``url``: to a refresh run's
        conditional request, unchanged, due again one interval from now (and the page is
        not read again: its links are not known this run); to any other, an error (no
        page, and nothing was asked)."""
        depth = response.meta.get("depth")
        if not conditional(response.request):
            detail = "HTTP 304 Not Modified, to a request that was not conditional"
            referrer = response.meta.get("crawlyx_referrer")
            record_error(self.crawler, url, "http_3xx", detail, referrer, status=304, depth=depth)
            return
        self.crawler.signals.send_catch_log(page_not_modified, url=url, depth=depth)
        now = time.time() if now is None else now
        facts = response_facts(response)
        registry = self.registry(url)
        page = registry.page(url)
        if page is None:  # forgotten meanwhile: nothing to keep
            return
        self._step(url, now)
        etag = facts.get("etag") or page.etag
        modified = facts.get("last_modified") or page.last_modified
        registry.fetched(url, now, page.content_hash, etag, modified)
        self.crawler.stats.inc_value("crawlyx/refresh/unchanged")
        self.crawler.stats.inc_value("crawlyx/refresh/not_modified")

    def gone(self, url: str, status: int) -> bool:
        """A 404/410 for a page the registry knew: forgotten, and True (class ``gone``)."""
        if status not in GONE or not self.registry(url).forget(url):
            return False
        if self.refresh:
            self.crawler.stats.inc_value("crawlyx/refresh/gone")
        return True

    def emit(self, changed: bool) -> bool:
        """Whether a page is written to the output."""
        return changed or not self.refresh or self.emit_all

    # -- what a refresh run asks for ------------------------------------------------------

    def due(self, origin: str, now: float | None = None):
        """The site's pages due at ``now`` (all of them for ``refresh=all``), each with
        its conditional headers. None due: logged, with when the first comes due."""
        now = time.time() if now is None else now
        until = math.inf if self.refresh == "all" else now
        snapshot = self.parts.state.key("refresh:due")
        registry = self.registry(origin + "/")
        asked = 0
        for page in registry.due_pages(until, snapshot):
            asked += 1
            self.crawler.stats.inc_value("crawlyx/refresh/due")
            yield page.url, self.headers(page)
        if not asked:
            self.idle[origin] = _none_due(registry)
            logger.info("%s: %s", origin, self.idle[origin])

    def headers(self, page: Page | None) -> dict[str, str]:
        """The conditional headers for ``page`` (none for ``emit=all``: it needs the body)."""
        if page is None or self.emit_all:
            return {}
        headers = {}
        if page.etag:
            headers["If-None-Match"] = page.etag
        if page.last_modified:
            headers["If-Modified-Since"] = page.last_modified
        return headers

    def start_headers(self, url: str) -> dict[str, str]:
        return self.headers(self.registry(url).page(url)) if self.refresh else {}

    def new(self, urls: list[str]) -> set[str]:
        """Those of ``urls`` a refresh run follows: every one in a full crawl, only the
        ones the registry does not know in a refresh run."""
        if not self.refresh or not urls:
            return set(urls)
        return set(urls) - self.registry(urls[0]).known(urls)

    def close(self) -> None:
        """At the crawl's end: forget the pages of its sites not fetched for
        CRAWLYX_DEMAND_RETENTION, and log where the ladder has put the rest (and again
        why a refresh run found nothing due)."""
        now = time.time()
        for site, why in self.idle.items():
            logger.info("%s: refresh: %s", site, why)
        for site, registry in self.registries.items():
            forgotten = registry.prune(now)
            if forgotten:
                self.crawler.stats.inc_value("crawlyx/registry/forgotten", forgotten)
                logger.info(
                    "%s: %d pages not fetched for the retention period forgotten", site, forgotten
                )
        if self.ladder.enabled:
            self.histograms.clear()  # read again: the run's last word
            self.log_histograms(now)

    def log_histograms(self, now: float | None = None) -> None:
        """Log where the ladder has put the pages of every site this run reads (the
        counterfactual rungs in a dry run): every CRAWLYX_DEMAND_STATS_INTERVAL, on the
        demand extension's timer (crawlyx/demand/extension.py), and at the end."""
        now = time.time() if now is None else now
        self.logged_at = now
        for site in list(self.registries):
            logger.info("%s: %s", site, self._histogram(site, now).line(self.ladder))

    # -- the ladder -----------------------------------------------------------------------

    def _step(self, url: str, now: float) -> None:
        """Move a due page's rung (or its shadow's, in a dry run) before it is recorded."""
        if not self.ladder.enabled:
            return
        site = url_origin(url)
        ring = self._demand().read(site)
        if not ring.fresh(now):
            ring.refresh(now)
        decision = step(
            self.ladder,
            self.registry(url),
            self._histogram(site, now),
            url,
            now,
            lambda u, seconds, until: ring.visited_between(u, until - seconds, until),
            cold=ring.rows == 0,
        )
        if decision is None or decision.why == "not_due":
            return
        self.crawler.stats.inc_value(f"crawlyx/demand/ladder/{decision.why}")
        if decision.refresh and now - (ring.read_at or 0) >= COLD_KICK:
            ring.refresh(now)

    def _demand(self) -> DemandTracker:
        """The visit ring: the demand extension's, or, with the extension left out of
        EXTENSIONS, one of this recrawl's own on the crawl's Redis (it reads only)."""
        if self.demand is None:
            self.demand = DemandTracker.from_settings(self.settings, self.parts.state)
        return self.demand

    def _histogram(self, site: str, now: float) -> RungHistogram:
        """The site's histogram as the registry keeps it, read again every HISTOGRAM_TTL."""
        read_at, histogram = self.histograms.get(site, (None, None))
        if histogram is None or now - read_at >= HISTOGRAM_TTL:
            histogram = self.registry(site + "/").histogram(shadow=not self.ladder.acts)
            self.histograms[site] = (now, histogram)
        return histogram


def _none_due(registry: Registry) -> str:
    """Why a refresh run asks for no page of the site, as the log says it."""
    registered, first = registry.count(), registry.first_due()
    if not registered or first is None:
        return "no pages registered: every page is new"
    when = datetime.fromtimestamp(first, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    hint = "-a refresh=all asks for them all"
    return f"{registered} pages registered, none due before {when} ({hint})"


def conditional(request) -> bool:
    """The request asks for the page only if it changed (a refresh run's)."""
    headers = request.headers
    return b"If-None-Match" in headers or b"If-Modified-Since" in headers
