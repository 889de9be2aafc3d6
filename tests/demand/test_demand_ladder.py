"""The rung ladder, in simulated time: visits are timestamps, the probe answers from them,
the clock is a number. Nothing sleeps and no ring is needed (the probe is injected)."""

from __future__ import annotations

import logging

import pytest
from scrapy.settings import Settings

import crawlyx.settings as project_settings
from crawlyx.demand.durations import seconds as duration_seconds
from crawlyx.demand.ladder import (
    Ladder,
    PageState,
    RungHistogram,
    check,
    ladder_for,
    normalize,
    step,
)

S, M, H, D = 1, 60, 3600, 86400


def settings(**overrides) -> Settings:
    s = Settings()
    s.setmodule(project_settings)
    # The ring's settings, sized so the defaults pass the start-up check.
    s.set("CRAWLYX_DEMAND_SLICE", "1h")
    s.set("CRAWLYX_DEMAND_SLICES", 96)
    for name, value in overrides.items():
        s.set(f"CRAWLYX_DEMAND_{name}", value)
    return s


def ladder(**overrides) -> Ladder:
    return ladder_for(settings(**overrides))


class Visits:
    """Bot visits per URL; ``probe`` is the ring's question, answered exactly."""

    def __init__(self):
        self.times: dict[str, list[float]] = {}
        self.asked: list[tuple[str, float, float]] = []

    def visit(self, url: str, *times: float) -> None:
        self.times.setdefault(url, []).extend(times)

    def probe(self, url: str, seconds: float, until: float) -> bool:
        self.asked.append((url, seconds, until))
        return any(until - seconds < t <= until for t in self.times.get(url, ()))


class Store:
    """A page registry in memory that counts interval writes (next-due is set per fetch)."""

    def __init__(self):
        self.pages: dict[str, PageState] = {}
        self.writes: list[tuple[str, float, bool]] = []

    def get(self, url):
        return self.pages.get(url)

    def write_interval(self, url, interval, *, shadow):
        self.writes.append((url, interval, shadow))
        page = self.pages[url]
        if shadow:
            self.pages[url] = PageState(page.interval, page.next_due, interval)
        else:
            self.pages[url] = PageState(interval, page.next_due, page.shadow)

    def fetched(self, url, now):
        page = self.pages[url]
        self.pages[url] = PageState(page.interval, now + page.interval, page.shadow)


def walk(lad, store, hist, visits, url, start, until):
    """Recrawl ``url`` each time it comes due from ``start`` to ``until``: decide, then
    fetch (which sets the next-due time from the page's interval). The intervals seen."""
    seen = []
    now = start
    while now <= until:
        decision = step(lad, store, hist, url, now, visits.probe)
        assert decision.why != "not_due"
        store.fetched(url, now)
        seen.append(store.pages[url].interval)
        now = store.pages[url].next_due
    return seen


def acting(**overrides) -> Ladder:
    return ladder(ENABLED=True, DRY_RUN=False, **overrides)


# -- durations and rungs ------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, seconds",
    [("90s", 90), ("30m", 1800), ("6h", 6 * H), ("2d", 2 * D), ("3600", 3600), (7200, 7200),
     ("1.5h", 5400), (" 12H ", 12 * H), (0.5, 0.5)],
)  # fmt: skip
def test_durations_are_written_with_a_unit_or_as_seconds(text, seconds):
    assert duration_seconds(text, "X") == seconds


@pytest.mark.parametrize("bad", ["6x", "h", "6 hours", "", True, None, "1h30m"])
def test_a_bad_duration_names_the_setting(bad):
    with pytest.raises(ValueError, match="^CRAWLYX_DEMAND_SLICE: .* is not a duration"):
        duration_seconds(bad, "CRAWLYX_DEMAND_SLICE")


def test_the_default_ladder_stops_at_the_base():
    lad = ladder()
    assert lad.rungs == (6 * H, 12 * H, 24 * H)  # 48h is configured, above the 24h base
    assert (lad.fastest, lad.base) == (6 * H, 24 * H)
    assert (lad.enabled, lad.dry_run, lad.acts) == (False, True, False)
    assert ladder(BASE_INTERVAL="48h").rungs == (6 * H, 12 * H, 24 * H, 48 * H)
    assert not ladder(DRY_RUN=False).acts  # opt in twice: enabled, and not a dry run
    assert not ladder(ENABLED=True).acts
    assert ladder(ENABLED=True, DRY_RUN=False).acts


