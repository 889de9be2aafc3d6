"""The page-reading pool: real worker processes, below the crawl process's priority."""

from __future__ import annotations

import asyncio
import os

import pytest

from crawlyx.fingerprint import url_fingerprint
from crawlyx.workers import PageWorkers


def _priority() -> int:
    return os.getpriority(os.PRIO_PROCESS, 0)


def test_workers_read_pages_at_a_lower_priority():
    workers = PageWorkers(1, main_content=True, links="inline")
    try:
        page = "<html><body><h1>Hi</h1><p>Text <a href='/b'>b</a></p></body></html>"
        read = asyncio.run(workers.read(page, "http://127.0.0.1:9/a", "http://127.0.0.1:9"))
        assert read["markdown"] == "# Hi\n\nText [b](http://127.0.0.1:9/b)\n"
        assert list(read["links"]) == ["http://127.0.0.1:9/b"]
        assert read["links"]["http://127.0.0.1:9/b"] == (
            "http://127.0.0.1:9/b",
            url_fingerprint("http://127.0.0.1:9/b"),
        )
        nice = workers.pool.submit(_priority).result(timeout=30)
        assert nice >= min(19, os.getpriority(os.PRIO_PROCESS, 0) + 10)
    finally:
        workers.close()


def test_bad_link_style_is_refused():
    with pytest.raises(ValueError, match="CRAWLYX_MARKDOWN_LINKS"):
        PageWorkers(1, main_content=True, links="footnotes")
