"""The embedded redis-server's watchdog, and the lock files the server's users share
(see :class:`crawlyx.frontier.embedded.EmbeddedRedis`).

The watchdog is the server's parent process: it runs the server until the server exits,
or until no process uses it any longer (they were killed, or crashed, and could not shut
it down), and then stops it. It is run as ``python -m crawlyx.frontier.watchdog DATA_DIR
INTERVAL SERVER_COMMAND...`` and imports only the standard library: it costs a bare
interpreter without site-packages, about 11 MB.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

# Exclusive: held to start the server, or to decide to stop it.
LOCK = "redis.lock"
# Shared by every process using the server; whoever gets it alone is the last user.
USERS = "redis.users"


def try_flock(file, mode: int) -> bool:
    """Lock ``file`` (``fcntl.LOCK_EX`` or ``LOCK_SH``) if nobody is in the way."""
    try:
        fcntl.flock(file, mode | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def flock(path: Path, mode: int, timeout: float):
    """The file at ``path``, opened and locked (see :func:`try_flock`) within ``timeout``
    seconds; None if it stayed locked. The lock goes when the file is closed, or when
    the process dies, however it dies."""
    file = open(path, "a")  # noqa: SIM115 - the caller holds it
    deadline = time.monotonic() + timeout
    while not try_flock(file, mode):
        if time.monotonic() >= deadline:
            file.close()
            return None
        time.sleep(0.05)
    return file


def start(data_dir: Path, interval: float, command: list[str]) -> None:
    """Start the server (``command``, run in ``data_dir``) under a watchdog looking every
    ``interval`` seconds, in a session of its own: a Ctrl-C in the terminal stops the
    crawl gracefully while Redis stays up to record it."""
    # The watchdog imports this module from where this process did (crawlyx in an egg
    # under scrapyd is on no path of its own).
    root = str(Path(__file__).resolve().parents[2])
    path = os.pathsep.join(entry for entry in (root, os.environ.get("PYTHONPATH")) if entry)
    subprocess.Popen(
        # -S: no site-packages (3 MB less); this module comes from PYTHONPATH.
        [sys.executable, "-S", "-m", __name__, str(data_dir), str(interval), *command],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        cwd=data_dir,
        env={**os.environ, "PYTHONPATH": path},
    )


def watch(data_dir: Path, interval: float, command: list[str]) -> int:
    """Run the server (``command``) until it exits, or until no process uses it: nobody
    holds USERS, nor LOCK (a process starting); then stop it (SIGTERM: Redis writes out
    its append-only file and exits). Looks every ``interval`` seconds; returns the
    server's exit status."""
    server = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=data_dir,
    )
    while True:
        try:
            return server.wait(interval)
        except subprocess.TimeoutExpired:
            pass
        lock = flock(data_dir / LOCK, fcntl.LOCK_EX, 0)
        if lock is None:
            continue
        with lock:  # nobody starts a server until this one is gone
            users = flock(data_dir / USERS, fcntl.LOCK_EX, 0)
            if users is not None:
                users.close()
                server.terminate()
                return server.wait()


if __name__ == "__main__":
    sys.exit(watch(Path(sys.argv[1]), float(sys.argv[2]), sys.argv[3:]))
