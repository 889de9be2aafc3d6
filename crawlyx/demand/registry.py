"""The page registry: what a site's recrawls need to know of each page it has fetched.

Per page: its URL, when it was last fetched, its content hash, its ETag and
Last-Modified (for conditional requests), its interval on the rung ladder (and the dry
run's shadow interval), and when it is next due. Pages belong to a site, across jobs and
runs, so the keys sit outside every job's ``crawlyx:{job}:`` namespace, like breadth's,
and apart from the visit ring's::

    crawlyx:_registry:{SITE}:pages         hash, page id -> the page's row (one string)
    crawlyx:_registry:{SITE}:due           sorted set, page id -> next-due time
    crawlyx:_registry:{SITE}:fetched       sorted set, page id -> last fetch (for retention)
    crawlyx:_registry:{SITE}:rungs         hash, interval -> pages on it (the histogram)
    crawlyx:_registry:{SITE}:rungs:dry     the same for the dry run's shadow intervals
    crawlyx:_registry:{SITE}:writes        interval writes so far (a converged site adds none)
    crawlyx:_registry:{SITE}:base          no page is due later than this after its last fetch

``SITE`` is the site's origin in braces: the hash tag that keeps a site's keys in one slot
of a Redis Cluster (:mod:`crawlyx.sitekeys`), so each script below names all the keys it
touches, and they may. A registry is read by its site only: it needs no index. Registries
written before the site was a hash tag (``crawlyx:_registry:https://...:pages``) are not
read: the first refresh run of such a site is a full crawl, which registers it anew.

Every crawl writes every page it reads here, so a page costs little: a page's id is 8
bytes of a hash of its URL, and its row packs its fields into one string (the URL, the
times, the hash, the validators, the intervals, separated by newlines, which none of
them can hold) in the site's one hash, not a key of its own (about 350 bytes a page in
all, against 750 with a hash per page).

The next-due time is set at each fetch, one interval after it (the page's interval as
stored, at most today's base interval), and read as stored: a refresh run takes what is
due now. A base interval lower than any due time was set by brings every page's due
time forward once, to at most one base interval after its last fetch
(:meth:`Registry.apply_base`, at the first refresh run under it); a higher one is the
interval of the pages registered from then on (a page keeps its own). The interval is
written only when the ladder moves the page's rung; the histogram follows in the same
script, so the two never disagree. A page not fetched for ``retention`` seconds is
forgotten by :meth:`Registry.prune`, histogram included, and a whole site by
:meth:`Registry.drop` (``scrapy demand --site ORIGIN --forget``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from hashlib import blake2b

from crawlyx.demand import durations
from crawlyx.demand.ladder import PageState, RungHistogram, ladder_for
from crawlyx.frontier.state import State, is_cluster
from crawlyx.sitekeys import site_key

# A State "job" that no crawl can be named. (Registries written before rows were packed
# sit under "_pages", a key per page; they are not read.)
NAMESPACE = "_registry"

# A row's fields, in order (1-based in the scripts): url, fetched, hash, etag, modified,
# interval, next_due, shadow ("" for none).
FIELDS = ("url", "fetched", "hash", "etag", "modified", "interval", "next_due", "shadow")
SEP = "\n"

_SPLIT = """
local function split(row)
  local f = {}
  for field in (row .. '\\n'):gmatch('([^\\n]*)\\n') do f[#f + 1] = field end
  return f
end
local function join(f)
  return table.concat(f, '\\n', 1, 8)
end
"""

# KEYS: pages, due, fetched, rungs, rungs:dry, base. ARGV: id, url, now, base, hash,
# etag, modified. Returns 1 when the page is new or its content hash changed.
_FETCHED = (
    _SPLIT
    + """
local row = redis.call('HGET', KEYS[1], ARGV[1])
local f, new
if row then
  f = split(row)
else
  new = true
  f = {'', '', '', '', '', ARGV[4], '', ''}
  redis.call('HINCRBY', KEYS[4], ARGV[4], 1)
  redis.call('HINCRBY', KEYS[5], ARGV[4], 1)
end
local before = f[3]
local due = tonumber(ARGV[3]) + math.min(tonumber(f[6]), tonumber(ARGV[4]))
f[1], f[2], f[3], f[4], f[5], f[7] = ARGV[2], ARGV[3], ARGV[5], ARGV[6], ARGV[7], tostring(due)
redis.call('HSET', KEYS[1], ARGV[1], join(f))
redis.call('ZADD', KEYS[2], due, ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
local bound = redis.call('GET', KEYS[6])
if bound and tonumber(bound) < tonumber(ARGV[4]) then redis.call('SET', KEYS[6], ARGV[4]) end
if new or before ~= ARGV[5] then return 1 end
return 0
"""
)

# KEYS: pages. ARGV: id. A page whose document no output holds under its URL (a copy of
# another page's): its content hash and validators are forgotten, so that it is fetched
# without conditions next time and written unless it is a copy still. Its interval and
# due time stay.
_UNWRITTEN = (
    _SPLIT
    + """
local row = redis.call('HGET', KEYS[1], ARGV[1])
if not row then return 0 end
local f = split(row)
f[3], f[4], f[5] = '', '', ''
redis.call('HSET', KEYS[1], ARGV[1], join(f))
return 1
"""
)

# KEYS: pages, rungs, rungs:dry, writes. ARGV: id, field (interval | shadow), new
# interval. A page with no shadow of its own has its real interval as its shadow, so a
# real move moves the dry histogram too. Returns 1 when written.
_MOVE = (
    _SPLIT
    + """
local row = redis.call('HGET', KEYS[1], ARGV[1])
if not row then return 0 end
local f = split(row)
local real, shadow = f[6], f[8]
local old = real
if ARGV[2] == 'shadow' and shadow ~= '' then old = shadow end
if old == ARGV[3] then return 0 end
if ARGV[2] == 'interval' then
  f[6] = ARGV[3]
  redis.call('HINCRBY', KEYS[2], old, -1)
  redis.call('HINCRBY', KEYS[2], ARGV[3], 1)
else
  f[8] = ARGV[3]
end
if ARGV[2] == 'shadow' or shadow == '' then
  redis.call('HINCRBY', KEYS[3], old, -1)
  redis.call('HINCRBY', KEYS[3], ARGV[3], 1)
end
redis.call('HSET', KEYS[1], ARGV[1], join(f))
redis.call('INCR', KEYS[4])
return 1
"""
)

# KEYS: pages, due, fetched, rungs, rungs:dry. ARGV: id, cutoff (a page fetched after
# it, since the caller looked, stays). Returns 1 when forgotten.
_FORGET = (
    _SPLIT
    + """
local fetched = redis.call('ZSCORE', KEYS[3], ARGV[1])
if fetched and tonumber(fetched) > tonumber(ARGV[2]) then return 0 end
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
local row = redis.call('HGET', KEYS[1], ARGV[1])
if not row then return 0 end
local f = split(row)
local shadow = f[8]
if shadow == '' then shadow = f[6] end
redis.call('HINCRBY', KEYS[4], f[6], -1)
redis.call('HINCRBY', KEYS[5], shadow, -1)
redis.call('HDEL', KEYS[1], ARGV[1])
return 1
"""
)


def _num(seconds: float) -> str:
    """Intervals and times as stored: one spelling per value (they are hash fields too)."""
    return repr(float(seconds))


def page_id(url: str) -> bytes:
    """A page's id in its site's keys: 8 bytes of a hash of its URL."""
    return blake2b(url.encode(), digest_size=8).digest()


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


def retention(settings) -> float:
    """Seconds in CRAWLYX_DEMAND_RETENTION; ValueError naming it unless a positive duration."""
    name = "CRAWLYX_DEMAND_RETENTION"
    return durations.parse_duration(settings.get(name), name)


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
        self._unwritten = state.client.register_script(_UNWRITTEN)

    @classmethod
    def from_settings(cls, state: State, site: str, settings) -> Registry:
        """The base interval from the ladder's settings, CRAWLYX_DEMAND_RETENTION."""
        return cls(state, site, ladder_for(settings).base, retention(settings))

    def key(self, name: str) -> str:
        return site_key(self.state, self.site, name)

    @property
    def keys(self) -> list[str]:
        """The site's keys the scripts take: pages, due, fetched, rungs, rungs:dry."""
        return [self.key(name) for name in ("pages", "due", "fetched", "rungs", "rungs:dry")]

    def apply_base(self, batch: int = 1000) -> int:
        """Bring the site's due times forward to at most one base interval after each
        page's last fetch; how many moved. Only when some may be later: the ``base`` key
        holds the bound all of them keep (set here, raised by a fetch under a higher
        base; none is known for a registry that was never applied)."""
        client, bound = self.state.client, self.key("base")
        last = client.get(bound)
        if last is not None and float(last) <= self.base:
            return 0
        moved, fetched = 0, self.key("fetched")
        for offset in range(0, client.zcard(fetched), batch):
            rows = client.zrange(fetched, offset, offset + batch - 1, withscores=True)
            if rows:  # XX: a page forgotten meanwhile stays so; LT: only ever sooner
                due = {id_: when + self.base for id_, when in rows}
                moved += client.zadd(self.key("due"), due, xx=True, lt=True, ch=True)
        client.set(bound, _num(self.base))
        return moved

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
        the next-due time is ``now`` + its interval (at most the base). True if the page
        is new or changed. With a pipeline as ``client``, queued on it through the crawl
        ``core`` instead."""
        args = [page_id(url), url, _num(now), _num(self.base), content_hash]
        args += [_clean(etag), _clean(last_modified)]
        keys = [*self.keys, self.key("base")]
        if core is not None:
            core.script(client, self._fetched, keys, args)
            return None
        return bool(self._fetched(keys=keys, args=args))

    def unwritten(self, url: str, client=None, core=None) -> None:
        """The page at ``url``, fetched, was written under another URL (see _UNWRITTEN);
        with a pipeline as ``client``, queued on it through the crawl ``core``."""
        keys, args = [self.key("pages")], [page_id(url)]
        if core is not None:
            core.script(client, self._unwritten, keys, args)
        else:
            self._unwritten(keys=keys, args=args)

    def page(self, url: str) -> Page | None:
        return _page(self.state.client.hget(self.key("pages"), page_id(url)))

    # -- the PageStore the ladder steps on ---------------------------------------------

    def get(self, url: str) -> PageState | None:
        page = self.page(url)
        if page is None:
            return None
        # The row keeps the due time its last fetch set: a lowered base brings it forward.
        due = min(page.next_due, page.fetched + self.base)
        return PageState(page.interval, due, page.shadow)

    def write_interval(self, url: str, interval: float, *, shadow: bool) -> None:
        keys = [self.key("pages"), self.key("rungs"), self.key("rungs:dry"), self.key("writes")]
        args = [page_id(url), "shadow" if shadow else "interval", _num(interval)]
        self._move(keys=keys, args=args)

    # -- reads for the refresh run and the report --------------------------------------

    def due(self, now: float, limit: int = 1000) -> list[str]:
        """Up to ``limit`` URLs whose stored next-due time has passed, most overdue first."""
        ids = self.state.client.zrangebyscore(self.key("due"), "-inf", now, start=0, num=limit)
        return [page.url for page in self._pages(ids)]

    def _pages(self, ids: list[bytes]) -> list[Page]:
        """The pages of ``ids`` still known, in one round trip."""
        if not ids:
            return []
        rows = self.state.client.hmget(self.key("pages"), ids)
        return [page for page in map(_page, rows) if page is not None]

    def histogram(self, shadow: bool = False) -> RungHistogram:
        """Pages per interval (the shadow intervals for a dry run)."""
        rows = self.state.client.hgetall(self.key("rungs:dry" if shadow else "rungs"))
        return RungHistogram({float(k): int(v) for k, v in rows.items() if int(v)})

    def writes(self) -> int:
        return int(self.state.client.get(self.key("writes")) or 0)

    def forget(self, url: str) -> bool:
        """Forget ``url`` (it is gone); False if the registry did not know it."""
        return bool(self._forget(keys=self.keys, args=[page_id(url), "1e300"]))

    def known(self, urls: list[str]) -> set[str]:
        """Those of ``urls`` the registry knows, in one round trip."""
        if not urls:
            return set()
        scores = self.state.client.zmscore(self.key("due"), [page_id(url) for url in urls])
        return {url for url, score in zip(urls, scores, strict=True) if score is not None}

    def due_pages(self, now: float, snapshot: str, batch: int = 500):
        """The pages due at ``now``, from a copy of the due set kept under the key
        ``snapshot`` (made at the first call, reused after: a resumed run walks the same
        list), read ``batch`` at a time, in one round trip each."""
        client = self.state.client
        if not client.exists(snapshot):
            self._copy_due(snapshot, now, batch)
        for offset in range(0, client.zcard(snapshot), batch):
            # A page forgotten since the copy was made is no longer there.
            yield from self._pages(client.zrange(snapshot, offset, offset + batch - 1))

    def _copy_due(self, snapshot: str, now: float, batch: int) -> None:
        """Copy the pages due at ``now`` to ``snapshot``: at once on one server. On a Redis
        Cluster the snapshot (a job's key) and the due set (the site's) are in two slots,
        which no command may name together: the copy goes ``batch`` at a time to a
        scratch key in the snapshot's slot, renamed once whole, so a copy cut short is
        never taken for the list."""
        client, due = self.state.client, self.key("due")
        if not is_cluster(client):
            client.zrangestore(snapshot, due, "-inf", now, byscore=True)
            return
        scratch = snapshot + ":~copy"
        client.delete(scratch)
        for offset in itertools.count(0, batch):
            rows = client.zrangebyscore(due, "-inf", now, offset, batch, withscores=True)
            if rows:
                client.zadd(scratch, dict(rows))
            if len(rows) < batch:
                break
        if client.exists(scratch):
            client.rename(scratch, snapshot)

    def count_due(self, until: float) -> int:
        return self.state.client.zcount(self.key("due"), "-inf", until)

    def count(self) -> int:
        """The pages the registry knows."""
        return self.state.client.hlen(self.key("pages"))

    def first_due(self) -> float | None:
        """When the next page comes due (None: no page)."""
        first = self.state.client.zrange(self.key("due"), 0, 0, withscores=True)
        return first[0][1] if first else None

    def drop(self) -> int:
        """Forget the whole site: every key of its registry. How many pages it knew."""
        # MULTI: atomic, and on a Redis Cluster the one pipeline that deletes several keys
        # (all of them in the site's slot).
        pipe = self.state.client.pipeline(transaction=True)
        pipe.hlen(self.key("pages"))
        pipe.delete(*self.keys, self.key("writes"), self.key("base"))
        return pipe.execute()[0]

    def prune(self, now: float, batch: int = 500) -> int:
        """Forget the pages not fetched for ``retention`` seconds; how many."""
        forgotten, cutoff = 0, now - self.retention
        while True:
            ids = self.state.client.zrangebyscore(
                self.key("fetched"), "-inf", cutoff, start=0, num=batch
            )
            for id_ in ids:
                forgotten += self._forget(keys=self.keys, args=[id_, _num(cutoff)])
            if len(ids) < batch:
                return forgotten


def registry_state(client, embedded=None) -> State:
    """The registry's namespace on a Redis client (a crawl's, or one of its own)."""
    return State(client, NAMESPACE, embedded)


def _clean(value: str) -> str:
    """A validator as a row holds it: header values cannot hold a newline; should one
    come through, it would end the field."""
    return value.replace(SEP, " ")


def _page(row: bytes | None) -> Page | None:
    """A page as its row stores it; None for no row (forgotten)."""
    if row is None:
        return None
    fields = dict(zip(FIELDS, row.decode().split(SEP), strict=True))
    return Page(
        url=fields["url"],
        fetched=float(fields["fetched"]),
        content_hash=fields["hash"],
        etag=fields["etag"],
        last_modified=fields["modified"],
        interval=float(fields["interval"]),
        next_due=float(fields["next_due"]),
        shadow=float(fields["shadow"]) if fields["shadow"] else None,
    )
