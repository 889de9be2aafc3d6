"""Crawling a site again (-a refresh=1): due pages, conditional requests, what changed."""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from datetime import UTC, datetime

import pytest

from tests.breadth.test_breadth import scrapy
from tests.sites.site import QuietHandler, Serving

PAGE = (
    "<html><head><title>{title}</title></head>"
    "<body><h1>{title}</h1><p>{text}</p>{links}</body></html>"
)


class ChangingSite(Serving):
    """A small site whose pages change between crawls. Pages with an ETag answer a
    matching If-None-Match with 304; ``etag=None`` pages have none."""

    def __init__(self):
        self.pages: dict[str, tuple[str, str | None] | int] = {}
        self.requests: Counter = Counter()
        self.not_modified: Counter = Counter()
        self.conditional: Counter = Counter()
        site = self

        class Handler(QuietHandler):
            def do_GET(self):
                path = self.path.split("?")[0]
                site.requests[path] = site.requests[path] + 1
                page = site.pages.get(path, 404)
                if isinstance(page, int):
                    return self.reply(page, "gone")
                body, etag = page
                asked = self.headers.get("If-None-Match")
                if asked:
                    site.conditional[path] += 1
                if etag and asked == etag:
                    site.not_modified[path] += 1
                    self.send_response(304)
                    self.send_header("ETag", etag)
                    self.end_headers()
                    return None
                return self.reply(200, body, headers={"ETag": etag} if etag else None)

        super().__init__(Handler)

    def page(self, path, text, links=(), etag=True):
        title = path.strip("/") or "home"
        anchors = "".join(f'<a href="{link}">{link}</a> ' for link in links)
        body = PAGE.format(title=title, text=text, links=anchors)
        tag = f'"{abs(hash(body)) % 10**12}"' if etag else None
        self.pages[path] = (body, tag)


def _errors(path):
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture
def changing():
    with ChangingSite() as site:
        site.page("/", "The home page.", links=("/a", "/b", "/c", "/e"))
        site.page("/a", "Page a, first version.")
        site.page("/b", "Page b, soon gone.")
        site.page("/c", "Page c never changes.")
        site.page("/e", "Page e never changes and has no ETag.", etag=False)
        yield site


HOUR, DAY = 3600.0, 86400.0

# Pages are due one second after their fetch: a crawl a second later finds them all due
# (a crawl's start alone took that long once; it may take less).
QUICK = {"CRAWLYX_DEMAND_BASE_INTERVAL": "1s"}
QUICK_DUE = 1.0


def test_refresh_emits_exactly_the_changed_and_new_pages(changing, crawl, tmp_path):
    base = changing.base
    first = crawl(f"start={base}/", "sitemap=0", settings=QUICK)
    assert first.returncode == 0, first.log[-3000:]
    assert sorted(first.urls) == [f"{base}/{p}" for p in ("", "a", "b", "c", "e")]
    assert all(item["changed"] is True for item in first.items)
    time.sleep(QUICK_DUE)  # not a timing claim: the pages must be due for the next crawl

    changing.page("/a", "Page a, second version, now linking d.", links=("/d",))
    changing.pages["/b"] = 410
    changing.page("/d", "Page d is new.")
    changing.requests.clear()

    errors = tmp_path / "errors.jsonl"
    # max_pages counts pages written: an unchanged page read on the way takes no slot.
    second = crawl(
        f"start={base}/", "sitemap=0", "refresh=1", "max_pages=2", f"errors={errors}",
        settings=QUICK,
    )  # fmt: skip
    assert second.returncode == 0, second.log[-3000:]
    assert sorted(second.urls) == [f"{base}/a", f"{base}/d"]
    assert all(item["changed"] is True for item in second.items)
    # Unchanged pages with an ETag were asked for conditionally and answered 304.
    assert changing.not_modified["/"] == 1 and changing.not_modified["/c"] == 1
    assert changing.requests["/e"] == 1  # no ETag: fetched whole, same markdown
    # The page that went away is reported once, as gone.
    assert [(e["url"], e["class"]) for e in _errors(errors)] == [(f"{base}/b", "gone")]

    # It left the registry: the next run reports it as any broken link (the home page
    # still links it). emit=all writes every page read, changed or not, fetched without
    # conditional headers.
    changing.conditional.clear()
    errors.unlink()
    time.sleep(QUICK_DUE)
    third = crawl(
        f"start={base}/", "sitemap=0", "refresh=1", "emit=all", f"errors={errors}", settings=QUICK
    )
    assert third.returncode == 0, third.log[-3000:]
    assert [(e["url"], e["class"]) for e in _errors(errors)] == [(f"{base}/b", "http_4xx")]
    assert sum(changing.conditional.values()) == 0
    changed = {item["url"]: item["changed"] for item in third.items}
    assert changed == {f"{base}/{p}": False for p in ("", "a", "c", "d", "e")}


