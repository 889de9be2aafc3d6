"""URL patterns: near-duplicate chains and the budget per pattern, on a real Redis."""

from __future__ import annotations

import pytest

from crawlyx.content.page import analyze
from crawlyx.frontier.state import State
from crawlyx.urls.traps import (
    SIGNATURE_CHARS,
    SIGNATURE_HASHES,
    PatternTraps,
    content_signature,
    similarity,
    url_pattern,
)
from tests.site import SHOP_PAGES, Site

SITE = Site(8000)
BASE = SITE.base


def read(rid: str) -> dict:
    """The fixture page ``rid`` as a worker reads it."""
    status, _, body = SITE.respond("localhost:8000", rid)
    assert status == 200
    return analyze(body, BASE + rid, BASE)


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
    # No counter in the query: no pattern (paths are not masked: /gen/5 is a page, not a chain).
    for url in ("http://x/", "http://x/gen/5", "http://x/search?q=shoes", "http://x/a?flag"):
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
    a, b = PatternTraps(duplicates=3), PatternTraps(duplicates=3)
    month = read("/cal?month=1")["signature"]
    verdicts = [(a, b)[n % 2].page(state, f"{BASE}/cal?month={n}", month) for n in range(4)]
    assert verdicts[:3] == [None, None, None]  # the first page has nothing to be like
    pattern, why = verdicts[3]
    assert pattern == "/cal?month=*" and "3 near-duplicate pages in a row" in why
    # On a page of the pattern, its links are refused; others, and from elsewhere, not.
    chain = b.page(state, f"{BASE}/cal?month=9", month)  # the run stays at its end
    assert chain == verdicts[3]
    assert a.reason(f"{BASE}/cal?month=10", chain) == why
    assert a.reason(f"{BASE}/about", chain) is None
    assert a.reason(f"{BASE}/cal?month=10") is None
    # The state is the job's, in Redis: a new process (or a resumed job) knows it.
    keys = {k.decode() for k in state.client.scan_iter(match=state.prefix + "*")}
    assert keys == {state.key("patterns")}
    assert PatternTraps(duplicates=3).page(state, f"{BASE}/cal?month=11", month) == chain


def test_pagination_runs_to_its_end_and_a_different_page_ends_a_run(state):
    traps = PatternTraps(duplicates=3)
    for n in range(1, SHOP_PAGES + 1):
        assert (
            traps.page(state, f"{BASE}/shop?page={n}", read(f"/shop?page={n}")["signature"]) is None
        )
    month, other = read("/cal?month=1")["signature"], read("/shop?page=1")["signature"]
    for n, signature in enumerate([month, month, month, other, month, month]):
        assert traps.page(state, f"{BASE}/cal?month={n}", signature) is None


def test_the_budget_refuses_the_pattern_everywhere(state):
    a, b = PatternTraps(budget=5), PatternTraps(budget=5)
    for n in range(1, 5):
        (a, b)[n % 2].page(state, f"{BASE}/shop?page={n}", read(f"/shop?page={n}")["signature"])
    assert a.reason(f"{BASE}/shop?page=9") is None
    assert a.page(state, f"{BASE}/shop?page=5", read("/shop?page=5")["signature"]) is None
    assert "5 pages under /shop?page=*" in a.reason(f"{BASE}/shop?page=9")
    assert a.reason(f"{BASE}/shop?page=9&sort=price") is None  # another pattern
    # The other process learns it from the next page of the pattern it reads.
    assert b.reason(f"{BASE}/shop?page=9") is None
    b.page(state, f"{BASE}/shop?page=6", read("/shop?page=6")["signature"])
    assert "7 pages" not in b.reason(f"{BASE}/shop?page=9") and b.reason(f"{BASE}/shop?page=9")


def test_off_when_set_to_zero(state):
    traps = PatternTraps(duplicates=0, budget=0)
    month = read("/cal?month=1")["signature"]
    assert all(traps.page(state, f"{BASE}/cal?month={n}", month) is None for n in range(10))
    assert not state.client.exists(state.key("patterns"))
