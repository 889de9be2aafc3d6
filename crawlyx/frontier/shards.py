"""The visited table's layout in Redis: the keys of its shards, the states a fingerprint
takes there, and the Lua scripts that move it from one state to the next.

The table is split in shards (``CRAWLYX_FRONTIER_SHARDS``: 64 on a Redis Cluster, 1 on
one server) by the first 32 bits of the fingerprint, each shard its own hash tag, so a
cluster spreads one job's frontier over its nodes. Each script runs in one shard (the
redirect hops, on the job's own keys), so each is atomic: of any number of processes,
exactly one wins a claim, or takes a dead owner's lease back. The scripts are kept
together because the table's promises hold across them: every way onto the queue sets
``queued``, and a pop takes only a fingerprint still ``queued``.

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

from dataclasses import dataclass
from functools import partial

from crawlyx.frontier.state import State

# The scripts below spell these as literals ('q', 'l', 'd', 40, forty '-'): change both.
FP_LEN = 40  # hex sha1
NO_FP = b"-" * FP_LEN  # a request outside the visited table (dont_filter, no lease)

QUEUED, LEASED, DONE = b"q", b"l", b"d"

RECORD = "job"  # crawlyx:{job}:job, the job's record: its ``pages`` are counted here
WRITTEN = "+"  # after a done fp: its page's item was written (it counts in ``pages``)

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
SYNC = """
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
HOPS = """
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
REQUEUE_DEAD = """
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
UNLEASE = """
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
MARK_WRITTEN = """
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
UNPARK = """
local n = 0
while redis.call('RPOPLPUSH', KEYS[1], KEYS[2]) do n = n + 1 end
return n
"""
