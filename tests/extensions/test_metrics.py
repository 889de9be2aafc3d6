"""The Prometheus endpoint (crawlyx/extensions/metrics.py), the fetch tally behind it and
the report (crawlyx/extensions/telemetry.py, crawlyx/extensions/report.py)."""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.request
from collections import Counter
from types import SimpleNamespace

import pytest
from prometheus_client.parser import text_string_to_metric_families
from scrapy import Request, Spider
from scrapy.http import Response
from scrapy.utils.test import get_crawler

from crawlyx.errors import ERROR_CLASSES
from crawlyx.extensions.metrics import Metrics
from crawlyx.extensions.report import FETCH_FAILURES
from crawlyx.extensions.telemetry import FAILED, OTHER, FetchTally, Histogram, HostLabels
from crawlyx.middlewares.robots import Robots
from tests.conftest import crawl_command, crawl_env, free_port, read_items
from tests.sites.site import SiteServer

ADDON = {"ADDONS": {"crawlyx.addon.Addon": 0}}  # the metrics read the crawl's parts

# Two requests at a time to a host whose generated pages take 0.1 s: a few seconds of
# crawl to scrape during.
SLOW = {"CRAWLYX_WINDOW_MIN": 1, "CRAWLYX_WINDOW_START": 2, "CRAWLYX_WINDOW_MAX": 2}

# name (as the parser gives it: a counter's without _total) -> type
REQUIRED = {
    "crawlyx_fetch": "counter",
    "crawlyx_fetch_duration_seconds": "histogram",
    "crawlyx_errors": "counter",
    "crawlyx_frontier_size": "gauge",
    "crawlyx_pages": "counter",
    "crawlyx_dedup_hits": "counter",
    "crawlyx_window": "gauge",
    "crawlyx_robots_age_seconds": "gauge",
    "crawlyx_render": "counter",
    "crawlyx_robots_checked": "counter",
    "crawlyx_robots_disallowed_fetched": "counter",
    "crawlyx_crawl_delay_fetches": "counter",
    "crawlyx_crawl_delay_violations": "counter",
    "crawlyx_opt_out_pages": "counter",
    "crawlyx_frontier_taken": "counter",
    "crawlyx_frontier_added": "counter",
    "crawlyx_cpu_seconds": "counter",
    "crawlyx_response_bytes": "counter",
    "crawlyx_written_bytes": "counter",
    "crawlyx_page_modes": "counter",
    "crawlyx_cost": "counter",
    "crawlyx_cost_per_url": "gauge",
    "crawlyx_workers": "gauge",
    "crawlyx_worker_reads": "counter",
    "crawlyx_worker_failures": "counter",
    "crawlyx_worker_read_duration_seconds": "histogram",
    "crawlyx_worker_queue_depth": "gauge",
    "crawlyx_worker_busy_seconds": "counter",
    "crawlyx_rss_bytes": "gauge",
    "crawlyx_redis_latency_seconds": "gauge",
    "crawlyx_redis_memory_bytes": "gauge",
}


def start_url(site) -> str:
    return f"http://127.0.0.1:{site.port}/start"


