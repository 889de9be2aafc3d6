"""The embedded redis-server: started early, connected to later, shut down by the last."""

from __future__ import annotations

import multiprocessing

from crawlyx.frontier.state import EmbeddedRedis


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