def _refresh_stats(result) -> dict[str, str]:
    names = ("due", "changed", "unchanged", "not_modified", "gone")
    stats = {name: result.stat(f"crawlyx/refresh/{name}") for name in names}
    return {name: value for name, value in stats.items() if value is not None}


def test_refresh_stats_are_a_refresh_runs_only(changing, crawl):
    base = changing.base
    first = crawl(f"start={base}/", "sitemap=0", settings=QUICK)
    assert first.returncode == 0, first.log[-3000:]
    assert len(first.items) == 5
    # A full crawl reads and writes every page: none is counted as changed.
    assert _refresh_stats(first) == {}
    time.sleep(QUICK_DUE)  # not a timing claim: the pages must be due for the refresh run

    # A second full crawl of the registered site, a page changed, one gone: still none.
    changing.page("/a", "Page a, second version.")
    changing.pages["/b"] = 410
    second = crawl(f"start={base}/", "sitemap=0", settings=QUICK)
    assert second.returncode == 0, second.log[-3000:]
    assert len(second.items) == 4
    assert _refresh_stats(second) == {}
    time.sleep(QUICK_DUE)

    # A refresh run counts what it found: /a changed, / and /c answer 304, /e (no ETag)
    # reads the same.
    changing.page("/a", "Page a, third version.")
    third = crawl(f"start={base}/", "sitemap=0", "refresh=1", settings=QUICK)
    assert third.returncode == 0, third.log[-3000:]
    assert third.urls == [f"{base}/a"]
    assert _refresh_stats(third) == {
        "due": "4", "changed": "1", "unchanged": "3", "not_modified": "2",
    }  # fmt: skip


