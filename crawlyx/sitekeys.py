"""The keys of a site's stores (breadth, demand, the page registry), and their indexes.

A site's stores belong to the site, across jobs and runs, under a namespace no job can
be named (``_breadth``, ``_demand``, ``_registry``; see
:class:`crawlyx.frontier.state.State`). Every key of a site carries the site as its hash
tag, literally in braces::

    crawlyx:_breadth:{https://docs.example.com}:day:2026-12-03:GPTBot

so on a Redis Cluster all of a site's keys share one slot, and a script or a multi-key
command over them is allowed. An origin holds no brace, so the tag is the whole site.

Nothing is found by SCAN (which on a cluster would walk every node's whole keyspace).
Each store keeps two kinds of index, written by the code that writes the keys:

* ``crawlyx:{store}:sites``, one untagged set: the sites the store holds rows of;
* ``crawlyx:{store}:{SITE}:rows``, per site, in the site's slot: the keys of its rows.

Rows expire; their index does not forget them by itself. A reader that finds a row gone
removes it from the index (:func:`drop_gone`, one script: only if the row is still gone),
and a site whose index has expired from the sites set (:func:`site_names`). The index of
a site lives as long as its longest-lived row (:data:`INDEX_LUA`).
"""

from __future__ import annotations

from collections.abc import Iterator

from crawlyx.frontier.state import State

SITES = "sites"  # the store's key of its sites (untagged)
ROWS = "rows"  # a site's key of its row keys (tagged by the site)
BATCH = 500  # members per SSCAN step

# Lua for a script that writes a row: index(rows, row, expire_at) adds the row's key to
# its site's index and keeps the index until the row's expiry at least (EXPIREAT only
# ever later: a row of an earlier day must not shorten the life of a later day's entry).
INDEX_LUA = """
local function index(rows, row, expire_at)
  redis.call('SADD', rows, row)
  local ttl = redis.call('TTL', rows)
  local left = tonumber(expire_at) - tonumber(redis.call('TIME')[1])
  if ttl < 0 or ttl < left then redis.call('EXPIREAT', rows, expire_at) end
end
"""

# KEYS[1]: a site's index; KEYS[2...]: row keys found gone. Each still gone is removed
# from the index (one written since it was looked at stays). Returns how many.
_DROP = """
local removed = 0
for i = 2, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 0 then
    removed = removed + redis.call('SREM', KEYS[1], KEYS[i])
  end
end
return removed
"""


def site_key(state: State, site: str, name: str) -> str:
    """A key of ``site`` in the store of ``state``: ``crawlyx:_breadth:{SITE}:name``."""
    return state.key(f"{{{site}}}:{name}")


def parse_site(state: State, key: str) -> tuple[str, str] | None:
    """``(site, name)`` of a key :func:`site_key` made; None for any other."""
    if not key.startswith(state.prefix + "{"):
        return None
    site, brace, name = key[len(state.prefix) + 1 :].partition("}:")
    return (site, name) if brace and site else None


def members(client, key: str, batch: int = BATCH) -> Iterator[list[str]]:
    """The members of the set ``key``, a SSCAN step at a time (a member may come twice)."""
    cursor = 0
    while True:
        cursor, found = client.sscan(key, cursor, count=batch)
        if found:
            yield [member.decode() for member in found]
        if not cursor:
            return


def row_keys(state: State, site: str, batch: int = BATCH) -> Iterator[list[str]]:
    """The keys in ``site``'s index, in lists of about ``batch``."""
    return members(state.client, site_key(state, site, ROWS), batch)


def drop_gone(state: State, site: str, gone: list[str]) -> int:
    """Remove from ``site``'s index the keys of ``gone`` (rows found expired) that are
    still gone; how many."""
    if not gone:
        return 0
    script = state.client.register_script(_DROP)
    return script(keys=[site_key(state, site, ROWS), *gone])


def list_site(state: State, site: str) -> None:
    """Add ``site`` to the store's sites. Called after its rows are written and indexed:
    see :func:`site_names` for why in that order."""
    state.client.sadd(state.key(SITES), site)


def site_names(state: State, batch: int = BATCH) -> Iterator[str]:
    """The sites of the store, a SSCAN step at a time; a site whose index has expired (all
    its rows did) is removed on the way, and not given."""
    seen: set[str] = set()
    for sites in members(state.client, state.key(SITES), batch):
        for site in sites:
            if site not in seen and _listed(state, site):
                seen.add(site)
                yield site


def _listed(state: State, site: str) -> bool:
    """Whether ``site`` has an index; if not, it leaves the sites set. A writer indexes its
    rows, then lists the site: one racing this either indexed before the second look
    here (the site is put back) or lists the site after it was removed."""
    client, index, sites = state.client, site_key(state, site, ROWS), state.key(SITES)
    if client.exists(index):
        return True
    client.srem(sites, site)
    if client.exists(index):
        client.sadd(sites, site)
        return True
    return False
