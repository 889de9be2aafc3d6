"""Structured logs (crawlyx/log.py): ``-s CRAWLYX_LOG_FORMAT=json``."""

from __future__ import annotations

import json
import logging
import sys
from collections import defaultdict

from scrapy import Request

from crawlyx.frontier.fingerprint import url_fingerprint
from crawlyx.log import JsonRecord


def record(msg, args=(), **extra) -> dict:
    args = (args,) if isinstance(args, dict) else args  # as a logger passes them
    entry = JsonRecord("scrapy.core.engine", logging.INFO, __file__, 1, msg, args, None)
    entry.__dict__.update(extra)
    return json.loads(entry.getMessage())


def test_a_record_about_a_url_carries_its_fingerprint():
    url = "http://example.com/a?b=2&a=1"
    crawled = record("Crawled %(request)s", {"request": Request(url)})
    assert crawled["url"] == url and crawled["trace_id"] == url_fingerprint(url)
    # The same URL written another way (query order, tracking parameter) is the same trace.
    written = record("No sitemap at %s", ("http://example.com/a?a=1&b=2&utm_source=x",))
    assert written["trace_id"] == crawled["trace_id"]
    assert record("done", url=url)["trace_id"] == crawled["trace_id"]
    plain = record("crawlyx: window %s %d", ("example.com", 8))
    assert plain["message"] == "crawlyx: window example.com 8"
    assert "trace_id" not in plain and plain["level"] == "INFO"
    # A redirect's line is about the request redirected.
    redirect = record(
        "Redirecting to %(redirected)s from %(request)s",
        {"redirected": Request("http://example.com/b"), "request": Request(url)},
    )
    assert redirect["trace_id"] == crawled["trace_id"]


def test_a_traceback_stays_in_its_line():
    try:
        raise ValueError("broken page")
    except ValueError:
        entry = JsonRecord("x", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    line = logging.Formatter("%(message)s").format(entry)
    assert "\n" not in line
    fields = json.loads(line)
    assert fields["level"] == "ERROR" and "ValueError: broken page" in fields["exception"]


def test_a_crawl_logs_one_json_object_per_line(site, crawl):
    result = crawl(
        f"start=http://127.0.0.1:{site.port}/start",
        settings={"CRAWLYX_LOG_FORMAT": "json", "LOG_LEVEL": "DEBUG"},
    )
    assert result.returncode == 0, result.log[-3000:]
    lines = [json.loads(line) for line in result.log.splitlines()]  # every line is one
    assert {"timestamp", "level", "logger", "message"} <= set(lines[0])
    assert any(line["message"].startswith("crawlyx: finished") for line in lines)
    by_trace = defaultdict(list)
    for line in lines:
        if "trace_id" in line:
            assert line["trace_id"] == url_fingerprint(line["url"])
            by_trace[line["trace_id"]].append(line["message"])
    # Each page emitted: its fetch and its item, on lines under the URL's fingerprint.
    for item in result.items:
        messages = by_trace[url_fingerprint(item["url"])]
        assert any(m.startswith("Crawled (200)") for m in messages), item["url"]
        assert any(m.startswith("Scraped from") for m in messages), item["url"]


def test_an_unknown_log_format_is_one_line(site, crawl):
    result = crawl(f"start=http://127.0.0.1:{site.port}/", settings={"CRAWLYX_LOG_FORMAT": "xml"})
    assert result.returncode == 2
    assert "crawlyx: CRAWLYX_LOG_FORMAT (xml) must be one of text, json" in result.log
