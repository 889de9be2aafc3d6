"""The ``crawlyx`` console script: the project's commands from a folder with no scrapy.cfg,
run as a user runs them (the script pip installs, in a subprocess)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import crawl_env, read_items
from tests.crawl.test_crawl import start_url


def crawlyx_script() -> str:
    """The installed script: beside this Python, else on PATH."""
    beside = Path(sys.executable).parent / "crawlyx"
    found = str(beside) if beside.exists() else shutil.which("crawlyx")
    assert found, "the crawlyx script is not installed: pip install -e '.[test]'"
    return found


def outside_env(**extra: str) -> dict:
    """The environment of a user's shell: nothing pointing at the checkout."""
    env = crawl_env()
    for name in ("SCRAPY_SETTINGS_MODULE", "SCRAPY_PROJECT", "PYTHONPATH"):
        env.pop(name, None)
    env.update(extra)
    return env


def crawlyx(*args: str, cwd: Path, timeout: float = 120, **env: str):
    return subprocess.run(
        [crawlyx_script(), *args],
        cwd=cwd,
        env=outside_env(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_scrapy_alone_does_not_know_the_crawl_outside_the_checkout(outside):
    env = outside_env()
    command = [sys.executable, "-m", "scrapy", "crawl", "site"]
    result = subprocess.run(command, cwd=outside, env=env, capture_output=True, text=True)
    assert result.returncode != 0
    assert "The crawl command is not available from this location" in result.stdout


def test_crawl_jobs_and_audit_from_any_folder(site, outside):
    # As a user runs it: no Redis configured (the embedded one, under ./.crawlyx).
    result = crawlyx("crawl", start_url(site), "-O", "pages.jsonl", "-a", "job=cli", cwd=outside)
    assert result.returncode == 0, result.stderr[-3000:]
    items = read_items(outside / "pages.jsonl")
    assert {item["url"] for item in items} == site.expected_pages()
    assert "crawlyx: job cli (resume with -a job=cli)" in result.stderr
    assert "crawlyx: finished:" in result.stderr
    assert (outside / ".crawlyx").is_dir()

    jobs = crawlyx("jobs", "--json", cwd=outside)
    assert jobs.returncode == 0, jobs.stderr[-3000:]
    [job] = [job for job in json.loads(jobs.stdout) if job["job"] == "cli"]
    assert job["state"] == "finished" and job["pages"] == len(items)

    audit = crawlyx("audit", "cli", "-o", "audit.json", "--tree", "tree.md", cwd=outside)
    assert audit.returncode == 0, audit.stderr[-3000:]
    assert json.loads((outside / "audit.json").read_text())["summary"]["pages"] >= len(items)
    assert (outside / "tree.md").read_text().startswith("# ")

    # The same job again: refused by the project's crawl command, status 2, with the
    # commands to run instead as this user types them.
    again = crawlyx("crawl", start_url(site), "-O", "again.jsonl", "-a", "job=cli", cwd=outside)
    assert again.returncode == 2
    assert "crawlyx: job cli finished on " in again.stderr
    assert again.stderr.rstrip().endswith("or crawlyx jobs --drop cli")
    # A finished job is kept a week, and the table says so.
    table = crawlyx("jobs", cwd=outside)
    [row] = [line for line in table.stdout.splitlines() if line.startswith("cli ")]
    assert " finished " in row and " 6d 23h " in row
    assert table.stdout.rstrip().endswith(
        "finished and unnamed jobs are kept 7 days after their last run "
        "(CRAWLYX_JOB_TTL_DAYS); crawlyx jobs --drop NAME removes one now"
    )


def test_a_crawl_whose_pages_would_go_nowhere_is_refused(site, outside):
    result = crawlyx("crawl", start_url(site), "-a", "max_pages=5", "-L", "WARNING", cwd=outside)
    assert result.returncode == 2
    assert result.stderr == (
        "crawlyx: the pages would go nowhere: add -O pages.jsonl "
        "(or -o to append to a file, or a FEEDS setting)\n"
    )
    assert sum(site.counts.values()) == 0 and not (outside / ".crawlyx").exists()
    # A feed named by the FEEDS setting is an output as -O is.
    feeds = json.dumps({"out.jsonl": {"format": "jsonlines"}})
    fed = crawlyx(
        "crawl", start_url(site), "-a", "max_pages=2", "-s", f"FEEDS={feeds}", "-L", "WARNING",
        cwd=outside,
    )  # fmt: skip
    assert fed.returncode == 0, fed.stderr[-3000:]
    assert len(read_items(outside / "out.jsonl")) == 2


def test_crawl_takes_scrapy_crawl_options(site, outside, redis_url):
    result = crawlyx(
        "crawl", start_url(site), "-o", "pages.jsonl", "-a", "max_pages=3",
        "-s", f"CRAWLYX_REDIS_URL={redis_url}", "-L", "WARNING", cwd=outside,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(read_items(outside / "pages.jsonl")) == 3
    assert " INFO: " not in result.stderr  # -L WARNING reached Scrapy
    assert not (outside / ".crawlyx").exists()  # -s reached the settings


def test_usage_and_bad_command_lines(outside):
    for args in (["--help"], ["-h"]):
        result = crawlyx(*args, cwd=outside)
        assert result.returncode == 0
        assert result.stdout.startswith("usage: crawlyx crawl URL [scrapy crawl options]\n")
        assert "jobs" in result.stdout and "SCRAPY_PROJECT=" in result.stdout
    bare = crawlyx(cwd=outside)
    assert bare.returncode == 2 and bare.stderr.startswith("usage: crawlyx crawl URL")
    for args in (["crawl"], ["crawl", "-O", "x.jsonl"]):
        result = crawlyx(*args, cwd=outside)
        assert result.returncode == 2
        assert result.stderr == (
            "crawlyx: crawl needs the start URL first: crawlyx crawl URL [options]\n"
        )
    assert not (outside / "x.jsonl").exists()
    help_crawl = crawlyx("crawl", "-h", cwd=outside)
    assert help_crawl.returncode == 0 and "--output" in help_crawl.stdout


def test_settings_and_profiles(outside):
    def setting(name: str, **env: str) -> str:
        result = crawlyx("settings", "--get", name, cwd=outside, **env)
        assert result.returncode == 0, result.stderr[-2000:]
        return result.stdout.strip()

    assert setting("COMMANDS_MODULE") == "crawlyx.commands"
    assert setting("DOWNLOAD_DELAY") == "0"  # crawlyx.settings
    assert setting("DOWNLOAD_DELAY", SCRAPY_PROJECT="fragile") == "2.0"
    shared = setting("CRAWLYX_MARKDOWN_WORKERS", SCRAPY_PROJECT="shared")
    assert shared == "2"
    chosen = setting("DOWNLOAD_DELAY", SCRAPY_SETTINGS_MODULE="settings.fragile")
    assert chosen == "2.0"
    unknown = crawlyx("jobs", cwd=outside, SCRAPY_PROJECT="nope")
    assert unknown.returncode == 2
    assert unknown.stderr.startswith("crawlyx: unknown profile SCRAPY_PROJECT=nope; one of ")
    assert "fragile" in unknown.stderr


def test_the_console_script_is_the_installed_entry_point():
    with open(crawlyx_script()) as script:
        assert "crawlyx.cli" in script.read()
    assert os.access(crawlyx_script(), os.X_OK)


def test_a_reader_that_stops_early_gets_no_traceback(outside):
    """``crawlyx jobs | head``: the pipe closes before the output is all written."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run(
            [crawlyx_script(), "--help"], cwd=outside, env=outside_env(),
            stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60,
        )  # fmt: skip
    finally:
        os.close(write_end)
    assert result.returncode == 1
    assert result.stderr == ""
