"""The README's quick start, run as it is written: its ``crawlyx`` commands, in order, from
a folder outside the checkout, with the example site's URL replaced by a fixture site's.
A command the README shows that does not work fails here."""

from __future__ import annotations

import re
import shlex
import signal
import subprocess
import time
from pathlib import Path

from tests.conftest import read_items
from tests.crawl.test_crawl import start_url
from tests.sites.site import SiteServer
from tests.test_cli import crawlyx, crawlyx_script, outside_env

README = Path(__file__).resolve().parents[2] / "README.md"
EXAMPLE = "https://docs.example.com/"


def quick_start() -> list[list[str]]:
    """The ``crawlyx`` commands of the quick start's shell blocks, comments dropped."""
    section = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
    lines = [line.split("#", 1)[0].strip() for block in blocks for line in block.splitlines()]
    return [shlex.split(line) for line in lines if line.startswith("crawlyx ")]


def test_the_quick_start_works_as_written(outside):
    commands = quick_start()
    assert [c[:2] for c in commands] == [
        ["crawlyx", "crawl"], ["crawlyx", "crawl"], ["crawlyx", "crawl"], ["crawlyx", "jobs"],
        ["crawlyx", "audit"], ["crawlyx", "crawl"], ["crawlyx", "crawl"], ["crawlyx", "crawl"],
    ]  # fmt: skip
    with SiteServer(generated=60, latency=0.02) as site:
        start = start_url(site)

        def args(command: list[str]) -> list[str]:
            return [start if arg == EXAMPLE else arg for arg in command[1:]]

        first, pausing, resuming, jobs, audit, outlines, origin, capped = commands
        # The first crawl.
        result = crawlyx(*args(first), cwd=outside)
        assert result.returncode == 0, result.stderr[-3000:]
        assert {item["url"] for item in read_items(outside / "pages.jsonl")} == (
            site.expected_pages()
        )
        # Paused with Ctrl-C, then resumed by name: every page once in the file.
        proc = subprocess.Popen(
            [crawlyx_script(), *args(pausing)], cwd=outside, env=outside_env(),
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        fetched, deadline = sum(site.counts.values()), time.monotonic() + 60
        while sum(site.counts.values()) < fetched + 15 and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
        assert "crawlyx: paused: " in proc.stderr.read()
        result = crawlyx(*args(resuming), cwd=outside)
        assert result.returncode == 0, result.stderr[-3000:]
        urls = [item["url"] for item in read_items(outside / "pages.jsonl")]
        assert len(urls) == len(set(urls)) and set(urls) == site.expected_pages()
        # The next commands.
        listed = crawlyx(*args(jobs), cwd=outside)
        assert re.search(r"^docs +finished ", listed.stdout, re.M), listed.stdout
        result = crawlyx(*args(audit), cwd=outside)
        assert result.returncode == 0 and (outside / "audit.md").read_text().startswith("# ")
        result = crawlyx(*args(outlines), cwd=outside)
        assert result.returncode == 0, result.stderr[-3000:]
        assert (outside / "tree.md").exists() and (outside / "llms.txt").exists()
        for command in (origin, capped):
            result = crawlyx(*args(command), cwd=outside)
            assert result.returncode == 0, result.stderr[-3000:]
            assert read_items(outside / "pages.jsonl")
