"""One document, one item: exact copies (same markdown, no canonical), across the
processes and the runs of a job, from real crawls of a small site."""

from __future__ import annotations

import json
import re
import subprocess
import time

import redis

from crawlyx.frontier.state import State
from crawlyx.pipelines.copies import ContentClaims
from tests.conftest import Gate, crawl_command, crawl_env, lease_owners, read_items
from tests.frontier.test_jobs import listed
from tests.sites.alias_site import AliasSite
from tests.sites.site import QuietHandler, Serving

# Two requests at a time: the crawl lasts long enough to share, or to be killed midway.
SLOW_HOST = {"CRAWLYX_WINDOW_MIN": 1, "CRAWLYX_WINDOW_START": 2, "CRAWLYX_WINDOW_MAX": 2}


def document(item_or_url) -> str | None:
    """The document number of a /docs/N address (with or without its query)."""
    url = item_or_url if isinstance(item_or_url, str) else item_or_url["url"]
    match = re.search(r"/docs/(\d+)", url)
    return match.group(1) if match else None


def error_lines(*paths) -> list[dict]:
    return [json.loads(line) for path in paths for line in path.read_text().splitlines()]


def check_each_document_once(site, items: list[dict], errors: list[dict]) -> None:
    """Each document written once, under one of its addresses; every other address of
    it recorded once as a duplicate of the written one."""
    written = {}
    for item in items:
        if document(item) is not None:
            assert document(item) not in written, f"{item['url']} written twice"
            written[document(item)] = item["url"]
    assert sorted(written) == sorted(str(i) for i in range(site.docs))
    hashes = [item["content_hash"] for item in items if item["markdown"]]
    assert len(hashes) == len(set(hashes))
    duplicates = [line for line in errors if line["class"] == "duplicate"]
    assert len(duplicates) == len({line["url"] for line in duplicates})
    addresses = {f"{site.base}{path}" for path in site.copies()}
    addresses |= {f"{site.base}/docs/{i}" for i in range(site.docs)}
    assert {line["url"] for line in duplicates} == addresses - set(written.values())
    for line in duplicates:
        assert line["detail"] == f"same markdown as {written[document(line['url'])]}"


def test_a_claim_names_the_page_that_holds_the_document(redis_url):
    client = redis.Redis.from_url(redis_url)
    state = State(client, f"claims-{time.monotonic_ns()}")
    claims = ContentClaims(state, state.core())
    try:
        one, two = "01" * 32, "02" * 32
        assert claims.claim(one, "http://a/1") == "http://a/1"
        assert claims.claim(one, "http://a/2") == "http://a/1"
        # The claimant, killed before its item was written, fetches its page again.
        assert claims.claim(one, "http://a/1") == "http://a/1"
        assert claims.claim(two, "http://a/2") == "http://a/2"
    finally:
        client.delete(state.key("copies"))
        client.close()


class _BookSite(Serving):
    """A book whose start page is a copy of its first chapter, as an mdBook publishes
    its index.html: the table of contents on every page links the chapter, never the
    folder."""

    CHAPTERS = ("intro", "one", "two", "three")

    def __init__(self):
        toc = "".join(f'<li><a href="/book/{c}.html">{c}</a></li>' for c in self.CHAPTERS)

        def chapter(name: str) -> str:
            return (
                f"<html><head><title>{name}</title></head><body><nav><ol>{toc}</ol></nav>"
                f"<main><h1>{name}</h1><p>The chapter called {name}, in full.</p></main>"
                "</body></html>"
            )

        pages = {f"/book/{c}.html": chapter(c) for c in self.CHAPTERS}
        pages["/book/"] = chapter("intro")

        class Handler(QuietHandler):
            def do_GET(self):  # noqa: N802
                if self.path not in pages:
                    return self.reply(404, "not here")
                time.sleep(0.05)  # the chapters are read after the start page
                return self.reply(200, pages[self.path])

        super().__init__(Handler)


def test_the_copy_the_navigation_links_to_is_written(crawl, tmp_path):
    errors = tmp_path / "errors.jsonl"
    with _BookSite() as site:
        result = crawl(f"start={site.base}/book/", f"errors={errors}")
    assert result.returncode == 0, result.log[-3000:]
    written = sorted(url.removeprefix(site.base) for url in result.urls)
    assert written == sorted(f"/book/{c}.html" for c in _BookSite.CHAPTERS)
    [start] = error_lines(errors)
    assert start["url"] == f"{site.base}/book" and start["class"] == "duplicate"
    assert start["detail"] == f"same markdown as {site.base}/book/intro.html"