@pytest.mark.parametrize(
    "rungs, expected",
    [
        ("12h, 6h,6h, 0, -5, inf, nan, 21600", (6 * H, 12 * H)),
        (["48h", 3600, float("inf"), -1, "1h"], (H, 48 * H)),
        ("", ()),
        ([], ()),
        ("2d,,1d", (D, 2 * D)),
    ],
)
def test_odd_rung_lists_are_normalized(rungs, expected):
    assert normalize(rungs) == expected


def test_a_base_between_rungs_or_below_them_is_its_own_top_rung():
    assert ladder(BASE_INTERVAL="36h").rungs == (6 * H, 12 * H, 24 * H, 36 * H)
    assert ladder(BASE_INTERVAL="3h").rungs == (3 * H,)
    assert ladder(RUNGS="24h,6h,6h,12h,0").rungs == (6 * H, 12 * H, 24 * H)


def test_rungs_are_cached_and_recomputed_when_settings_change():
    first = ladder()
    assert ladder() is first  # same values: normalized once
    changed = ladder(RUNGS=["1h", "2h", "4h"])
    assert changed is not first and changed.rungs == (H, 2 * H, 4 * H, 24 * H)
    assert ladder(RUNGS="1h,2h,4h").rungs == changed.rungs
    assert ladder(PROMOTE_WINDOWS=3).promote_windows == 3
    assert ladder() is first


# -- the rules ----------------------------------------------------------------------------


def test_a_page_is_decided_only_once_due():
    lad, visits = acting(), Visits()
    state = PageState(interval=12 * H, next_due=1000 * H)
    early = lad.decide("u", state, 1000 * H - 1, visits.probe)
    assert (early.interval, early.moved, early.why) == (12 * H, False, "not_due")
    assert visits.asked == []  # not due: the ring is not even asked
    due = lad.decide("u", state, 1000 * H, visits.probe)
    assert (due.interval, due.moved, due.why) == (24 * H, True, "demote")


def test_demote_walks_up_one_rung_per_unvisited_interval_to_the_base():
    lad, store, hist, visits = acting(), Store(), RungHistogram(), Visits()
    store.pages["u"] = PageState(6 * H, 100 * H)
    hist.add(6 * H)
    seen = walk(lad, store, hist, visits, "u", 100 * H, 200 * H)
    assert seen[:4] == [12 * H, 24 * H, 24 * H, 24 * H]
    assert set(seen[2:]) == {24 * H}  # the base is the ceiling
    assert store.writes == [("u", 12 * H, False), ("u", 24 * H, False)]
    assert hist.counts == {6 * H: 0, 12 * H: 0, 24 * H: 1}


def test_promote_walks_down_one_rung_at_a_time_to_the_fastest():
    lad, store, hist, visits = acting(), Store(), RungHistogram(), Visits()
    store.pages["u"] = PageState(24 * H, 100 * H)
    hist.add(24 * H, 100)  # the rest of the site, so the backstop stays out of the way
    visits.visit("u", *range(0, 400 * H, H))  # hourly, for good
    seen = walk(lad, store, hist, visits, "u", 100 * H, 300 * H)
    assert seen[:3] == [12 * H, 6 * H, 6 * H]
    assert set(seen[1:]) == {6 * H}
    assert store.writes == [("u", 12 * H, False), ("u", 6 * H, False)]
    assert lad.decide("u", store.pages["u"], 400 * H, visits.probe).why == "floor"


def test_the_base_is_the_ceiling_even_when_slower_rungs_are_configured():
    lad, visits = acting(BASE_INTERVAL="12h"), Visits()
    decision = lad.decide("u", PageState(12 * H, 0), 500 * H, visits.probe)
    assert (decision.interval, decision.moved, decision.why) == (12 * H, False, "ceiling")


def test_promotion_needs_a_visit_in_each_window_of_the_faster_rung():
    lad = acting()  # promote windows: 2, so 24h -> 12h asks for visits in two 12h windows
    now, state = 1000 * H, PageState(24 * H, 1000 * H)
    both = Visits()
    both.visit("u", now - 3 * H, now - 15 * H)
    assert lad.decide("u", state, now, both.probe).why == "promote"
    assert both.asked[1:] == [("u", 12 * H, now), ("u", 12 * H, now - 12 * H)]

    # Visited within the current interval (so not demoted), several times even, but all in
    # the latest 12h window: "visited at all" would promote, the window rule holds.
    recent = Visits()
    recent.visit("u", now - H, now - 2 * H, now - 11 * H)
    held = lad.decide("u", state, now, recent.probe)
    assert (held.interval, held.moved, held.why) == (24 * H, False, "visited")

    # Three windows wanted: the two visits above are no longer enough.
    three = acting(PROMOTE_WINDOWS=3)
    assert three.decide("u", state, now, both.probe).why == "visited"
    both.visit("u", now - 30 * H)
    assert three.decide("u", state, now, both.probe).why == "promote"


