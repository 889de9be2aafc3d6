"""The download handler of a crawl that may render: scrapy-playwright's, one for both
schemes.

Scrapy builds one handler per scheme, and each scrapy-playwright handler starts its own
Playwright driver and browser, with its own page limit. Here http and https share one
instance: one driver, at most one browser, ``CRAWLYX_RENDER_MAX_PAGES`` pages in all.
The Playwright driver starts with the first page to render, not with the crawl: a
``render=auto`` crawl of a site without JavaScript shells never starts it. Installed by
:func:`crawlyx.render.configure` only when the crawl may render; requests without
``meta["playwright"]`` go to Scrapy's own HTTP handler underneath.
"""

from __future__ import annotations

import asyncio
from weakref import WeakKeyDictionary

from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler

_shared: WeakKeyDictionary = WeakKeyDictionary()


class BrowserHandler(ScrapyPlaywrightDownloadHandler):
    @classmethod
    def from_crawler(cls, crawler):
        handler = _shared.get(crawler)
        if handler is None:
            handler = _shared[crawler] = cls(crawler)
        return handler

    def __init__(self, crawler):
        super().__init__(crawler)
        self._closed = False
        self._started = False
        self._start_lock = asyncio.Lock()

    async def _maybe_launch_in_thread(self) -> None:
        """At engine start (scrapy-playwright launches its driver here): nothing yet."""

    async def _download_request(self, request, spider=None):
        async with self._start_lock:
            if not self._started:
                await self._launch()  # the Playwright driver; the browser comes next
                self._started = True
        return await super()._download_request(request, spider)

    async def close(self) -> None:
        if self._closed:  # registered for http and for https
            return
        self._closed = True
        await super().close()
