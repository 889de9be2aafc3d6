"""URL patterns: near-duplicate chains, chains that lead nowhere new and the budget per
pattern, on a real Redis and in real crawls."""

from __future__ import annotations

import json

import pytest
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from crawlyx import settings as project_settings
from crawlyx.addon import Addon
from crawlyx.content.page import analyze
from crawlyx.frontier.state import State
from crawlyx.urls.traps import (
    HOPS_META,
    SIGNATURE_CHARS,
    SIGNATURE_HASHES,
    PatternTraps,
    content_signature,
    similarity,
    url_pattern,
)
from tests.sites.hostile import CATALOG_PAGES, PRODUCTS_PER_PAGE, HostileSite
from tests.sites.site import SHOP_PAGES, Site

SITE = Site(8000)
BASE = SITE.base


def read(rid: str) -> dict:
    """The fixture page ``rid`` as a worker reads it."""
    status, _, body = SITE.respond("localhost:8000", rid)
    assert status == 200
    return analyze(body, BASE + rid, BASE)


def traps(**settings) -> PatternTraps:
    """PatternTraps as a crawl builds it, from the project's settings and ``settings``
    (CRAWLYX_TRAP_PATTERN_<NAME>), with its own stats."""
    values = {k: v for k, v in vars(project_settings).items() if k.startswith("CRAWLYX_")}
    values.update({f"CRAWLYX_TRAP_PATTERN_{k.upper()}": v for k, v in settings.items()})
    return PatternTraps.from_crawler(get_crawler(settings_dict=values))


@pytest.fixture
def state(redis_client):
    state = State(redis_client, "pattern-test")
    state.delete_all()
    yield state
    state.delete_all()


def test_url_pattern_masks_values_with_digits():
    assert url_pattern("http://x/cal?month=27") == "/cal?month=*"
    assert url_pattern("http://x/cal?month=2026-04") == "/cal?month=*"
    assert url_pattern("http://x/shop?cat=shoes&page=3") == "/shop?cat=shoes&page=*"
    assert url_pattern("http://x/shop?cat=shoes&page=3") != url_pattern(
        "http://x/shop?cat=hats&page=3"
    )
    assert url_pattern("http://x/cal?m=1&y=2024") == url_pattern("http://x/cal?m=12&y=1999")
    # A date that ends a path is a calendar's or an archive's day or month.
    assert url_pattern("http://x/2026/12/03/") == url_pattern("http://x/1999/01/31/") == "/*/*/*/"
    assert url_pattern("http://x/events/2026-12?view=list") == "/events/*-*?view=list"
    # No counter in the query: no pattern (paths are not masked: /gen/5 is a page, not a
    # chain; nor is a post under its date).
    for url in (
        "http://x/",
        "http://x/gen/5",
        "http://x/search?q=shoes",
        "http://x/a?flag",
        "http://x/blog/2026/12/03/a-post",
        "http://x/p/2026",
    ):
        assert url_pattern(url) is None, url


def test_signature_of_pages_alike_but_for_a_counter_and_of_different_pages():
    months = [read(f"/cal?month={n}")["signature"] for n in (1, 2, 77, -3)]
    assert all(similarity(months[0], s) == 1.0 for s in months)
    shop = [read(f"/shop?page={n}")["signature"] for n in range(1, SHOP_PAGES + 1)]
    assert max(similarity(a, b) for i, a in enumerate(shop) for b in shop[i + 1 :]) < 0.9
    # Only pages with a pattern are signed; a signature is at most k 8-byte hashes.
    assert read("/about")["signature"] is None
    assert len(shop[0]) == 8 * SIGNATURE_HASHES


