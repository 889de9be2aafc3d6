"""monitoring/: the rules pass promtool, every alert fires when it should and is silent
when it should not, and a real Prometheus scraping a crawl answers every expression of the
dashboard and of the recording rules."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.conftest import crawl_command, crawl_env, free_port
from tests.sites.site import SiteServer

MONITORING = Path(__file__).resolve().parents[2] / "monitoring"
RULES = MONITORING / "prometheus"
RULE_FILES = [RULES / "recording.yml", RULES / "alerts.yml"]
DASHBOARD = MONITORING / "grafana" / "crawlyx.json"
SEVERITIES = {"critical", "warning", "info"}


def tool(name: str) -> str:
    """Prometheus's tools, from the distribution's package. Under CI (``CI`` set) a
    missing one fails the test; elsewhere it skips it."""
    path = shutil.which(name)
    if path is None:
        message = f"{name} is not installed (apt-get install prometheus)"
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the monitoring tests: {message}")
        pytest.skip(message)
    return path


def alerts() -> list[dict]:
    groups = yaml.safe_load((RULES / "alerts.yml").read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def recording_rules() -> list[dict]:
    groups = yaml.safe_load((RULES / "recording.yml").read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def dashboard_exprs() -> list[str]:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return [target["expr"] for panel in panels for target in panel.get("targets", [])]


def test_promtool_checks_the_rules():
    result = subprocess.run(
        [tool("promtool"), "check", "rules", *map(str, RULE_FILES)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("SUCCESS") == len(RULE_FILES)


def test_every_alert_fires_when_it_should_and_only_then():
    tests = sorted((RULES / "tests").glob("*.yml"))
    result = subprocess.run(
        [tool("promtool"), "test", "rules", *map(str, tests)],
        capture_output=True,
        text=True,
        cwd=RULES / "tests",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # Every alert has a case where it fires and one where it stays silent.
    fired, silent = set(), set()
    for path in tests:
        for case in yaml.safe_load(path.read_text())["tests"]:
            for check in case["alert_rule_test"]:
                (fired if check["exp_alerts"] else silent).add(check["alertname"])
    names = {rule["alert"] for rule in alerts()}
    assert fired == names and silent == names


def test_every_alert_has_a_severity_and_a_runbook_section():
    runbook = (MONITORING / "RUNBOOK.md").read_text()
    sections = {line[3:].strip().lower() for line in runbook.splitlines() if line.startswith("## ")}
    for rule in alerts():
        assert rule["labels"]["severity"] in SEVERITIES, rule["alert"]
        path, _, anchor = rule["annotations"]["runbook"].partition("#")
        assert path == "monitoring/RUNBOOK.md" and anchor == rule["alert"].lower()
        assert anchor in sections, f"no section {rule['alert']} in RUNBOOK.md"
    # The dashboard's six rows, in the order of the monitoring reference.
    rows = [p["title"] for p in json.loads(DASHBOARD.read_text())["panels"] if p["type"] == "row"]
    assert rows == ["SLOs", "Throughput", "Errors", "Frontier", "Compliance", "Cost"]


def query(base: str, expr: str) -> list:
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=5) as response:
        answer = json.load(response)
    assert answer["status"] == "success", (expr, answer)
    return answer["data"]["result"]


def wait_ready(base: str, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert proc.poll() is None, "prometheus exited"
        try:
            with urllib.request.urlopen(f"{base}/-/ready", timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise AssertionError("prometheus never got ready")


def test_a_real_prometheus_scrapes_a_crawl(tmp_path, redis_url):
    prometheus = tool("prometheus")
    metrics_port, web_port = free_port(), free_port()
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(path) for path in RULE_FILES],
        "scrape_configs": [
            {"job_name": "crawlyx", "static_configs": [{"targets": [f"127.0.0.1:{metrics_port}"]}]}
        ],
    }
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    base = f"http://127.0.0.1:{web_port}"
    server = subprocess.Popen(
        [prometheus, f"--config.file={tmp_path / 'prometheus.yml'}",
         f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{web_port}",
         "--log.level=warn"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    # Every expression as Prometheus is asked it: the dashboard's for every job.
    exprs = [expr.replace("$job", ".*") for expr in dashboard_exprs()]
    exprs += [rule["expr"] for rule in recording_rules()]
    exprs += [rule["record"] for rule in recording_rules()]
    settings = {
        "CRAWLYX_REDIS_URL": redis_url,
        "CRAWLYX_METRICS_PORT": metrics_port,
        "CRAWLYX_PROGRESS_INTERVAL": 0,
        # Two requests at a time to pages of 0.1 s: a crawl of some 10 s to scrape.
        "CRAWLYX_WINDOW_MIN": 1,
        "CRAWLYX_WINDOW_START": 2,
        "CRAWLYX_WINDOW_MAX": 2,
    }
    missing = exprs
    try:
        wait_ready(base, server)
        with SiteServer(generated=150, latency=0.1) as site:
            command = crawl_command(
                tmp_path / "pages.jsonl", f"start=http://127.0.0.1:{site.port}/start",
                settings=settings,
            )  # fmt: skip
            crawl = subprocess.Popen(
                command, cwd=tmp_path, env=crawl_env(), stderr=subprocess.PIPE, text=True
            )
            try:
                # While the crawl runs: until every expression has data.
                while missing and crawl.poll() is None:
                    time.sleep(0.5)
                    missing = [expr for expr in missing if not query(base, expr)]
                _, log = crawl.communicate(timeout=120)
            finally:
                if crawl.poll() is None:
                    crawl.kill()
        assert crawl.returncode == 0, log[-3000:]
        assert not missing, f"no data for {len(missing)} expressions, the first: {missing[:3]}"
        # The scrape target was up, and the SLIs are what the crawl measured.
        up = query(base, 'up{job="crawlyx"}')
        assert up and re.fullmatch(r"127\.0\.0\.1:\d+", up[0]["metric"]["instance"])
        robots = query(base, "crawlyx:robots_disallowed:ratio_rate5m")
        assert float(robots[0]["value"][1]) == 0
    finally:
        server.terminate()
        _, errors = server.communicate(timeout=30)
    assert server.returncode == 0, errors[-2000:]
