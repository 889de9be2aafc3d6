"""An adaptive concurrency window per host (per downloader slot).

Each slot (a host) gets a window between ``CRAWLYX_WINDOW_MIN`` and
``CRAWLYX_WINDOW_MAX``, starting at ``CRAWLYX_WINDOW_START``. The window is set as
the slot's concurrency (``slot.concurrency``, as AutoThrottle sets ``slot.delay``),
and it is also enforced here, because on the asyncio reactor Scrapy 2.19's slot
overshoots: ``Downloader._process_queue`` starts each queued request as a task, and
a request only counts in ``slot.transferring`` once its task runs, so one pass over
a backed-up queue starts all of it (measured: with ``CONCURRENT_REQUESTS_PER_DOMAIN=5``
and 40 links on one page, 32 requests at once reach the server, all that
``CONCURRENT_REQUESTS`` lets through). So ``process_request`` is a gate: it lets a
request through to its slot only while fewer than the window are through (queued in
the slot or in transfer), and takes it back out of the count when the request leaves
the downloader. The middleware is the last one before the downloader (950, after
HttpCacheMiddleware's 900): past the gate a request goes straight into its slot.

The policy is AIMD, the rule TCP uses for its congestion window:

* additive increase: after ``CRAWLYX_WINDOW_GROW_AFTER`` clean fetches in a row the
  window grows by one. Clean: a response that is not a 429, 502, 503 or 504, came
  within ``CRAWLYX_WINDOW_SLOW_SECONDS`` and is smaller than
  ``CRAWLYX_WINDOW_LARGE_BYTES``. (A 404 or a 500 is about the page, not the host's
  load: clean.)
* multiplicative decrease: trouble halves the window (not below the minimum) and
  resets the run of clean fetches. Trouble: one of those statuses (the host is
  blocking or overloaded), a connection error or a timeout, a slow response, a body
  over ``CRAWLYX_WINDOW_LARGE_BYTES`` or over ``DOWNLOAD_MAXSIZE``.
* one decrease per congestion event: trouble on a request that started before the
  last decrease was sent under the old, larger window, and that decrease already
  answered it; it does not halve again. Otherwise one burst of eight 429s, all sent
  before the first came back, would take the window from 40 to the minimum. Nor does
  a clean fetch sent before the last decrease count towards growing it again.

Two floors on top of the window:

* ``Retry-After`` (seconds or an HTTP date, at most ``CRAWLYX_WINDOW_RETRY_AFTER_MAX``
  seconds) on a 429 or a 503: no request to that host starts until it has elapsed.
  The slot is paused with the downloader's own mechanism for delays: a pending
  ``slot.latercall`` makes the downloader leave the slot's queue alone, and when
  ours fires it clears it and processes the queue, exactly as the downloader's own
  delay timer does; the gate lets nothing through until then either. Requests
  already in flight finish; queued ones, and the retry of the request that got the
  429, wait.
  A graceful stop (one Ctrl-C) waits for the requests held, like any request in
  progress: at most ``CRAWLYX_WINDOW_RETRY_AFTER_MAX``; a second Ctrl-C stops at once.
* ``Crawl-delay`` from robots.txt: the slot's delay (between two request starts) is
  at least that many seconds, without the random jitter below it (Scrapy jitters
  ``DOWNLOAD_DELAY`` by +-50% by default, which would break a floor).

Responses are judged on the ``response_downloaded`` signal (as AutoThrottle does): it
fires before the downloader frees the transfer slot and looks at its queue, so a
pause or a smaller window applies to the very next request. Failures come through
``process_exception``, which sees every failed attempt before RetryMiddleware (550)
turns it into a retry.

Stats: ``crawlyx/window/<host>`` (the current window), ``crawlyx/window/shrinks``,
``crawlyx/window/grows``, ``crawlyx/window/retry_after_waits``. Shrinks, pauses and
their end are logged at INFO, grows at DEBUG (the progress line shows the windows).
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections import deque
from datetime import UTC
from email.utils import parsedate_to_datetime

from scrapy import signals
from scrapy.exceptions import IgnoreRequest, NotConfigured, StopDownload
from scrapy.utils.asyncio import call_later
from twisted.python.failure import Failure

from crawlyx.errors import CrawlyxIgnore, classify
from crawlyx.middlewares import installed
from crawlyx.middlewares.robots import RobotsMiddleware
from crawlyx.urls.normalize import url_origin

logger = logging.getLogger(__name__)

# Statuses that say "the host is blocking us or overloaded".
OVERLOADED = frozenset({429, 502, 503, 504})
# Statuses whose Retry-After is honoured (RFC 9110: 503; RFC 6585: 429).
RETRY_AFTER_STATUSES = frozenset({429, 503})
# Failure classes (crawlyx.errors) that say the same about a host.
TROUBLE_ERRORS = frozenset({"timeout", "connection", "too_large"})

_SECONDS = re.compile(r"\d+(?:\.\d+)?")


def parse_retry_after(value, now: float | None = None, date=None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value, or None when it is not one.

    ``value`` is delay-seconds (``"120"``) or an HTTP date. A date is measured from
    the response's ``Date`` header when given and valid (both are the server's
    clock, so a skewed local clock does not matter), else from ``now`` (epoch
    seconds, default the local clock). A date in the past means 0.
    """
    text = _text(value)
    if not text:
        return None
    if _SECONDS.fullmatch(text):
        return float(text)
    when = _http_date(text)
    if when is None:
        return None
    base = _http_date(_text(date)) if date else None
    if base is None:
        base = time.time() if now is None else now
    return max(0.0, when - base)


