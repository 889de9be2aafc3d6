"""The frontier: a Scrapy scheduler over crawlyx's visited table, in Redis.

The queue is in Redis, so memory stays flat however large the frontier grows, as with
scrapy-redis, whose scheduler this one began as. On Scrapy 2.19 every one of that
scheduler's methods had to be replaced, so crawlyx no longer uses it (nor depends on
scrapy-redis): this is Scrapy's ``BaseScheduler``, and where it differs from scrapy-redis:

- dedup uses the crawler's request fingerprinter (normalized URLs), not a hash of
  its own, and the seen-check and the push are one atomic claim (see
  :mod:`crawlyx.frontier.visited`) instead of "mark seen, then push";
- a request is queued as data (:mod:`crawlyx.frontier.queued`), not pickled: what is in Redis
  cannot make a crawler run code; one that cannot be queued is an error naming its
  URL (scrapy-redis marks it seen first and then loses it), and a queue entry crawlyx
  would not have written (outside the schema or the crawl's scope) is refused;
- a popped request is leased, and termination is "queue empty and nothing leased
  by a live process", never an idle timeout (its BRPOP-based idle wait freezes the
  reactor);
- requests are popped ahead of need, with the crawl core's batches
  (:mod:`crawlyx.frontier.core`), so the engine takes them from memory and never waits
  on Redis; the ones not started yet go back to the front of the queue on close;
- claims and releases go with the core's next batch rather than one round trip each:
  the links a page yields go in the same round trip as its lease's release, or an
  earlier one;
- Redis unreachable (restarting, stalled) pauses the crawl instead of ending it: a
  failed pop is "nothing to fetch now" while the engine is told requests are pending,
  and what could not be sent (claims, finished leases) goes with the next round trip;
- stats are counted without the deprecated ``spider=`` argument.
"""

from __future__ import annotations

import logging
from collections import deque

import redis
from scrapy.core.scheduler import BaseScheduler
from twisted.internet import task

from crawlyx.errors import record_error
from crawlyx.feeds import release_written
from crawlyx.frontier import queued
from crawlyx.frontier.fingerprint import url_fingerprint
from crawlyx.frontier.state import REDIS_DOWN, outage
from crawlyx.frontier.visited import LEASE_META
from crawlyx.parts import shared_parts

logger = logging.getLogger(__name__)


