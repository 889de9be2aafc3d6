"""The browser's download handler: scrapy-playwright's, one for both schemes.

Built by :class:`crawlyx.render.handler.RenderHandler`, the http and https handler of a
crawl that may render, with the first request marked for the browser: one Playwright
driver, at most one browser, ``CRAWLYX_RENDER_MAX_PAGES`` pages in all. The driver starts
with the first page to render, not with the crawl.

The browser reaches the network only through two :class:`crawlyx.render.proxy.BrowserProxy`,
started with the driver, each open only to this crawl's browser (a secret of its own,
handed to Playwright). The pages' browser context connects through one that resolves
with the crawl's resolver, so the SSRF guard covers every connection a page makes (see
:mod:`crawlyx.render.proxy`), to the hosts in ``CRAWLYX_RENDER_ALLOWED_HOSTS`` only when that is
set. The browser itself is launched with the other, which serves no host: what Chromium
fetches for itself, outside any page (update checks, Google sign-in, network time), is
refused before a name is looked up. A crawler's browser has no business phoning home, and
which of these a Chromium build still sends despite its switches changes from release to
release.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler

from crawlyx.render.proxy import BrowserProxy


class BrowserHandler(ScrapyPlaywrightDownloadHandler):
    def __init__(self, crawler):
        super().__init__(crawler)
        self._started = False
        self._start_lock = asyncio.Lock()
        settings = crawler.settings
        timeout = settings.getfloat("CRAWLYX_RENDER_TIMEOUT")
        allowed = settings.getlist("CRAWLYX_RENDER_ALLOWED_HOSTS") or None
        # Connections idle for CRAWLYX_RENDER_TIMEOUT are closed: no page waits that long.
        self._proxy = BrowserProxy(timeout=timeout, stats=crawler.stats, allowed_hosts=allowed)
        # The browser's own traffic: refused (logged at DEBUG only), never looked up.
        self._own_proxy = BrowserProxy(timeout=timeout, allowed_hosts=(), log_level=logging.DEBUG)
        self._pages_proxy: dict = {}  # Playwright's proxy option for the pages, once started

    async def _maybe_launch_in_thread(self) -> None:
        """At engine start (scrapy-playwright launches its driver here): nothing yet."""

    async def _download_request(self, request, spider=None):
        async with self._start_lock:
            if not self._started:
                # The browser, launched with the first page, connects through a proxy
                # that serves nothing; its pages' context through the crawl's.
                self._pages_proxy = await self._proxy.start()
                self.config.launch_options["proxy"] = await self._own_proxy.start()
                with _own_session():
                    await self._launch()  # the Playwright driver; the browser comes next
                self._started = True
        return await super()._download_request(request, spider)

    async def _create_browser_context(self, name, context_kwargs, spider=None):
        context_kwargs = {**(context_kwargs or {}), "proxy": self._pages_proxy}
        return await super()._create_browser_context(name, context_kwargs, spider)

    async def close(self) -> None:
        await super().close()
        await self._proxy.close()
        await self._own_proxy.close()


@contextlib.contextmanager
def _own_session():
    """Subprocesses started meanwhile (the Playwright driver, and so the browser it
    launches) run in a session of their own. A terminal's Ctrl-C reaches the crawl's
    whole process group: the driver would close the browser under the pages in flight
    of a crawl that is pausing. The driver still ends with the crawl, however it ends:
    it exits when its pipe from the crawl process closes."""
    spawn = asyncio.create_subprocess_exec

    def in_own_session(*args, **kwargs):
        return spawn(*args, start_new_session=True, **kwargs)

    asyncio.create_subprocess_exec = in_own_session
    try:
        yield
    finally:
        asyncio.create_subprocess_exec = spawn
