"""A hostile site never kills the crawl; every failed or skipped URL gets one class."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from crawlyx.policy.optout import OptOut
from crawlyx.urls.traps import TrapRules
from tests.sites.hostile import MEMBERS, HostileSite, gzip_bomb


@pytest.fixture(scope="module")
def bomb():
    return gzip_bomb()  # built once: about 3 s


def test_hostile_site(crawl, tmp_path, bomb):
    errors = tmp_path / "errors.jsonl"
    with HostileSite() as site:
        result = crawl(
            f"start={site.base}/",
            f"errors={errors}",
            # The calendar's months are alike and lead to nothing new: the date rule is the
            # one tested here.
            settings={
                "DOWNLOAD_TIMEOUT": 3,
                "RETRY_TIMES": 0,
                "CRAWLYX_TRAP_PATTERN_DUPLICATES": 0,
                "CRAWLYX_TRAP_PATTERN_HOPS": 0,
            },
            timeout=180,
        )
    assert result.returncode == 0, result.log[-3000:]
    assert result.stat("finish_reason") == "'finished'"
    lines = [json.loads(line) for line in errors.read_text().splitlines()]
    by_url = {line["url"].replace(site.base, ""): line for line in lines}
    assert by_url["/bomb"]["class"] == "too_large"
    assert by_url["/tarpit"]["class"] == "timeout"
    assert by_url["/noai"]["class"] == "opted_out"
    assert "noai" in by_url["/noai"]["detail"]
    assert by_url["/xrobots"]["class"] == "opted_out"
    assert by_url["/deep/a/a/a/a/page"]["class"] == "trap"
    assert by_url["/loop-a"]["class"] == by_url["/loop-b"]["class"] == "trap"
    assert site.counts["/loop-a"] == site.counts["/loop-b"] == 1
    assert any(url.startswith("/long?q=") and e["class"] == "trap" for url, e in by_url.items())
    calendar_traps = [e for url, e in by_url.items() if url.startswith("/calendar")]
    assert len(calendar_traps) == 1 and calendar_traps[0]["class"] == "trap"
    for line in lines:
        assert set(line) == {"url", "class", "detail", "referrer"}
    # The trap ended the calendar by rule, a few years ahead, not by max_pages.
    year = datetime.now(UTC).year
    assert 12 <= site.counts["/calendar"] <= 12 * 4 + 1
    assert calendar_traps[0]["referrer"].startswith(f"{site.base}/calendar?month={year + 3}-12")
    # Opt-outs: other crawlers' directives do not apply; nofollow is honoured.
    urls = {item["url"].replace(site.base, "") for item in result.items}
    assert {"/", "/otherbot", "/nofollow", "/latin1", "/broken"} <= urls
    assert "/noai" not in urls and "/xrobots" not in urls
    assert "/only-from-nofollow" not in site.counts
    # A wrong charset label is corrected by the page's bytes; a body that is no text is
    # named, not written.
    latin1 = next(i for i in result.items if i["url"].endswith("/latin1"))
    assert "Café text about Latin1" in latin1["markdown"]
    utf8 = next(i for i in result.items if i["url"].endswith("/utf8"))
    assert "Café crème about Utf8" in utf8["markdown"]
    assert by_url["/binary"]["class"] == by_url["/gzipped"]["class"] == "not_a_page"
    assert by_url["/gzipped"]["detail"] == "text/html: gzip data, not a page"
    assert by_url["/binary"]["detail"] == "text/html: binary data, not a page"
    # A site that puts a new session id in every link: each page fetched once, its
    # markdown's links without one.
    members = [i for i in result.items if "/member/" in i["url"]]
    assert sorted(i["url"].replace(site.base, "") for i in members) == [
        f"/member/{n}" for n in range(MEMBERS)
    ]
    assert all(site.counts[f"/member/{n}"] == 1 for n in range(MEMBERS))
    assert not any("jsessionid" in i["markdown"] or "PHPSESSID" in i["markdown"] for i in members)
    for empty in ("/empty", "/nocontent"):  # no page to write
        assert by_url[empty]["detail"] == "text/html: no content, not a page", empty
    broken = next(i for i in result.items if i["url"].endswith("/broken"))
    assert "tail text here" in broken["markdown"]
    # A body that passes the size cap as it streams in is too large, as one that says so.
    assert by_url["/endless"]["class"] == "too_large"
    # A refresh to javascript: goes nowhere: the page is read as it is.
    refresh = next(i for i in result.items if i["url"].endswith("/refresh-js"))
    assert "Some text about RefreshJs" in refresh["markdown"]
    # A 3xx that leads nowhere is an error of its own, not a page and not lost.
    assert (by_url["/nowhere"]["class"], by_url["/nowhere"]["detail"]) == (
        "http_3xx",
        "HTTP 302 Found",
    )
    assert by_url["/unasked"]["class"] == "http_3xx"
    assert "not conditional" in by_url["/unasked"]["detail"]
    # Stats and the summary agree with the file, one class per URL.
    for error_class in ("too_large", "timeout", "opted_out", "trap", "http_3xx"):
        count = sum(1 for line in lines if line["class"] == error_class)
        assert result.stat(f"crawlyx/error/{error_class}") == str(count)
    assert len(by_url) == len(lines)
    assert "errors: " in result.log and "too_large 2" in result.log


def test_trap_rules():
    rules = TrapRules(now=datetime(2026, 11, 30, tzinfo=UTC))
    assert rules.reason("http://x/calendar?month=2029-12") is None
    assert "2030" in rules.reason("http://x/calendar?month=2030-01")
    assert rules.reason("http://x/2087/06/") is not None
    assert rules.reason("http://x/archive/1899-12") is not None
    assert rules.reason("http://x/blog/2019/05/a-post") is None
    # Numbers that are ids, versions or bare years are not dates.
    for url in ("http://x/p/5000", "http://x/p/310001", "http://x/v/2024.11", "http://x/y/2087"):
        assert rules.reason(url) is None, url
    assert "repeated" in rules.reason("http://x/a/b/a/b/a/b/a/b")
    assert rules.reason("http://x/a/b/a/b/a/b") is None
    assert "longer" in rules.reason("http://x/" + "a" * 2100)
    many = "&".join(f"f{i}=1" for i in range(25))
    assert "query parameters" in rules.reason(f"http://x/search?{many}")


class Headers(dict):
    def getlist(self, name):
        return self.get(name, [])


@pytest.mark.parametrize(
    ("headers", "meta", "expected", "refused"),
    [
        ({}, [("robots", "noai, noimageai")], {"noai", "noimageai"}, "noai"),
        ({}, [("robots", "none")], {"none", "noindex", "nofollow"}, "noindex"),
        ({b"X-Robots-Tag": [b"noindex"]}, [], {"noindex"}, "noindex"),
        ({b"X-Robots-Tag": [b"googlebot: noindex"]}, [], set(), None),
        ({b"X-Robots-Tag": [b"crawlyx: noai"]}, [], {"noai"}, "noai"),
        ({}, [("googlebot", "noindex"), ("crawlyx", "nofollow")], {"nofollow"}, None),
        ({}, [("robots", "index, follow")], {"index", "follow"}, None),
    ],
)
def test_opt_out_directives(headers, meta, expected, refused):
    opt_out = OptOut("crawlyx", frozenset({"noai", "noindex"}))
    found = opt_out.directives(Headers(headers), meta)
    assert found == expected
    assert opt_out.refused(found) == refused