def scrape(port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return {family.name: family for family in text_string_to_metric_families(text)}


def refused(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


# -- the parts ---------------------------------------------------------------------------


def test_host_labels_are_bounded_and_never_move():
    labels = HostLabels(2)
    assert [labels(h) for h in ("a", "b", "c", "a", "d", "b")] == ["a", "b", OTHER, "a", OTHER, "b"]
    assert labels.named == {"a", "b"}
    assert HostLabels(0)("a") == OTHER


def test_histogram_buckets_and_quantiles():
    histogram = Histogram((1, 2, 3))
    assert histogram.quantile(0.5) is None
    for value in (0.5, 1.0, 1.5, 3.0, 7.0):  # a bound belongs to its own bucket
        histogram.observe(value)
    assert histogram.counts == [2, 1, 1, 1]
    assert histogram.cumulative() == [(1.0, 2), (2.0, 3), (3.0, 4), (float("inf"), 5)]
    assert histogram.sum == 13.0
    assert histogram.quantile(0.4) == 1.0  # the 2nd of 5: the top of the first bucket
    assert histogram.quantile(0.5) == pytest.approx(1.5)  # half-way into (1, 2]
    assert histogram.quantile(0.99) == 3.0  # in +Inf: the highest finite bound


def test_tally_counts_fetches_and_audits_robots():
    tally = FetchTally(get_crawler(Spider, {}), host_limit=5)
    rules = Robots(200, "User-agent: *\nDisallow: /private/\n", 100.0)
    tally._robots = SimpleNamespace(agent="crawlyx", cached=lambda origin: rules)
    tally._reached(Request("http://h/robots.txt", meta={"dont_obey_robotstxt": True}))
    tally._reached(Request("http://h/page"))
    tally._reached(Request("http://h/private/x"))  # let through by mistake: a violation
    answered = Request("http://h/page", meta={"download_latency": 0.2})
    tally._downloaded(Response("http://h/page", status=503), answered)
    tally._left(answered)
    tally._left(Request("http://h/slow", meta={"playwright": True}))  # no response: failed
    snap = tally.snapshot()
    assert (snap.robots_checked, snap.robots_violations, snap.robots_fetched_at) == (2, 1, 100.0)
    assert snap.fetches == {("h", "5xx"): 1, ("h", FAILED): 1}
    assert snap.modes == {"http": 1, "browser": 1}
    assert snap.latency.count == 1 and snap.latency.sum == 0.2


def test_endpoint_listens_on_loopback_and_closes(tmp_path):
    port = free_port()
    metrics = Metrics.from_crawler(get_crawler(Spider, {"CRAWLYX_METRICS_PORT": port, **ADDON}))
    metrics.start()
    try:
        assert metrics.server.server_address[0] == "127.0.0.1"
        families = scrape(port)
        assert families["crawlyx_fetch_duration_seconds"].type == "histogram"
        assert families["crawlyx_pages"].samples[0].value == 0
    finally:
        metrics.stop()
    assert refused(port)
    # A port in use costs the endpoint, not the crawl.
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        other = Metrics.from_crawler(get_crawler(Spider, {"CRAWLYX_METRICS_PORT": taken, **ADDON}))
        other.start()
        assert other.server is None
        other.stop()


def test_metrics_off_by_default():
    from scrapy.exceptions import NotConfigured

    with pytest.raises(NotConfigured):
        Metrics.from_crawler(get_crawler(Spider, {}))


# -- a crawl -----------------------------------------------------------------------------


def test_metrics_while_crawling(tmp_path, redis_url):
    port = free_port()
    settings = {
        "CRAWLYX_REDIS_URL": redis_url,
        "CRAWLYX_METRICS_PORT": port,
        # One host of its own (the start URL's, fetched first); the site's is `other`.
        "CRAWLYX_METRICS_HOSTS": 1,
        "CRAWLYX_PROGRESS_INTERVAL": 0,
        "CRAWLYX_MARKDOWN_WORKERS": 2,
        **SLOW,
    }
    out = tmp_path / "pages.jsonl"
    with SiteServer(generated=40, latency=0.1) as site:
        command = crawl_command(out, f"start={start_url(site)}", settings=settings)
        proc = subprocess.Popen(command, cwd=tmp_path, env=crawl_env(), stderr=subprocess.PIPE)
        try:
            families, running = None, False
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    families = scrape(port)
                except OSError:
                    families = None
                running = proc.poll() is None
                if families and families["crawlyx_pages"].samples[0].value >= 3:
                    break
                time.sleep(0.05)
            _, log = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 0, log[-3000:]
    assert families is not None and running, "never scraped while the crawl ran"
    for name, kind in REQUIRED.items():
        assert name in families, f"missing {name}"
        assert families[name].type == kind, (name, families[name].type)
    samples = [s for family in families.values() for s in family.samples]
    for sample in samples:
        for value in sample.labels.values():
            assert "/" not in value and "://" not in value, sample
    fetch_hosts = {s.labels["host"] for s in families["crawlyx_fetch"].samples}
    assert fetch_hosts == {"127.0.0.1", OTHER}
    assert {s.labels["host"] for s in families["crawlyx_window"].samples} == {"127.0.0.1"}
    classes = {s.labels["status_class"] for s in families["crawlyx_fetch"].samples}
    assert {"2xx", "3xx"} <= classes
    count = next(s for s in samples if s.name == "crawlyx_fetch_duration_seconds_count")
    assert count.value >= 3
    assert families["crawlyx_frontier_size"].samples[0].value >= 0
    assert 0 <= families["crawlyx_robots_age_seconds"].samples[0].value < 60
    # Errors by class and host: every class has a series.
    errors = families["crawlyx_errors"].samples
    assert {s.labels["class"] for s in errors} == set(ERROR_CLASSES)
    assert {s.labels["host"] for s in errors} <= {"127.0.0.1", OTHER}
    cpu = {
        (s.labels["component"], s.labels["mode"]) for s in families["crawlyx_cpu_seconds"].samples
    }
    assert ("crawl", "http") in cpu and ("browser", "browser") in cpu
    received = {s.labels["mode"]: s.value for s in families["crawlyx_response_bytes"].samples}
    assert received["http"] > 0 and received["browser"] == 0
    by_component = {s.labels["component"]: s.value for s in families["crawlyx_rss_bytes"].samples}
    assert by_component["crawl"] > 0 and by_component["workers"] > 0
    assert families["crawlyx_workers"].samples[0].value == 2  # CRAWLYX_MARKDOWN_WORKERS
    assert families["crawlyx_redis_memory_bytes"].samples[0].value > 0
    assert len(read_items(out)) == len(site.expected_pages())
    assert refused(port)  # closed with the crawl


def test_report(site, crawl, tmp_path):
    report_path, errors_path = tmp_path / "report.json", tmp_path / "errors.jsonl"
    result = crawl(f"start={start_url(site)}", f"report={report_path}", f"errors={errors_path}")
    assert result.returncode == 0, result.log[-3000:]
    assert "crawlyx: finished:" in result.log  # the summary line stays
    report = json.loads(report_path.read_text())
    assert report["ended"]["reason"] == "finished"
    pages = len(result.items)
    assert report["pages"] == pages == len(site.expected_pages())
    assert report["pages_per_second"] > 0
    # Errors by class: those of the errors file.
    recorded = Counter(json.loads(line)["class"] for line in errors_path.read_text().splitlines())
    # The site's /file.pdf is no PDF (a line of text): unreadable, which is no fetch failure.
    expected = {"http_4xx": 1, "robots_disallowed": 1, "unreadable": 1}
    assert report["errors"]["by_class"] == dict(recorded) == expected
    assert report["errors"]["count"] == int(result.stat("crawlyx/error/count"))
    # Success rate: pages / (pages + fetch failures); the missing page is the one failure.
    failed = sum(recorded[name] for name in FETCH_FAILURES)
    assert failed == 1
    assert report["success_rate"] == {
        "value": round(pages / (pages + 1), 6),
        "pages": pages,
        "failed": 1,
    }
    # Fetches: every request the downloader handled, as Scrapy counts them.
    fetches = report["fetches"]
    assert fetches["count"] == int(result.stat("downloader/request_count"))
    assert fetches["by_status_class"]["2xx"] == int(
        result.stat("downloader/response_status_count/200")
    )
    assert fetches["by_status_class"]["4xx"] == 1
    assert fetches["by_mode"] == {"http": fetches["count"]}
    latency = report["latency_seconds"]
    assert latency["count"] == int(result.stat("downloader/response_count"))
    assert 0 < latency["p50"] <= latency["p95"] <= latency["p99"]
    # Drain: the frontier's own counters (the crawl is shorter than the window).
    drain = report["drain_rate"]
    assert drain["taken"] == int(result.stat("crawlyx/frontier/dequeued"))
    assert drain["added"] == int(result.stat("crawlyx/frontier/enqueued"))
    assert drain["value"] == 1.0  # a finished crawl took all it added
    # robots.txt: every fetch but the two robots.txt was checked, none was disallowed.
    assert report["robots"] == {
        "checked": fetches["count"] - 2,
        "disallowed_fetched": 0,
        "compliance": 1.0,
    }
    slos = report["slos"]
    assert slos["fetch_success_rate"]["target"] == 0.95
    assert slos["fetch_success_rate"]["met"] is False  # 16 of 17: 94 %
    assert slos["fetch_latency_p95_seconds"] == {
        "value": latency["p95"],
        "target": 3.0,
        "comparison": "<=",
        "met": True,
    }
    assert slos["robots_compliance"]["met"] is True


def test_report_says_why_the_crawl_ended(site, crawl, tmp_path):
    path = tmp_path / "report.json"
    result = crawl(
        f"start={start_url(site)}",
        "max_pages=3",
        f"report={path}",
        settings={"CRAWLYX_ROBOTS_ENABLED": False},
    )
    assert result.returncode == 0, result.log[-3000:]
    report = json.loads(path.read_text())
    assert report["ended"]["reason"] == "max_pages"
    assert "max_pages" in report["ended"]["why"]
    assert report["pages"] == 3
    # robots.txt not obeyed: no compliance to speak of, and the objective is not met.
    assert report["robots"]["compliance"] is None
    assert report["slos"]["robots_compliance"]["met"] is False
