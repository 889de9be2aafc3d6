"""HTML to markdown, off the fetch path.

Extraction and conversion are CPU-bound (markdownify costs far more than fetching and
link extraction together), so they run in a process pool: the reactor keeps
downloading and extracting links while the pool's workers use the other cores. The
item waits for its markdown; the crawl does not. Back in the crawl process, blocks
that repeat across the site's pages are dropped (see :mod:`crawlyx.boilerplate`).
"""

from __future__ import annotations

import asyncio
import hashlib
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from functools import partial

from scrapy.exceptions import NotConfigured

from crawlyx.boilerplate import RepeatedBlocks
from crawlyx.extract import page_markdown
from crawlyx.markdown import LINK_STYLES


def _lower_priority() -> None:
    # The crawl process (and Redis) wait on the network and on each other: give them the
    # CPU first, and let conversion use what is left. Throughput is the same, latency of
    # fetching and claiming is not.
    os.nice(10)


class MarkdownPipeline:
    def __init__(self, crawler, workers: int, convert, repeated: RepeatedBlocks | None):
        self.stats = crawler.stats
        self.workers = workers
        self.convert = convert
        self.repeated = repeated
        self.pool: ProcessPoolExecutor | None = None

    @classmethod
    def from_crawler(cls, crawler):
        settings = crawler.settings
        if not settings.getbool("CRAWLYX_MARKDOWN_ENABLED"):
            raise NotConfigured
        links = settings.get("CRAWLYX_MARKDOWN_LINKS")
        if links not in LINK_STYLES:
            raise ValueError(
                f"CRAWLYX_MARKDOWN_LINKS must be one of {', '.join(LINK_STYLES)}, not {links!r}"
            )
        main_content = settings.getbool("CRAWLYX_MARKDOWN_MAIN_CONTENT")
        convert = partial(page_markdown, main_content=main_content, links=links)
        repeated = None
        if main_content and settings.getbool("CRAWLYX_MARKDOWN_SITE_BOILERPLATE"):
            repeated = RepeatedBlocks()
        workers = settings.getint("CRAWLYX_MARKDOWN_WORKERS") or (os.cpu_count() or 1)
        return cls(crawler, max(1, workers), convert, repeated)

    def open_spider(self):
        # forkserver: workers start from a clean interpreter, not a copy of the
        # reactor, its threads and its sockets.
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["crawlyx.extract"])
        self.pool = ProcessPoolExecutor(
            max_workers=self.workers, mp_context=context, initializer=_lower_priority
        )

    def close_spider(self):
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)

    async def process_item(self, item):
        html = item.pop("html", None) if "html" in item else None
        if html is None:
            return item
        future = self.pool.submit(self.convert, html, item["final_url"])
        markdown = await asyncio.wrap_future(future)
        if self.repeated is not None:
            markdown, dropped = self.repeated.filter(markdown)
            self.stats.inc_value("crawlyx/markdown/repeated_blocks_dropped", dropped)
        item["markdown"] = markdown
        item["content_hash"] = hashlib.sha256(markdown.encode()).hexdigest()
        return item
