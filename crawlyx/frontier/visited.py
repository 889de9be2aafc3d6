"""The visited table and the frontier queue it guards, in Redis.

Every request the crawl may fetch has a fingerprint, and every fingerprint a state:

    none -> queued -> leased -> done

``none -> queued`` is a compare-and-set (HSETNX) done in the same Lua script as the
push onto the queue, so of any number of discoverers, in any number of processes,
exactly one wins and only the winner enqueues. A request is *leased* when a process
pops it: the lease records the owner and the serialized request, so a lease held by
a process that died can be put back on the queue. It is *done* once its response (or
failure) has been handled. A request fetched again (a retry, a render) goes back to
the queue under its lease: ``leased -> queued``, the lease removed in the same script,
so a dead owner's lease can never queue the page a second time. Every way onto the
queue sets ``queued``, and a pop takes only a fingerprint still ``queued``: a page is in
the queue at most once, and a stale copy is dropped, never fetched.

The table is split in shards, each its own hash tag: their keys, and the Lua scripts
that move a fingerprint from state to state, are in :mod:`crawlyx.frontier.shards`. A
process talks to the table in round trips that carry all it has pending
(:mod:`crawlyx.frontier.round_trips`): in a crawl, with the rest of its Redis work, as a
party of the crawl core. A lease names the process that holds it, which keeps a
heartbeat: the leases of a process taken for dead go back on the queue
(:mod:`crawlyx.frontier.liveness`).

A redirect to a page already known ends its chain there, and the redirecting page is
accounted for by its target. Pages that redirect to each other, each fetched on its own
(both linked), would so account for each other and vanish: once the target's claim is
lost, the chain's hops are recorded by a script of their own, which finds a loop they
close atomically, so exactly one process does, and hands the loop's URLs back to be
recorded as a trap; the lease is released after the claim (and the hops).
"""

from __future__ import annotations

import time
from collections import OrderedDict

from crawlyx.frontier.core import CrawlCore, run_scripts
from crawlyx.frontier.liveness import LivenessMixin, owner_name
from crawlyx.frontier.round_trips import RoundTripMixin
from crawlyx.frontier.shards import (
    DONE,
    HOPS,
    MARK_WRITTEN,
    NO_FP,
    REQUEUE_DEAD,
    SYNC,
    UNLEASE,
    UNPARK,
    WRITTEN,
    Shard,
)
from crawlyx.frontier.state import REDIS_DOWN, State, outage

# The request.meta key that carries the fingerprint a request holds the lease of.
LEASE_META = "crawlyx_lease"