def test_refresh_fetches_only_due_pages(changing, crawl, redis_url, tmp_path):
    base = changing.base
    # A refresh run of a site the registry does not know is a full crawl.
    first = crawl(f"start={base}/", "sitemap=0", "refresh=1")
    assert first.returncode == 0, first.log[-3000:]
    assert len(first.items) == 5 and all(item["changed"] for item in first.items)
    assert f"{base}: no pages registered: every page is new" in first.log
    # What scrapy demand says of the site now: five pages at the base, due in a day.
    shown = scrapy("demand", "--site", base, "--json", redis_url=redis_url, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    assert report["pages"] == 5 and report["mode"] == "off"
    assert report["actual"] == {"pages": {"6h": 0, "12h": 0, "24h": 5}, "hot_fraction": 0.0}
    assert (report["due_now"], report["due_24h"]) == (0, 5)
    assert report["ring"]["slices"] == 0
    table = scrapy("demand", "--site", base, redis_url=redis_url, cwd=tmp_path).stdout
    assert f"demand for {base}: 5 pages in the registry; ladder off" in table
    assert scrapy("demand", redis_url=redis_url, cwd=tmp_path).returncode == 2
    changing.requests.clear()
    # Fetched moments ago at the default 24h interval: nothing is due, and links to
    # known pages are not followed; only the start URL is asked (conditionally), and robots.txt.
    again = crawl(f"start={base}/", "sitemap=0", "refresh=1")
    assert again.returncode == 0, again.log[-3000:]
    assert again.items == []
    assert dict(changing.requests) == {"/": 1, "/robots.txt": 1}
    assert changing.not_modified["/"] == 1
    # And it says why, when the refresh starts and again when it ends: the first is due
    # a day after the first crawl read it.
    why = "5 pages registered, none due before (.{19}) UTC [(]-a refresh=all asks for them all[)]"
    start = re.search(f"INFO: {re.escape(base)}: {why}", again.log)
    end = re.search(f"INFO: {re.escape(base)}: refresh: {why}", again.log)
    assert start and end and start[1] == end[1], again.log[-3000:]
    first_due = datetime.strptime(start[1], "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    assert DAY - 600 < first_due.timestamp() - time.time() <= DAY


def test_a_lowered_base_interval_makes_registered_pages_due(changing, crawl):
    base = changing.base
    first = crawl(f"start={base}/", "sitemap=0")  # at the default base, 24h
    assert first.returncode == 0, first.log[-3000:]
    assert len(first.items) == 5
    time.sleep(QUICK_DUE)  # not a timing claim: a second must have passed since the fetches
    changing.requests.clear()
    again = crawl(f"start={base}/", "sitemap=0", "refresh=1", settings=QUICK)
    assert again.returncode == 0, again.log[-3000:]
    assert f"{base}: 5 pages brought forward to the base interval, 1s" in again.log
    assert "none due" not in again.log
    assert again.stat("crawlyx/refresh/due") == "5"
    assert dict(changing.requests) == {p: 1 for p in ("/", "/a", "/b", "/c", "/e", "/robots.txt")}
    assert sum(changing.not_modified.values()) == 4  # all but /e, which has no ETag
    assert again.items == []  # nothing changed


def test_refresh_all_asks_for_every_page_and_forget_starts_over(
    changing, crawl, redis_url, tmp_path
):
    base = changing.base
    first = crawl(f"start={base}/", "sitemap=0")
    assert first.returncode == 0, first.log[-3000:]
    changing.requests.clear()
    # Nothing is due for a day: refresh=all asks for every page all the same, conditionally.
    every = crawl(f"start={base}/", "sitemap=0", "refresh=all")
    assert every.returncode == 0, every.log[-3000:]
    assert dict(changing.requests) == {p: 1 for p in ("/", "/a", "/b", "/c", "/e", "/robots.txt")}
    assert changing.conditional == changing.not_modified == Counter(["/", "/a", "/b", "/c"])
    assert every.items == [] and "none due" not in every.log

    forget = scrapy("demand", "--site", base, "--forget", redis_url=redis_url, cwd=tmp_path)
    assert forget.returncode == 0, forget.stderr
    assert forget.stdout == (
        f"forgot the page registry of {base}: 5 pages; the next refresh run is a full crawl "
        "(the visit ring is kept)\n"
    )
    changing.conditional.clear()
    fresh = crawl(f"start={base}/", "sitemap=0", "refresh=1")
    assert fresh.returncode == 0, fresh.log[-3000:]
    assert f"{base}: no pages registered: every page is new" in fresh.log
    assert len(fresh.items) == 5 and all(item["changed"] for item in fresh.items)
    assert sum(changing.conditional.values()) == 0


def test_the_refresh_argument():
    from crawlyx.arguments import ArgumentError, CrawlArgs

    def parse(value):
        return CrawlArgs.parse(start="http://127.0.0.1:9/", refresh=value).refresh

    assert [parse(v) for v in ("1", "true", "ALL", "0", "false", None)] == [
        "due", "due", "all", None, None, None,
    ]  # fmt: skip
    with pytest.raises(ArgumentError, match="^refresh: 'some' is not 1/0, .* or all$"):
        parse("some")


# -- the ladder in a refresh run, fed by the visit ring ----------------------------------


def test_the_ring_moves_a_due_pages_rung_before_it_is_recorded(redis_url):
    from scrapy.utils.test import get_crawler

    from crawlyx.demand import DemandTracker
    from crawlyx.demand.recrawl import Recrawl
    from crawlyx.spiders.site import SiteSpider
    from tests.demand.test_demand import crawlyx_settings

    crawler = get_crawler(
        settings_dict=crawlyx_settings(
            CRAWLYX_REDIS_URL=redis_url, CRAWLYX_DEMAND_ENABLED=True, CRAWLYX_DEMAND_DRY_RUN=False
        )
    )
    crawler._apply_settings()
    crawler.spider = SiteSpider.from_crawler(crawler, start="http://127.0.0.1:9/")
    recrawl = Recrawl(crawler, refresh="due")
    # What the demand extension does when the spider opens.
    ring = recrawl.demand = DemandTracker.from_settings(crawler.settings, crawler.crawlyx.state)
    site = f"https://ladder-{time.time_ns()}.example"
    hot, cold, once = f"{site}/hot", f"{site}/cold", f"{site}/once"
    fetched = time.time() - 3 * DAY
    for url in (hot, cold, once):
        recrawl.fetched(url, url, {}, now=fetched)  # at the base, 24h: due a day later
    due = fetched + DAY
    # hot: a visit in each of the last two 12h windows; once: in the last one only.
    for when in (due - HOUR, due - 13 * HOUR):
        assert ring.record(site, hot, "GPTBot", when)
    assert ring.record(site, once, "GPTBot", due - HOUR)
    ring.flush()

    now = due + 60
    for url in (hot, cold, once):
        recrawl.fetched(url, url, {}, now=now)
    registry = recrawl.registry(hot)
    assert registry.page(hot).interval == 12 * HOUR  # promoted one rung
    assert registry.page(hot).next_due == pytest.approx(now + 12 * HOUR, abs=0.1)
    assert registry.page(cold).interval == DAY  # not visited: the base is the ceiling
    assert registry.page(once).interval == DAY  # visited, but not in every window
    assert registry.writes() == 1  # only the page that moved was written
    assert crawler.stats.get_value("crawlyx/demand/ladder/promote") == 1
    assert crawler.stats.get_value("crawlyx/demand/ladder/ceiling") == 1
    assert crawler.stats.get_value("crawlyx/demand/ladder/visited") == 1
