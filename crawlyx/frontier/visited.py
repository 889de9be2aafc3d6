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

The table is split in shards (``CRAWLYX_FRONTIER_SHARDS``: 64 on a Redis Cluster, 1 on
one server) by the first 32 bits of the fingerprint, each shard its own hash tag, so a
cluster spreads one job's frontier over its nodes. A process talks to the table in round
trips that carry all it has pending: the claims and pushes it made, the leases it
finished and the requests it wants next go in one Lua script per shard they touch,
pipelined; pops go to the next shards in turn. With more than one shard, a page's
release waits for the batch after the one that claims its links (shards on other nodes
are not written in order): a process killed in between leaves the page leased, never its
links lost. In a crawl the table is a party of the crawl core
(:mod:`crawlyx.frontier.core`), which sends those scripts with the rest of the process's
Redis work, one batch at a time, off the reactor thread; the few calls that need an
answer at once (:meth:`VisitedTable.sync` and the methods built on it) wait until no
batch is in flight, so they never overtake one.

A redirect to a page already known ends its chain there, and the redirecting page is
accounted for by its target. Pages that redirect to each other, each fetched on its own
(both linked), would so account for each other and vanish: once the target's claim is
lost, the chain's hops are recorded by a script of their own, which finds a loop they
close atomically, so exactly one process does, and hands the loop's URLs back to be
recorded as a trap; the lease is released after the claim (and the hops).

Keys of a shard (``crawlyx:{job/N}:``, or ``crawlyx:{job}:`` for a frontier of one
shard): ``visited`` (hash fp -> q/l/d), ``queue`` (list of fp + payload), ``leases``
(hash fp -> owner|payload), ``parked`` (list of fp + payload: queued requests left for
the job's next run), ``job`` (its count of the job's pages). The job's own:
``redirects`` (hash fp -> target fp + URL: the hops of chains that ended on a page
already known) and ``owners`` (the heartbeats: see :class:`~crawlyx.frontier.state.State`;
a lease whose owner is marked dead may be requeued).

A page whose item was written counts in the job's pages (``pages`` of the shards' ``job``
hashes, the job's record itself for one shard) in the same script that marks it done,
so the count is what the job's outputs hold whatever way its runs stopped (a kill, a
second Ctrl-C), with no round trip of its own.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from crawlyx.frontier.core import CrawlCore, retryable, run_scripts
from crawlyx.frontier.state import REDIS_DOWN, State, outage
from crawlyx.process import running

logger = logging.getLogger(__name__)

FP_LEN = 40  # hex sha1
NO_FP = b"-" * FP_LEN  # a request outside the visited table (dont_filter, no lease)

QUEUED, LEASED, DONE = b"q", b"l", b"d"

RECORD = "job"  # crawlyx:{job}:job, the job's record: its ``pages`` are counted here
WRITTEN = "+"  # after a done fp: its page's item was written (it counts in ``pages``)

# The request.meta key that carries the fingerprint a request holds the lease of.
LEASE_META = "crawlyx_lease"

