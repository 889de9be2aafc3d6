"""The compliance audits (crawlyx/extensions/compliance.py): Crawl-delay violations across
a job's processes, counted in the job's Redis, and opt-out signals honoured."""

from __future__ import annotations

import json
import subprocess
import uuid

from scrapy import Spider
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler

from crawlyx.extensions.compliance import _FILE_STARTS, SLACK, OptOutAudit
from tests.conftest import crawl_command, crawl_env
from tests.middlewares.test_window import FAST, Hostile, page

PAGES = [f"/p{i}" for i in range(5)]


def file_starts(client, key: str, delay: float, starts) -> int:
    """The audit's script for one batch of starts: ``starts`` are (seconds, member)."""
    script = client.register_script(_FILE_STARTS)
    args = [delay * 1000 * (1 - SLACK), 600_000]
    for seconds, member in starts:
        args += [seconds * 1000, member]
    return int(script(keys=[key, key + ":index"], args=args))


def test_violations_counted_once_whatever_the_order_the_processes_report(redis_client):
    # Crawl-delay 1 s. Process A starts at 0, 1 and 2 s (each 1 s apart: fine); process
    # B at 1.5 s: it is closer than the delay to A's start at 1 s, and A's start at 2 s
    # is closer than the delay to it. Two starts broke the delay, whichever process's
    # batch reaches Redis first.
    a = [(100.0, "a:1"), (101.0, "a:2"), (102.0, "a:3")]
    b = [(101.5, "b:1")]
    for first, then in ((a, b), (b, a)):
        key = f"test:delays:{uuid.uuid4().hex}"
        found = file_starts(redis_client, key, 1.0, first) + file_starts(
            redis_client, key, 1.0, then
        )
        assert found == 2
        assert redis_client.zcard(key) == 4
        assert 0 < redis_client.pttl(key) <= 600_000  # the starts expire with the horizon
    # A gap short of the delay by less than the slack is no violation.
    key = f"test:delays:{uuid.uuid4().hex}"
    close = [(200.0, "a:1"), (200.0 + 1 - SLACK / 2, "b:1"), (202.0, "a:2")]
    assert file_starts(redis_client, key, 1.0, close) == 0
    # Two starts at the same moment: the later-filed one breaks it.
    key = f"test:delays:{uuid.uuid4().hex}"
    assert file_starts(redis_client, key, 1.0, [(300.0, "a:1"), (300.0, "b:1")]) == 1


def delayed_site(delay: float, home_wait: float = 0):
    def respond(path, hit):
        if path == "/robots.txt":
            return 200, {}, f"User-agent: *\nCrawl-delay: {delay}\n", 0
        if path == "/":
            return 200, {}, page(PAGES), home_wait
        return 200, {}, page(), 0

    return Hostile(respond)


def crawl_delayed(crawl, tmp_path, settings: dict):
    report = tmp_path / f"report-{uuid.uuid4().hex}.json"
    with delayed_site(0.5) as server:
        result = crawl(
            f"start={server.base}/", "sitemap=0", f"report={report}", settings={**FAST, **settings}
        )
    assert result.returncode == 0, result.log[-3000:]
    assert len(result.items) == 1 + len(PAGES)
    return json.loads(report.read_text()), server, result


def test_two_polite_processes_have_no_crawl_delay_violation(tmp_path, redis_url):
    # Two processes of one job share the host's Crawl-delay (the window's budget): every
    # start of either is checked against the other's, and none is too close. The home
    # page takes 1 s: both processes are up and asking for work when its links come.
    reports = [tmp_path / f"report-{n}.json" for n in range(2)]
    with delayed_site(0.5, home_wait=1.0) as server:
        procs = [
            subprocess.Popen(
                crawl_command(
                    tmp_path / f"pages-{n}.jsonl",
                    f"start={server.base}/",
                    "sitemap=0",
                    "job=polite",
                    f"report={report}",
                    settings={"CRAWLYX_REDIS_URL": redis_url, **FAST},
                ),
                cwd=tmp_path,
                env=crawl_env(),
                stderr=subprocess.PIPE,
                text=True,
            )  # fmt: skip
            for n, report in enumerate(reports)
        ]
        logs = [proc.communicate(timeout=120)[1] for proc in procs]
    for proc, log in zip(procs, logs, strict=True):
        assert proc.returncode == 0, log[-3000:]
    fetches = [t for t, path, _ in sorted(server.log) if path != "/robots.txt"]
    assert len(fetches) == 1 + len(PAGES)
    # The crawl spaces the starts; the server sees them as late as each request travels
    # on a busy machine: a fifth of the delay's slack.
    assert min(b - a for a, b in zip(fetches, fetches[1:], strict=False)) >= 0.4
    audits = [json.loads(path.read_text())["compliance"]["crawl_delay"] for path in reports]
    assert sum(audit["checked"] for audit in audits) == len(fetches)
    assert [audit["violations"] for audit in audits] == [0, 0]


def test_a_crawl_ignoring_the_crawl_delay_is_caught(crawl, tmp_path):
    # Without the window middleware nothing spaces the requests: the site's pages come
    # as fast as the crawl asks for them, and the audit counts each one too close.
    report, server, result = crawl_delayed(crawl, tmp_path, {"CRAWLYX_WINDOW_ENABLED": False})
    fetches = [t for t, path, _ in sorted(server.log) if path != "/robots.txt"]
    too_close = sum(1 for a, b in zip(fetches, fetches[1:], strict=False) if b - a < 0.475)
    assert too_close >= 2
    delay = report["compliance"]["crawl_delay"]
    assert delay["checked"] == len(fetches)
    # The audit times the starts in the crawl, the server their arrivals: on a busy machine
    # a gap may be just short of the delay on one clock and just past it on the other. Both
    # saw several starts too close, and none but the first can be one.
    assert 2 <= delay["violations"] <= len(fetches) - 1
    assert "closer than its Crawl-delay" in result.log


def response(body: str, headers=None) -> HtmlResponse:
    return HtmlResponse(
        "http://h/page", body=body.encode(), headers=headers or {}, encoding="utf-8"
    )


def test_opt_out_audit_reads_headers_and_the_head():
    crawler = get_crawler(
        Spider, {"CRAWLYX_BOT_NAME": "crawlyx", "CRAWLYX_OPT_OUT_DIRECTIVES": "noai,noindex"}
    )
    audit = OptOutAudit(crawler)
    item = {"url": "http://h/page"}
    fine = "<html><head><title>t</title></head><body>noai noindex</body></html>"
    audit._scraped(item, response(fine))
    audit._scraped(item, response(fine, {"X-Robots-Tag": "googlebot: noai"}))  # not ours
    other = '<html><head><meta name="googlebot" content="noindex"></head></html>'
    audit._scraped(item, response(other))
    assert audit.emitted == 0
    audit._scraped(item, response(fine, {"X-Robots-Tag": "noai"}))
    audit._scraped(item, response('<HEAD><META CONTENT="NOINDEX" NAME="robots"></HEAD>'))
    audit._scraped(item, response("<head><meta name='crawlyx' content='noai'></head>"))
    assert audit.emitted == 3
    crawler.stats.set_value("crawlyx/error/opted_out", 7)
    assert audit.honoured == 7
