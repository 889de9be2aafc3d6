"""The site audit end to end: real crawls of the audit fixture site (tests/sites/audit_site.py)
record the graph in Redis, and the audit, the tree and llms.txt are made from it, by the
crawl itself and by ``scrapy audit JOB``. One process and two give the same files.

The site's repeated-block filter is off: it learns per process, in crawl order, and
would make the pages' markdown (so their content hashes) depend on who crawled what.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import redis

from crawlyx.frontier.state import KEY_PREFIX, OWNERS
from tests.conftest import crawl_command, crawl_env, read_items
from tests.sites.audit_site import AuditSite

# The audit finds the site's exact copies in the link graph; the output writes a copy once
# (tests/pipelines/test_copies.py), which is off here so that every page's item can be compared.
SETTINGS = {"CRAWLYX_COPIES_ENABLED": "false"}
# Two requests at a time per host (for the whole job), and slow answers: both processes
# get pages to crawl.
SLOW_HOST = {"CRAWLYX_WINDOW_MIN": 1, "CRAWLYX_WINDOW_START": 2, "CRAWLYX_WINDOW_MAX": 2}


def expected_audit(b: str, dup_hash: str) -> dict:
    def src(path, anchor, via=None):
        return {"url": b + path, "anchor": anchor, "via": via and b + via}

    return {
        "schema": 1,
        "start": b + "/",
        "graph_truncated": False,
        "skipped": [],
        "sources_complete": True,
        "summary": {
            "urls": 31,
            "pages": 22,
            "links": 27,
            "broken_links": 2,
            "redirect_chains": 1,
            "redirect_loops": 1,
            "links_to_redirects": 4,
            "orphans": 1,
            "noindex": 1,
            "robots_blocked": 1,
            "canonical": 3,
            "exact_duplicate_groups": 1,
            "near_duplicate_groups": 1,
            "duplicate_titles": 1,
            "missing_titles": 1,
            "duplicate_descriptions": 0,
            "missing_descriptions": 1,
            "too_deep": 1,
        },  # fmt: skip
        "broken_links": [
            {
                "url": b + "/error",
                "status": 500,
                "error": "http_5xx",
                "sources": [src("/", "Server error")],
            },
            {
                "url": b + "/missing",
                "status": 404,
                "error": "http_4xx",
                "sources": [
                    src("/", "Missing page"),
                    src("/about", "Gone"),
                    src("/about", "Moved", via="/gone"),
                ],
            },
        ],  # fmt: skip
        "redirects": {
            "chains": [
                {
                    "url": b + "/r1",
                    "hops": [{"url": b + "/r1", "status": 301}, {"url": b + "/r2", "status": 302}],
                    "final": b + "/r3",
                    "final_status": 200,
                },
            ],  # fmt: skip
            "loops": [{"loop": [b + "/loop-a", b + "/loop-b", b + "/loop-a"]}],
            "links_to_redirects": [
                {"source": b + "/", "target": b + "/loop-a", "anchor": "Loop", "final": None},
                {
                    "source": b + "/",
                    "target": b + "/old",
                    "anchor": "Old page",
                    "final": b + "/new",
                },
                {"source": b + "/", "target": b + "/r1", "anchor": "Chain", "final": b + "/r3"},
                {
                    "source": b + "/about",
                    "target": b + "/gone",
                    "anchor": "Moved",
                    "final": b + "/missing",
                },
            ],  # fmt: skip
        },
        # In the sitemap: /, the start (never an orphan); /new, linked through /old.
        "orphans": [{"url": b + "/orphan", "status": 200}],
        "noindex": [{"url": b + "/noindex", "robots": ["noindex"]}],
        "robots_blocked": [{"url": b + "/private/page", "sources": [src("/", "Private")]}],
        "canonical": [
            {
                "url": b + "/canon-404",
                "canonical": b + "/missing",
                "problem": "non_200",
                "canonical_status": 404,
                "canonical_error": "http_4xx",
                "canonical_redirect": None,
                "canonical_canonical": None,
            },
            {
                "url": b + "/canon-chain",
                "canonical": b + "/canon-redirect",
                "problem": "chained",
                "canonical_status": 200,
                "canonical_error": None,
                "canonical_redirect": None,
                "canonical_canonical": b + "/old",
            },
            {
                "url": b + "/canon-redirect",
                "canonical": b + "/old",
                "problem": "redirect",
                "canonical_status": 301,
                "canonical_error": None,
                "canonical_redirect": b + "/new",
                "canonical_canonical": None,
            },
        ],  # fmt: skip
        "duplicates": {
            "exact": [{"content_hash": dup_hash, "urls": [b + "/dup-a", b + "/dup-b"]}],
            "near": [{"urls": [b + "/near-a", b + "/near-b"], "min_similarity": 0.9531}],
            "titles": {
                "duplicate": [{"title": "Same title", "urls": [b + "/same-a", b + "/same-b"]}],
                "missing": [{"url": b + "/untitled"}],
            },
            "descriptions": {"duplicate": [], "missing": [{"url": b + "/untitled"}]},
        },
        "depth": {
            "max_depth": 4,
            # 1: the 14 pages / links, and /new and /r3 through their redirects.
            "distribution": {"0": 1, "1": 15, "2": 2, "3": 1, "4": 1, "5": 1},
            "unreachable": [b + "/orphan"],
            "too_deep": [{"url": b + "/deep/5", "depth": 5}],
        },
    }


def run(command, cwd, timeout=120):
    return subprocess.run(
        command, cwd=cwd, env=crawl_env(), capture_output=True, text=True, timeout=timeout
    )


def scrapy_audit(redis_url, job, *args, cwd):
    command = [sys.executable, "-m", "scrapy", "audit", job, *args]
    return run(command + ["-s", f"CRAWLYX_REDIS_URL={redis_url}"], cwd)


def test_crawl_audits_the_fixture_site_exactly(tmp_path, redis_url):
    files = {name: tmp_path / name for name in ("audit.json", "tree.md", "llms.txt", "full.txt")}
    with AuditSite() as site:
        out = tmp_path / "pages.jsonl"
        command = crawl_command(
            out, f"start={site.base}/", "job=audit-one",
            f"audit={files['audit.json']}", f"tree={files['tree.md']}",
            f"llms_txt={files['llms.txt']}", f"llms_full={files['full.txt']}",
            settings={"CRAWLYX_REDIS_URL": redis_url, **SETTINGS},
        )  # fmt: skip
        result = run(command, tmp_path)
        assert result.returncode == 0, result.stderr[-3000:]
        items = {item["url"][len(site.base) :]: item for item in read_items(out)}
        report = json.loads(files["audit.json"].read_text())
        assert report == expected_audit(site.base, items["/dup-a"]["content_hash"])
        # The findings are logged when the crawl ends, what to fix first first.
        assert "site audit of 22 pages:\n- broken links: 2\n" in result.stderr

        tree = files["tree.md"].read_text().splitlines()
        assert tree[:3] == ["# Home", "", f"- [Home]({site.base}/)"]
        assert f"    - [Page /behind-noindex]({site.base}/behind-noindex)" in tree
        assert f"          - [Page /deep/5]({site.base}/deep/5)" in tree
        orphan = f"- [Page /orphan]({site.base}/orphan)"
        assert tree[-3:] == ["## Not linked from the start page", "", orphan]

        llms = files["llms.txt"].read_text()
        assert llms.startswith("# Home\n\n> The audited site\n\n## Overview\n\n")
        assert f"- [Page /about]({site.base}/about): About /about\n" in llms
        assert f"{site.base}/noindex)" not in llms  # opted out
        assert f"- [Page /behind-noindex]({site.base}/behind-noindex)" in llms
        full = files["full.txt"].read_text()
        assert full.startswith(f"Source: {site.base}/\n\n{items['/']['markdown'].strip()}\n")
        assert full.count("\nSource: ") == len(items) - 1  # every emitted page, once

        # scrapy audit reruns it on the finished job: the same report, as markdown too.
        again = scrapy_audit(redis_url, "audit-one", "-o", str(tmp_path / "again.json"),
                             "--llms-full", str(tmp_path / "again.txt"), cwd=tmp_path)  # fmt: skip
        assert again.returncode == 0, again.stderr
        assert json.loads((tmp_path / "again.json").read_text()) == report
        assert (tmp_path / "again.txt").read_text() == full
        md = scrapy_audit(redis_url, "audit-one", "-o", str(tmp_path / "a.md"), cwd=tmp_path)
        assert md.returncode == 0, md.stderr
        assert "| broken links | 2 |" in (tmp_path / "a.md").read_text()


def owners(redis_url: str, job: str) -> int:
    """How many crawl processes the job has had: the members of its owners' sorted set."""
    client = redis.Redis.from_url(redis_url)
    try:
        return client.zcard(f"{KEY_PREFIX}:{{{job}}}:{OWNERS}")
    finally:
        client.close()


