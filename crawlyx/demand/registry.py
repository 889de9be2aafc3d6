"""The page registry: what a site's recrawls need to know of each page it has fetched.

Per page: its URL, when it was last fetched, its content hash, its ETag and
Last-Modified (for conditional requests), its interval on the rung ladder (and the dry
run's shadow interval), and when it is next due. Pages belong to a site, across jobs and
runs, so the keys sit outside every job's ``crawlyx:{job}:`` namespace, like breadth's,
and apart from the visit ring's (whose reads SCAN their site's keys)::

    crawlyx:_pages:{site}:page:{hash}   a hash per page (hash: of its URL)
    crawlyx:_pages:{site}:due           sorted set, URL -> next-due time
    crawlyx:_pages:{site}:fetched       sorted set, URL -> last fetch (for retention)
    crawlyx:_pages:{site}:rungs         hash, interval -> pages on it (the histogram)
    crawlyx:_pages:{site}:rungs:dry     the same for the dry run's shadow intervals
    crawlyx:_pages:{site}:writes        interval writes so far (a converged site adds none)

The next-due time is set at each fetch, from the page's interval as stored, and read
as stored: a refresh run takes what is due now and never recomputes it from today's
settings. The interval is written only when the ladder moves the page's rung; the
histogram follows in the same script, so the two never disagree. A page not fetched for
``retention`` seconds is forgotten by :meth:`Registry.prune`, histogram included.
"""

from __future__ import annotations

from dataclasses import dataclass
from hashlib import blake2b

from crawlyx.demand import durations
from crawlyx.demand.ladder import Histogram, PageState, ladder_for
from crawlyx.frontier.state import State

NAMESPACE = "_pages"  # a State "job" that no crawl can be named

# KEYS: page, due, fetched, rungs, rungs:dry. ARGV: url, now, base, hash, etag, modified.
# Returns 1 when the page is new or its content hash changed.
_FETCHED = """
local page = KEYS[1]
local interval = redis.call('HGET', page, 'interval')
local new = not interval
if new then
  interval = ARGV[3]
  redis.call('HSET', page, 'interval', interval)
  redis.call('HINCRBY', KEYS[4], interval, 1)
  redis.call('HINCRBY', KEYS[5], interval, 1)
end
local before = redis.call('HGET', page, 'hash')
local due = tonumber(ARGV[2]) + tonumber(interval)
redis.call('HSET', page, 'url', ARGV[1], 'fetched', ARGV[2], 'hash', ARGV[4],
  'etag', ARGV[5], 'modified', ARGV[6], 'next_due', tostring(due))
redis.call('ZADD', KEYS[2], due, ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1])
if new or before ~= ARGV[4] then return 1 end
return 0
"""

# KEYS: page, rungs, rungs:dry, writes. ARGV: field (interval | shadow), new interval.
# A page with no shadow of its own has its real interval as its shadow, so a real move
# moves the dry histogram too. Returns 1 when written.
_MOVE = """
local page = KEYS[1]
local real = redis.call('HGET', page, 'interval')
if not real then return 0 end
local shadow = redis.call('HGET', page, 'shadow')
local old = real
if ARGV[1] == 'shadow' then old = shadow or real end
if old == ARGV[2] then return 0 end
redis.call('HSET', page, ARGV[1], ARGV[2])
if ARGV[1] == 'interval' then
  redis.call('HINCRBY', KEYS[2], old, -1)
  redis.call('HINCRBY', KEYS[2], ARGV[2], 1)
end
if ARGV[1] == 'shadow' or not shadow then
  redis.call('HINCRBY', KEYS[3], old, -1)
  redis.call('HINCRBY', KEYS[3], ARGV[2], 1)
end
redis.call('INCR', KEYS[4])
return 1
"""

# KEYS: page, due, fetched, rungs, rungs:dry. ARGV: url, cutoff (a page fetched after
# it, since the caller looked, stays). Returns 1 when forgotten.
_FORGET = """
local page = KEYS[1]
local fetched = redis.call('ZSCORE', KEYS[3], ARGV[1])
if fetched and tonumber(fetched) > tonumber(ARGV[2]) then return 0 end
local real = redis.call('HGET', page, 'interval')
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
if not real then return 0 end
local shadow = redis.call('HGET', page, 'shadow') or real
redis.call('HINCRBY', KEYS[4], real, -1)
redis.call('HINCRBY', KEYS[5], shadow, -1)
redis.call('DEL', page)
return 1
"""


def _num(seconds: float) -> str:
    """Intervals and times as stored: one spelling per value (they are hash fields too)."""
    return repr(float(seconds))


@dataclass(frozen=True)
class Page:
    url: str
    fetched: float
    content_hash: str
    etag: str
    last_modified: str
    interval: float
    next_due: float
    shadow: float | None


