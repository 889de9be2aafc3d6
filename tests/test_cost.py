"""The cost of a crawl: its price table (crawlyx/cost/model.py), the CPU time of its
processes (crawlyx/cost/processes.py) and the figures a crawl reports, held against the
CPU time the system measured around it."""

from __future__ import annotations

import resource
import subprocess
import sys
import time

import pytest
from scrapy.settings import Settings

from crawlyx import settings as defaults
from crawlyx.cost.model import Prices, Usage, breakdown, costs, per_url
from crawlyx.cost.processes import ProcessMeter

BUSY = "import time\nend = time.process_time() + 0.6\nwhile time.process_time() < end: pass"


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