def test_two_processes_give_the_same_audit_and_tree_as_one(tmp_path, redis_url):
    settings = {"CRAWLYX_REDIS_URL": redis_url, **SETTINGS, **SLOW_HOST}
    with AuditSite() as site:
        one = run(
            crawl_command(tmp_path / "one.jsonl", f"start={site.base}/", "job=audit-single",
                          settings=settings), tmp_path)  # fmt: skip
        assert one.returncode == 0, one.stderr[-3000:]
        # Until both processes are up, and slowly enough for an idle one's next look at
        # the frontier (the engine's 5 s heartbeat): each gets a share of the site.
        site.hold()
        site.latency = 0.5
        procs = []
        for name in ("a", "b"):
            command = crawl_command(
                tmp_path / f"{name}.jsonl", f"start={site.base}/", "job=audit-pair",
                settings={**settings, "USER_AGENT": f"crawlyx-test-{name}"},
            )  # fmt: skip
            procs.append(
                subprocess.Popen(
                    command, cwd=tmp_path, env=crawl_env(), stderr=subprocess.PIPE, text=True
                )  # fmt: skip
            )
        deadline = time.monotonic() + 60
        while owners(redis_url, "audit-pair") < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert owners(redis_url, "audit-pair") == 2
        site.release()
        logs = [proc.communicate(timeout=180)[1] for proc in procs]
        assert [proc.returncode for proc in procs] == [0, 0], logs
    pages = {agent: len(paths) for agent, paths in site.agents.items()}
    assert pages.get("crawlyx-test-a") and pages.get("crawlyx-test-b"), pages  # both crawled
    outputs = {}
    for job in ("audit-single", "audit-pair"):
        audit_path, tree_path = tmp_path / f"{job}.json", tmp_path / f"{job}.md"
        result = scrapy_audit(redis_url, job, "-o", str(audit_path), "--tree", str(tree_path),
                              cwd=tmp_path)  # fmt: skip
        assert result.returncode == 0, result.stderr
        outputs[job] = (json.loads(audit_path.read_text()), tree_path.read_text())
    assert outputs["audit-pair"] == outputs["audit-single"]
    assert outputs["audit-single"][0]["summary"]["pages"] == 22


def test_a_truncated_graph_skips_the_checks_that_need_it_whole(tmp_path, redis_url):
    path = tmp_path / "audit.json"
    with AuditSite() as site:
        command = crawl_command(
            tmp_path / "pages.jsonl", f"start={site.base}/", "job=audit-truncated",
            f"audit={path}",
            settings={"CRAWLYX_REDIS_URL": redis_url, "CRAWLYX_GRAPH_MAX_EDGES": 5, **SETTINGS},
        )  # fmt: skip
        result = run(command, tmp_path)
        assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(path.read_text())
    assert report["graph_truncated"] is True and report["sources_complete"] is False
    assert report["skipped"] == ["orphans", "depth"]
    assert report["orphans"] is None and report["depth"] is None
    assert report["summary"]["orphans"] is None and report["summary"]["too_deep"] is None
    assert report["summary"]["links"] <= 5
    # What each page is, it still says.
    assert report["noindex"] == [{"url": site.base + "/noindex", "robots": ["noindex"]}]
    assert "link graph truncated: orphans, depth not checked" in result.stderr
