"""The page registry on the real Redis the suite starts, with the ladder stepping on it
in simulated time."""

from __future__ import annotations

import uuid

import pytest
from scrapy.settings import Settings

import crawlyx.settings as project_settings
from crawlyx.demand.ladder import PageState, ladder_for, step
from crawlyx.demand.registry import Registry
from crawlyx.demand.store import demand_state
from crawlyx.frontier.state import State

H, D = 3600, 86400
T0 = 1_800_000_000.0  # a fixed simulated start


def settings(**overrides) -> Settings:
    s = Settings()
    s.setmodule(project_settings)
    for name, value in overrides.items():
        s.set(f"CRAWLYX_DEMAND_{name}", value)
    return s


@pytest.fixture
def site():
    return f"https://{uuid.uuid4().hex[:12]}.example"


@pytest.fixture
def registry(redis_client, site):
    return Registry.from_settings(demand_state(redis_client), site, settings())


class Visits:
    def __init__(self, **times):
        self.times = times

    def probe(self, url, seconds, until):
        return any(until - seconds < t <= until for t in self.times.get(url, ()))


def test_a_fetch_records_the_page_and_says_whether_it_changed(registry):
    url = "https://x.example/a"
    assert registry.page(url) is None and registry.get(url) is None
    assert registry.fetched(url, T0, "h1", '"e1"', "Tue, 01 Dec 2026 10:00:00 GMT")
    page = registry.page(url)
    assert (page.url, page.fetched, page.content_hash) == (url, T0, "h1")
    assert (page.etag, page.last_modified) == ('"e1"', "Tue, 01 Dec 2026 10:00:00 GMT")
    assert (page.interval, page.next_due, page.shadow) == (24 * H, T0 + 24 * H, None)
    assert not registry.fetched(url, T0 + D, "h1", '"e1"')  # same content
    assert registry.page(url).next_due == T0 + 2 * D
    assert registry.fetched(url, T0 + 2 * D, "h2")  # changed
    assert registry.get(url) == PageState(24 * H, T0 + 3 * D, None)
    assert registry.histogram().counts == {24 * H: 1}  # one page, counted once


def test_due_is_the_stored_time_never_recomputed_from_todays_settings(redis_client, site):
    state = demand_state(redis_client)
    old = Registry.from_settings(state, site, settings(BASE_INTERVAL="6h"))
    for i, url in enumerate(["u0", "u1", "u2"]):
        old.fetched(url, T0 + i * H)
    today = Registry.from_settings(state, site, settings(BASE_INTERVAL="48h"))
    assert today.due(T0 + 6 * H - 1) == []
    assert today.due(T0 + 6 * H) == ["u0"]
    assert today.due(T0 + 9 * H) == ["u0", "u1", "u2"]  # most overdue first
    assert today.due(T0 + 9 * H, limit=2) == ["u0", "u1"]
    today.fetched("u3", T0)  # a page new today starts at today's base
    assert today.page("u3").next_due == T0 + 48 * H


def test_the_interval_is_written_only_when_the_rung_moves(redis_client, site):
    lad = ladder_for(settings(ENABLED=True, DRY_RUN=False))
    registry = Registry.from_settings(demand_state(redis_client), site, settings())
    visits = Visits(hot=range(int(T0), int(T0 + 60 * D), H), dead=())
    for url in ("hot", "dead", "steady"):
        registry.fetched(url, T0)
    visits.times["steady"] = range(int(T0), int(T0 + 60 * D), 30 * H)
    moves = 0
    for now in range(int(T0 + H), int(T0 + 60 * D), H):
        for url in registry.due(now):
            hist = registry.histogram()
            decision = step(lad, registry, hist, url, now, visits.probe)
            moves += decision.moved
            registry.fetched(url, now)
    assert registry.page("hot").interval == 6 * H  # 24h -> 12h -> 6h
    assert registry.page("steady").interval == 24 * H  # every 30h: never in two 12h windows running
    assert registry.page("dead").interval == 24 * H  # the ceiling
    assert moves == 2 and registry.writes() == 2
    assert registry.histogram().counts == {6 * H: 1, 24 * H: 2}


def test_a_dry_run_moves_the_shadow_and_its_histogram_only(registry):
    lad = ladder_for(settings(ENABLED=True))
    visits = Visits(hot=range(int(T0), int(T0 + 10 * D), H))
    for i in range(10):
        registry.fetched(f"p{i}", T0)
    registry.fetched("hot", T0)
    for now in (T0 + D, T0 + 2 * D, T0 + 3 * D):
        for url in registry.due(now):
            step(lad, registry, registry.histogram(shadow=True), url, now, visits.probe)
            registry.fetched(url, now)
    hot = registry.page("hot")
    assert (hot.interval, hot.shadow) == (24 * H, 6 * H)
    assert registry.histogram().counts == {24 * H: 11}  # the real ladder never moved
    assert registry.histogram(shadow=True).counts == {24 * H: 10, 6 * H: 1}
    assert registry.writes() == 2
    # A repeated write of the same value is not a write.
    registry.write_interval("hot", 6 * H, shadow=True)
    assert registry.writes() == 2
    # Once the page has a shadow of its own, a real move leaves the dry histogram alone.
    registry.write_interval("hot", 12 * H, shadow=False)
    assert registry.histogram().counts == {24 * H: 10, 12 * H: 1}
    assert registry.histogram(shadow=True).counts == {24 * H: 10, 6 * H: 1}
    assert registry.writes() == 3