def test_an_interval_stored_under_other_settings_snaps_to_todays_ladder():
    lad, visits = acting(), Visits()
    # 48h was a rung when the page was last fetched; the base is now 24h.
    decision = lad.decide("u", PageState(48 * H, 10 * H), 10 * H, visits.probe)
    assert (decision.interval, decision.moved, decision.why) == (24 * H, True, "ceiling")
    visits.visit("u", 9 * H)
    # 7h is between rungs: it stands on 6h, and the page (visited) holds there as 6h.
    assert lad.decide("u", PageState(7 * H, 0), 10 * H, visits.probe).interval == 6 * H


def test_a_cold_ring_holds_every_rung_and_asks_for_a_refresh():
    lad, visits = acting(), Visits()
    pages = {f"u{i}": PageState(r, 0) for i, r in enumerate([6 * H, 12 * H, 24 * H] * 30)}
    cold = [lad.decide(url, s, H, visits.probe, cold=True) for url, s in pages.items()]
    assert {(d.moved, d.why, d.refresh) for d in cold} == {(False, "cold", True)}
    assert [d.interval for d in cold] == [s.interval for s in pages.values()]
    assert visits.asked == []
    # The same empty read taken as real would have demoted two thirds of the corpus.
    warm = [lad.decide(url, s, H, visits.probe) for url, s in pages.items()]
    assert sum(d.moved for d in warm) == 60 and not any(d.refresh for d in warm)


def test_cold_ring_through_step_writes_nothing():
    lad, store, hist, visits = acting(), Store(), RungHistogram(), Visits()
    for i in range(50):
        store.pages[f"u{i}"] = PageState(6 * H, 0)
    hist.add(6 * H, 50)
    for i in range(50):
        assert step(lad, store, hist, f"u{i}", D, visits.probe, cold=True).refresh
    assert store.writes == [] and hist.counts == {6 * H: 50}


def test_the_backstop_stops_promotion_into_the_fastest_rung_only():
    lad, visits = acting(MAX_FAST_FRACTION=0.05), Visits()
    now = 1000 * H
    visits.visit("u", *range(0, now + 1, H))
    at12 = PageState(12 * H, now)
    assert lad.decide("u", at12, now, visits.probe, fast_share=0.049).why == "promote"
    full = lad.decide("u", at12, now, visits.probe, fast_share=0.05)
    assert (full.interval, full.moved, full.why) == (12 * H, False, "backstop")
    at24 = PageState(24 * H, now)  # 24h -> 12h is not into the fastest rung
    assert lad.decide("u", at24, now, visits.probe, fast_share=1.0).why == "promote"


def test_the_backstop_through_step_caps_the_fastest_share():
    lad, store, hist, visits = acting(MAX_FAST_FRACTION=0.1), Store(), RungHistogram(), Visits()
    now = 1000 * H
    for i in range(20):
        store.pages[f"u{i}"] = PageState(12 * H, now)
        visits.visit(f"u{i}", *range(0, now + 1, H))  # every page is hot
    hist.add(12 * H, 20)
    whys = [step(lad, store, hist, f"u{i}", now, visits.probe).why for i in range(20)]
    assert whys == ["promote"] * 2 + ["backstop"] * 18  # 2 of 20 = 10 %
    assert hist.counts == {12 * H: 18, 6 * H: 2} and len(store.writes) == 2


# -- dry run, writes, the histogram -------------------------------------------------------


def test_a_dry_run_reports_the_counterfactual_but_never_changes_an_interval():
    for lad in (ladder(), ladder(ENABLED=True)):  # the defaults, and enabled alone
        store, hist, visits = Store(), RungHistogram(), Visits()
        store.pages["cold"] = PageState(6 * H, 0)
        store.pages["hot"] = PageState(24 * H, 0)
        hist.add(6 * H)
        hist.add(24 * H, 30)
        visits.visit("hot", *range(0, 500 * H, H))
        for now in range(D, 5 * D, D):
            step(lad, store, hist, "cold", now, visits.probe)
            step(lad, store, hist, "hot", now, visits.probe)
        assert store.pages["cold"].interval == 6 * H  # the real intervals never move
        assert store.pages["hot"].interval == 24 * H
        assert store.pages["cold"].shadow == 24 * H  # the shadow walked 6h -> 12h -> 24h
        assert store.pages["hot"].shadow == 6 * H
        assert all(shadow for _, _, shadow in store.writes) and len(store.writes) == 4
        assert hist.line(lad) == "demand rungs (dry run): 6h=1 12h=0 24h=30; fastest 3.2%"


