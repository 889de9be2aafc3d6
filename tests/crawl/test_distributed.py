"""Several crawl processes on one Redis, stopping and resuming, the embedded server."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest
import redis

from tests.conftest import Gate, crawl_command, crawl_env, lease_owners, past_the_start, read_items
from tests.sites.site import SiteServer

# Two requests at a time per host: the adaptive window is the per-host limit.
SLOW_HOST = {"CRAWLYX_WINDOW_MIN": 1, "CRAWLYX_WINDOW_START": 2, "CRAWLYX_WINDOW_MAX": 2}


def start_url(site) -> str:
    return f"http://127.0.0.1:{site.port}/start"


def test_two_processes_share_one_crawl(tmp_path, redis_url):
    with SiteServer(generated=150, latency=0.1) as site:
        gate = Gate(site, "respond", past_the_start)  # until both lease pages (conftest)
        procs, outs = [], []
        for name in ("a", "b"):
            out = tmp_path / f"{name}.jsonl"
            settings = {
                "CRAWLYX_REDIS_URL": redis_url,
                "USER_AGENT": f"crawlyx-test-{name}",
                **SLOW_HOST,
            }
            command = crawl_command(
                out, f"start={start_url(site)}", "job=shared", settings=settings
            )
            procs.append(
                subprocess.Popen(
                    command, cwd=tmp_path, env=crawl_env(), stderr=subprocess.PIPE, text=True
                )
            )
            outs.append(out)
        client = redis.Redis.from_url(redis_url)
        try:
            both = gate.open_when(lambda: len(lease_owners([client], "shared")) == 2)
        finally:
            client.close()
        logs = [proc.communicate(timeout=180)[1] for proc in procs]
        assert both, "the second process never leased a page"
        assert [proc.returncode for proc in procs] == [0, 0], logs
        items = [read_items(out) for out in outs]
    urls = [item["url"] for part in items for item in part]
    assert len(urls) == len(set(urls)), "a page was emitted twice"
    assert set(urls) == site.expected_pages()
    counts = dict(site.counts)
    assert counts.pop("/robots.txt") == 2  # once per origin for the whole job
    assert {rid: n for rid, n in counts.items() if n != 1} == {}
    # Both processes did part of the work.
    fetched = {agent: len(rids) for agent, rids in site.agents.items()}
    assert fetched.get("crawlyx-test-a", 0) > 0 and fetched.get("crawlyx-test-b", 0) > 0, fetched
    assert all(part for part in items), [len(part) for part in items]


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_pauses_the_job_and_its_name_resumes_it(tmp_path, redis_url, stop):
    settings = {"CRAWLYX_REDIS_URL": redis_url, **SLOW_HOST}
    with SiteServer(generated=60, latency=0.1) as site:
        first = tmp_path / "first.jsonl"
        # No job name: the crawl gets one, and the pause line says how to resume it.
        proc = subprocess.Popen(
            crawl_command(first, f"start={start_url(site)}", settings=settings),
            cwd=tmp_path,
            env=crawl_env(),
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while sum(site.counts.values()) < 25 and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(stop)
        log = proc.communicate(timeout=60)[1]
        assert proc.returncode == 0, log[-2000:]
        assert "crawlyx: paused:" in log
        paused = re.search(r"crawlyx: paused; resume with -a job=(\S+)", log)
        assert paused, log[-2000:]
        job = paused.group(1)
        assert f"crawlyx: job {job} (resume with -a job={job})" in log
        done_first = read_items(first)
        assert 0 < len(done_first) < len(site.expected_pages())

        second = tmp_path / "second.jsonl"
        resumed = subprocess.run(
            crawl_command(second, f"start={start_url(site)}", f"job={job}", settings=settings),
            cwd=tmp_path,
            env=crawl_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        assert "crawlyx: paused" not in resumed.stderr
        urls = [item["url"] for item in done_first + read_items(second)]
    assert len(urls) == len(set(urls)), "a page was emitted twice"
    assert set(urls) == site.expected_pages()
    assert max(site.counts.values()) <= 2


def running(socket: Path) -> list[str]:
    """The command lines of the processes that name ``socket`` (the embedded server's)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        line = " ".join(proc.info["cmdline"] or ())
        if str(socket) in line:
            found.append(line)
    return found


def test_embedded_redis_needs_no_server(tmp_path):
    env = crawl_env()
    env.pop("CRAWLYX_REDIS_URL", None)
    with SiteServer() as site:
        out = tmp_path / "pages.jsonl"
        proc = subprocess.run(
            crawl_command(out, f"start={start_url(site)}", "job=embedded"),
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert {item["url"] for item in read_items(out)} == site.expected_pages()
    data = tmp_path / ".crawlyx"
    assert (data / "appendonly.aof").exists() or (data / "appendonlydir").exists()
    # The last crawl out shut the server down.
    assert not (data / "redis.sock").exists()
    assert not running(data / "redis.sock")  # no redis-server left behind


def test_a_crawl_that_fails_to_start_leaves_no_embedded_server(tmp_path):
    env = crawl_env()
    env.pop("CRAWLYX_REDIS_URL", None)
    out = tmp_path / "pages.jsonl"
    command = crawl_command(out, "start=http://127.0.0.1:9/")
    # A middleware that does not load: the crawler fails after the spider is made.
    command += ["-s", 'DOWNLOADER_MIDDLEWARES={"crawlyx.no_such.Middleware": 1}']
    proc = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert "crawlyx.no_such" in proc.stderr
    assert proc.returncode != 0
    data = tmp_path / ".crawlyx"
    assert (data / "redis.log").exists()  # it was started, early
    assert not running(data / "redis.sock")  # and shut down


def test_sigkill_loses_no_page_and_the_job_resumes_at_once(tmp_path, redis_url):
    settings = {"CRAWLYX_REDIS_URL": redis_url, **SLOW_HOST}
    with SiteServer(generated=60, latency=0.1) as site:
        first = tmp_path / "first.jsonl"
        command = crawl_command(first, f"start={start_url(site)}", "job=killed", settings=settings)
        proc = subprocess.Popen(command, cwd=tmp_path, env=crawl_env(), stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while sum(site.counts.values()) < 25 and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.kill()  # SIGKILL: nothing runs on the way out
        proc.wait(30)
        done_first = [json.loads(line) for line in first.open() if line.endswith("}\n")]
        assert 0 < len(done_first) < len(site.expected_pages())

        second = tmp_path / "second.jsonl"
        resumed = subprocess.run(
            crawl_command(second, f"start={start_url(site)}", "job=killed", settings=settings),
            cwd=tmp_path,
            env=crawl_env(),
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        urls = [item["url"] for item in done_first + read_items(second)]
    # The killed process ran here: its leases were taken back as the job resumed, not
    # once its heartbeat ran out.
    requeued = re.search(r"\((\d+) leases of stopped processes requeued\)", resumed.stderr)
    assert requeued and int(requeued.group(1)) > 0, resumed.stderr[-2000:]
    # A page is done only once its item is in the file: none lost.
    assert set(urls) == site.expected_pages()


def test_a_redis_restart_mid_crawl_pauses_it_and_loses_no_page(tmp_path, own_redis):
    settings = {"CRAWLYX_REDIS_URL": own_redis.url, **SLOW_HOST}
    with SiteServer(generated=40, latency=0.05) as site:
        out = tmp_path / "pages.jsonl"
        proc = subprocess.Popen(
            crawl_command(
                out, f"start={start_url(site)}", "job=restarted", "render=never", settings=settings
            ),
            cwd=tmp_path,
            env=crawl_env(),
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while sum(site.counts.values()) < 12 and time.monotonic() < deadline:
            time.sleep(0.02)
        own_redis.stop()  # gracefully: the append-only file has everything
        time.sleep(1.0)  # the crawl runs into the outage
        own_redis.start()
        log = proc.communicate(timeout=120)[1]
        assert proc.returncode == 0, log[-3000:]
        urls = [item["url"] for item in read_items(out)]
    assert "Redis unreachable" in log  # the crawl did meet the outage
    assert "crawlyx: finished:" in log
    assert len(urls) == len(set(urls)), "a page was emitted twice"
    assert set(urls) == site.expected_pages()
