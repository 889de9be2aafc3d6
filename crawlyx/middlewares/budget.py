"""One politeness budget per host for every process of a job, kept in Redis.

Every process crawling a job shares each host's window, its Retry-After pause and its
Crawl-delay through one hash, ``crawlyx:{job}:host:{host}``: ``window``, ``gen`` (how
many decreases so far), ``clean`` (clean fetches towards the next increase),
``paused`` and ``next`` (epoch milliseconds on the Redis server's clock, so the
processes' clocks need not agree) and, per process with requests for the host,
``o:{owner}``: the slots it holds.

Slots are leased, not asked for one request at a time. A process holds a share of the
window and lets requests through its own gate (:mod:`crawlyx.middlewares.window`)
without asking Redis while it has room in its share; every ``SYNC_INTERVAL`` it reports
(one script, :data:`_SYNC`) how many requests it has through and waiting, its clean
fetches, and gets its share back. A share is at most the window split evenly between
the processes that want the host, and never more than the others leave free: whatever
the interleaving, the processes together never start more requests than the window
(requests sent before a decrease finish, as in one process). A process with nothing for
the host gives its share back; one that stops gives it back as it closes; one that
dies stops counting once its heartbeat (in the job's owners, see
:mod:`crawlyx.frontier.state`) expires. So a single process asks Redis a few times a
second per host rather than twice per request (a round trip each way on the fetch
path, for every page of a crawl that runs alone).

Trouble, Retry-After and Crawl-delay do not wait for the next report:

* trouble is reported at once. Each request carries the ``gen`` it was let through
  under; trouble on a request of an older generation was answered by the decrease that
  ended it, so however many processes see a burst of 429s, the window halves once per
  congestion event, as it does for one process. Clean fetches of an older generation
  do not count towards growing it again.
* a Retry-After pause is reported at once and holds every process from its next report.
* with a Crawl-delay, every request start is a report that takes the next start time:
  no two processes start requests to the host closer than the delay.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

from crawlyx.frontier.state import INDEX, OWNERS

SYNC_INTERVAL = 0.25  # seconds between a process's reports on a host it is fetching from

# KEYS: the host's hash, the job's owners (crawlyx.frontier.state: owner -> heartbeat
# expiry), the job's index of keys (the host's hash is added). ARGV: [1] owner, [2] a new
# host's window, [3] minimum, [4] maximum, [5] clean fetches per increase, [6] the
# generation the report is about, [7] clean fetches, [8] trouble (1/0), [9] a pause to
# start (ms), [10] requests through this process's gate, [11] waiting at it, [12] start
# one now (1/0, Crawl-delay), [13] the Crawl-delay (ms).
# Returns {window, gen, window before a decrease, increases, decreased (1/0), this
# process's share, ms left of the pause, ms before a start may be asked again, started}.
_SYNC = """
if redis.replicate_commands then redis.replicate_commands() end
local key, owner = KEYS[1], ARGV[1]
redis.call('SADD', KEYS[3], key)
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local minimum, maximum, grow_after = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local s = redis.call('HMGET', key, 'window', 'gen', 'clean', 'paused', 'next')
local window = math.min(math.max(tonumber(s[1] or ARGV[2]), minimum), maximum)
local gen, clean = tonumber(s[2] or 0), tonumber(s[3] or 0)
local paused, nxt = tonumber(s[4] or 0), tonumber(s[5] or 0)
local before, grew, shrank = window, 0, 0
if tonumber(ARGV[6]) == gen then
  clean = clean + tonumber(ARGV[7])
  while clean >= grow_after and window < maximum do
    clean = clean - grow_after
    window = window + 1
    grew = grew + 1
  end
  if window >= maximum then clean = 0 end
  if ARGV[8] == '1' then
    before = window
    window = math.max(minimum, math.floor(window / 2))
    if window ~= before then shrank = 1 end
    gen, clean = gen + 1, 0
  end
end
-- The other processes' shares; a dead process's share comes back.
local mine, others, wanting = 'o:' .. owner, 0, 1
local fields = redis.call('HGETALL', key)
for i = 1, #fields, 2 do
  local f = fields[i]
  if string.sub(f, 1, 2) == 'o:' and f ~= mine then
    local beat = redis.call('ZSCORE', KEYS[2], string.sub(f, 3))
    if beat and tonumber(beat) > now then
      others, wanting = others + tonumber(fields[i + 1]), wanting + 1
    else
      redis.call('HDEL', key, f)
    end
  end
