"""crawlyx on scrapyd, as a user runs it: ``scrapyd-deploy`` builds the egg from a copy
of the checkout and uploads it to a real scrapyd on a free loopback port;
``schedule.json`` runs the crawl with spider arguments and settings, the items land in
scrapyd's ``items_dir``; ``cancel.json`` stops a named job and scheduling it again
resumes it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path
from urllib.parse import urlencode
from urllib.request import ProxyHandler, build_opener

import psutil
import pytest

from tests.conftest import crawl_env, free_port, read_items
from tests.crawl.test_crawl import SLOW_HOST, _rid, start_url
from tests.sites.site import SiteServer

ROOT = Path(__file__).resolve().parents[2]
PROJECT = "crawlyx"
# Nothing the egg is built from: the copy scrapyd-deploy builds in stays small.
NOT_BUILT = shutil.ignore_patterns(
    ".git", ".crawlyx", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache",
    ".hypothesis", "tests", "bench",
)  # fmt: skip
CONFIG = """\
[scrapyd]
bind_address = 127.0.0.1
http_port = {port}
eggs_dir = {home}/eggs
logs_dir = {home}/logs
items_dir = {home}/items
dbs_dir = {home}/dbs
jobs_to_keep = 100
max_proc = 2
poll_interval = 0.2
"""
# One page worker per crawl: the machine running the tests is shared.
QUIET = {"CRAWLYX_MARKDOWN_WORKERS": 1}


def scrapyd_env() -> dict:
    # The egg's entry point names the settings module. The code that runs is the
    # checkout's: on PYTHONPATH it comes before the egg, as an installed crawlyx would.
    env = crawl_env()
    del env["SCRAPY_SETTINGS_MODULE"]
    return env


class Scrapyd:
    """A client of scrapyd's JSON API (never through a proxy) and its directories."""

    def __init__(self, url: str, home: Path):
        self.url = url
        self.home = home
        self.opener = build_opener(ProxyHandler({}))
        self.deployed: dict = {}  # scrapyd's answer to the upload

    def call(self, endpoint: str, fields: list[tuple[str, str]] | None = None) -> dict:
        data = None if fields is None else urlencode(fields).encode()
        with self.opener.open(self.url + endpoint, data, timeout=30) as response:
            answer = json.load(response)
        assert answer["status"] == "ok", answer
        return answer

    def schedule(self, settings: dict, **args) -> str:
        fields = [("project", PROJECT), ("spider", "site"), *args.items()]
        fields += [("setting", f"{name}={value}") for name, value in settings.items()]
        return self.call("schedule.json", fields)["jobid"]

    def cancel(self, jobid: str) -> str | None:
        return self.call("cancel.json", [("project", PROJECT), ("job", jobid)])["prevstate"]

    def finished(self, jobid: str) -> bool:
        jobs = self.call(f"listjobs.json?project={PROJECT}")
        return any(job["id"] == jobid for job in jobs["finished"])

    def wait(self, jobid: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.finished(jobid):
                return
            time.sleep(0.2)
        pytest.fail(f"job {jobid} still running after {timeout} s:\n{self.log(jobid)[-3000:]}")

    def items(self, jobid: str) -> list[dict]:
        return read_items(self.home / "items" / PROJECT / "site" / f"{jobid}.jl")

    def log(self, jobid: str) -> str:
        path = self.home / "logs" / PROJECT / "site" / f"{jobid}.log"
        return path.read_text() if path.exists() else ""


def deploy(home: Path, url: str) -> dict:
    """``scrapyd-deploy`` from a copy of the checkout, to a target added to its scrapy.cfg."""
    project = home / "project"
    shutil.copytree(ROOT, project, ignore=NOT_BUILT)
    with (project / "scrapy.cfg").open("a") as cfg:
        cfg.write(f"\n[deploy:test]\nurl = {url}\n")
    command = Path(sysconfig.get_path("scripts")) / "scrapyd-deploy"
    proc = subprocess.run(
        [str(command), "test", "--version", "1"],
        cwd=project,
        env=scrapyd_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def scrapyd(tmp_path_factory):
    home = tmp_path_factory.mktemp("scrapyd")
    port = free_port()
    (home / "scrapyd.conf").write_text(CONFIG.format(port=port, home=home))
    url = f"http://127.0.0.1:{port}/"
    with (home / "scrapyd.out").open("w") as out:
        # scrapyd reads scrapyd.conf from its working directory.
        server = subprocess.Popen(
            [sys.executable, "-m", "scrapyd"], cwd=home, env=scrapyd_env(), stdout=out, stderr=out
        )
    client = Scrapyd(url, home)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert server.poll() is None, (home / "scrapyd.out").read_text()
            try:
                client.call("daemonstatus.json")
                break
            except OSError:
                assert time.monotonic() < deadline, "scrapyd did not start"
                time.sleep(0.1)
        client.deployed = deploy(home, url)
        yield client
    finally:
        children = psutil.Process(server.pid).children(recursive=True)
        server.terminate()
        server.wait(10)
        for child in children:  # crawls a failed test left running
            if child.is_running():
                child.kill()


def test_deploy_builds_an_egg_of_the_package_and_its_settings(scrapyd):
    assert scrapyd.deployed["project"] == PROJECT and scrapyd.deployed["spiders"] == 1
    with zipfile.ZipFile(scrapyd.home / "eggs" / PROJECT / "1.egg") as egg:
        names = set(egg.namelist())
        entry_points = egg.read("EGG-INFO/entry_points.txt").decode()
    assert "crawlyx/spiders/site.py" in names and "crawlyx/settings.py" in names
    # The package and the settings profiles (SCRAPY_SETTINGS_MODULE=settings.scrapyd).
    assert {name.split("/")[0] for name in names} == {"EGG-INFO", "crawlyx", "settings"}
    assert "settings/scrapyd.py" in names
    # scrapyd's runner takes the settings module from this entry point.
    assert "[scrapy]\nsettings = crawlyx.settings" in entry_points


def test_scheduled_crawl_writes_every_page_to_items_dir(scrapyd, site, tmp_path):
    errors = tmp_path / "errors.jsonl"
    data_dir = tmp_path / "redis"
    jobid = scrapyd.schedule(
        {"CRAWLYX_DATA_DIR": data_dir, **QUIET},
        start=start_url(site),
        job="docs",
        errors=str(errors),
    )
    scrapyd.wait(jobid)
    log = scrapyd.log(jobid)
    assert "'finish_reason': 'finished'" in log, log[-3000:]
    urls = [item["url"] for item in scrapyd.items(jobid)]
    assert len(urls) == len(set(urls))
    assert set(urls) == site.expected_pages()
    # The spider argument and the setting reached the crawl.
    classes = sorted(json.loads(line)["class"] for line in errors.read_text().splitlines())
    assert classes == ["http_4xx", "robots_disallowed", "unreadable"]  # unreadable: /file.pdf
    assert (data_dir / "redis.log").exists()


def test_cancelled_job_resumes_when_scheduled_again(scrapyd, tmp_path):
    settings = {"CRAWLYX_DATA_DIR": tmp_path / "redis", **SLOW_HOST, **QUIET}
    with SiteServer(generated=60, latency=0.1) as site:
        args = {"start": start_url(site), "job": "resumable"}
        first = scrapyd.schedule(settings, **args)
        deadline = time.monotonic() + 60
        while len(scrapyd.items(first)) < 10:
            running = time.monotonic() < deadline and not scrapyd.finished(first)
            assert running, scrapyd.log(first)[-3000:]
            time.sleep(0.1)
        assert scrapyd.cancel(first) == "running"  # SIGINT: a graceful stop
        scrapyd.wait(first)
        stopped = scrapyd.items(first)
        assert "'finish_reason': 'shutdown'" in scrapyd.log(first)
        assert len(stopped) < len(site.expected_pages())
        second = scrapyd.schedule(settings, **args)
        scrapyd.wait(second)
        log = scrapyd.log(second)
        assert "'finish_reason': 'finished'" in log, log[-3000:]
        resumed = scrapyd.items(second)
    urls = [item["url"] for item in stopped + resumed]
    assert set(urls) == site.expected_pages()
    assert len(urls) == len(set(urls))
    # The second run fetched only what the first left (and what it had in flight), with
    # the job's robots.txt (once per origin).
    assert all(site.counts[_rid(site, item["url"])] == 1 for item in stopped)
    assert max(site.counts.values()) <= 2
    assert site.counts["/robots.txt"] == 2
