"""How the visited table's work reaches Redis: in round trips that carry all a process has
pending.

The claims and pushes a process made, the leases it finished and the requests it wants
next go in one Lua script per shard they touch (:data:`crawlyx.frontier.shards.SYNC`),
pipelined; pops go to the next shards in turn. With more than one shard, a page's
release waits for the batch after the one that claims its links (shards on other nodes
are not written in order): a process killed in between leaves the page leased, never its
links lost. In a crawl the table is a party of the crawl core
(:mod:`crawlyx.frontier.core`), which sends those scripts with the rest of the process's
Redis work, one batch at a time, off the reactor thread; the few calls that need an
answer at once (:meth:`RoundTripMixin.sync` and the methods built on it) wait until no
batch is in flight, so they never overtake one.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from crawlyx.frontier.core import retryable, run_scripts
from crawlyx.frontier.outage import REDIS_DOWN
from crawlyx.frontier.shards import FP_LEN, NO_FP, WRITTEN, Shard

# Logged under the visited table's name: a filter on it covers all of the table.
logger = logging.getLogger("crawlyx.frontier.visited")


class RoundTripMixin:
    """Round-trip methods of :class:`~crawlyx.frontier.visited.VisitedTable`, over the
    state its ``__init__`` sets up (what is pending, the shard the next pops start at)."""

    # Claims and pushes per script call. A page of many thousands of links would
    # otherwise be one long call that holds Redis up for every process of the crawl.
    CHUNK = 2000
    # Pops a batch asks of one shard: a batch's pops go to the next few shards in turn.
    POPS_PER_SHARD = 4

    def sync(
        self, done: tuple[str, ...] = (), pop: int = 0, claim: tuple = ()
    ) -> tuple[list, list, list]:
        """One round trip now, after the core's batch in flight: send what is pending and
        ``claim`` (a claim's triple, last), mark ``done`` fingerprints done and pop up to
        ``pop`` requests. Returns (claims won, leases released, popped messages). A long
        backlog of claims goes first, in calls of its own (:meth:`_chunk`)."""
        self._quiet()
        self._pending += claim  # after the batch in flight: sent by this call, not by it
        self._dones[:0], self._ready = self._ready, []
        self._dones += done
        while True:
            last = len(self._pending) <= 3 * self.CHUNK
            pending, dones = self._chunk()
            if not (pending or dones or pop):
                return [], [], []
            try:
                won, released, popped = self._send(pending, dones, pop if last else 0)
            except REDIS_DOWN:  # kept, in order, for the next round trip
                self._pending, self._dones = pending + self._pending, dones + self._dones
                raise
            self._count(len(won), sum(won))
            if last:
                return won, released[len(dones) - len(done) :], popped

    def _send(self, pending: list[bytes], dones: list[str], pops: int):
        """:meth:`sync`'s script calls, one per shard, pipelined. Across shards a
        page's release goes only once the claims before it are answered: shards on other
        nodes of a cluster are not written in order."""
        if len(self.shards) > 1 and pending and dones:
            won, _, popped = self._send(pending, [], pops)
            return won, self._send([], dones, 0)[1], popped
        calls = self._calls(pending, dones, pops)
        results = run_scripts(self.redis, [c.script for c in calls], self._loaded)
        return _merge(calls, results, pending[::3].count(b"c"), len(dones))

    def _calls(self, pending: list[bytes], dones: list[str], pops: int) -> list[_Call]:
        """The per-shard script calls that send ``pending`` claims and pushes, mark
        ``dones`` done and pop up to ``pops`` requests from the next shards in turn."""
        calls: dict[int, _Call] = {}

        def call(shard: Shard) -> _Call:
            if shard.n not in calls:
                calls[shard.n] = _Call(shard)
            return calls[shard.n]

        if len(self.shards) == 1:  # every fingerprint's: no need to sort them out
            c = call(self.shards[0])
            c.triples, c.dones = pending, dones
            c.claims, c.released = range(pending[::3].count(b"c")), range(len(dones))
        else:
            claims = 0
            for i in range(0, len(pending), 3):
                fp = pending[i + 1]
                c = call(self.shards[0] if fp == NO_FP else self.shard(fp))
                c.triples += pending[i : i + 3]
                if pending[i] == b"c":
                    c.claims.append(claims)
                    claims += 1
            for i, fp in enumerate(dones):
                c = call(self.shard(fp))
                c.dones.append(fp)
                c.released.append(i)
        if pops:
            n = len(self.shards)
            ask = min(n, -(-pops // self.POPS_PER_SHARD))
            for k in range(ask):
                call(self.shards[(self._turn + k) % n]).pops = -(-pops // ask)
            self._turn = (self._turn + ask) % n
        for c in calls.values():
            c.script = (self._sync, c.shard.sync_keys, c.args(self.owner))
        return list(calls.values())

    def _chunk(self) -> tuple[list[bytes], list[str]]:
        """What one round trip sends, taken off what is pending: the claims and pushes,
        up to :attr:`CHUNK`, and the finished leases only with the last of the claims
        before them."""
        pending, end = self._pending, 3 * self.CHUNK
        if len(pending) <= end:
            dones, self._pending, self._dones = self._dones, [], []
            return pending, dones
        self._pending = pending[end:]
        return pending[:end], []

    def _count(self, claims: int, won: int) -> None:
        if claims and self.stats is not None:
            self.stats.inc_value("crawlyx/frontier/enqueued", won)
            self.stats.inc_value("crawlyx/frontier/duplicates", claims - won)

    # -- the crawl core's party (crawlyx.frontier.core) ---------------------------

    def _wake(self, answer: bool = True) -> None:
        """Have the core send what is pending. Claims and pushes need no answer: outside
        a running reactor they wait for the next call that does (a release, a pop)."""
        if self.core is not None and (answer or self.core.live):
            self.core.wake()

    def want(self, n: int) -> None:
        """Pop up to ``n`` requests with the next batch, sent now; :attr:`on_popped` gets
        them. A process taken for dead pops nothing."""
        if self.dead:
            return
        self._want = max(self._want, n)
        if self.core is not None:
            self.core.wake(now=True)

    def done_later(self, fp: str, written: bool = False) -> None:
        """leased -> done, with the next batch (after every claim already pending);
        ``written``: the page's item was written, and counts in the job's pages. A
        process killed before it is sent leaves the page queued, unless its item was
        written (see crawlyx.feeds)."""
        self.held.discard(fp)
        self._dones.append(fp + WRITTEN if written else fp)
        self._wake()

    @property
    def pending(self) -> bool:
        """Work not sent yet."""
        return bool(self._pending or self._dones or self._ready or self._want)

    def take(self):
        pops = self._want
        if not (self._pending or self._dones or self._ready or pops):
            return None
        pending, dones = self._chunk()
        if len(self.shards) > 1 and b"c" in pending[::3]:
            # Released with the next batch, once these claims are answered (see _send);
            # those held back by the last batch go now.
            dones, self._ready = self._ready, dones
        else:
            dones, self._ready = self._ready + dones, []
        self._want = 0
        calls = self._calls(pending, dones, pops)

        def commands(pipe) -> int:
            for c in calls:
                self.core.script(pipe, *c.script)
            return len(calls)

        def handle(results) -> None:
            if isinstance(results, Exception):
                results = [results] * len(calls)
            popped, won, claims, failed = [], 0, 0, None
            for c, result in zip(calls, results, strict=True):
                if not isinstance(result, Exception):
                    won += sum(result[0])
                    claims += len(c.claims)
                    popped += result[2]
                    continue
                failed = result
                if retryable(result):  # kept, in order, for the next round trip
                    self._pending[:0], self._dones[:0] = c.triples, c.dones
                    # Releases held back for claims of this batch wait for them again.
                    self._dones[:0], self._ready = self._ready, []
                else:  # a fault, not an outage: sending it again would fail again
                    logger.error("The visited table's batch failed: %s", result)
            self._count(claims, won)
            if not pops:
                return
            # Nothing in the shards asked: the next ones are asked at once, until every
            # shard was found empty in turn; only then is the queue empty.
            self._empty = 0 if popped else self._empty + len({c.shard.n for c in calls if c.pops})
            if not popped and self._empty < len(self.shards) and failed is None:
                self.want(pops)
            elif self.on_popped is not None:
                self._empty = 0
                self.on_popped(self._popped(popped))

        return commands, handle

    def _popped(self, messages: list[bytes]) -> list[tuple[str | None, bytes]]:
        popped = []
        for message in messages:
            fp = message[:FP_LEN]
            fp = None if fp == NO_FP else fp.decode()
            if fp is not None:
                self.held.add(fp)
            popped.append((fp, message[FP_LEN:]))
        return popped

    def _quiet(self) -> None:
        """Before a direct call: the core's batch in flight is answered first."""
        if self.core is not None:
            self.core.wait()

    def _each_shard(self, script, keys, args=()) -> list:
        """``script`` run on every shard (``keys(shard)``), pipelined; the answers."""
        calls = [(script, keys(shard), list(args)) for shard in self.shards]
        return run_scripts(self.redis, calls, self._loaded)


class _Call:
    """One shard's part of a round trip: its script call, and where its answers go."""

    __slots__ = ("shard", "triples", "claims", "dones", "released", "pops", "script")

    def __init__(self, shard: Shard):
        self.shard = shard
        self.triples: list[bytes] = []
        self.claims: Sequence[int] = []  # the round trip's claims (their order) it carries
        self.dones: list[str] = []
        self.released: Sequence[int] = []  # the round trip's dones it carries
        self.pops = 0
        self.script = None

    def args(self, owner: str) -> list:
        return [owner, self.pops, len(self.dones), *self.dones, *self.triples]


def _merge(calls: list[_Call], results: list, claims: int, dones: int):
    """The shards' answers as one round trip's: (claims won and leases released, each
    in the order sent, and what was popped)."""
    if len(calls) == 1:
        return results[0]
    won, released, popped = [0] * claims, [0] * dones, []
    for call, (w, r, p) in zip(calls, results, strict=True):
        for at, value in zip(call.claims, w, strict=True):
            won[at] = value
        for at, value in zip(call.released, r, strict=True):
            released[at] = value
        popped += p
    return won, released, popped
