"""The markdown feed formats, as a user types them: ``-O pages.md`` (every page in one
file, in the site's reading order) and ``-O site/:mdfiles`` or ``FEEDS`` (a file per page
in a folder mirroring the site's paths); and the folder's names, whatever the URL."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import PurePosixPath

import pytest

from crawlyx.exporters import yaml_string
from crawlyx.exporters.folder import MarkdownFilesExporter
from crawlyx.exporters.onefile import MarkdownExporter
from crawlyx.exporters.paths import MAX_BYTES, page_path
from tests.conftest import TEST_DEFAULTS, crawl_env
from tests.sites.docs_sites import PAGES, DocsSite


def scrapy_crawl(tmp_path, redis_url, *options: str, args=(), settings=None):
    """``scrapy crawl site`` with ``options`` (-O ...) as typed; its completed process."""
    command = [sys.executable, "-m", "scrapy", "crawl", "site", *options]
    for arg in args:
        command += ["-a", arg]
    settings = {**TEST_DEFAULTS, "CRAWLYX_REDIS_URL": redis_url, **(settings or {})}
    for name, value in settings.items():
        command += ["-s", f"{name}={value}"]
    return subprocess.run(
        command, cwd=tmp_path, env=crawl_env(), capture_output=True, text=True, timeout=120
    )


def sources(text: str) -> list[str]:
    return re.findall(r"^Source: (\S+)$", text, re.M)


def test_one_file_in_the_sites_reading_order(tmp_path, redis_url):
    with DocsSite("sphinx") as site:
        book = f"{site.base}/book/"
        done = scrapy_crawl(tmp_path, redis_url, "-O", "pages.md", args=[f"start={book}index.html"])
        assert done.returncode == 0, done.stderr[-3000:]
        text = (tmp_path / "pages.md").read_text()
        # The navigation's order (Zeta before Alpha), not the crawl's nor the URLs'.
        assert sources(text) == [book + path for path, _, _ in PAGES], text
        sections = text.split("\n---\n\n")
        assert len(sections) == len(PAGES)
        for section, (path, title, _) in zip(sections, PAGES, strict=True):
            assert section.startswith(f"Source: {book}{path}\n\n# {title}\n\n"), section[:200]
        assert not list(tmp_path.glob("*.spool.jsonl"))  # the spool is gone

        # -o appends this run's pages as further sections (a new job: all of them again).
        again = scrapy_crawl(
            tmp_path, redis_url, "-o", "pages.md", args=[f"start={book}index.html"]
        )
        assert again.returncode == 0, again.stderr[-3000:]
        text = (tmp_path / "pages.md").read_text()
        assert sources(text) == [book + path for path, _, _ in PAGES] * 2
        assert len(text.split("\n---\n\n")) == 2 * len(PAGES)

        # With the link graph off: the crawl's order, said nowhere else; every page once.
        off = scrapy_crawl(
            tmp_path,
            redis_url,
            "-O",
            "off.txt:md",
            args=[f"start={book}index.html"],
            settings={"CRAWLYX_GRAPH_ENABLED": "false"},
        )
        assert off.returncode == 0, off.stderr[-3000:]
        found = sources((tmp_path / "off.txt").read_text())
        assert sorted(found) == sorted(book + path for path, _, _ in PAGES)
        # The start page is written once the pages it links to are done (a copy of it
        # among them would hold its document: crawlyx/pipelines/copies.py).
        assert found[-1] == book + "index.html"


def test_a_file_per_page_in_a_folder(tmp_path, redis_url):
    with DocsSite("mkdocs") as site:
        book = f"{site.base}/book/"
        done = scrapy_crawl(tmp_path, redis_url, "-O", "site/:mdfiles", args=[f"start={book}"])
        assert done.returncode == 0, done.stderr[-3000:]
        folder = tmp_path / "site"
        files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
        assert files == [
            "book/alpha.md",
            "book/alpha/depth.md",
            "book/index.md",
            "book/zeta.md",
            "manifest.jsonl",
        ]
        manifest = [json.loads(line) for line in (folder / "manifest.jsonl").open()]
        assert sorted(entry["file"] for entry in manifest) == files[:-1]
        zeta = next(entry for entry in manifest if entry["file"] == "book/zeta.md")
        assert zeta["url"] == book + "zeta.html" and zeta["title"].startswith("Zeta")
        text = (folder / "book/zeta.md").read_text()
        head = f'url: "{book}zeta.html"\ntitle: "{zeta["title"]}"'
        front = f'---\n{head}\nfetched_at: "{zeta["fetched_at"]}"\n---\n\n'
        assert text.startswith(front + "# Zeta\n\n"), text[:300]
        assert not list(folder.rglob(".*"))  # no temporary file left

        # FEEDS, as a project sets it, alongside a JSON lines feed.
        feeds = json.dumps({"out/": {"format": "mdfiles"}, "pages.jsonl": {"format": "jsonlines"}})
        both = scrapy_crawl(tmp_path, redis_url, args=[f"start={book}"], settings={"FEEDS": feeds})
        assert both.returncode == 0, both.stderr[-3000:]
        assert (tmp_path / "out/book/alpha/depth.md").is_file()
        assert len((tmp_path / "pages.jsonl").read_text().splitlines()) == len(PAGES)


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("https://h/guide/intro.html", "guide/intro.md"),
        ("https://h/guide/", "guide/index.md"),
        ("https://h/", "index.md"),
        ("https://h/guide", "guide.md"),
        ("https://h/notes.md", "notes.md"),
        ("https://h/manual.pdf", "manual.pdf.md"),
        ("https://h/a/../../etc/passwd", "a/_/_/etc/passwd.md"),
        ("https://h/%2e%2e/%2E%2E/x", "_/_/x.md"),
        ("https://h/a/..%2F..%2Fetc%2Fpasswd", "a/_.._.._etc_passwd.md"),
        ("https://h/a%5C..%5C..%5Cb", "a_.._.._b.md"),
        ("https://h/C:%5CWindows/x", "C__Windows/x.md"),
        ("https://h//etc/passwd", "etc/passwd.md"),
        ("https://h/CON", "_CON.md"),
        ("https://h/nul.txt", "_nul.txt.md"),
        ("https://h/com1/lpt9.html", "_com1/_lpt9.md"),
        ("https://h/a%3Cb%3E%22c%22%7C%3F%2A", "a_b__c____.md"),
        ("https://h/trailing.%20", "trailing.md"),
        ("https://h/.hidden/x", "_.hidden/x.md"),
        ("https://h/%00nul", "_nul.md"),
    ],
)
def test_names_are_safe_and_stay_in_the_folder(url, path):
    assert page_path(url).as_posix() == path


def test_queries_long_names_and_unicode():
    a, b = page_path("https://h/search?q=a"), page_path("https://h/search?q=b")
    assert a != b and re.fullmatch(r"search-q[0-9a-f]{8}\.md", a.name)
    long = page_path("https://h/" + "é" * 400 + "/" + "x" * 1000)
    assert all(len(part.encode()) <= MAX_BYTES for part in long.parts)
    other = page_path("https://h/" + "é" * 400 + "/" + "x" * 999 + "y")
    assert long != other  # cut alike, told apart by their hash
    # Decomposed and composed forms are one name (macOS normalizes them).
    assert page_path("https://h/cafe%CC%81") == page_path("https://h/caf%C3%A9")
    for part in long.parts + a.parts:
        assert "/" not in part and "\\" not in part and part not in ("", ".", "..")


def test_hostile_and_colliding_urls_never_leave_the_folder(tmp_path):
    folder = tmp_path / "site"
    folder.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (folder / "linked").symlink_to(outside, target_is_directory=True)
    with (folder / "manifest.jsonl").open("wb") as manifest:
        exporter = MarkdownFilesExporter(manifest)
        exporter.start_exporting()
        for url in (
            "https://h/Guide/",
            "https://h/guide/",  # one name with the first on a case-insensitive system
            "https://h/linked/x.html",  # a symbolic link out of the folder
            "https://h/a/..%2F..%2F..%2Fescape",
            "https://other.example/Guide/",  # another host, same path
        ):
            exporter.export_item({"url": url, "title": "T", "markdown": "# T\n"})
        exporter.finish_exporting()
    assert not list(outside.iterdir())
    entries = [json.loads(line) for line in (folder / "manifest.jsonl").open()]
    files = [entry["file"] for entry in entries]
    assert files[0] == "Guide/index.md"
    assert len({name.casefold() for name in files}) == len(files) == 5
    for name in files:
        path = (folder / name).resolve()
        assert path.is_relative_to(folder.resolve()) and path.is_file()
        assert PurePosixPath(name).parts[0] != "linked"


def test_front_matter_strings_are_yaml_whatever_they_hold():
    yaml = pytest.importorskip("yaml")
    for value in ('a "quoted": title', "line\nbreak", "tab\t\\ slash", "\u2028\x85\ufeff", "é—ß"):
        assert yaml.safe_load(f"title: {yaml_string(value)}") == {"title": value}
    assert yaml_string(None) == "null"


def test_a_spool_a_killed_run_left_is_taken_into_the_appended_file(tmp_path):
    out = tmp_path / "pages.md"
    out.write_text("Source: https://h/old\n\n# Old\n")
    left = {"url": "https://h/a", "node": "https://h/a", "title": "A", "markdown": "# A\n"}
    spool = tmp_path / "pages.md.spool.jsonl"
    spool.write_bytes(json.dumps(left).encode() + b'\n{"url": "https://h/cut", "no')
    with out.open("ab") as file:  # -o: the killed run's page is this run's too
        exporter = MarkdownExporter(file)
        exporter.start_exporting()
        exporter.export_item({"url": "https://h/b", "title": "B", "markdown": ""})
        exporter.finish_exporting()
    text = out.read_text()
    assert sources(text) == ["https://h/old", "https://h/a", "https://h/b"]
    assert text.endswith("\n---\n\nSource: https://h/b\n\n# B\n")  # its title, nothing else
    assert not spool.exists()
    spool.write_bytes(json.dumps(left).encode() + b"\n")
    with out.open("wb") as file:  # -O: a new file, a new spool
        exporter = MarkdownExporter(file)
        exporter.start_exporting()
        exporter.export_item({"url": "https://h/c", "title": "C", "markdown": "# C"})
        exporter.finish_exporting()
    assert out.read_text() == "Source: https://h/c\n\n# C\n"
