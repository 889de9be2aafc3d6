"""HTML to markdown, off the fetch path.

Conversion is CPU-bound (markdownify costs far more than fetching and link
extraction together), so it runs in a process pool: the reactor keeps downloading
and extracting links while the pool's workers use the other cores. The item waits
for its markdown; the crawl does not.
"""

from __future__ import annotations

import asyncio
import hashlib
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

from scrapy.exceptions import NotConfigured

from crawlyx.markdown import html_to_markdown


class MarkdownPipeline:
    def __init__(self, workers: int):
        self.workers = workers
        self.pool: ProcessPoolExecutor | None = None

    @classmethod
    def from_crawler(cls, crawler):
        settings = crawler.settings
        if not settings.getbool("CRAWLYX_MARKDOWN_ENABLED"):
            raise NotConfigured
        workers = settings.getint("CRAWLYX_MARKDOWN_WORKERS") or (os.cpu_count() or 1)
        return cls(max(1, workers))

    def open_spider(self):
        # forkserver: workers start from a clean interpreter, not a copy of the
        # reactor, its threads and its sockets.
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["crawlyx.markdown"])
        self.pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=context)

    def close_spider(self):
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)

    async def process_item(self, item):
        html = item.pop("html", None) if "html" in item else None
        if html is None:
            return item
        future = self.pool.submit(html_to_markdown, html, item["final_url"])
        markdown = await asyncio.wrap_future(future)
        item["markdown"] = markdown
        item["content_hash"] = hashlib.sha256(markdown.encode()).hexdigest()
        return item
