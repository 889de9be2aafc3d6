"""Crawls on a real Redis Cluster (three nodes on loopback ports): a job's frontier spread
over every node in shards, shared by two processes, a kill -9 and a resume, the commands."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

from crawlyx.frontier.state import connect_url
from tests.conftest import Gate, crawl_command, crawl_env, lease_owners, past_the_start, read_items
from tests.sites.site import SiteServer

# Two requests at a time per host: the crawl lasts long enough to share, or to be killed.
SLOW_HOST = {"CRAWLYX_WINDOW_MIN": 1, "CRAWLYX_WINDOW_START": 2, "CRAWLYX_WINDOW_MAX": 2}


def start(site) -> str:
    return f"http://127.0.0.1:{site.port}/start"


def spawn(tmp_path, cluster, site, name: str, job: str) -> tuple[subprocess.Popen, object]:
    out = tmp_path / f"{name}.jsonl"
    settings = {"CRAWLYX_REDIS_URL": cluster.url, "USER_AGENT": f"crawlyx-{name}", **SLOW_HOST}
    command = crawl_command(out, f"start={start(site)}", f"job={job}", settings=settings)
    proc = subprocess.Popen(
        command, cwd=tmp_path, env=crawl_env(), stderr=subprocess.PIPE, text=True
    )
    return proc, out


def scrapy(cluster, *args, cwd) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "scrapy", *args, "-s", f"CRAWLYX_REDIS_URL={cluster.url}"]
    return subprocess.run(
        command, capture_output=True, text=True, env=crawl_env(), cwd=cwd, timeout=120
    )


def urls_of(*outs) -> list[str]:
    return [item["url"] for out in outs for item in read_items(out)]


def test_two_processes_share_a_job_on_a_cluster_its_frontier_on_every_node(tmp_path, redis_cluster):
    with SiteServer(generated=150, latency=0.05) as site:
        gate = Gate(site, "respond", past_the_start)  # until both lease pages (conftest)
        runs = [spawn(tmp_path, redis_cluster, site, name, "on-cluster") for name in "ab"]
        nodes = redis_cluster.nodes()
        try:
            both = gate.open_when(lambda: len(lease_owners(nodes, "on-cluster")) == 2)
        finally:
            for node in nodes:
                node.close()
        logs = [proc.communicate(timeout=240)[1] for proc, _ in runs]
        assert both, "the second process never leased a page"
        assert [proc.returncode for proc, _ in runs] == [0, 0], [log[-2000:] for log in logs]
        urls = urls_of(*(out for _, out in runs))
        assert len(urls) == len(set(urls)), "a page was emitted twice"
        assert set(urls) == site.expected_pages()
        counts = dict(site.counts)
        assert counts.pop("/robots.txt") == 2  # once per origin for the whole job
        assert {path: n for path, n in counts.items() if n != 1} == {}  # no page fetched twice
        fetched = {agent: len(paths) for agent, paths in site.agents.items()}
        assert fetched.get("crawlyx-a", 0) > 0 and fetched.get("crawlyx-b", 0) > 0, fetched
    # The job's frontier in 64 shards, each its own tag: every node holds some.
    client = connect_url(redis_cluster.url)
    assert client.hget("crawlyx:{on-cluster}:job", "shards") == b"64"
    client.close()
    nodes = redis_cluster.nodes()
    try:
        pattern = "crawlyx:{on-cluster/*}:visited"
        shards = [sum(1 for _ in node.scan_iter(match=pattern)) for node in nodes]
        assert all(shards) and sum(shards) <= 64, shards  # a shard no URL fell in has none
    finally:
        for node in nodes:
            node.close()

    jobs = scrapy(redis_cluster, "jobs", "--json", cwd=tmp_path)
    assert jobs.returncode == 0, jobs.stderr
    [job] = [job for job in json.loads(jobs.stdout) if job["job"] == "on-cluster"]
    assert (job["state"], job["pages"], job["queued"], job["leased"]) == (
        "finished", len(urls), 0, 0,
    )  # fmt: skip
    audit = scrapy(redis_cluster, "audit", "on-cluster", "-o", "audit.json", cwd=tmp_path)
    assert audit.returncode == 0, audit.stderr
    report = json.loads((tmp_path / "audit.json").read_text())
    assert report["summary"]["pages"] == len(urls)


def test_a_process_killed_on_a_cluster_loses_nothing_when_the_job_resumes(tmp_path, redis_cluster):
    with SiteServer(generated=120, latency=0.05) as site:
        (killed, first), (other, second) = (
            spawn(tmp_path, redis_cluster, site, name, "killed-on-cluster") for name in "ab"
        )
        deadline = time.monotonic() + 60
        while sum(site.counts.values()) < 40 and time.monotonic() < deadline:
            time.sleep(0.05)
        killed.send_signal(signal.SIGKILL)
        killed.communicate(timeout=30)
        log = other.communicate(timeout=240)[1]
        assert other.returncode == 0, log[-2000:]
        resumed, third = spawn(tmp_path, redis_cluster, site, "c", "killed-on-cluster")
        log = resumed.communicate(timeout=240)[1]
        assert resumed.returncode in (0, 2), log[-2000:]  # 2: the other finished it all
        urls = urls_of(first, second, third)
        assert set(urls) == site.expected_pages()  # nothing lost
        assert len(urls) == len(set(urls)), "a page was written twice"