# One round trip does all this process has pending in a shard: claims and pushes,
# finished leases, and popping what to fetch next.
# KEYS: the shard's visited, queue, leases, and its count of the job's pages (the job's
#   record itself when the frontier is one shard).
# ARGV: owner, pops (how many to pop), dones (how many fps follow), the done fps (followed
#   by '+' when the page's item was written: the first time it is done, it counts in the
#   pages), then triples: "c" (claim: none -> queued, pushed only by the winner) or "p"
#   (push: a request outside the table, or leased -> queued by the lease's owner), fp,
#   message. Claims and pushes go on the queue in order, before anything is popped. A done
#   fp another process holds the lease of now is left alone.
# Returns {claims won (1/0 per claim), leases released (1/0 per done fp), popped messages}.
_SYNC = """
local won, released, popped = {}, {}, {}
local dones = tonumber(ARGV[3])
local mine = ARGV[1] .. '|'
for i = 4 + dones, #ARGV, 3 do
  if ARGV[i] == 'p' then
    local fp = ARGV[i + 1]
    if fp == string.rep('-', 40) then
      redis.call('LPUSH', KEYS[2], ARGV[i + 2])
    else
      -- leased -> queued, only by the lease's owner: the lease goes, so the page is
      -- in the queue once, and a lease requeued meanwhile is not queued twice.
      local lease = redis.call('HGET', KEYS[3], fp)
      if lease and string.sub(lease, 1, #mine) == mine then
        redis.call('HDEL', KEYS[3], fp)
        redis.call('HSET', KEYS[1], fp, 'q')
        redis.call('LPUSH', KEYS[2], ARGV[i + 2])
      end
    end
  elseif redis.call('HSETNX', KEYS[1], ARGV[i + 1], 'q') == 1 then
    redis.call('LPUSH', KEYS[2], ARGV[i + 2])
    won[#won + 1] = 1
  else
    won[#won + 1] = 0
  end
end
local written = 0
for i = 4, 3 + dones do
  local fp = string.sub(ARGV[i], 1, 40)
  local lease = redis.call('HGET', KEYS[3], fp)
  if lease and string.sub(lease, 1, #mine) ~= mine then
    -- another process's now: this one was taken for dead
    released[#released + 1] = 0
  else
    if #ARGV[i] > 40 and redis.call('HGET', KEYS[1], fp) ~= 'd' then
      written = written + 1
    end
    redis.call('HSET', KEYS[1], fp, 'd')
    released[#released + 1] = redis.call('HDEL', KEYS[3], fp)
  end
end
if written > 0 then
  redis.call('HINCRBY', KEYS[4], 'pages', written)
end
local pops = tonumber(ARGV[2])
while #popped < pops do
  local m = redis.call('RPOP', KEYS[2])
  if not m then break end
  local fp = string.sub(m, 1, 40)
  if fp == string.rep('-', 40) then
    popped[#popped + 1] = m
  elseif redis.call('HGET', KEYS[1], fp) == 'q' then
    redis.call('HSET', KEYS[1], fp, 'l')
    redis.call('HSET', KEYS[3], fp, ARGV[1] .. '|' .. string.sub(m, 41))
    popped[#popped + 1] = m
  end
end
return {won, released, popped}
"""

# The hops of a redirect chain that ended on a page already known, recorded; a hop that
# closes a loop of recorded hops (from any process) finds it, atomically, so exactly one
# process does. KEYS: redirects. ARGV: the longest loop looked for, then pairs: fp, target
# fp + URL (the hop from fp, at URL, to target). Returns {loops (the URLs of each, from
# the page of the hop that closed it), the fps of the hops that closed them}.
_HOPS = """
local loops, closers, hops = {}, {}, tonumber(ARGV[1])
for i = 2, #ARGV, 2 do
  local fp, m = ARGV[i], ARGV[i + 1]
  redis.call('HSET', KEYS[1], fp, m)
  local loop, at = {string.sub(m, 41)}, string.sub(m, 1, 40)
  for _ = 1, hops do
    if at == fp then
      loops[#loops + 1] = loop
      closers[#closers + 1] = fp
      break
    end
    local hop = redis.call('HGET', KEYS[1], at)
    if not hop then break end
    loop[#loop + 1] = string.sub(hop, 41)
    at = string.sub(hop, 1, 40)
  end
end
return {loops, closers}
"""

# KEYS: a shard's visited, queue, leases. ARGV: the owners known dead. Moves every lease
# of theirs back onto the queue; returns how many.
_REQUEUE_DEAD = """
local dead = {}
for i = 1, #ARGV do dead[ARGV[i]] = true end
local n = 0
local entries = redis.call('HGETALL', KEYS[3])
for i = 1, #entries, 2 do
  local fp, value = entries[i], entries[i + 1]
  local bar = string.find(value, '|', 1, true)
  if dead[string.sub(value, 1, bar - 1)] then
    redis.call('HDEL', KEYS[3], fp)
    redis.call('HSET', KEYS[1], fp, 'q')
    redis.call('RPUSH', KEYS[2], fp .. string.sub(value, bar + 1))
    n = n + 1
  end
end
return n
"""

# KEYS: a shard's visited, queue (or parked), leases. ARGV: fp, owner. Hands one lease of
# the owner's back: its request goes to the front of the queue (or is parked, still
# queued, for the next run).
_UNLEASE = """
local value = redis.call('HGET', KEYS[3], ARGV[1])
local bar = value and string.find(value, '|', 1, true)
if not bar or string.sub(value, 1, bar - 1) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('HSET', KEYS[1], ARGV[1], 'q')
redis.call('RPUSH', KEYS[2], ARGV[1] .. string.sub(value, bar + 1))
return 1
"""