def test_an_acting_ladder_writes_the_real_interval():
    lad, store, hist, visits = acting(), Store(), RungHistogram(), Visits()
    store.pages["u"] = PageState(6 * H, 0)
    hist.add(6 * H)
    step(lad, store, hist, "u", D, visits.probe)
    assert store.pages["u"] == PageState(12 * H, 0, None)
    assert store.writes == [("u", 12 * H, False)]
    assert hist.line(lad) == "demand rungs (acting): 6h=0 12h=1 24h=0; fastest 0.0%"


def test_a_converged_page_costs_no_write():
    lad, store, hist, visits = acting(), Store(), RungHistogram(), Visits()
    store.pages["hot"] = PageState(6 * H, 0)
    store.pages["idle"] = PageState(24 * H, 0)
    hist.add(6 * H)
    hist.add(24 * H, 99)
    visits.visit("hot", *range(0, 1000 * H, H))
    assert len(walk(lad, store, hist, visits, "hot", H, 900 * H)) == 150
    assert len(walk(lad, store, hist, visits, "idle", H, 900 * H)) == 38
    assert store.writes == []
    assert step(lad, store, hist, "unknown", H, visits.probe) is None


def test_the_histogram_is_logged_every_stats_interval(caplog):
    lad, hist = ladder(STATS_INTERVAL="30m"), RungHistogram()
    hist.add(24 * H, 3)
    with caplog.at_level(logging.INFO, logger="crawlyx.demand.ladder"):
        logged = [hist.maybe_log(lad, t) for t in (0, 10 * M, 29 * M, 30 * M, 31 * M, 60 * M)]
    assert logged == [True, False, False, True, False, True]
    assert [r.getMessage() for r in caplog.records] == [
        "demand rungs (dry run): 6h=0 12h=0 24h=3; fastest 0.0%"
    ] * 3


# -- start-up checks ----------------------------------------------------------------------


def test_the_defaults_pass_the_start_up_check():
    assert check(settings()) is ladder()
    assert check(settings(SLICE=21600, SLICES="16")).rungs == ladder().rungs  # 16 × 6h = 96h


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"SLICE": "7h"}, r"^CRAWLYX_DEMAND_SLICE: 7h must be .* fastest rung \(6h\)$"),
        ({"SLICE": "0"}, r"^CRAWLYX_DEMAND_SLICE: 0s must be positive"),
        ({"SLICE": "soon"}, r"^CRAWLYX_DEMAND_SLICE: 'soon' is not a duration"),
        ({"SLICES": 95}, r"^CRAWLYX_DEMAND_SLICES: 95 × 1h spans 95h, less than .* \(4d\)$"),
        ({"PROMOTE_WINDOWS": 3}, r"^CRAWLYX_DEMAND_SLICES: 96 × 1h spans 4d, .* \(6d\)$"),
        ({"PROMOTE_WINDOWS": 0}, r"^CRAWLYX_DEMAND_PROMOTE_WINDOWS: 0, must be 1 or more$"),
        ({"MAX_FAST_FRACTION": 0}, r"^CRAWLYX_DEMAND_MAX_FAST_FRACTION: 0.0, must be in"),
        ({"MAX_FAST_FRACTION": 1.5}, r"^CRAWLYX_DEMAND_MAX_FAST_FRACTION: 1.5, must be in"),
        ({"RUNGS": "0, -6h, inf"}, r"^CRAWLYX_DEMAND_RUNGS: "),
        ({"RUNGS": "6h,12x"}, r"^CRAWLYX_DEMAND_RUNGS: '12x' is not a duration"),
        ({"BASE_INTERVAL": "0"}, r"^CRAWLYX_DEMAND_BASE_INTERVAL: "),
        ({"STATS_INTERVAL": "later"}, r"^CRAWLYX_DEMAND_STATS_INTERVAL: "),
    ],
)
def test_a_wrong_setting_is_one_clear_line(overrides, message):
    with pytest.raises(ValueError, match=message) as raised:
        check(settings(**overrides))
    assert "\n" not in str(raised.value)


def test_the_span_check_covers_a_base_slower_than_every_rung():
    # Rungs up to 12h, base 72h: the ladder reaches 72h, so the ring must span 2 × 72h.
    with pytest.raises(ValueError, match=r"\(6d\)$"):
        check(settings(RUNGS="6h,12h", BASE_INTERVAL="3d"))
    assert check(settings(RUNGS="6h,12h", BASE_INTERVAL="3d", SLICES=144)).base == 3 * D
