"""Cuts each page's markdown into chunks of at most ``-a chunks=N`` tokens.

Off unless the crawl is given ``-a chunks=N``: then every item gains ``chunks``, the list
:func:`crawlyx.content.chunks.chunk` makes of its markdown (``[]`` for an empty one). It
runs after the copies pipeline, so a page dropped as another's copy costs no chunking,
and on the final markdown, the one ``content_hash`` is taken of.

Chunking counts the tokens of every block and of every chunk, some 1.5 MB of markdown a
second on one core (a 600 KB page: 0.4 s; real pages: 4 to 7 ms on average, a fifth of
what making their markdown costs; bench/chunks.py), so it runs in the page workers
(crawlyx/content/workers.py), not on the reactor, which only sends the markdown there and
takes the chunks back. Each worker reads the tokenizer's vocabulary when it first chunks:
0.3 s and 40 MB more for each. It has the read's time budget
(``CRAWLYX_READ_TIMEOUT``): a page whose chunking runs past it, or kills its worker, is
written with ``chunks`` null rather than not at all, and logged.

Stats: ``crawlyx/chunks/pages``, ``crawlyx/chunks/chunks``, ``crawlyx/chunks/over`` (chunks
over the limit: one block bigger than it, each), ``crawlyx/chunks/failed``.
"""

from __future__ import annotations

import logging

from scrapy.exceptions import NotConfigured

from crawlyx.content.chunks import chunk
from crawlyx.parts import shared_parts

logger = logging.getLogger(__name__)


class ChunksPipeline:
    def __init__(self, crawler, parts, max_tokens: int):
        self.stats = crawler.stats
        self.max_tokens = max_tokens
        self.parts = parts  # the crawl's shared parts: its page workers chunk

    @classmethod
    def from_crawler(cls, crawler):
        try:
            max_tokens = crawler.spider.args.chunks
        except (RuntimeError, AttributeError):  # another spider, or none yet
            raise NotConfigured from None
        if max_tokens is None:  # no message: Scrapy would log one at WARNING for every crawl
            raise NotConfigured
        return cls(crawler, shared_parts(crawler), max_tokens)

    async def process_item(self, item):
        markdown = item.get("markdown")
        if markdown is None:
            return item
        if not markdown:
            item["chunks"] = []
            return item
        workers = self.parts.workers
        try:
            chunks = await workers.run(
                chunk, markdown, self.max_tokens, item["url"], timeout=workers.timeout
            )
        except Exception as exc:  # ReadTimeout, WorkerDied, a bug: the page is written
            logger.warning("crawlyx: chunks: %s not chunked: %r", item["url"], exc)
            self.stats.inc_value("crawlyx/chunks/failed")
            item["chunks"] = None
            return item
        item["chunks"] = chunks
        self.stats.inc_value("crawlyx/chunks/pages")
        self.stats.inc_value("crawlyx/chunks/chunks", len(chunks))
        over = sum(piece["tokens"] > self.max_tokens for piece in chunks)
        if over:
            self.stats.inc_value("crawlyx/chunks/over", over)
        return item