def test_similarity_estimates_the_jaccard_of_shingles():
    # 1000 distinct words without digits (digits are masked): 998 distinct 3-shingles.
    words = ["".join(chr(97 + i // 26**k % 26) for k in range(3)) for i in range(1000)]
    a, b = " ".join(words[:750]), " ".join(words[250:])  # 498 shared of 998
    assert len(a) <= 2 * SIGNATURE_CHARS  # signed whole
    assert abs(similarity(content_signature(a), content_signature(b)) - 498 / 998) < 0.15
    assert similarity(content_signature(a), content_signature(a)) == 1.0
    assert similarity(content_signature("one two three four"), content_signature("x y z")) == 0
    assert similarity(content_signature(""), content_signature("")) == 1.0
    # A long text is signed by its head and tail: the cost of a page is bounded.
    head, tail = "start " * 400, " end" * 600  # each longer than SIGNATURE_CHARS
    assert content_signature(head + " ".join(words) + tail) == content_signature(head + tail)


def test_a_chain_of_alike_pages_ends_across_processes(state):
    # Two processes of one job, sharing one Redis: the run counts both their pages.
    a, b = traps(duplicates=3), traps(duplicates=3)
    month = read("/cal?month=1")["signature"]

    def page(process, n):
        links = [f"{BASE}/cal?month={n + 1}", f"{BASE}/about"]
        return process.page(state, f"{BASE}/cal?month={n}", month, links=links)

    chains = [page((a, b)[n % 2], n) for n in range(4)]
    assert [c.ended for c in chains[:3]] == [None, None, None]  # the first has none to be like
    rule, why = chains[3].ended
    assert rule == "pattern_duplicates" and "3 near-duplicate pages in a row" in why
    assert chains[3].pattern == "/cal?month=*"
    # On a page of the pattern, its links are refused; others, and from elsewhere, not.
    chain = page(b, 9)  # the run stays at its end
    assert chain.ended == chains[3].ended
    assert a.reason(f"{BASE}/cal?month=10", chain) == why
    assert a.reason(f"{BASE}/about", chain) is None
    assert a.reason(f"{BASE}/cal?month=10") is None
    assert a.crawler.stats.get_value("crawlyx/traps/pattern_duplicates") == 1
    # The state is the job's, in Redis: a new process (or a resumed job) knows it.
    keys = {k.decode() for k in state.client.scan_iter(match=state.prefix + "*")}
    assert keys == {state.key("patterns")}
    assert page(traps(duplicates=3), 11).ended == chain.ended


def test_pagination_runs_to_its_end_and_a_different_page_ends_a_run(state):
    shop = traps(duplicates=3)
    for n in range(1, SHOP_PAGES + 1):
        signature = read(f"/shop?page={n}")["signature"]
        assert shop.page(state, f"{BASE}/shop?page={n}", signature).ended is None
    month, other = read("/cal?month=1")["signature"], read("/shop?page=1")["signature"]
    for n, signature in enumerate([month, month, month, other, month, month]):
        assert shop.page(state, f"{BASE}/cal?month={n}", signature).ended is None


def test_a_chain_that_leads_to_nothing_new_ends(state):
    rules = traps(hops=3)

    def page(url, hops, *links):
        return rules.page(state, f"{BASE}{url}", None, hops, [f"{BASE}{u}" for u in links])

    # Months past a calendar's events: each leads only to the next and to its own views.
    view = "/cal?month=5&view=list"
    chain = page("/cal?month=5", 1, "/cal?month=6", view, "/cal?view=list&month=5&day=1")
    assert (chain.hops, chain.ended) == (2, None)
    assert rules.meta(f"{BASE}/cal?month=6", chain) == {HOPS_META: 2}
    assert rules.meta(f"{BASE}{view}", chain) == {}  # another pattern: a chain of its own
    chain = page("/cal?month=6", 2, "/cal?month=7")
    rule, why = chain.ended
    assert rule == "pattern_hops" and why == "3 pages in a row under /cal?month=* led to no new URL"
    assert rules.reason(f"{BASE}/cal?month=7", chain) == why
    assert rules.crawler.stats.get_value("crawlyx/traps/pattern_hops") == 1
    # A page linking anything new outside its pattern starts the count over: a listing's
    # products, a forum thread's posts (the thread id is no counter of the chain).
    assert page("/cal?month=6", 2, "/cal?month=7", "/event/fair").hops == 0
    assert page("/shop?page=8", 9, "/shop?page=9", "/product?id=8").hops == 0
    assert page("/t?id=5&page=8", 9, "/t?id=5&page=9", "/t?id=5&post=80").hops == 0
    # Entered from elsewhere (no count on its request): from 1.
    assert page("/cal?month=6", 0, "/cal?month=7").hops == 1
    # Only pages with a pattern count; the rule off, nothing is refused or carried.
    assert page("/about", 7, "/cal?month=7") is None
    off = traps(hops=0)
    chain = off.page(state, f"{BASE}/cal?month=6", None, 99, [f"{BASE}/cal?month=7"])
    assert chain.ended is None and off.meta(f"{BASE}/cal?month=7", chain) == {}
    assert not state.client.exists(state.key("patterns"))  # no signature, nothing stored


def test_the_budget_refuses_the_pattern_everywhere(state):
    a, b = traps(budget=5), traps(budget=5)
    for n in range(1, 5):
        (a, b)[n % 2].page(state, f"{BASE}/shop?page={n}", read(f"/shop?page={n}")["signature"])
    assert a.reason(f"{BASE}/shop?page=9") is None
    assert a.page(state, f"{BASE}/shop?page=5", read("/shop?page=5")["signature"]).ended is None
    assert "5 pages under /shop?page=*" in a.reason(f"{BASE}/shop?page=9")
    assert a.reason(f"{BASE}/shop?page=9&sort=price") is None  # another pattern
    assert a.crawler.stats.get_value("crawlyx/traps/pattern_budget") == 1
    # The other process learns it from the next page of the pattern it reads.
    assert b.reason(f"{BASE}/shop?page=9") is None
    b.page(state, f"{BASE}/shop?page=6", read("/shop?page=6")["signature"])
    assert "7 pages" not in b.reason(f"{BASE}/shop?page=9") and b.reason(f"{BASE}/shop?page=9")


def test_off_when_set_to_zero(state):
    rules = traps(duplicates=0, budget=0, hops=0)
    month = read("/cal?month=1")["signature"]
    links = [f"{BASE}/cal?month=99"]
    chains = [rules.page(state, f"{BASE}/cal?month={n}", month, n, links) for n in range(10)]
    assert all(c.ended is None for c in chains)
    assert not state.client.exists(state.key("patterns"))


@pytest.mark.parametrize("value", [0, 1.5])
def test_a_similarity_out_of_range_is_one_error_naming_it(value):
    project = {name: v for name, v in vars(project_settings).items() if name.isupper()}
    settings = Settings({**project, "CRAWLYX_TRAP_PATTERN_SIMILARITY": value})
    with pytest.raises(ValueError, match="^CRAWLYX_TRAP_PATTERN_SIMILARITY \\("):
        Addon.check_settings(settings)


def test_a_calendar_whose_months_differ_ends_and_a_long_listing_does_not(crawl, tmp_path):
    errors = tmp_path / "errors.jsonl"
    with HostileSite() as site:
        result = crawl(f"start={site.base}/agenda", "sitemap=0", f"errors={errors}")
    assert result.returncode == 0, result.log[-3000:]
    assert result.stat("finish_reason") == "'finished'"
    # The months are not alike: it is the count of months that led to nothing new that
    # ends the chain, in both directions, from month 1 (CRAWLYX_TRAP_PATTERN_HOPS: 40).
    months = [item for item in result.items if "/events?" in item["url"]]
    alike = [content_signature(item["markdown"]) for item in months[:10]]
    assert max(similarity(a, b) for i, a in enumerate(alike) for b in alike[i + 1 :]) < 0.9
    assert len(months) == site.counts["/events"] == 2 * 40 - 1  # months -38 to 40
    refused = [json.loads(line) for line in errors.read_text().splitlines()]
    assert {e["url"].removeprefix(site.base) for e in refused} == {
        "/events?month=-39",
        "/events?month=41",
    }
    assert all(e["class"] == "trap" for e in refused)
    assert all(
        e["detail"] == "40 pages in a row under /events?month=* led to no new URL" for e in refused
    )
    assert result.stat("crawlyx/traps/pattern_hops") == "2"
    assert result.stat("crawlyx/error/trap") == "2"
    # The catalog's pages link products of their own: every page and product is read.
    urls = {item["url"].removeprefix(site.base) for item in result.items}
    assert {f"/catalog?page={n}" for n in range(1, CATALOG_PAGES + 1)} <= urls
    products = CATALOG_PAGES * PRODUCTS_PER_PAGE
    assert {f"/product/{i}" for i in range(products)} <= urls
    assert len(urls) == 1 + len(months) + CATALOG_PAGES + products
