"""Finishes each page's markdown with what only the whole crawl knows.

The markdown itself is made in the worker pool (:mod:`crawlyx.content.workers`); here, in the
crawl process, blocks that repeat across the site's pages are dropped (see
:mod:`crawlyx.content.boilerplate`) and the content hash is taken of what remains (and
recorded in the job's link graph), and the page registry's answer to whether the page
changed is waited for.
"""

from __future__ import annotations

import asyncio
import hashlib

from crawlyx.content.boilerplate import RepeatedBlocks
from crawlyx.parts import crawl_parts


class MarkdownPipeline:
    def __init__(self, crawler, repeated: RepeatedBlocks | None):
        self.stats = crawler.stats
        self.repeated = repeated
        self.graph = crawl_parts(crawler).graph

    @classmethod
    def from_crawler(cls, crawler):
        settings = crawler.settings
        repeated = None
        if settings.getbool("CRAWLYX_MARKDOWN_MAIN_CONTENT") and settings.getbool(
            "CRAWLYX_MARKDOWN_SITE_BOILERPLATE"
        ):
            repeated = RepeatedBlocks()
        return cls(crawler, repeated)

    def process_item(self, item):
        changed = item.get("changed")
        if isinstance(changed, asyncio.Future):
            # The page registry's answer (crawlyx.demand.recrawl), with the crawl core's
            # next batch.
            return self._answered(changed, item)
        return self._finish(item)

    async def _answered(self, changed: asyncio.Future, item):
        item["changed"] = await changed
        return self._finish(item)

    def _finish(self, item):
        keys = item.pop("blocks", None)
        markdown = item.get("markdown")
        if markdown is None:
            return item
        if self.repeated is not None:
            markdown, dropped = self.repeated.filter(markdown, keys)
            self.stats.inc_value("crawlyx/markdown/repeated_blocks_dropped", dropped)
        item["markdown"] = markdown
        item["content_hash"] = hashlib.sha256(markdown.encode()).hexdigest()
        if self.graph is not None and markdown:  # pages without content are no duplicates
            self.graph.content_hash(item["url"], item["content_hash"])
        return item