def _text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    return value.strip()


def _http_date(text: str) -> float | None:
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:  # "-0000": UTC, as HTTP dates always are
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


class Window:
    """One host's window: the AIMD arithmetic, no I/O (see the module docstring)."""

    def __init__(self, minimum: int, maximum: int, start: int, grow_after: int):
        self.minimum = minimum
        self.maximum = maximum
        self.value = min(max(start, minimum), maximum)
        self.grow_after = max(1, grow_after)
        self.clean = 0  # clean fetches since the last change or trouble
        self.shrunk_at = float("-inf")  # monotonic time of the last decrease

    def clean_fetch(self, started: float) -> bool:
        """Count a clean fetch of a request that started at ``started``; True when the
        window grew."""
        if started < self.shrunk_at:
            return False  # sent before the last decrease: says nothing about the new window
        self.clean += 1
        if self.clean < self.grow_after or self.value >= self.maximum:
            return False
        self.clean = 0
        self.value += 1
        return True

    def trouble(self, started: float, now: float) -> bool:
        """Count trouble on a request that started at ``started``; True when it shrank."""
        self.clean = 0
        if started < self.shrunk_at:
            return False  # sent under the old window: the last decrease answered it
        self.shrunk_at = now
        smaller = max(self.minimum, self.value // 2)
        changed = smaller != self.value
        self.value = smaller
        return changed


class WindowMiddleware:
    def __init__(self, crawler):
        settings = crawler.settings
        if not settings.getbool("CRAWLYX_WINDOW_ENABLED"):
            raise NotConfigured
        self.crawler = crawler
        self.stats = crawler.stats
        self.minimum, self.maximum = self.check_settings(settings)
        self.start = settings.getint("CRAWLYX_WINDOW_START")
        self.grow_after = settings.getint("CRAWLYX_WINDOW_GROW_AFTER")
        self.slow = settings.getfloat("CRAWLYX_WINDOW_SLOW_SECONDS")
        self.large = settings.getint("CRAWLYX_WINDOW_LARGE_BYTES")
        self.retry_after_max = settings.getfloat("CRAWLYX_WINDOW_RETRY_AFTER_MAX")
        self.windows: dict[str, Window] = {}
        # Retry-After: slot key -> monotonic time before which nothing starts, and the
        # slot and timer of the pause that enforces it.
        self.paused_until: dict[str, float] = {}
        self._holds: dict[str, tuple[object, object]] = {}
        # Crawl-delay: origin -> (the Robots it was read from, seconds or None).
        self._crawl_delays: dict[str, tuple[object, float | None]] = {}
        self._robots: RobotsMiddleware | None | bool = False  # False: not looked up yet
        # The gate: requests through it per slot key, requests waiting at it, and which
        # key each request through it counts against.
        self._through: dict[str, int] = {}
        self._waiting: dict[str, deque[asyncio.Future]] = {}
        self._counted: dict[object, str] = {}
        crawler.signals.connect(self._reached, signal=signals.request_reached_downloader)
        crawler.signals.connect(self._left, signal=signals.request_left_downloader)
        crawler.signals.connect(self._downloaded, signal=signals.response_downloaded)
        crawler.signals.connect(self._cap_dequeuing, signal=signals.engine_started)

    @staticmethod
    def check_settings(settings) -> tuple[int, int]:
        """The window's (minimum, maximum); ValueError if they do not make one."""
        minimum = settings.getint("CRAWLYX_WINDOW_MIN")
        maximum = settings.getint("CRAWLYX_WINDOW_MAX")
        if not 1 <= minimum <= maximum:
            raise ValueError(
                f"CRAWLYX_WINDOW_MIN ({minimum}) must be at least 1 and at most "
                f"CRAWLYX_WINDOW_MAX ({maximum})"
            )
        return minimum, maximum

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    @property
    def downloader(self):
        return self.crawler.engine.downloader

    def window(self, key: str) -> Window:
        window = self.windows.get(key)
        if window is None:
            maximum = self.maximum
            # A DOWNLOAD_SLOTS entry with its own concurrency caps the window.
            own = self.downloader.per_slot_settings.get(key, {}).get("concurrency")
            if own:
                maximum = max(1, min(maximum, int(own)))
            window = Window(min(self.minimum, maximum), maximum, self.start, self.grow_after)
            self.windows[key] = window
            self.stats.set_value(f"crawlyx/window/{key}", window.value)
            self._cap_dequeuing()
        return window

    def _cap_dequeuing(self) -> None:
        """The engine takes requests from the frontier (shared by every process of the
        crawl) while the downloader holds fewer than its total concurrency. Requests
        beyond the windows would only wait at the gate, leased to this process, while
        other processes starve: the total is what the windows hold."""
        total = sum(window.value for window in self.windows.values()) or self.start
        self.downloader.total_concurrency = total

    # -- the gate ----------------------------------------------------------------------

    def _open(self, key: str) -> bool:
        """May one more request to ``key`` go through?"""
        if self.paused_until.get(key, 0) > time.monotonic():
            return False
        return self._through.get(key, 0) < self.window(key).value

    async def process_request(self, request):
        key = self.downloader.get_slot_key(request)
        waiting = self._waiting.setdefault(key, deque())
        # First come, first served: nobody overtakes a request already waiting.
        if waiting or not self._open(key):
            await self._wait_turn(key, waiting)
        else:
            self._through[key] = self._through.get(key, 0) + 1
        self._counted[request] = key
        return None

    async def _wait_turn(self, key: str, waiting: deque) -> None:
        """Wait until :meth:`_wake` counts this request through."""
        front = False
        while True:
            turn = asyncio.get_running_loop().create_future()
            if front:
                waiting.appendleft(turn)
            else:
                waiting.append(turn)
            try:
                await turn
            except asyncio.CancelledError:
                if turn.done() and not turn.cancelled():  # counted, then cancelled
                    self._through[key] -= 1
                    self._wake(key)
                elif turn in waiting:
                    waiting.remove(turn)
                raise
            if self.paused_until.get(key, 0) <= time.monotonic():
                return
            # A Retry-After pause began between our turn and now: give the place back
            # and wait at the front.
            self._through[key] -= 1
            front = True

    def _left(self, request, **kwargs):
        key = self._counted.pop(request, None)
        if key is not None:
            self._through[key] -= 1
            self._wake(key)

    def _wake(self, key: str) -> None:
        """Count waiters for ``key`` through, first come first served, while they fit."""
        waiting = self._waiting.get(key)
        while waiting and self._open(key):
            turn = waiting.popleft()
            if not turn.done():
                self._through[key] = self._through.get(key, 0) + 1
                turn.set_result(None)

    # -- requests entering a slot ------------------------------------------------------

    def _reached(self, request, **kwargs):
        """A request is being queued in its slot (the slot exists now): put the window,
        Crawl-delay and any Retry-After pause on the slot before the downloader looks
        at its queue."""
        key = request.meta.get(self.downloader.DOWNLOAD_SLOT)
        slot = self.downloader.slots.get(key)
        if slot is None:
            return
        request.meta["crawlyx_window_reached"] = time.monotonic()
        slot.concurrency = self.window(key).value
        delay = self._crawl_delay(request)
        if delay and slot.delay * (1 - slot.jitter) < delay:
            slot.delay, slot.jitter = delay, 0.0
        # A slot idle for a minute is dropped by the downloader and made anew: a
        # pause still running must be put on the new one.
        if self.paused_until.get(key, 0) > time.monotonic():
            held = self._holds.get(key)
            if held is None or held[0] is not slot:
                self._hold(key, slot)

    def _crawl_delay(self, request) -> float | None:
        if request.meta.get("dont_obey_robotstxt"):
            return None  # robots.txt itself, fetched before its rules exist
        robots_mw = self._robots_middleware()
        if robots_mw is None:
            return None
        origin = url_origin(request.url)
        robots = robots_mw.cached(origin)
        if robots is None:
            return None
        cached = self._crawl_delays.get(origin)
        if cached is None or cached[0] is not robots:
            cached = self._crawl_delays[origin] = (robots, robots.crawl_delay(robots_mw.agent))
        return cached[1]

    def _robots_middleware(self) -> RobotsMiddleware | None:
        if self._robots is False:
            self._robots = installed(self.crawler, RobotsMiddleware)
        return self._robots

    # -- outcomes ----------------------------------------------------------------------

    def _downloaded(self, response, request, **kwargs):
        key = request.meta.get(self.downloader.DOWNLOAD_SLOT)
        if key is None:
            return
        now = time.monotonic()
        latency = request.meta.get("download_latency") or 0.0
        status = response.status
        if status in RETRY_AFTER_STATUSES:
            wait = parse_retry_after(
                response.headers.get(b"Retry-After"), date=response.headers.get(b"Date")
            )
            if wait:
                self.pause(key, min(wait, self.retry_after_max))
        if status in OVERLOADED:
            reason = f"HTTP {status}"
        elif latency > self.slow:
            reason = f"slow response, {latency:.1f} s"
        elif len(response.body) >= self.large:
            reason = f"large body, {len(response.body)} bytes"
        else:
            self._clean(key, started=now - latency)
            return
        self._trouble(key, started=now - latency, now=now, reason=reason)

    def process_exception(self, request, exception):
        if isinstance(exception, (IgnoreRequest, StopDownload)) and not isinstance(
            exception, CrawlyxIgnore
        ):
            return None  # refused on purpose (robots, offsite, ...): says nothing of the host
        if request.meta.get("playwright"):
            return None  # a browser's failure (a script, a timeout) says nothing of the host
        error_class = classify(Failure(exception))
        if error_class not in TROUBLE_ERRORS:
            return None
        key = self.downloader.get_slot_key(request)
        now = time.monotonic()
        # The handler does not say when a failed request started; the time it reached
        # its slot is a lower bound (it may have waited in the queue).
        started = request.meta.get("crawlyx_window_reached", now)
        self._trouble(key, started=started, now=now, reason=error_class)
        return None

    def _clean(self, key: str, started: float) -> None:
        window = self.window(key)
        if window.clean_fetch(started):
            self.stats.inc_value("crawlyx/window/grows")
            self._apply(key, window, "grow")

    def _trouble(self, key: str, started: float, now: float, reason: str) -> None:
        window = self.window(key)
        before = window.value
        if window.trouble(started, now):
            self.stats.inc_value("crawlyx/window/shrinks")
            self._apply(key, window, f"shrink from {before}: {reason}")

    def _apply(self, key: str, window: Window, why: str) -> None:
        self.stats.set_value(f"crawlyx/window/{key}", window.value)
        slot = self.downloader.slots.get(key)
        if slot is not None:
            slot.concurrency = window.value
        self._cap_dequeuing()
        # A grow is routine (dozens in a short crawl): the progress line shows where the
        # windows stand. A shrink is news.
        level = logging.DEBUG if why == "grow" else logging.INFO
        logger.log(level, "crawlyx: window %s %d (%s)", key, window.value, why)
        self._wake(key)

    # -- Retry-After -------------------------------------------------------------------

    def pause(self, key: str, seconds: float) -> None:
        """No request to ``key``'s slot starts in the next ``seconds``."""
        now = time.monotonic()
        before = self.paused_until.get(key, 0)
        if now + seconds <= before:
            return  # already paused at least that long
        self.paused_until[key] = now + seconds
        if before <= now:
            # A new wait; a burst of 429s that extends it by a hair is the same wait.
            self.stats.inc_value("crawlyx/window/retry_after_waits")
            logger.info("crawlyx: window %s paused %.1f s (Retry-After)", key, seconds)
            call_later(seconds, self._resume, key)  # the gate reopens then
        slot = self.downloader.slots.get(key)
        if slot is not None:
            self._hold(key, slot)

    def _resume(self, key: str) -> None:
        remaining = self.paused_until[key] - time.monotonic()
        if remaining > 0:  # extended meanwhile, or the timer fired a hair early
            call_later(remaining, self._resume, key)
        else:
            logger.info("crawlyx: window %s resumed (Retry-After elapsed)", key)
            self._wake(key)

    def _hold(self, key: str, slot) -> None:
        remaining = self.paused_until[key] - time.monotonic()
        if remaining <= 0:
            return
        # A pending latercall (the downloader's delay timer, or an earlier pause)
        # is replaced: when ours fires, the downloader recomputes any delay left.
        if slot.latercall is not None:
            slot.latercall.cancel()
        timer = call_later(remaining, self._release, key, slot)
        slot.latercall = timer
        self._holds[key] = (slot, timer)

    def _release(self, key: str, slot) -> None:
        held = self._holds.get(key)
        if held is None or held[1] is not slot.latercall:
            return
        del self._holds[key]
        # What the downloader's own delay timer does when it fires (Downloader._latercall).
        slot.latercall = None
        self.downloader._process_queue(slot)
