"""The cost of a crawl: its price table (crawlyx/cost/model.py), the CPU time of its
processes (crawlyx/cost/processes.py) and the figures a crawl reports, held against the
CPU time the system measured around it."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from scrapy.settings import Settings

from crawlyx import settings as defaults
from crawlyx.cost.model import Prices, Usage, breakdown, costs, per_url
from crawlyx.cost.processes import ProcessMeter
from tests.conftest import crawl_command, crawl_env

ROOT = Path(__file__).resolve().parents[2]

BUSY = "import time\nend = time.process_time() + 0.6\nwhile time.process_time() < end: pass"

# Runs a command as a subreaper: the command's orphaned descendants (page workers that
# outlive the crawl by a moment) are its children then, and it waits for every one of
# them; its children's CPU account is then the whole tree's, as the system counted it.
REAPER = """
import ctypes, json, os, resource, subprocess, sys
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
status = subprocess.Popen(sys.argv[1:]).wait()
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"status": status, "cpu": usage.ru_utime + usage.ru_stime}))
"""


def settings(**values) -> Settings:
    s = Settings()
    s.setmodule(defaults)
    for name, value in values.items():
        s.set(name, value)
    return s


def test_prices_from_settings_and_their_checks():
    prices = Prices.from_settings(settings(CRAWLYX_COST_PROXY_TIER="residential"))
    assert (prices.proxy_tier, prices.proxy_request, prices.proxy_gb) == ("residential", 0, 4.0)
    assert prices.cpu_second == defaults.CRAWLYX_COST_CPU_SECOND
    assert Prices.from_settings(settings()).proxy_gb == 0  # no proxy by default
    with pytest.raises(ValueError, match=r"^CRAWLYX_COST_PROXY_TIER \(satellite\) must be one"):
        Prices.from_settings(settings(CRAWLYX_COST_PROXY_TIER="satellite"))
    tiers = '{"metered": [0.001]}'  # as -s gives it: JSON
    with pytest.raises(ValueError, match=r"^CRAWLYX_COST_PROXY_PRICES: tier metered must be"):
        Prices.from_settings(settings(CRAWLYX_COST_PROXY_PRICES=tiers))
    metered = settings(
        CRAWLYX_COST_PROXY_PRICES='{"metered": [0.001, 0]}', CRAWLYX_COST_PROXY_TIER="metered"
    )
    assert Prices.from_settings(metered).proxy_request == 0.001


def test_costs_by_category_and_mode():
    prices = Prices(2.0, 10.0, 100.0, "metered", 0.5, 1.0)
    usage = Usage(
        cpu={("crawl", "http"): 3.0, ("workers", "http"): 1.0, ("browser", "browser"): 5.0},
        response_bytes={"http": 2e9, "browser": 1e9},
        fetches={"http": 4, "browser": 2},
        pages={"http": 3, "browser": 1},
        written_bytes=4e9,
    )
    cost = costs(usage, prices)
    assert cost["compute", "http"] == 8.0 and cost["compute", "browser"] == 10.0
    assert cost["egress", "http"] == 20.0 and cost["egress", "browser"] == 10.0
    assert cost["proxy", "http"] == 4 * 0.5 + 2.0 and cost["proxy", "browser"] == 2 * 0.5 + 1.0
    # The output's 4 GB are shared by pages: 3 GB for plain pages, 1 GB for rendered ones.
    assert cost["storage", "http"] == 300.0 and cost["storage", "browser"] == 100.0
    assert per_url(cost, usage.pages, "http") == (8 + 20 + 4 + 300) / 3
    assert per_url(cost, usage.pages, "browser") == 10 + 10 + 2 + 100
    assert per_url(cost, usage.pages) == sum(cost.values()) / 4
    assert per_url(cost, {}, "http") is None
    report = breakdown(usage, prices)
    assert report["cpu_seconds"]["by_mode"] == {"http": 4.0, "browser": 5.0}
    assert report["cpu_seconds"]["by_component"]["crawl"] == {"http": 3.0}
    assert report["total"] == sum(cost.values())


def test_process_meter_counts_a_child_that_ended():
    """A child's CPU, sampled while it runs and once it ended (waited for), against the
    system's account of the children waited for: the same within 10 %."""
    meter = ProcessMeter()
    own = time.process_time()
    before = meter.sample().cpu["crawl"]
    waited = resource.getrusage(resource.RUSAGE_CHILDREN)
    child = subprocess.Popen([sys.executable, "-c", BUSY])
    time.sleep(0.2)
    running = meter.sample()  # the child, seen running: its CPU so far
    assert running.cpu["crawl"] > before and running.rss["crawl"] > 0
    child.wait()
    after = meter.sample().cpu["crawl"]
    own = time.process_time() - own  # this process is the crawl component's too
    done = resource.getrusage(resource.RUSAGE_CHILDREN)
    system = (done.ru_utime + done.ru_stime) - (waited.ru_utime + waited.ru_stime)
    assert system >= 0.6
    assert after - before - own == pytest.approx(system, rel=0.1)