def test_pages_not_fetched_within_retention_are_forgotten(redis_client, site):
    state = demand_state(redis_client)
    registry = Registry.from_settings(state, site, settings(RETENTION="30d"))
    registry.fetched("old", T0)
    registry.fetched("recent", T0 + 20 * D)
    registry.write_interval("old", 12 * H, shadow=False)
    assert registry.histogram().counts == {12 * H: 1, 24 * H: 1}
    assert registry.prune(T0 + 30 * D - 1) == 0
    assert registry.prune(T0 + 30 * D) == 1
    assert registry.page("old") is None and registry.page("recent") is not None
    assert registry.histogram().counts == {24 * H: 1}
    assert registry.histogram(shadow=True).counts == {24 * H: 1}  # the shadow followed
    assert registry.due(T0 + 100 * D) == ["recent"]


def test_the_registry_outlives_the_jobs(redis_client, site, registry):
    registry.fetched("u", T0)
    assert all(key.startswith(f"crawlyx:_demand:{{{site}}}:") for key in registry.keys)
    State(redis_client, "some-job").delete_all()
    assert registry.page("u") is not None


def test_a_page_costs_one_field_of_the_sites_hash(redis_client, registry):
    url = "https://x.example/docs/a?b=1"
    registry.fetched(url, T0, "0123abcd", "", "")
    registry.write_interval(url, 12 * H, shadow=True)
    pages, due, fetched = registry.keys[:3]
    assert redis_client.hlen(pages) == 1 and redis_client.zcard(due) == 1
    assert redis_client.zcard(fetched) == 1
    # Packed: a field of 8 bytes, a row of the page's fields; no key of its own.
    ((id_, row),) = redis_client.hgetall(pages).items()
    assert len(id_) == 8 and row.decode().split("\n")[0] == url
    page = registry.page(url)
    assert (page.content_hash, page.etag, page.shadow) == ("0123abcd", "", 12 * H)
    assert registry.known([url, "https://x.example/other"]) == {url}
    assert [p.url for p in registry.due_pages(T0 + D, "snapshot-" + registry.site)] == [url]
    redis_client.delete("snapshot-" + registry.site)


def test_a_validator_with_a_newline_cannot_break_its_row(registry):
    registry.fetched("u", T0, "h", 'W/"a\nb"', "Tue\n")
    page = registry.page("u")
    assert (page.etag, page.last_modified, page.interval) == ('W/"a b"', "Tue ", 24 * H)


def test_retention_must_be_positive(redis_client, site):
    with pytest.raises(ValueError, match="^CRAWLYX_DEMAND_RETENTION: "):
        Registry.from_settings(demand_state(redis_client), site, settings(RETENTION="soon"))
    with pytest.raises(ValueError, match="^CRAWLYX_DEMAND_RETENTION: 0 must be a positive"):
        Registry.from_settings(demand_state(redis_client), site, settings(RETENTION=0))


def test_a_lowered_base_brings_the_registered_pages_forward_once(redis_client, site):
    state = demand_state(redis_client)
    old = Registry.from_settings(state, site, settings())  # 24h
    assert old.apply_base() == 0 and old.count() == 0 and old.first_due() is None
    old.fetched("a", T0)
    old.fetched("b", T0 + H)
    assert old.apply_base() == 0 and old.due(T0 + 2 * H) == []
    quick = Registry.from_settings(state, site, settings(BASE_INTERVAL="1h"))
    assert quick.get("a").next_due == T0 + H  # the ladder's due check follows at once
    assert quick.apply_base() == 2  # both were due a day after their fetch
    assert quick.due(T0 + 2 * H) == ["a", "b"] and quick.first_due() == T0 + H
    assert quick.count_due(T0 + H) == 1
    assert quick.apply_base() == 0  # applied: not again
    # A fetch under it keeps the page's own interval, due one base interval on.
    quick.fetched("a", T0 + 3 * H)
    assert quick.page("a").interval == 24 * H and quick.page("a").next_due == T0 + 4 * H
    # A fetch under a higher base again (a full crawl's) is due at that base; the next
    # refresh run under the lower one brings it forward.
    old.fetched("b", T0 + 2 * H)
    assert old.due(T0 + 3 * H) == []
    assert quick.apply_base() == 1 and quick.due(T0 + 3 * H) == ["b"]


def test_drop_forgets_the_whole_site(redis_client, site, registry):
    for url in ("a", "b", "c"):
        registry.fetched(url, T0)
    registry.write_interval("a", 12 * H, shadow=False)
    registry.apply_base()
    assert registry.count() == 3 and registry.writes() == 1
    assert registry.drop() == 3
    assert redis_client.keys(registry.key("*")) == []
    assert registry.count() == 0 and registry.first_due() is None and registry.drop() == 0
