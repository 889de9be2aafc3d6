"""The download handler of a crawl that may render, for http and https.

Most pages of such a crawl are fetched over plain HTTP, by Scrapy's own HTTP handler,
which this is. A request marked for the browser goes to scrapy-playwright's handler
(:class:`crawlyx.render.browser.BrowserHandler`), built, and so imported, with the first
page to render: importing Playwright takes a tenth of a second and 15 MB of the crawl
process, which a ``render=auto`` crawl of a site without JavaScript shells never needs.

Scrapy builds one handler per scheme: http and https share one here, and so one browser.
"""

from __future__ import annotations

from weakref import WeakKeyDictionary

from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler

_shared: WeakKeyDictionary = WeakKeyDictionary()


class RenderHandler(HTTP11DownloadHandler):
    lazy = False

    @classmethod
    def from_crawler(cls, crawler):
        handler = _shared.get(crawler)
        if handler is None:
            handler = _shared[crawler] = cls(crawler)
        return handler

    def __init__(self, crawler):
        super().__init__(crawler)
        self._browser = None
        self._closed = False

    async def download_request(self, request):
        if request.meta.get("playwright"):
            return await self.browser.download_request(request)
        return await super().download_request(request)

    @property
    def browser(self):
        """scrapy-playwright's handler, built on first use."""
        if self._browser is None:
            # Playwright, imported with the first page to render (see the module docstring).
            from crawlyx.render.browser import BrowserHandler

            self._browser = BrowserHandler(self._crawler)
        return self._browser

    async def close(self) -> None:
        if self._closed:  # registered for http and for https
            return
        self._closed = True
        await super().close()
        if self._browser is not None:
            await self._browser.close()