class Registry:
    """One site's pages in Redis; a :class:`crawlyx.demand.ladder.PageStore`."""

    def __init__(self, state: State, site: str, base: float, retention: float):
        if retention <= 0:
            raise ValueError("retention must be positive")
        self.state = state
        self.site = site
        self.base = base
        self.retention = retention
        self._fetched = state.client.register_script(_FETCHED)
        self._move = state.client.register_script(_MOVE)
        self._forget = state.client.register_script(_FORGET)

    @classmethod
    def from_settings(cls, state: State, site: str, settings) -> Registry:
        """The base interval from the ladder's settings, CRAWLYX_DEMAND_RETENTION."""
        retention = durations.seconds(
            settings.get("CRAWLYX_DEMAND_RETENTION"), "CRAWLYX_DEMAND_RETENTION"
        )
        return cls(state, site, ladder_for(settings).base, retention)

    def key(self, name: str) -> str:
        return self.state.key(f"{self.site}:{name}")

    def page_key(self, url: str) -> str:
        return self.key("page:" + blake2b(url.encode(), digest_size=16).hexdigest())

    def _site_keys(self) -> list[str]:
        return [self.key("due"), self.key("fetched"), self.key("rungs"), self.key("rungs:dry")]

    def fetched(
        self,
        url: str,
        now: float,
        content_hash: str = "",
        etag: str = "",
        last_modified: str = "",
        client=None,
        core=None,
    ) -> bool | None:
        """Record a fetch of ``url`` at ``now``: a new page starts at the base interval;
        the next-due time is ``now`` + its interval. True if the page is new or changed.
        With a pipeline as ``client``, queued on it through the crawl ``core`` instead."""
        keys = [self.page_key(url), *self._site_keys()]
        args = [url, _num(now), _num(self.base), content_hash, etag, last_modified]
        if core is not None:
            core.script(client, self._fetched, keys, args)
            return None
        return bool(self._fetched(keys=keys, args=args))

    def page(self, url: str) -> Page | None:
        return _page(self.state.client.hgetall(self.page_key(url)))

    # -- the PageStore the ladder steps on ---------------------------------------------

    def get(self, url: str) -> PageState | None:
        page = self.page(url)
        return page and PageState(page.interval, page.next_due, page.shadow)

    def write_interval(self, url: str, interval: float, *, shadow: bool) -> None:
        keys = [self.page_key(url), self.key("rungs"), self.key("rungs:dry"), self.key("writes")]
        self._move(keys=keys, args=["shadow" if shadow else "interval", _num(interval)])

    # -- reads for the refresh run and the report --------------------------------------

    def due(self, now: float, limit: int = 1000) -> list[str]:
        """Up to ``limit`` URLs whose stored next-due time has passed, most overdue first."""
        urls = self.state.client.zrangebyscore(self.key("due"), "-inf", now, start=0, num=limit)
        return [url.decode() for url in urls]

    def histogram(self, shadow: bool = False) -> Histogram:
        """Pages per interval (the shadow intervals for a dry run)."""
        rows = self.state.client.hgetall(self.key("rungs:dry" if shadow else "rungs"))
        return Histogram({float(k): int(v) for k, v in rows.items() if int(v)})

    def writes(self) -> int:
        return int(self.state.client.get(self.key("writes")) or 0)

    def forget(self, url: str) -> bool:
        """Forget ``url`` (it is gone); False if the registry did not know it."""
        keys = [self.page_key(url), *self._site_keys()]
        return bool(self._forget(keys=keys, args=[url, "1e300"]))

    def known(self, urls: list[str]) -> set[str]:
        """Those of ``urls`` the registry knows, in one round trip."""
        if not urls:
            return set()
        scores = self.state.client.zmscore(self.key("due"), urls)
        return {url for url, score in zip(urls, scores, strict=True) if score is not None}

    def due_pages(self, now: float, snapshot: str, batch: int = 500):
        """The pages due at ``now``, from a copy of the due set kept under the key
        ``snapshot`` (made at the first call, reused after: a resumed run walks the same
        list), read ``batch`` at a time, in one round trip each."""
        client = self.state.client
        if not client.exists(snapshot):
            client.zrangestore(snapshot, self.key("due"), "-inf", now, byscore=True)
        for offset in range(0, client.zcard(snapshot), batch):
            urls = [u.decode() for u in client.zrange(snapshot, offset, offset + batch - 1)]
            with client.pipeline(transaction=False) as pipe:
                for url in urls:
                    pipe.hgetall(self.page_key(url))
                rows = pipe.execute()
            for row in rows:
                page = _page(row)
                if page is not None:  # forgotten since the copy was made
                    yield page

    def count_due(self, until: float) -> int:
        return self.state.client.zcount(self.key("due"), "-inf", until)

    def prune(self, now: float, batch: int = 500) -> int:
        """Forget the pages not fetched for ``retention`` seconds; how many."""
        forgotten, cutoff = 0, now - self.retention
        while True:
            urls = self.state.client.zrangebyscore(
                self.key("fetched"), "-inf", cutoff, start=0, num=batch
            )
            for url in urls:
                keys = [self.page_key(url.decode()), *self._site_keys()]
                forgotten += self._forget(keys=keys, args=[url, _num(cutoff)])
            if len(urls) < batch:
                return forgotten


def registry_state(client, embedded=None) -> State:
    """The registry's namespace on a Redis client (a crawl's, or one of its own)."""
    return State(client, NAMESPACE, embedded)


def _page(raw: dict) -> Page | None:
    """A page as its hash stores it; None for a hash with no page (forgotten)."""
    row = {k.decode(): v.decode() for k, v in raw.items()}
    if "interval" not in row:
        return None
    return Page(
        url=row["url"],
        fetched=float(row["fetched"]),
        content_hash=row["hash"],
        etag=row["etag"],
        last_modified=row["modified"],
        interval=float(row["interval"]),
        next_due=float(row["next_due"]),
        shadow=float(row["shadow"]) if "shadow" in row else None,
    )