class VisitedTable(LivenessMixin, RoundTripMixin):
    """Claim-once dedup, the Redis frontier queue and the leases, for one crawl."""

    # Fingerprints this process has already offered to Redis. A bounded cache (about
    # 10 MiB when full): it only saves work for links pages repeat; Redis decides. Each
    # link it misses costs a request object, the engine's scheduling and a lost claim,
    # so it holds all of a mid-size site's URLs.
    LOCAL_CACHE_SIZE = 1 << 16

    def __init__(
        self,
        state: State,
        owner: str | None = None,
        stats=None,
        loop_hops: int = 20,
        core: CrawlCore | None = None,
    ):
        self.state = state
        self.core = core
        if core is not None:
            core.register(self, last=True)
        self.stats = stats
        self.redis = state.client
        self.owner = owner or owner_name()
        self.shards = [Shard.of(state, n) for n in range(state.shards)]
        self._mask = len(self.shards) - 1
        self._turn = 0  # the shard the next batch's pops start at
        self._empty = 0  # shards in turn found empty since a pop last found anything
        self.redirects_key = state.key("redirects")
        self.loop_hops = loop_hops  # the longest redirect loop across fetches looked for
        self._sync = self.redis.register_script(SYNC)
        self._hops = self.redis.register_script(HOPS)
        # Claims and pushes not sent yet: the next round trip carries them.
        self._pending: list[bytes] = []  # (b"c" claim or b"p" push, fp, message) flat
        self._dones: list[str] = []  # leases finished, not sent yet
        # Leases finished whose claims went with the last batch: sent with the next (with
        # more than one shard, see take).
        self._ready: list[str] = []
        self._want = 0  # requests to pop with the next batch
        # Called on the reactor thread with what a batch popped (an empty list when it
        # failed): set by the scheduler.
        self.on_popped = None
        # Leases this process popped and has not finished: a lease of its own that is
        # not here was popped by a round trip whose answer was lost.
        self.held: set[str] = set()
        # Leases it held and found taken over after a stall: their pages are another
        # process's to fetch and emit (see :meth:`still_mine`).
        self.lost: set[str] = set()
        self._beat_at = time.monotonic()  # when the last heartbeat that arrived was sent
        self.dead = False  # taken for dead by another process: see heartbeat
        self._requeue_dead = self.redis.register_script(REQUEUE_DEAD)
        self._unlease = self.redis.register_script(UNLEASE)
        self._unpark = self.redis.register_script(UNPARK)
        self._written = self.redis.register_script(MARK_WRITTEN)
        self._loaded: set = set()  # scripts loaded for direct calls (run_scripts)
        self._offered: OrderedDict[str, None] = OrderedDict()

    def shard(self, fp: str | bytes) -> Shard:
        """The shard of a fingerprint: its first 32 bits, masked."""
        return self.shards[int(fp[:8], 16) & self._mask]

    # -- claiming ---------------------------------------------------------------

    def known(self, fp: str) -> bool:
        """True if this process has already offered ``fp`` to the table (no round trip)."""
        cache = self._offered
        if fp in cache:
            cache.move_to_end(fp)
            return True
        return False

    def remember(self, fp: str) -> None:
        cache = self._offered
        cache[fp] = None
        if len(cache) > self.LOCAL_CACHE_SIZE:
            cache.popitem(last=False)

    def claim(self, fp: str, payload: bytes) -> bool:
        """none -> queued, atomically with the push, now. Only the winner gets True."""
        return bool(self.sync(claim=_claim(fp, payload))[0][-1])

    def claim_later(self, fp: str, payload: bytes) -> None:
        """:meth:`claim`, sent with this process's next round trip to Redis (every
        method below that talks to Redis sends what is pending first)."""
        self._pending += _claim(fp, payload)
        self._wake(answer=False)

    def push(self, fp: str | None, payload: bytes) -> None:
        """Queue without claiming: a request this process holds the lease of (a retry, a
        redirect to the same page), which goes from leased to queued, or one outside the
        table (fp None). A lease this process no longer holds (taken back while it
        seemed dead) queues nothing. Sent with the next round trip, like
        :meth:`claim_later`."""
        prefix = fp.encode() if fp else NO_FP
        self._pending += (b"p", prefix, prefix + payload)
        self.held.discard(fp)
        self._wake(answer=False)

    def redirect(self, lease: str, fp: str, payload: bytes, hops) -> tuple[bool, list]:
        """The page leased as ``lease`` redirected to ``fp``: claim the target, then release
        the lease. ``hops``: the chain's (fp, URL, target fp), in order, the last from
        ``lease`` to ``fp``; recorded if the target was known already. Returns (the claim
        won, the loops the hops closed: each a list of URLs). A page that closed a loop
        keeps its lease, to be released once the loop is recorded. With Redis
        unreachable, what is left is sent with the next round trip (False, [] now): the
        lease, no longer held, is then given back and its loop found again."""
        self.remember(fp)
        self.held.discard(lease)
        try:
            won = self.sync(claim=_claim(fp, payload))[0][-1]
            loops, closers = [], []
            if hops and not won:
                args = [self.loop_hops]
                for source, url, target in hops:
                    args += (source, target + url)
                loops, closers = self._hops(keys=[self.redirects_key], args=args)
            if lease.encode() not in closers:
                self.sync(done=(lease,))
        except REDIS_DOWN as exc:
            outage(self.stats, "following a redirect", exc)
            return False, []
        return bool(won), [[url.decode() for url in loop] for loop in loops]

    def settle(self, fp: str) -> bool:
        """none -> done, for a page handled without being queued (one a browser was
        redirected to). True if no one had claimed it: the caller has it."""
        self.remember(fp)
        self.sync()
        return bool(self.redis.hsetnx(self.shard(fp).visited, fp, DONE))

    def pop(self) -> tuple[str | None, bytes] | None:
        """The next request to fetch, leased to this process: (fp or None, payload)."""
        popped = self.pop_many(1)
        return popped[0] if popped else None

    def pop_many(self, n: int) -> list[tuple[str | None, bytes]]:
        """Up to ``n`` requests to fetch, leased to this process, from the next shards in
        turn, in each shard's queue order; the shards are tried until ``n`` are found or
        every one was found empty."""
        popped, tried = [], 0
        while len(popped) < n and tried < len(self.shards):
            turn = self._turn
            popped += self.sync(pop=n - len(popped))[2]
            tried += (self._turn - turn) % len(self.shards) or len(self.shards)
        return self._popped(popped)

    def done(self, fp: str, written: bool = False) -> bool:
        """leased -> done (``written``: see :meth:`done_later`). True if this call
        released a lease. With Redis unreachable, sent with the next round trip (False
        now)."""
        self.held.discard(fp)
        try:
            return bool(self.sync(done=(fp + WRITTEN if written else fp,))[1][0])
        except REDIS_DOWN as exc:
            outage(self.stats, "finishing a lease", exc)
            return False

    def release(self, request) -> None:
        """The request's response or failure is handled: its lease, if any, is done."""
        fp = request.meta.pop(LEASE_META, None)
        if fp is not None:
            self.finish(fp)

    def finish(self, fp: str, written: bool = False) -> None:
        """leased -> done: with the core's next batch in a crawl, now without one
        (``written``: the page's item was written). A lease lost in a stall is another
        process's: nothing to do."""
        if fp in self.lost:
            self.lost.discard(fp)
        elif self.core is not None:
            self.done_later(fp, written)
        else:
            self.done(fp, written)

    def unlease(self, request) -> None:
        """Give the request's lease back unfinished: it will be fetched again."""
        fp = request.meta.pop(LEASE_META, None)
        if fp is not None:
            self.held.discard(fp)  # if Redis is unreachable, given back once idle
            self._quiet()
            try:
                self._hand_back(fp)
            except REDIS_DOWN as exc:
                outage(self.stats, "giving a lease back", exc)

    def park(self, request) -> None:
        """Leave the request's page queued for the job's next run, not this one: it could
        not be fetched for now (its robots.txt is unreachable). This run can end without it."""
        fp = request.meta.pop(LEASE_META, None)
        if fp is not None:
            self._quiet()
            self._hand_back(fp, parked=True)

    def _hand_back(self, fp: str, parked: bool = False):
        """This process's lease of ``fp`` back onto its shard's queue (the front), or
        parked; a lease it no longer holds stays as it is."""
        return self._unlease(keys=self._unlease_keys(fp, parked), args=[fp, self.owner])

    def _unlease_keys(self, fp: str, parked: bool = False) -> list[str]:
        shard = self.shard(fp)
        return [shard.visited, shard.parked if parked else shard.queue, shard.leases]

    def written(self, fps: list[str]) -> int:
        """Pages whose items the output holds already are done, if they were not: a
        process killed between writing an item and its page's release (sent with its
        next batch) left them to be fetched and written again. How many."""
        if not fps:
            return 0
        self._quiet()
        by_shard: dict[Shard, list[str]] = {}
        for fp in fps:
            by_shard.setdefault(self.shard(fp), []).append(fp)
        calls = [
            (self._written, [shard.visited, shard.leases, shard.pages], group)
            for shard, group in by_shard.items()
        ]
        return sum(run_scripts(self.redis, calls, self._loaded))

    def unpark(self) -> int:
        """Put the requests earlier runs parked back on the queue; returns how many."""
        return sum(self._each_shard(self._unpark, lambda s: [s.parked, s.queue]))

    def give_back(self, popped: list[tuple[str | None, bytes]]) -> None:
        """Put popped, unstarted requests back at the front of the queue, in order."""
        self.sync()
        free = [NO_FP + payload for fp, payload in reversed(popped) if fp is None]
        if free:
            self.redis.rpush(self.shards[0].queue, *free)
        calls = []
        for fp, _ in reversed(popped):
            if fp is not None:
                self.held.discard(fp)
                calls.append((self._unlease, self._unlease_keys(fp), [fp, self.owner]))
        run_scripts(self.redis, calls, self._loaded)

    # -- what the table holds ----------------------------------------------------

    def size(self) -> tuple[int, int, int]:
        """(queued, parked, leased) over every shard, in one round trip."""
        pipe = self.redis.pipeline(transaction=False)
        for shard in self.shards:
            pipe.llen(shard.queue).llen(shard.parked).hlen(shard.leases)
        answers = pipe.execute()
        return tuple(sum(answers[i::3]) for i in range(3))

    def queued(self) -> int:
        self.sync()
        return self.size()[0]

    def leased(self) -> int:
        return self.size()[2]

    def pages(self) -> int:
        """The job's pages written, counted over the shards."""
        pipe = self.redis.pipeline(transaction=False)
        for shard in self.shards:
            pipe.hget(shard.pages, "pages")
        return sum(int(n or 0) for n in pipe.execute())

    def state_of(self, fp: str) -> bytes | None:
        return self.redis.hget(self.shard(fp).visited, fp)

    def states(self, fps: list[str]) -> list[bytes | None]:
        """The state of each of ``fps`` (None: never claimed), in one round trip."""
        pipe = self.redis.pipeline(transaction=False)
        for fp in fps:
            pipe.hget(self.shard(fp).visited, fp)
        return pipe.execute()


def _claim(fp: str, payload: bytes) -> tuple[bytes, bytes, bytes]:
    key = fp.encode()
    return (b"c", key, key + payload)
