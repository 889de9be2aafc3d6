"""Ctrl-C and SIGTERM for a crawl: the first pauses it, the second stops it at once.

A terminal's Ctrl-C reaches the whole process group: the page workers ignore it
(crawlyx.content.workers), the embedded Redis runs in a session of its own, and the
crawl process pauses the crawl: what is in flight is finished and written, what is
left stays queued for the job's next run. A second signal stops the process without
waiting (the crawl command then exits with 128 + the signal's number); what it had in
flight is fetched again when the job resumes.

Scrapy's own handler asks the crawler to stop, which does nothing while the spider is
still opening (Redis, robots.txt, the page workers): the reactor then stops under a
spider that is never closed. Here a pause asked for before the engine runs is carried
out as soon as it starts, so the spider closes as paused whatever the moment.
"""

from __future__ import annotations

import logging
import signal

from scrapy import signals
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.ossignal import install_shutdown_handlers

from crawlyx.log import SHOWN

logger = logging.getLogger(__name__)


class Interrupts:
    """The crawl process's handler of shutdown signals, from before the reactor runs."""

    def __init__(self, process):
        self.process = process
        self.crawler = None
        self.started = False  # the engine has started
        self.paused = False  # a first signal came
        self.forced = 0  # the second signal's number
        # Scrapy installs the process's handler as the reactor starts: this one, which
        # is installed now already, for the moments before.
        process._signal_shutdown = self.received
        install_shutdown_handlers(self.received)

    def watch(self, crawler) -> None:
        self.crawler = crawler
        crawler.signals.connect(self.engine_started, signal=signals.engine_started)

    def received(self, signum: int, frame) -> None:
        from twisted.internet import reactor

        if self.paused:
            self.forced = signum
            self.process._signal_kill(signum, frame)  # ignores more, stops the reactor
            return
        self.paused = True
        reactor.callFromThread(self._log_pause, signum)
        if self.started:
            reactor.callFromThread(lambda: deferred_from_coro(self._stop()))

    @staticmethod
    def _log_pause(signum: int) -> None:  # not from the handler: it may cut into a log line
        again = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        logger.info(
            "crawlyx: pausing: finishing the pages in flight (%s again to stop at once)",
            again,
            extra=SHOWN,
        )

    async def engine_started(self) -> None:
        self.started = True
        if self.paused:
            await self._stop()

    async def _stop(self) -> None:
        """What Crawler.stop_async does, from the moment the engine is starting on:
        the spider closes with reason "shutdown" (paused)."""
        crawler = self.crawler
        if crawler is None or not crawler.crawling:
            return
        crawler.crawling = False
        try:
            await crawler.engine.stop_async()
        except RuntimeError:  # the engine stopped on its own meanwhile
            pass

    @property
    def exit_status(self) -> int:
        return 128 + self.forced if self.forced else 0
