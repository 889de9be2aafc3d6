"""Errors as a user reads them: the errors file, the summary line, the report, the log."""

from __future__ import annotations

import json
import zlib
from collections import Counter

import pytest
from scrapy.statscollectors import StatsCollector
from scrapy.utils.test import get_crawler

from crawlyx.errors import ErrorLog, record_error
from crawlyx.signals import url_failed
from tests.sites.site import QuietHandler, Serving

PAGE = "<html><head><title>{0}</title></head><body><h1>{0}</h1><p>Text.</p>{1}</body></html>"


class CountingSite(Serving):
    """A site whose :meth:`answer` replies to each GET; requests are counted by path."""

    def __init__(self):
        self.requests: Counter = Counter()
        site = self

        class Handler(QuietHandler):
            def do_GET(self):  # noqa: N802
                site.requests[self.path] += 1
                return site.answer(self)

        super().__init__(Handler)

    def answer(self, handler):
        raise NotImplementedError


class SmallSite(CountingSite):
    """Two pages and a broken link; robots.txt names a sitemap that answers 503, and
    there is no /sitemap.xml (404)."""

    def answer(self, handler):
        if handler.path == "/robots.txt":
            robots = f"User-agent: *\nAllow: /\nSitemap: {self.base}/declared.xml\n"
            return handler.reply(200, robots, "text/plain")
        if handler.path == "/declared.xml":
            return handler.reply(503, "down for now")
        if handler.path == "/":
            links = '<a href="/a">a</a> <a href="/gone">gone</a>'
            return handler.reply(200, PAGE.format("Home", links))
        if handler.path == "/a":
            return handler.reply(200, PAGE.format("A", ""))
        return handler.reply(404, "not found")


@pytest.fixture
def small():
    with SmallSite() as site:
        yield site


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_an_http_error_says_its_status(small, crawl, tmp_path):
    errors = tmp_path / "errors.jsonl"
    result = crawl(f"start={small.base}/", f"errors={errors}")
    assert result.returncode == 0, result.log[-3000:]
    assert [(e["url"], e["class"], e["detail"]) for e in _lines(errors)] == [
        (f"{small.base}/gone", "http_4xx", "HTTP 404 Not Found")
    ]
    # A start URL that answers 404: the line saying why nothing was crawled names it.
    failed = crawl(f"start={small.base}/nothing", f"errors={errors}")
    assert failed.returncode == 1, failed.log[-3000:]
    start = f"{small.base}/nothing"
    assert f"nothing crawled, the start URL failed: {start} (http_4xx): HTTP 404 Not Found" in (
        failed.log
    )
    assert [e["detail"] for e in _lines(errors)] == ["HTTP 404 Not Found"]
    assert "Ignoring non-200 response" not in result.log + failed.log


def test_a_missing_sitemap_is_no_error_of_the_sites(small, crawl, tmp_path):
    errors, report = tmp_path / "errors.jsonl", tmp_path / "report.json"
    result = crawl(f"start={small.base}/", f"errors={errors}", f"report={report}")
    assert result.returncode == 0, result.log[-3000:]
    assert sorted(result.urls) == [f"{small.base}/", f"{small.base}/a"]
    # Both sitemaps were asked for: /sitemap.xml (404) and the one robots.txt names (503).
    assert small.requests["/sitemap.xml"] == 1 and small.requests["/declared.xml"] >= 1
    # Counted apart, and said in the log...
    assert result.stat("crawlyx/sitemap/missing") == "1"
    assert result.stat("crawlyx/sitemap/failed") == "1"
    assert f"INFO: No sitemap at {small.base}/sitemap.xml (HTTP 404 Not Found)" in result.log
    skipped = f"WARNING: Skipping sitemap {small.base}/declared.xml: HTTP 503 Service Unavailable"
    assert skipped in result.log
    # ...but no error of the site's pages: only the broken link is one.
    assert [(e["url"], e["class"]) for e in _lines(errors)] == [(f"{small.base}/gone", "http_4xx")]
    assert "errors: http_4xx 1\n" in result.log
    assert result.stat("crawlyx/error/count") == "1"
    assert result.stat("crawlyx/error/http_5xx") is None
    written = json.loads(report.read_text())
    assert written["errors"] == {"count": 1, "by_class": {"http_4xx": 1}}
    assert written["success_rate"] == {"value": round(2 / 3, 6), "pages": 2, "failed": 1}


