"""End to end: ``scrapy crawl site`` against the fixture site and a real Redis."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import pty
import re
import subprocess
from urllib.parse import urlsplit

import pytest

from crawlyx.arguments import ArgumentError, CrawlArgs
from crawlyx.frontier.state import State
from tests.conftest import crawl_command, crawl_env, free_port
from tests.sites.site import QuietHandler, Serving, SiteServer

# Two requests at a time per host: the adaptive window is the per-host limit.
SLOW_HOST = {"CRAWLYX_WINDOW_MIN": 1, "CRAWLYX_WINDOW_START": 2, "CRAWLYX_WINDOW_MAX": 2}


def start_url(site) -> str:
    # The start URL redirects from 127.0.0.1 to localhost: the scope is the final origin.
    return f"http://127.0.0.1:{site.port}/start"


def assert_fetched_once(site):
    counts = dict(site.counts)
    # robots.txt once per origin: 127.0.0.1 (the start URL) and localhost (the scope).
    assert counts.pop("/robots.txt") == 2
    twice = {rid: n for rid, n in counts.items() if n != 1}
    assert not twice, f"fetched more than once: {twice}"


def test_every_page_once_and_no_resource_fetched_twice(site, crawl):
    result = crawl(f"start={start_url(site)}")
    assert result.returncode == 0, result.log[-3000:]
    assert len(result.urls) == len(set(result.urls))
    assert set(result.urls) == site.expected_pages()
    assert_fetched_once(site)
    # Never requested: robots-disallowed, other hosts (127.0.0.2 is not the scope).
    assert "/private/secret" not in site.counts
    assert result.stat("crawlyx/error/connection") is None
    assert result.stat("crawlyx/error/dns") is None
    assert result.stat("crawlyx/error/robots_disallowed") == "1"
    assert result.stat("crawlyx/error/http_4xx") == "1"
    assert result.stat("crawlyx/frontier/lost_leases") is None
    assert result.stat("finish_reason") == "'finished'"
    # A PDF that is none (its body is a line of text) is fetched, and recorded as such.
    assert site.counts["/file.pdf"] == 1
    assert not any(url.endswith(".pdf") for url in result.urls)
    assert result.stat("crawlyx/error/unreadable") == "1"


def test_item_fields(site, crawl):
    result = crawl(f"start={start_url(site)}")
    items = {item["url"]: item for item in result.items}
    base = site.base
    docs = items[f"{base}/docs/intro?a=1&b=2"]
    assert list(docs) == [
        "url", "final_url", "status", "fetched_at", "depth", "referrer", "title",
        "description", "lang", "canonical", "markdown", "links", "content_hash", "etag",
        "last_modified", "render", "elapsed_ms", "bytes", "changed",
    ]  # fmt: skip
    assert docs["status"] == 200
    assert docs["title"] == "/docs/intro?a=1&b=2"
    assert docs["description"] == "About /docs/intro?a=1&b=2"
    assert docs["lang"] == "en"
    assert docs["render"] == "http"
    assert docs["depth"] == 1
    assert docs["referrer"] in (f"{base}/", None)  # linked from home, also in the sitemap
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", docs["fetched_at"])
    assert docs["bytes"] > 0 and docs["elapsed_ms"] >= 0
    assert docs["etag"].startswith('"')
    md = docs["markdown"]
    assert "| Name | Value |" in md
    assert '```python\nprint("hello")\n```' in md
    assert "- one" in md or "* one" in md
    assert "SCRIPT-CONTENT" not in md and "color: red" not in md
    assert docs["content_hash"] == hashlib.sha256(md.encode()).hexdigest()
    assert docs["links"] == sorted({f"{base}/", f"{base}/about"})
    home = items[f"{base}/"]
    assert home["final_url"] == f"{base}/"
    assert home["depth"] == 0 and home["referrer"] is None
    assert home["links"] == sorted(set(home["links"]))
    assert f"{base}/docs/intro?a=1&b=2" in home["links"]
    assert f"{base}/~user/page" in home["links"]
    assert not any("utm_" in link or "#" in link for link in home["links"])
    # Path case is preserved: two distinct pages.
    assert f"{base}/Case/Page" in items and f"{base}/case/page" in items
    # A redirected page is emitted under its final URL.
    assert items[f"{base}/new"]["status"] == 200


def test_max_depth(site, crawl):
    result = crawl(f"start={start_url(site)}", "max_depth=1")
    assert result.returncode == 0
    assert result.items and max(item["depth"] for item in result.items) == 1
    assert "/deep/1" in site.counts and "/deep/2" not in site.counts


def test_max_pages(site, crawl):
    result = crawl(f"start={start_url(site)}", "max_pages=5")
    assert result.returncode == 0
    assert len(result.items) == 5
    assert result.stat("finish_reason") == "'max_pages'"


def test_allow_and_deny(site, crawl):
    result = crawl(f"start={start_url(site)}", "deny=/(gen|deep)/")
    urls = set(result.urls)
    assert urls and not any("/gen/" in u or "/deep/" in u for u in urls)
    assert not any(rid.startswith(("/gen/", "/deep/")) for rid in site.counts)


def test_allow_only(site, crawl):
    result = crawl(f"start={start_url(site)}", r"allow=/cycle/|:\d+/$")
    assert set(result.urls) == {f"{site.base}/", f"{site.base}/cycle/a", f"{site.base}/cycle/b"}


def test_sitemap_off(site, crawl):
    result = crawl(f"start={start_url(site)}", "sitemap=0")
    urls = set(result.urls)
    assert f"{site.base}/orphan" not in urls and f"{site.base}/sitemap-only" not in urls
    assert "/sitemap.xml" not in site.counts and "/sitemap_index.xml" not in site.counts
    assert urls == site.expected_pages() - {f"{site.base}/orphan", f"{site.base}/sitemap-only"}


@pytest.mark.parametrize(
    ("arg", "named"),
    [
        ("start=example.com/docs", "start"),
        ("start=ftp://example.com/", "start"),
        ("max_pages=-3", "max_pages"),
        ("max_pages=many", "max_pages"),
        ("max_depth=-1", "max_depth"),
        ("allow=([unclosed", "allow"),
        ("deny=*bad", "deny"),
        ("sitemap=maybe", "sitemap"),
        ("job=../../etc", "job"),
        ("report=/no/such/folder/report.json", "report"),
    ],
)
def test_bad_arguments_stop_before_any_request(site, crawl, arg, named):
    name = arg.split("=", 1)[0]
    args = [arg] if name == "start" else [f"start={start_url(site)}", arg]
    result = crawl(*args)
    assert result.returncode == 2
    lines = [line for line in result.log.splitlines() if line.strip()]
    assert len(lines) == 1, result.log
    assert lines[0].startswith(f"crawlyx: bad argument {named}:")
    assert not site.counts


def test_a_misspelt_argument_stops_before_any_request(site, crawl):
    # Ignored, it would crawl the whole site.
    result = crawl(f"start={start_url(site)}", "maxpages=3")
    assert result.returncode == 2
    line = "crawlyx: bad argument maxpages: unknown argument; did you mean max_pages?"
    assert result.log.strip() == line
    assert not site.counts


def test_the_runners_arguments_are_left_alone():
    # scrapyd passes _job and _version with the crawl's own arguments.
    args = CrawlArgs.parse(start="http://127.0.0.1:9/", max_pages="3", _job="1f2e", _version="r7")
    assert args.max_pages == 3
    with pytest.raises(ArgumentError, match="^llms-txt: unknown argument; did you mean llms_txt"):
        CrawlArgs.parse(start="http://127.0.0.1:9/", **{"llms-txt": "llms.txt"})
    with pytest.raises(ArgumentError, match="^output: unknown argument; known: start, max_pages"):
        CrawlArgs.parse(start="http://127.0.0.1:9/", output="pages.jsonl")


def test_a_start_url_without_host_or_scheme_says_which():
    with pytest.raises(ArgumentError, match="^start: 'http://' names no host$"):
        CrawlArgs.parse(start="http://")
    with pytest.raises(ArgumentError, match="is not an absolute URL; add http:// or https://"):
        CrawlArgs.parse(start="127.0.0.1:9/docs")


def test_a_start_url_s_credentials_are_taken_out_of_it():
    args = CrawlArgs.parse(start="http://ann%40corp:p%3Ass word@127.0.0.1:9/docs/")
    assert (args.start, args.credentials) == ("http://127.0.0.1:9/docs/", ("ann@corp", "p:ss word"))
    assert "p:ss" not in repr(args)
    assert CrawlArgs.parse(start="http://127.0.0.1:9/").credentials is None


class LockedSite(Serving):
    """A site behind HTTP Basic auth (user "ann", password "s3cret"), robots.txt too."""

    def __init__(self):
        self.seen: list[tuple[str, str | None]] = []
        site = self

        class Handler(QuietHandler):
            def do_GET(self):  # noqa: N802
                auth = self.headers.get("Authorization")
                site.seen.append((self.path, auth))
                if auth != "Basic " + base64.b64encode(b"ann:s3cret").decode():
                    return self.reply(401, "who?", headers={"WWW-Authenticate": 'Basic realm="x"'})
                if self.path == "/robots.txt":
                    return self.reply(200, "User-agent: *\nDisallow: /private\n", "text/plain")
                links = '<a href="/a">a</a> <a href="/b">b</a> <a href="/private">p</a>'
                body = f"<html><head><title>Page {self.path}</title></head><body><h1>Page</h1>"
                return self.reply(200, f"{body}<p>Text of {self.path} to read.</p>{links}</body>")

        super().__init__(Handler)


def test_a_site_behind_basic_auth_is_crawled_with_the_start_url_s_credentials(crawl, tmp_path):
    errors = tmp_path / "errors.jsonl"
    with LockedSite() as site:
        locked = site.base.replace("http://", "http://ann:s3cret@") + "/"
        result = crawl(f"start={locked}", f"errors={errors}")
    assert result.returncode == 0, result.log[-3000:]
    assert sorted(result.urls) == [f"{site.base}/", f"{site.base}/a", f"{site.base}/b"]
    assert all(auth is not None for _, auth in site.seen)  # robots.txt asked with them too
    assert "/private" not in [path for path, _ in site.seen]
    # The password is written nowhere: not in the pages, the errors or the log.
    written = "".join(json.dumps(item) for item in result.items) + errors.read_text()
    assert "s3cret" not in written and "s3cret" not in result.log


def test_missing_start(crawl):
    result = crawl()
    assert result.returncode == 2
    assert "start: required" in result.log


def test_resume_after_clean_stop(site, crawl, redis_client):
    first = crawl(f"start={start_url(site)}", "job=resume-test", "max_pages=6")
    assert first.returncode == 0 and len(first.items) == 6
    second = crawl(f"start={start_url(site)}", "job=resume-test")
    assert second.returncode == 0
    urls = first.urls + second.urls
    assert len(urls) == len(set(urls))
    assert set(urls) == site.expected_pages()
    # Pages in flight when the first run stopped were not emitted: fetched again, once.
    counts = dict(site.counts)
    assert max(counts.values()) <= 2
    # The same job once more: nothing left to do, refused, nothing fetched again.
    third = crawl(f"start={start_url(site)}", "job=resume-test")
    assert third.returncode == 2 and third.items == []
    assert third.log.startswith("crawlyx: job resume-test finished on ")
    assert dict(site.counts) == counts
    # A named job finished expires a week after its last run (paused, it would stay).
    assert 7 * 86400 - 600 < redis_client.ttl("crawlyx:{resume-test}:visited") <= 7 * 86400


JOB_LINE = re.compile(r"crawlyx: job (\S+) \(resume with -a job=(\S+)\)")


def job_name(log: str) -> str:
    match = JOB_LINE.search(log)
    assert match and match.group(1) == match.group(2), log[-2000:]
    return match.group(1)


def test_a_crawl_without_job_is_named_and_its_keys_expire(site, crawl, redis_client):
    first = crawl(f"start={start_url(site)}")
    second = crawl(f"start={start_url(site)}")
    assert first.returncode == second.returncode == 0
    # Each run is a fresh job, under a name of its own, logged at the start.
    assert set(first.urls) == set(second.urls) == site.expected_pages()
    name = job_name(first.log)
    assert re.fullmatch(r"127\.0\.0\.1-\d{8}-\d{6}-[0-9a-f]{4}", name)
    assert job_name(second.log) != name
    # Its state is kept, for CRAWLYX_JOB_TTL_DAYS (7) after it stops.
    week = 7 * 86400
    keys = list(redis_client.scan_iter(f"crawlyx:{{{name}}}:*"))
    assert len(keys) > 3
    # The job knows every key it made, without a SCAN (robots.txt, budgets among them).
    listed = [key for batch in State(redis_client, name).keys() for key in batch]
    assert sorted(listed) == sorted(keys)
    assert any(b":robots:" in key for key in keys) and any(b":host:" in key for key in keys)
    ttls = {key: redis_client.ttl(key) for key in keys}
    kept = {key: ttl for key, ttl in ttls.items() if b":robots:" not in key}
    # (Within minutes of a week: the second crawl ran since, slowly on a loaded machine.)
    assert all(week - 600 < ttl <= week for ttl in kept.values()), ttls
    assert all(0 < ttl <= 86400 for key, ttl in ttls.items() if key not in kept)  # their own
    # Run again by name (finished: a refresh run starts it afresh), it still expires.
    again = crawl(f"start={start_url(site)}", f"job={name}", "refresh=1")
    assert again.returncode == 0, again.log[-3000:]
    assert week - 600 < redis_client.ttl(f"crawlyx:{{{name}}}:visited") <= week


def test_progress_line_and_summary(crawl):
    with SiteServer(generated=40, latency=0.05) as site:
        result = crawl(
            f"start={start_url(site)}",
            settings={"CRAWLYX_PROGRESS_INTERVAL": 0.2, **SLOW_HOST},
        )
    assert re.search(
        r"crawlyx: \d+ pages done, \d+ queued, [\d.]+ pages/s, \d+ errors, rss \d+ MiB, "
        r"window (127\.0\.0\.1|localhost)=[12] (127\.0\.0\.1|localhost)=[12]\n",
        result.log,
    )
    summary = re.search(
        r"crawlyx: finished: (\d+) pages in [\d.]+ s \([\d.]+ pages/s\), "
        r"(\d+) links seen before, errors: http_4xx 1, robots_disallowed 1",
        result.log,
    )
    assert summary, result.log[-2000:]
    assert int(summary.group(1)) == len(result.items)
    assert int(summary.group(2)) > 0


def test_a_quiet_crawl_on_a_terminal_shows_its_progress_in_place(tmp_path, redis_url):
    """-L WARNING hides the progress record: on a terminal the line is drawn in place
    instead, and cleared before any other line (here the summary)."""
    settings = {
        "CRAWLYX_REDIS_URL": redis_url, "CRAWLYX_PROGRESS_INTERVAL": 0.2, "LOG_LEVEL": "WARNING",
        **SLOW_HOST,
    }  # fmt: skip
    with SiteServer(generated=40, latency=0.05) as site:
        command = crawl_command(
            tmp_path / "pages.jsonl", f"start={start_url(site)}", settings=settings
        )
        terminal, its_end = pty.openpty()
        proc = subprocess.Popen(
            command, cwd=tmp_path, env=crawl_env(), stdin=subprocess.DEVNULL,
            stdout=its_end, stderr=its_end,
        )  # fmt: skip
        os.close(its_end)
        shown = b""
        while True:
            try:
                chunk = os.read(terminal, 65536)
            except OSError:  # the crawl closed the terminal's other end
                break
            if not chunk:
                break
            shown += chunk
        os.close(terminal)
        assert proc.wait(timeout=120) == 0, shown[-3000:]
    text = shown.decode()
    progress = re.findall(r"\r\x1b\[Kcrawlyx: \d+ pages done, \d+ queued, [^\r\n]*", text)
    assert progress, text[-3000:]
    # In place: each drawn over by the next, or cleared; never ended by a new line.
    assert not re.search(r"pages done[^\r]*\n", text), text[-3000:]
    assert re.search(r"\r\x1b\[Kcrawlyx: finished: \d+ pages in ", text), text[-3000:]


def test_the_job_line_and_the_summary_show_at_any_log_level(site, crawl):
    quiet = crawl(f"start={start_url(site)}", settings={"LOG_LEVEL": "WARNING"})
    assert quiet.returncode == 0, quiet.log[-3000:]
    name = job_name(quiet.log)
    lines = quiet.log.splitlines()
    assert lines[0] == (
        f"crawlyx: job {name} (resume with -a job={name}), scope http://127.0.0.1:{site.port}/"
    )
    # The start URL redirects to another host: the scope moves with it, and says so.
    assert lines[1] == f"crawlyx: scope {site.base}/ (the start URL redirects)"
    pages = re.search(r"^crawlyx: finished: (\d+) pages in ", quiet.log, re.M)
    assert pages and int(pages[1]) == len(quiet.items) > 0
    assert " INFO: " not in quiet.log and quiet.log.count("crawlyx: finished") == 1
    assert "pages done" not in quiet.log  # no terminal: no progress line drawn
    # Scrapy's dump of the overridden settings is logged at DEBUG, after the job's line.
    verbose = crawl(f"start={start_url(site)}", settings={"LOG_LEVEL": "DEBUG"})
    assert "INFO: Overridden settings" not in verbose.log
    job_line = verbose.log.index(f"INFO: crawlyx: job {job_name(verbose.log)} (resume")
    assert job_line < verbose.log.index("DEBUG: Overridden settings:")
    assert verbose.log.count("crawlyx: finished:") == 1


def test_markdown_options(site, crawl):
    result = crawl(
        f"start={start_url(site)}",
        settings={"CRAWLYX_MARKDOWN_MAIN_CONTENT": "false", "CRAWLYX_MARKDOWN_LINKS": "none"},
    )
    items = {item["url"]: item for item in result.items}
    md = items[f"{site.base}/docs/intro?a=1&b=2"]["markdown"]
    assert "](http" not in md  # links as text only
    assert "| Name | Value |" in md
    # The whole page: even the note every page repeats is kept.
    assert all("Written by the fixture team" in item["markdown"] for item in result.items)


def test_bad_markdown_setting_stops_the_crawl(site, crawl):
    result = crawl(f"start={start_url(site)}", settings={"CRAWLYX_MARKDOWN_LINKS": "footnote"})
    assert result.returncode != 0
    assert "CRAWLYX_MARKDOWN_LINKS must be one of inline, reference, none" in result.log
    assert not result.items and not site.counts


def test_a_page_s_markdown_does_not_depend_on_the_crawl_s_order(crawl):
    """The same site crawled from two ends, the second with two page workers: every page
    says the same in both, down to the note every page repeats."""
    with SiteServer(generated=40) as site:
        first = crawl(f"start={start_url(site)}", settings={"CRAWLYX_MARKDOWN_WORKERS": 1})
        start = f"http://localhost:{site.port}/gen/20"  # the whole site, not /gen/ alone
        second = crawl(f"start={start}", "scope=origin", settings={"CRAWLYX_MARKDOWN_WORKERS": 2})
    assert first.returncode == second.returncode == 0, second.log[-3000:]
    one = {item["url"]: item["markdown"] for item in first.items}
    two = {item["url"]: item["markdown"] for item in second.items}
    assert len(one) > 50 and one.keys() == two.keys()
    assert first.urls[:3] != second.urls[:3]
    assert one == two
    assert all("Written by the fixture team" in markdown for markdown in one.values())


@pytest.mark.parametrize(
    "setting, named",
    [
        ({"CRAWLYX_BOTNAME": "x"}, "is not a crawlyx setting; did you mean CRAWLYX_BOT_NAME?"),
        ({"CRAWLYX_MARKDOWN_SITE_BOILERPLATE": "false"}, "CRAWLYX_MARKDOWN_SITE_BOILERPLATE was"),
        (  # checked with breadth off too
            {"CRAWLYX_BREADTH_ENABLED": "false", "CRAWLYX_BREADTH_BOTS": "notjson"},
            "CRAWLYX_BREADTH_BOTS is not JSON",
        ),
        ({"CRAWLYX_WINDOW_MIN": 50}, "CRAWLYX_WINDOW_MIN (50) must be at least 1"),
        ({"CRAWLYX_BREADTH_MAX_BOTS": 0}, "CRAWLYX_BREADTH_MAX_BOTS"),
        ({"CRAWLYX_METRICS_PORT": 70000}, "CRAWLYX_METRICS_PORT (70000) must be a port"),
        ({"CRAWLYX_JOB_TTL_DAYS": -1}, "CRAWLYX_JOB_TTL_DAYS (-1) must be a number, 0 or more"),
        ({"CRAWLYX_MAX_LINKS_PER_PAGE": 0}, "CRAWLYX_MAX_LINKS_PER_PAGE (0) must be 1 or more"),
        ({"CRAWLYX_WINDOW_MAX": "many"}, "CRAWLYX_WINDOW_MAX (many) must be a whole number"),
        ({"CRAWLYX_GRAPH_ENABLED": "maybe"}, "CRAWLYX_GRAPH_ENABLED (maybe) must be true or"),
        ({"CRAWLYX_REDIS_URL": "redis+x://127.0.0.1:1/0"}, "CRAWLYX_REDIS_URL (redis+x://"),
        ({"CRAWLYX_REDIS_URL": f"redis://127.0.0.1:{free_port()}/0"}, "cannot reach Redis at"),
        (  # the embedded Redis's directory
            {"CRAWLYX_REDIS_URL": "", "CRAWLYX_DATA_DIR": "/proc/nope"},
            "crawlyx: CRAWLYX_DATA_DIR (/proc/nope) cannot hold the embedded Redis: No such file",
        ),
        (
            {"CRAWLYX_REDIS_URL": "", "CRAWLYX_DATA_DIR": "/dev/null"},
            "CRAWLYX_DATA_DIR (/dev/null) cannot hold the embedded Redis: not a directory; give",
        ),
    ],
)
def test_bad_settings_stop_the_crawl_with_one_line(site, crawl, setting, named):
    result = crawl(f"start={start_url(site)}", settings=setting)
    assert result.returncode == 2
    assert named in result.log and "Traceback" not in result.log
    assert not result.items and not site.counts


def test_redirect_hops_are_held_to_the_crawls_rules(crawl, tmp_path):
    errors = tmp_path / "errors.jsonl"
    with SiteServer() as other:
        elsewhere = f"http://127.0.0.1:{other.port}/about"  # another origin, same address
        redirects = {
            "/go": elsewhere,
            "/go-denied": "/deep/1",
            "/go-trap": "/t/x/x/x/x",
            "/loop/a": "/loop/b",  # only /loop/a is linked
            "/loop/b": "/loop/a",
        }
        with SiteServer(redirects=redirects) as site:
            result = crawl(f"start={start_url(site)}", "deny=/deep/", f"errors={errors}")
    assert result.returncode == 0, result.log[-3000:]
    # The start URL's own redirect to another origin is followed: it fixes the scope.
    assert f"{site.base}/" in result.urls
    # No hop off the rules is requested: not the other origin, not its robots.txt.
    assert not other.counts
    assert not any(url.startswith("http://127.0.0.1") for url in result.urls)
    assert "/deep/1" not in site.counts and "/t/x/x/x/x" not in site.counts
    lines = [json.loads(line) for line in errors.read_text().splitlines()]
    by_rid = {_rid(site, line["url"]): line for line in lines}
    assert len(by_rid) == len(lines)  # one line per URL
    assert by_rid["/go"]["class"] == "out_of_scope" and elsewhere in by_rid["/go"]["detail"]
    assert by_rid["/go-denied"]["class"] == "out_of_scope"
    assert by_rid["/go-trap"]["class"] == "trap"
    # A loop: each of its URLs fetched once and recorded once.
    assert by_rid["/loop/a"]["class"] == by_rid["/loop/b"]["class"] == "trap"
    assert "/loop/a -> " in by_rid["/loop/a"]["detail"]
    assert site.counts["/loop/a"] == site.counts["/loop/b"] == 1
    for error_class in ("out_of_scope", "trap"):
        count = sum(1 for line in lines if line["class"] == error_class)
        assert result.stat(f"crawlyx/error/{error_class}") == str(count)
    # Every fetched URL is accounted for: an item, an error (a PDF that is none too),
    # robots.txt and sitemaps, or a redirect followed to its target (/redirect-me to a
    # page crawled anyway).
    assert by_rid["/file.pdf"]["class"] == "unreadable"
    not_pages = {"/robots.txt", "/sitemap_index.xml", "/sitemap-pages.xml", "/sitemap.xml"}
    followed = set(site.counts) - {_rid(site, u) for u in result.urls} - set(by_rid)
    assert followed - not_pages == {"/start", "/redirect-me", "/old"}
    # Those three, and the loop's first hop.
    assert result.stat("crawlyx/frontier/redirected") == "4"


def test_pages_that_redirect_to_each_other_are_a_trap(crawl, tmp_path):
    # Both linked: each is fetched on its own and redirects to a page already known.
    errors = tmp_path / "errors.jsonl"
    redirects = {"/la": "/lb", "/lb": "/la"}
    with SiteServer(redirects=redirects, linked=("/lb",)) as site:
        result = crawl(f"start={start_url(site)}", f"errors={errors}")
    assert result.returncode == 0, result.log[-3000:]
    lines = [json.loads(line) for line in errors.read_text().splitlines()]
    loop = [line for line in lines if _rid(site, line["url"]) in redirects]
    assert sorted(_rid(site, line["url"]) for line in loop) == ["/la", "/lb"]  # once each
    assert {line["class"] for line in loop} == {"trap"}
    assert all(line["detail"].startswith("redirect loop: ") for line in loop)
    assert site.counts["/la"] == site.counts["/lb"] == 1
    traps = sum(1 for line in lines if line["class"] == "trap")
    assert result.stat("crawlyx/error/trap") == str(traps)
    assert not any(_rid(site, url) in redirects for url in result.urls)


def _rid(site, url: str) -> str:
    parts = urlsplit(url)
    return site.resource(parts.netloc, parts.path, parts.query)


def test_a_counter_calendar_ends_and_real_pagination_does_not(site, crawl, tmp_path):
    errors = tmp_path / "errors.jsonl"
    result = crawl(f"start={site.base}/traps", "sitemap=0", f"errors={errors}")
    assert result.returncode == 0, result.log[-3000:]
    # The calendar's months are alike: a handful are read, then its chain ends.
    months = [rid for rid in site.counts if rid.startswith("/cal?")]
    assert 5 <= len(months) < 20, sorted(months)
    refused = [json.loads(line) for line in errors.read_text().splitlines()]
    assert refused and {e["class"] for e in refused} == {"trap"}
    assert all(e["url"].startswith(f"{site.base}/cal?month=") for e in refused)
    assert "near-duplicate pages in a row under /cal?month=*" in refused[0]["detail"]
    # Refused without a request, and no calendar month was both fetched and refused.
    assert not {e["url"].removeprefix(site.base) for e in refused} & set(months)
    assert result.stat("crawlyx/error/trap") == str(len(refused))
    # The shop's pages share a template and most words, not their products: all read.
    shop = {url for url in result.urls if "/shop?" in url}
    assert shop == {f"{site.base}/shop?page={n}" for n in range(1, 31)}


def test_links_past_the_cap_are_counted_not_followed(site, crawl):
    result = crawl(
        f"start={start_url(site)}", "sitemap=0", "max_depth=1",
        settings={"CRAWLYX_MAX_LINKS_PER_PAGE": 2},
    )  # fmt: skip
    assert result.returncode == 0, result.log[-3000:]
    (start,) = [item for item in result.items if item["depth"] == 0]
    assert len(start["links"]) == 2
    assert int(result.stat("crawlyx/links/capped")) > 0
    assert {item["url"] for item in result.items} <= {start["url"], *start["links"]}


def test_a_crawl_failing_before_its_engine_runs_exits_and_leaves_nothing(site, crawl, tmp_path):
    # A component that cannot load fails the crawl after the page workers started: they
    # are stopped then, not left waiting for the crawl process while it waits for them.
    # (Before, such a crawl never exited.)
    result = crawl(
        f"start={start_url(site)}",
        settings={"EXTENSIONS": '{"nonexistent.Extension": 1}'},
        timeout=60,
    )
    assert result.returncode == 1
    assert "No module named 'nonexistent'" in result.log
    assert not site.counts
