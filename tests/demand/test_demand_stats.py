"""The rung histogram is logged on a timer of its own (CRAWLYX_DEMAND_STATS_INTERVAL,
crawlyx/demand/extension.py), not only when pages pass: a crawl waiting on a slow page
still says where its pages stand."""

from __future__ import annotations

from tests.middlewares.test_window import FAST, NO_ROBOTS, Hostile, page

SLOW = 4.0  # seconds the second page takes


def test_the_histogram_is_logged_while_no_page_passes(crawl):
    def respond(path, hit):
        if path == "/robots.txt":
            return NO_ROBOTS
        if path == "/":
            return 200, {}, page(["/slow"]), 0
        return 200, {}, page(), SLOW

    settings = {**FAST, "CRAWLYX_DEMAND_ENABLED": True, "CRAWLYX_DEMAND_STATS_INTERVAL": "1s"}
    with Hostile(respond) as server:
        result = crawl(f"start={server.base}/", "sitemap=0", settings=settings)
    assert result.returncode == 0, result.log[-3000:]
    assert len(result.items) == 2
    lines = [line for line in result.log.splitlines() if "demand rungs (dry run)" in line]
    assert all(server.base in line for line in lines)
    # Once a second while the slow page is fetched (the home page read, its site known),
    # and once at the end; pages passing alone would log twice at most.
    assert len(lines) >= SLOW - 1 + 1
    assert lines[-1].endswith("6h=0 12h=0 24h=2; fastest 0.0%")