class Scheduler(BaseScheduler):
    HEARTBEAT_INTERVAL = 10.0
    # Requests leased ahead of need: the engine takes them from memory while the next
    # ones are popped. Small: while a request waits here no other process can have it.
    POP_BATCH = 4

    def __init__(self, crawler, parts):
        self.crawler = crawler
        self.stats = crawler.stats
        self.parts = parts  # the crawl's shared parts: the visited table is its frontier
        self.fingerprinter = crawler.request_fingerprinter
        self.visited = None
        self._heartbeat = None
        self._popped: deque[tuple[str | None, bytes]] = deque()
        self._asking = False  # a pop is on its way (with the core's next batch)
        # The last pop found the queue empty: not asked again until something may have
        # been queued (a claim of this process's, or the idle check finding some).
        self._drained = False

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler, shared_parts(crawler))

    def open(self, spider):
        self.spider = spider
        self.visited = self.parts.visited
        self.visited.on_popped = self._arrived
        self._heartbeat = task.LoopingCall(self._beat)
        self._heartbeat.start(self.HEARTBEAT_INTERVAL, now=True)
        self.visited.retire_gone_neighbours()  # killed here: no need to wait for the TTL
        self.visited.unpark()  # left by an earlier run for this one (robots.txt unreachable)
        requeued = self.visited.requeue_dead()
        release_written(self.visited)  # written by a run killed before it released them
        queued = self.visited.queued()
        if requeued or queued:
            logger.info(
                "Resuming job %r: %d requests queued (%d leases of stopped processes requeued)",
                spider.job,
                queued,
                requeued,
            )

    def _beat(self) -> None:
        """One heartbeat. A Redis error skips this beat: an exception would stop the
        looping call for good, and 30 s later other processes would take this live
        process's leases and fetch its pages again."""
        try:
            self.visited.heartbeat()
        except redis.RedisError as exc:
            logger.warning("Heartbeat not sent, Redis failed: %s", exc)
            self.stats.inc_value("crawlyx/redis/heartbeat_failures")

    def close(self, reason):
        if self._heartbeat is not None and self._heartbeat.running:
            self._heartbeat.stop()
        if self.visited is not None:
            try:
                self.visited.core.drain()  # everything this process has pending
                self.visited.sync()  # what Redis refused while draining
                if self._popped:
                    self.visited.give_back(list(self._popped))
                    self._popped.clear()
                self.visited.retire()
            except REDIS_DOWN as exc:
                # The leases come back once the heartbeat expires; the claims are lost.
                outage(self.stats, "closing", exc)
                logger.error(
                    "Stopped without reaching Redis: %d links found were not queued",
                    self.visited._pending[::3].count(b"c"),
                )

    def flush(self):
        raise NotImplementedError("a crawlyx frontier is removed with its job, not flushed")

    def __len__(self):
        try:
            return self.visited.queued() + len(self._popped)
        except REDIS_DOWN as exc:
            outage(self.stats, "counting the queue", exc)
            return len(self._popped)

    # -- in -----------------------------------------------------------------------

    def enqueue_request(self, request):
        self._drained = False  # it may be queued: the next pop may find it
        lease = request.meta.pop(LEASE_META, None)
        if request.dont_filter:
            # A retry keeps the lease of the page it retries.
            return self._push(lease, request)
        fp = self.fingerprinter.fingerprint(request).hex()
        if lease == fp:
            # A redirect to another spelling of the same page (/docs -> /docs/).
            return self._push(lease, request)
        if lease is not None:
            return self._redirect(lease, fp, request)
        return self._claim(fp, request)

    def _redirect(self, lease, fp, request) -> bool:
        """A redirect elsewhere (its hop passed crawlyx.middlewares.redirect): the page
        that redirected is handled, and accounted for by its target (the target's item or
        error, or the page already crawled under that URL). It is released after its
        target's claim, in the same round trip: a process killed in between leaves the
        lease to be requeued, never the target lost. Pages that redirect to each other
        would so account for each other: the loop they make is a trap, recorded before
        the lease that closed it is released."""
        self.stats.inc_value("crawlyx/frontier/redirected")
        payload = self._encode(request)
        if payload is None:
            self.visited.finish(lease)
            return False
        # Claimed in Redis even if this process knows the target: whether it was known
        # decides, atomically, whether the chain's hops are recorded.
        chain = request.meta.get("redirect_urls", [])  # requested in turn, the last leased
        fps = [*map(url_fingerprint, chain[:-1]), lease, fp]
        hops = [(a, url, b) for a, url, b in zip(fps, chain, fps[1:], strict=False) if a != b]
        claimed, loops = self.visited.redirect(lease, fp, payload, hops)
        for loop in loops:
            detail = "redirect loop: " + " -> ".join([*loop, loop[0]])
            for url in loop:
                referrer = request.meta.get("crawlyx_referrer")
                record_error(self.crawler, url, "trap", detail, referrer)
        if loops:
            self.visited.finish(lease)
        return claimed

    def _claim(self, fp, request) -> bool:
        if self.visited.known(fp):
            self.stats.inc_value("crawlyx/frontier/duplicates")
            return False
        payload = self._encode(request)
        if payload is None:
            return False  # not claimed: a serializable request for it may still come
        self.visited.remember(fp)
        # Claimed with the next round trip to Redis (a page's links go with its lease's
        # release); the claim's outcome is counted then.
        self.visited.claim_later(fp, payload)
        return True

    def _push(self, fp, request):
        payload = self._encode(request)
        if payload is None:
            if fp is not None:
                self.visited.finish(fp)
            return False
        self.visited.push(fp, payload)
        self.stats.inc_value("crawlyx/frontier/enqueued")
        return True

    def _encode(self, request) -> bytes | None:
        try:
            return queued.encode(request, self.spider)
        except (ValueError, TypeError) as exc:
            logger.error(
                "Cannot queue %s: the request does not serialize (%s: %s); it is not crawled",
                request.url,
                type(exc).__name__,
                exc,
            )
            self.stats.inc_value("crawlyx/frontier/unserializable")
            return None

    # -- out ----------------------------------------------------------------------

    def next_request(self):
        if getattr(self.spider, "closing", False) or self.visited.dead:
            # The spider is done (max_pages): what is still queued stays for a resume.
            return None
        while True:
            if len(self._popped) < self.POP_BATCH:
                self._ask()
            if not self._popped:
                return None  # the engine is woken when the pop is answered
            fp, payload = self._popped.popleft()
            try:
                request = queued.decode(payload, self.spider)
            except queued.Refused as exc:
                self._refuse(fp, exc)
                continue
            except REDIS_DOWN as exc:  # reading the crawl's origin, to check the scope
                outage(self.stats, "checking a request's scope", exc)
                self._popped.appendleft((fp, payload))
                return None
            if fp is not None:
                request.meta[LEASE_META] = fp
            self.stats.inc_value("crawlyx/frontier/dequeued")
            return request

    def _refuse(self, fp: str | None, exc: queued.Refused) -> None:
        """Drop a queue entry crawlyx would not have written (planted by someone with
        access to the Redis, or damaged), and complete its lease so that it is not popped
        again. Logged once; counted."""
        if not self.stats.get_value("crawlyx/queue/refused"):
            logger.error(
                "Refusing a queue entry crawlyx did not write: %s "
                "(any more are only counted, in crawlyx/queue/refused)",
                exc,
            )
        self.stats.inc_value("crawlyx/queue/refused")
        if fp is not None:
            self.visited.finish(fp)

    def _ask(self) -> None:
        """Pop :attr:`POP_BATCH` more with the core's next batch."""
        if not (self._asking or self._drained):
            self._asking = True
            self.visited.want(self.POP_BATCH)

    def _arrived(self, popped) -> None:
        """A batch's pops (none: the queue was empty, or Redis failed)."""
        self._asking = False
        self._drained = not popped
        if popped:
            self._popped.extend(popped)
            self._wake_engine()

    def _wake_engine(self) -> None:
        """Have the engine ask for requests again now, not at its next heartbeat."""
        slot = getattr(self.crawler._engine, "_slot", None)  # no engine: driven by hand
        if slot is not None:
            slot.nextcall.schedule()

    def has_pending_requests(self):
        """Asked by the engine when this process is idle: is the crawl finished?

        Not while anything is queued, nor while a live process holds a lease (it may
        still discover pages). Leases of dead processes go back on the queue. This
        process holds no lease while idle; one it still has was lost on a path that
        never reported back, and is closed here so the crawl can end, or was popped by
        a round trip whose answer never came (Redis failed), and is queued again.
        Redis unreachable: the crawl cannot know, so it waits.
        """
        if getattr(self.spider, "closing", False) or self.visited.dead:
            return False
        core = self.visited.core
        if not core.live:  # driven by hand: what is pending, now
            core.drain()
        if self._asking or core.busy or self.visited.pending:
            # Not final until the batch is answered: asked again then.
            core.notify(self._wake_engine)
            return True
        try:
            return self._pending()
        except REDIS_DOWN as exc:
            outage(self.stats, "checking for pending requests", exc)
            return True

    def _pending(self) -> bool:
        table = self.visited
        if self._popped or table.queued():  # queued() sends what is pending first
            self._drained = False  # queued by another process, or given back: popped now
            self._ask()
            return True
        unanswered = []
        for fp in table.own_leases():
            if fp not in table.held:
                unanswered.append((fp, b""))
            elif table.done(fp):
                logger.warning("Released a lease no callback or errback reported: %s", fp)
                self.stats.inc_value("crawlyx/frontier/lost_leases")
        if unanswered:
            table.give_back(unanswered)
            self.stats.inc_value("crawlyx/frontier/unanswered_pops", len(unanswered))
            return True
        if not table.leased():
            return False
        # Leases of a process killed here may be of pages it wrote: done, not requeued.
        release_written(table)
        return table.requeue_dead() > 0 or table.leased() > 0