end
-- A process wants the host while it has requests through or waiting, or asks a start.
local through, waiting = tonumber(ARGV[10]), tonumber(ARGV[11]) + tonumber(ARGV[12])
local share = 0
if through + waiting > 0 then
  share = math.max(0, math.min(math.ceil(window / wanting), window - others))
end
if tonumber(ARGV[9]) > 0 then paused = math.max(paused, now + tonumber(ARGV[9])) end
local wait, started = math.max(0, paused - now), 0
if ARGV[12] == '1' then
  wait = math.max(wait, nxt - now)
  if wait == 0 and through < share then
    through, started, nxt = through + 1, 1, now + tonumber(ARGV[13])
  end
end
if through + waiting > 0 then
  redis.call('HSET', key, mine, math.max(through, share))
else
  redis.call('HDEL', key, mine)
end
redis.call('HSET', key, 'window', window, 'gen', gen, 'clean', clean, 'paused', paused,
  'next', nxt)
return {window, gen, before, grew, shrank, share, math.max(0, paused - now), wait, started}
"""


@dataclass
class Host:
    """One host's window as this process sees it, and what it has yet to report."""

    key: str
    maximum: int
    value: int  # the job's window for the host, as last heard
    gen: int = 0  # decreases so far, as last heard: requests carry the one they went under
    share: int = 0  # requests this process may have through its gate
    through: int = 0  # requests through this process's gate, not finished
    waiting: deque = field(default_factory=deque)  # requests waiting at the gate
    paused_until: float = 0.0  # time.monotonic() before which nothing starts
    next_start: float = 0.0  # time.monotonic() before which no start is asked (Crawl-delay)
    last_start: float = float("-inf")  # time.monotonic() a request last went through
    delay: float | None = None  # the host's Crawl-delay
    synced_at: float = float("-inf")  # time.monotonic() of the last report
    # Not reported yet:
    cleans: int = 0  # clean fetches of generation ``gen``
    trouble: str | None = None  # the reason of trouble on a request of generation ``gen``
    pause: float = 0.0  # the time.monotonic() a Retry-After pause ends

    @property
    def busy(self) -> bool:
        """Anything to report: requests through or waiting, a share to give back, news."""
        return bool(
            self.through or self.waiting or self.share or self.cleans or self.trouble or self.pause
        )


@dataclass
class BudgetReport:
    """What a report changed: increases, the window before a decrease this process caused
    (None if none), the pause left (seconds), whether a Crawl-delay start was granted and
    else how long before asking again (seconds)."""

    grew: int
    shrank_from: int | None
    paused: float
    started: bool
    wait: float


class SharedBudget:
    """The job's per-host budgets, for one process (``owner``)."""

    def __init__(self, state, owner, settings):
        self.redis = state.client
        self.prefix = state.key("host:")
        self.owners_key = state.key(OWNERS)
        self.index_key = state.key(INDEX)
        self.owner = owner  # the process's name now: a process taken for dead takes another
        self.minimum = settings.getint("CRAWLYX_WINDOW_MIN")
        self.start = settings.getint("CRAWLYX_WINDOW_START")
        self.grow_after = max(1, settings.getint("CRAWLYX_WINDOW_GROW_AFTER"))
        self._sync = self.redis.register_script(_SYNC)

    def report(self, host: Host, asking: bool = False, start: bool = False) -> BudgetReport:
        """Report ``host`` and take this process's share (``asking``: for a request not
        counted as waiting; ``start``: and a Crawl-delay start for it). Raises one of
        ``REDIS_DOWN`` with nothing reported: what was pending stays pending."""
        reply = self._sync(
            keys=[self.prefix + host.key, self.owners_key, self.index_key],
            args=[
                self.owner(),
                self.start,
                min(self.minimum, host.maximum),
                host.maximum,
                self.grow_after,
                host.gen,
                host.cleans,
                1 if host.trouble else 0,
                max(0, int((host.pause - time.monotonic()) * 1000)),
                host.through,
                len(host.waiting) + asking,
                1 if start else 0,
                int((host.delay or 0) * 1000),
            ],
        )
        window, gen, before, grew, shrank, share, paused, wait, started = map(int, reply)
        host.synced_at = time.monotonic()
        host.cleans, host.trouble, host.pause = 0, None, 0.0
        host.value, host.gen, host.share = window, gen, share
        if started:
            host.through += 1
        return BudgetReport(
            grew, before if shrank else None, paused / 1000, bool(started), wait / 1000
        )