# KEYS: a shard's visited, leases, its count of the job's pages. ARGV: fps of pages whose
# items are in the output already. Those still queued or leased are done (a queue entry
# left behind is dropped when popped), and count in the pages; returns how many.
_WRITTEN = """
local n = 0
for i = 1, #ARGV do
  local state = redis.call('HGET', KEYS[1], ARGV[i])
  if state == 'q' or state == 'l' then
    redis.call('HSET', KEYS[1], ARGV[i], 'd')
    redis.call('HDEL', KEYS[2], ARGV[i])
    n = n + 1
  end
end
if n > 0 then
  redis.call('HINCRBY', KEYS[3], 'pages', n)
end
return n
"""

# KEYS: a shard's parked, queue. Puts every parked request back on the queue; returns
# how many.
_UNPARK = """
local n = 0
while redis.call('RPOPLPUSH', KEYS[1], KEYS[2]) do n = n + 1 end
return n
"""


@dataclass(frozen=True)
class Shard:
    """The keys of one shard of a job's frontier."""

    n: int
    visited: str
    queue: str
    leases: str
    parked: str
    pages: str  # the hash counting, in its ``pages``, the job's pages done in this shard

    @classmethod
    def of(cls, state: State, shard: int) -> Shard:
        key = partial(state.shard_key, shard)
        return cls(shard, key("visited"), key("queue"), key("leases"), key("parked"), key(RECORD))

    @property
    def sync_keys(self) -> list[str]:
        return [self.visited, self.queue, self.leases, self.pages]


class VisitedTable:
    """Claim-once dedup, the Redis frontier queue and the leases, for one crawl."""

    # Fingerprints this process has already offered to Redis. A bounded cache (about
    # 10 MiB when full): it only saves work for links pages repeat; Redis decides. Each
    # link it misses costs a request object, the engine's scheduling and a lost claim,
    # so it holds all of a mid-size site's URLs.
    LOCAL_CACHE_SIZE = 1 << 16
    HEARTBEAT_TTL = 30  # seconds without a heartbeat before a process counts as dead
    # A process that has not renewed its heartbeat for this long may have been taken for
    # dead (stopped, or its reactor blocked): its leases may be another's now. Short of
    # the TTL by a margin for the round trip and for clocks.
    STALL = HEARTBEAT_TTL - 10
    # Claims and pushes per script call. A page of many thousands of links would
    # otherwise be one long call that holds Redis up for every process of the crawl.
    CHUNK = 2000
    # Pops a batch asks of one shard: a batch's pops go to the next few shards in turn.
    POPS_PER_SHARD = 4

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
        self.owner = owner or f"{_home()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.shards = [Shard.of(state, n) for n in range(state.shards)]
        self._mask = len(self.shards) - 1
        self._turn = 0  # the shard the next batch's pops start at
        self._empty = 0  # shards in turn found empty since a pop last found anything
        self.redirects_key = state.key("redirects")
        self.loop_hops = loop_hops  # the longest redirect loop across fetches looked for
        self._sync = self.redis.register_script(_SYNC)
        self._hops = self.redis.register_script(_HOPS)
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
        self._requeue_dead = self.redis.register_script(_REQUEUE_DEAD)
        self._unlease = self.redis.register_script(_UNLEASE)
        self._unpark = self.redis.register_script(_UNPARK)
        self._written = self.redis.register_script(_WRITTEN)
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

    def _popped(self, messages: list[bytes]) -> list[tuple[str | None, bytes]]:
        popped = []
        for message in messages:
            fp = message[:FP_LEN]
            fp = None if fp == NO_FP else fp.decode()
            if fp is not None:
                self.held.add(fp)
            popped.append((fp, message[FP_LEN:]))
        return popped

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

    def _quiet(self) -> None:
        """Before a direct call: the core's batch in flight is answered first."""
        if self.core is not None:
            self.core.wait()

    def _each_shard(self, script, keys, args=()) -> list:
        """``script`` run on every shard (``keys(shard)``), pipelined; the answers."""
        calls = [(script, keys(shard), list(args)) for shard in self.shards]
        return run_scripts(self.redis, calls, self._loaded)

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

    # -- liveness and termination -----------------------------------------------

    def heartbeat(self) -> None:
        """Renew this process's heartbeat. A process another took for dead (a stall past
        the heartbeat: see :meth:`State.dead_owners`) is told so by the renewal, and is
        dead for good: what it did under its name goes to Redis (the batch in flight, the
        releases of pages it wrote), every lease it still holds is lost (other processes
        take them back, and fetch and emit their pages) and it hands nothing more out
        (:attr:`dead`: the crawl stops; run it again to rejoin the job)."""
        now = time.monotonic()
        stalled = now - self._beat_at
        alive = self.dead or self.state.beat(self.owner, self.HEARTBEAT_TTL)
        self._beat_at = now
        if alive:
            return
        self.dead = True
        self._want = 0
        self.sync()
        lost = list(self.held)
        self.lost.update(lost)
        self.held.clear()
        if self.stats is not None:
            self.stats.inc_value("crawlyx/lease/lost", len(lost))
        logger.warning(
            "This process stalled for %.0f s (past the %d s heartbeat) and was taken for "
            "dead: its %d leases are other processes' now, which emit their pages; it "
            "stops (run it again to rejoin the job)",
            stalled, self.HEARTBEAT_TTL, len(lost),
        )  # fmt: skip

    def still_mine(self, fp: str) -> bool:
        """Whether this process still holds the lease of ``fp``, so may emit its page. No
        round trip while its heartbeat is fresh: no other process can have taken a lease
        before the heartbeat expires. Past that, the heartbeat is renewed first (see
        :meth:`heartbeat`). With Redis unreachable, what is known."""
        if time.monotonic() - self._beat_at > self.STALL:
            try:
                self.heartbeat()
            except REDIS_DOWN as exc:
                outage(self.stats, "checking this process's leases", exc)
        return fp not in self.lost

    def retire(self) -> None:
        """This process stops: its leases become requeueable at once."""
        self.state.retire([self.owner])

    def retire_gone_neighbours(self) -> int:
        """Retire the owners whose process ran where this one runs (same host, same PID
        namespace) and is gone, killed outright: their leases need not wait out the
        heartbeat TTL. A PID in use again counts as alive, which only means waiting."""
        home = _home()
        dead = [owner for owner in self.state.owners() if gone(owner, home)]
        if dead:
            self.state.retire(dead)
        return len(dead)

    def requeue_dead(self) -> int:
        """The leases of processes taken for dead back on the queue; how many."""
        self.sync()
        dead = self.state.dead_owners()
        if not dead:
            return 0
        keys = lambda s: [s.visited, s.queue, s.leases]  # noqa: E731
        return sum(self._each_shard(self._requeue_dead, keys, dead))

    def own_leases(self) -> list[str]:
        self._quiet()
        mine = self.owner.encode() + b"|"
        return [
            fp.decode()
            for shard in self.shards
            for fp, value in self.redis.hscan_iter(shard.leases)
            if value.startswith(mine)
        ]

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