def test_an_error_is_described_in_words():
    from scrapy.exceptions import DownloadCancelledError, DownloadFailedError, ResponseDataLossError
    from scrapy.http import Request, Response
    from scrapy.spidermiddlewares.httperror import HttpError
    from twisted.python.failure import Failure
    from twisted.web.client import ResponseFailed

    from crawlyx.errors import classify, describe

    def http(status):
        response = Response(
            "http://127.0.0.1/x", status=status, request=Request("http://127.0.0.1/x")
        )
        return Failure(HttpError(response, "Ignoring non-200 response"))

    # Statuses Twisted has no name for are named as Python names them.
    assert describe(http(451)) == "HTTP 451 Unavailable For Legal Reasons"
    assert describe(http(999)) == "HTTP 999 Unknown Status"
    assert [classify(http(s)) for s in (300, 304, 404, 503)] == [
        "http_3xx", "http_3xx", "http_4xx", "http_5xx"
    ]  # fmt: skip
    # Scrapy cancels a body that outgrows the size cap without a word: it is too large.
    cancelled = Failure(DownloadCancelledError())
    assert classify(cancelled) == "too_large"
    assert "DOWNLOAD_MAXSIZE" in describe(cancelled)
    # Nor a body cut short; a malformed response is said by what Twisted found wrong.
    cut = Failure(ResponseDataLossError())
    assert classify(cut) == "connection"
    assert "closed before the whole body came" in describe(cut)
    wrong = ValueError("Invalid response: conflicting Content-Length headers: b'1,2'")
    try:
        raise DownloadFailedError("[<twisted.python.failure.Failure ...>]") from ResponseFailed(
            [Failure(wrong)]
        )
    except DownloadFailedError as exc:
        malformed = Failure(exc)
    assert describe(malformed) == (
        "DownloadFailedError: ValueError: Invalid response: conflicting Content-Length"
        " headers: b'1,2'"
    )
    # A body that is not what its Content-Encoding says is named so.
    try:
        zlib.decompress(b"not gzip")
    except zlib.error as exc:
        garbled = Failure(exc)
    assert classify(garbled) == "connection"
    assert describe(garbled).startswith(
        "the body does not decode as its Content-Encoding says (zlib.error: Error -3"
    )


class SoftNotFoundSite(CountingSite):
    """A site answering every unknown URL 200 with its not-found page, whose template has
    relative links (each resolved under the unknown URL, another unknown URL)."""

    NOT_FOUND = PAGE.format(
        "Page not found",
        "<p>We could not find {path}. Try a section.</p>"
        '<a href="docs/">Docs</a> <a href="blog/">Blog</a> <a href="about/">About</a>',
    )

    def answer(self, handler):
        if handler.path == "/robots.txt":
            return handler.reply(404, "none")
        if handler.path == "/":
            links = '<a href="/real">real</a> <a href="/missing/">missing</a>'
            return handler.reply(200, PAGE.format("Home", links))
        if handler.path == "/real":
            return handler.reply(200, PAGE.format("Real", "<p>A page that is.</p>"))
        return handler.reply(200, self.NOT_FOUND.replace("{path}", handler.path))


def test_a_not_found_page_answered_200_is_a_broken_link(crawl, tmp_path):
    errors = tmp_path / "errors.jsonl"
    with SoftNotFoundSite() as site:
        probe = {"CRAWLYX_SOFT404_PROBE": "true"}  # as shipped (see conftest.TEST_DEFAULTS)
        result = crawl(f"start={site.base}/", f"errors={errors}", "sitemap=0", settings=probe)
        requests = dict(site.requests)
        # Without the probe, the not-found page is a page, and its links lead on.
        off = crawl(f"start={site.base}/", "sitemap=0", "max_pages=20")
    assert result.returncode == 0, result.log[-3000:]
    assert sorted(result.urls) == [f"{site.base}/", f"{site.base}/real"]
    assert [(e["url"], e["class"], e["detail"]) for e in _lines(errors)] == [
        (f"{site.base}/missing", "http_4xx", "HTTP 200 with the site's not-found page (a soft 404)")
    ]
    # Its template's links were not followed: the home page, its two links and the probe.
    probes = [path for path in requests if path.startswith("/crawlyx-not-found-")]
    assert len(probes) == 1 and sum(requests.values()) == 5
    assert result.stat("crawlyx/soft404/found") == "1"
    assert f"{site.base}/missing" in off.urls and f"{site.base}/missing/docs" in off.urls


def test_a_recorded_error_is_sent_to_whoever_subscribes(tmp_path):
    """Recording an error is sending crawlyx.signals.url_failed: the error log (the
    errors file and stats), the graph and the fetch tally subscribe to it."""
    crawler = get_crawler(settings_dict={})
    crawler.stats = StatsCollector(crawler)
    heard = []

    def hear(**kwargs):  # held here: the signal manager keeps weak references
        heard.append(kwargs)

    crawler.signals.connect(hear, signal=url_failed)
    errors = ErrorLog(crawler, str(tmp_path / "errors.jsonl"))
    record_error(
        crawler, "https://a.example/x", "http_4xx", "404", "https://a.example/", status=404
    )
    record_error(crawler, "https://a.example/y", "duplicate", "same", holder="https://a.example/z")
    errors.close()
    assert [(h["url"], h["error_class"], h["status"], h["holder"]) for h in heard] == [
        ("https://a.example/x", "http_4xx", 404, None),
        ("https://a.example/y", "duplicate", None, "https://a.example/z"),
    ]
    assert crawler.stats.get_value("crawlyx/error/count") == 2
    assert len((tmp_path / "errors.jsonl").read_text().splitlines()) == 2
    with pytest.raises(ValueError, match="unknown error class"):
        record_error(crawler, "https://a.example/", "nonsense")
