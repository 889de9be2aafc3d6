"""The embedded redis-server: started early, connected to later, shut down by the last."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from crawlyx.frontier.embedded import EmbeddedRedis
from tests.conftest import crawl_env


def _connect_and_ping(data_dir: str, results) -> None:
    server = EmbeddedRedis(data_dir)
    client = server.connect()
    results.put(client.ping())
    client.close()


def test_started_early_then_connected_and_shared(tmp_path):
    first = EmbeddedRedis(tmp_path)
    first.start()  # spawned, not waited for
    assert (tmp_path / "redis.lock").exists()
    # Another process on the same directory waits for this one's server, not a second.
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    other = ctx.Process(target=_connect_and_ping, args=(str(tmp_path), results))
    other.start()
    client = first.connect()
    assert client.ping()
    assert results.get(timeout=30) is True
    other.join(30)
    client.set("k", "v")
    first.release(client)  # the last client: the server goes
    assert not first._alive()
    # The data is on disk: a new server has it.
    again = EmbeddedRedis(tmp_path)
    client = again.connect()
    assert client.get("k") == b"v"
    again.release(client)


# A process using the embedded server under DATA_DIR, one step per line read from stdin:
# "start", "connect" (prints the server's pid), "release"; it prints each step done.
USER = """
import sys
from crawlyx.frontier.embedded import EmbeddedRedis

server = EmbeddedRedis(sys.argv[1], watch_interval=0.2)
for step in sys.stdin:
    step = step.strip()
    if step == "start":
        server.start()
        print("started", flush=True)
    elif step == "connect":
        client = server.connect()
        print(client.info("server")["process_id"], flush=True)
    elif step == "release":
        server.release(client)
        print("released", flush=True)
"""


class User:
    """A process of its own using the embedded server under ``data_dir``."""

    def __init__(self, data_dir):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", USER, str(data_dir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=crawl_env(),
        )

    def do(self, step: str) -> str:
        self.proc.stdin.write(step + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


def running(pid: int) -> bool:
    """Is ``pid`` a live process (not gone, not a zombie waiting to be reaped)?"""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def wait_until(condition, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout  # a hang guard, not a timing claim
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_a_killed_crawl_leaves_no_server_behind(tmp_path):
    user = User(tmp_path)
    try:
        assert user.do("start") == "started"
        pid = int(user.do("connect"))
        watchdog = parent_of(pid)
        assert running(pid) and running(watchdog)
        client = redis.Redis(unix_socket_path=str(tmp_path / "redis.sock"))
        client.set("k", "v")
        client.close()
    finally:
        user.kill()  # SIGKILL: no release, no atexit
    # Nobody holds redis.users now: the watchdog stops the server, then exits.
    assert wait_until(lambda: not running(pid) and not running(watchdog))
    assert not (tmp_path / "redis.sock").exists()
    # It stopped cleanly: its data is on disk for the next run.
    again = EmbeddedRedis(tmp_path)
    client = again.connect()
    assert client.get("k") == b"v"
    again.release(client)


def test_a_process_started_but_not_connected_keeps_the_server(tmp_path):
    first = EmbeddedRedis(tmp_path)
    client = first.connect()
    other = User(tmp_path)
    try:
        assert other.do("start") == "started"  # it found the server up, not connected yet
        first.release(client)  # not the last: the other process uses it
        assert first._alive()
        assert other.do("connect").isdigit()  # and it answers
        assert other.do("release") == "released"  # the last: the server goes
        assert not first._alive()
    finally:
        other.kill()


def test_a_start_stuck_in_another_process_fails_after_a_bound(tmp_path):
    stuck = User(tmp_path)
    try:
        # It starts the server and holds redis.lock until the server answers it, which it
        # never asks.
        assert stuck.do("start") == "started"
        waiting = EmbeddedRedis(tmp_path, lock_timeout=0.5)
        with pytest.raises(RuntimeError, match=r"another process .* redis\.lock"):
            waiting.wait_unlocked()  # (the crawl command's check, before the crawl)
        with pytest.raises(RuntimeError, match=r"another process .* redis\.lock"):
            waiting.start()
    finally:
        stuck.kill()
    # Its lock died with it; the server it started is stopped by the watchdog, or used.
    client = waiting.connect()
    assert client.ping()
    waiting.release(client)
    assert not waiting._alive()