def test_copies_are_written_once_and_recorded(crawl, tmp_path):
    errors = tmp_path / "errors.jsonl"
    with AliasSite(docs=5) as site:
        result = crawl(f"start={site.base}/", f"errors={errors}")
    assert result.returncode == 0, result.log[-3000:]
    check_each_document_once(site, result.items, error_lines(errors))
    assert result.stat("crawlyx/copies/dropped") == str(len(site.copies()))
    # The summary counts them apart from the errors.
    assert (
        "links seen before, errors: none; other addresses of pages written: duplicate 10"
        in result.log
    )


def test_two_processes_write_each_document_once(tmp_path, redis_url):
    settings = {"CRAWLYX_REDIS_URL": redis_url, **SLOW_HOST}
    job = f"copies-shared-{time.monotonic_ns()}"
    with AliasSite(docs=30, latency=0.1) as site:
        # The documents held until both processes lease some (tests/conftest.py).
        gate = Gate(site, "answer", lambda path: path.startswith("/docs/"))
        procs, outs, errors = [], [], []
        for name in ("a", "b"):
            out, err = tmp_path / f"{name}.jsonl", tmp_path / f"{name}-errors.jsonl"
            command = crawl_command(
                out,
                f"start={site.base}/",
                f"job={job}",
                f"errors={err}",
                settings={**settings, "USER_AGENT": f"crawlyx-test-{name}"},
            )
            procs.append(
                subprocess.Popen(
                    command, cwd=tmp_path, env=crawl_env(), stderr=subprocess.PIPE, text=True
                )
            )
            outs.append(out)
            errors.append(err)
        client = redis.Redis.from_url(redis_url)
        try:
            both = gate.open_when(lambda: len(lease_owners([client], job)) == 2)
        finally:
            client.close()
        logs = [proc.communicate(timeout=180)[1] for proc in procs]
        assert both, "the second process never leased a page"
        assert [proc.returncode for proc in procs] == [0, 0], logs
    items = [read_items(out) for out in outs]
    # Both processes took part: each wrote pages, or found copies.
    handled = [len(part) + len(error_lines(err)) for part, err in zip(items, errors, strict=True)]
    assert all(handled), handled
    check_each_document_once(site, [i for part in items for i in part], error_lines(*errors))


def test_a_resumed_job_writes_each_document_once(tmp_path, redis_url):
    settings = {"CRAWLYX_REDIS_URL": redis_url, **SLOW_HOST}
    job = f"copies-resumed-{time.monotonic_ns()}"
    out, errors = tmp_path / "pages.jsonl", tmp_path / "errors.jsonl"  # both appended
    command = crawl_command(
        out, "start={base}/", f"job={job}", f"errors={errors}", settings=settings
    )
    with AliasSite(docs=20, latency=0.05) as site:
        command = [part.replace("{base}", site.base) for part in command]
        proc = subprocess.Popen(command, cwd=tmp_path, env=crawl_env(), stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while sum(site.requests.values()) < 30 and time.monotonic() < deadline:
            time.sleep(0.02)
        proc.kill()  # outright: nothing runs on the way out
        proc.wait(30)
        first = read_items(out)
        final = subprocess.run(
            command, cwd=tmp_path, env=crawl_env(), capture_output=True, text=True, timeout=180
        )
        assert final.returncode == 0, final.stderr[-3000:]
    assert 0 < len(first) < len(read_items(out))  # killed midway, finished by the second run
    check_each_document_once(site, read_items(out), error_lines(errors))
    # Every page is done, copies too (the job finished), and counts only what was written.
    ended = listed(redis_url, tmp_path)[job]
    assert ended["state"] == "finished" and ended["pages"] == len(read_items(out))


def test_a_claim_left_by_a_killed_process_is_written_by_its_page(crawl, tmp_path, redis_url):
    """A process that claimed a document and died before writing it: its page, fetched
    again, finds its own claim and is written; the others stay copies of it."""
    with AliasSite(docs=2) as site:
        earlier = crawl(f"start={site.base}/", settings={"CRAWLYX_COPIES_ENABLED": "false"})
        digest = next(i["content_hash"] for i in earlier.items if i["url"].endswith("/docs/0"))
        job = f"copies-claimed-{time.monotonic_ns()}"
        claimant = f"{site.base}/docs/0?search=b"
        client = redis.Redis.from_url(redis_url)
        client.hset(State(client, job).key("copies"), bytes.fromhex(digest), claimant)
        client.close()
        errors = tmp_path / "errors.jsonl"
        result = crawl(f"start={site.base}/", f"job={job}", f"errors={errors}")
    assert result.returncode == 0, result.log[-3000:]
    assert claimant in result.urls
    lines = {line["url"]: line for line in error_lines(errors)}
    assert lines[f"{site.base}/docs/0"]["detail"] == f"same markdown as {claimant}"
    check_each_document_once(site, result.items, list(lines.values()))