@contextmanager
def bench_site(pages: int):
    """bench/site.py: pages of about 40 KB, as a documentation site's."""
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "site.py"), "--pages", str(pages),
         "--latency-ms", "0", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        line = proc.stdout.readline().strip()
        assert line.startswith("READY "), line
        yield line.split(" ", 1)[1]
    finally:
        proc.terminate()
        proc.wait(10)


def test_cost_figures_against_the_cpu_time_of_the_crawl(tmp_path, redis_url):
    """A crawl of the bench site's 600 pages, run under a subreaper that waits for every
    process of it: the CPU seconds the report says it cost are those the system counted,
    within 10 % (what the crawl's processes use after the report is written, shutting
    down, is the difference)."""
    report_path = tmp_path / "report.json"
    with bench_site(600) as base:
        command = crawl_command(
            tmp_path / "pages.jsonl",
            f"start={base}",
            f"report={report_path}",
            settings={"CRAWLYX_REDIS_URL": redis_url, "CRAWLYX_PROGRESS_INTERVAL": 0},
        )
        proc = subprocess.run(
            [sys.executable, "-c", REAPER, *command],
            cwd=tmp_path,
            env=crawl_env(),
            capture_output=True,
            text=True,
            timeout=180,
        )
    assert proc.returncode == 0, proc.stderr[-3000:]
    measured = json.loads(proc.stdout.splitlines()[-1])
    assert measured["status"] == 0, proc.stderr[-3000:]
    report = json.loads(report_path.read_text())
    cost = report["cost"]
    cpu = cost["cpu_seconds"]
    assert report["pages"] >= 600
    assert cpu["total"] == pytest.approx(measured["cpu"], rel=0.1), (cpu, measured)
    # Every part of it: the crawl process and its workers both worked, for plain HTTP.
    assert cpu["by_component"]["crawl"]["http"] > 0
    assert cpu["by_component"]["workers"]["http"] > 0
    assert cpu["by_mode"]["browser"] == 0
    # Priced as the settings say, per page emitted.
    prices = cost["prices"]
    assert cost["cost"]["compute"]["http"] == pytest.approx(cpu["total"] * prices["cpu_second"])
    assert cost["response_bytes"]["http"] > 0
    assert cost["written_bytes"] == (tmp_path / "pages.jsonl").stat().st_size
    assert cost["per_url"]["http"] == pytest.approx(cost["total"] / report["pages"])
    assert report["slos"]["cost_per_url"]["target"] == cost["target_per_url"]
    # The page workers' reads: one per page, none failed.
    workers = report["workers"]
    assert workers["reads"] >= report["pages"] and workers["failures"] == {}
    assert 0 < workers["busy_share"] <= 1
    assert workers["read_seconds"]["p50"] <= workers["read_seconds"]["p95"]
    assert report["rss_bytes"]["crawl"] > 0 and report["rss_bytes"]["workers"] > 0
