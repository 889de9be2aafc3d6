"""Finishes each page's markdown with what only the crawl process has.

The markdown itself is made in the worker pool (:mod:`crawlyx.content.workers`), from the
page alone: what a page's markdown holds never depends on which pages were read before it
or by which process. Here its content hash is taken (and recorded in the job's link
graph), and the page registry's answer to whether the page changed is waited for.
"""

from __future__ import annotations

import asyncio
import hashlib

from crawlyx.parts import shared_parts


class MarkdownPipeline:
    def __init__(self, graph):
        self.graph = graph  # the crawl's link-graph recorder; None with the graph off

    @classmethod
    def from_crawler(cls, crawler):
        return cls(shared_parts(crawler).graph)

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
        markdown = item.get("markdown")
        if markdown is None:
            return item
        item["content_hash"] = hashlib.sha256(markdown.encode()).hexdigest()
        if self.graph is not None and markdown:  # pages without content are no duplicates
            self.graph.content_hash(item["url"], item["content_hash"])
        return item