CLUSTER_SHARDS = 64  # a job's frontier shards on a Redis Cluster, unless set
MAX_SHARDS = 1024


def frontier_shards(settings, cluster: bool) -> int:
    """CRAWLYX_FRONTIER_SHARDS for a new job (0: 64 on a cluster, 1 on one server);
    ValueError unless 0 or a power of two up to 1024."""
    value = settings.getint("CRAWLYX_FRONTIER_SHARDS")
    if value < 0 or value > MAX_SHARDS or value & (value - 1):
        raise ValueError(
            f"CRAWLYX_FRONTIER_SHARDS ({value}) must be a power of two up to {MAX_SHARDS}, "
            "or 0 (64 on a Redis Cluster, 1 on one server)"
        )
    return value or (CLUSTER_SHARDS if cluster else 1)


def _claim(fp: str, payload: bytes) -> tuple[bytes, bytes, bytes]:
    key = fp.encode()
    return (b"c", key, key + payload)


def gone(owner: str, home: str | None = None) -> bool:
    """The process ``owner`` names ran where this one runs (``home``) and is gone."""
    parts = owner.rsplit("-", 2)  # home, pid, tag
    if len(parts) != 3 or parts[0] != (home or _home()) or not parts[1].isdigit():
        return False  # elsewhere: only its heartbeat's expiry tells
    return not running(int(parts[1]))


def _home() -> str:
    """Where this process's PID names it: the host and its PID namespace."""
    try:
        namespace = os.readlink("/proc/self/ns/pid")  # "pid:[4026531836]"
    except OSError:
        namespace = ""
    return f"{socket.gethostname()}/{namespace}"
