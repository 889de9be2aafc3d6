"""An adaptive concurrency window per host (per downloader slot), one per job.

Each host gets a window between ``CRAWLYX_WINDOW_MIN`` and ``CRAWLYX_WINDOW_MAX``,
starting at ``CRAWLYX_WINDOW_START``. Every process of a job shares it, with the host's
Retry-After pause and Crawl-delay, through Redis (:mod:`crawlyx.middlewares.budget`):
N processes have no more requests to a host in flight than one would, nor start them
closer than its Crawl-delay.

``process_request`` is a gate: it lets a request through to its slot only while this
process has fewer requests through (queued in the slot or in transfer) than its share
of the window, and takes it back out of the count when the request leaves the
downloader. The slot's own limit is not enough: on the asyncio reactor Scrapy 2.19's
slot overshoots (``Downloader._process_queue`` starts each queued request as a task,
and a request only counts in ``slot.transferring`` once its task runs: with
``CONCURRENT_REQUESTS_PER_DOMAIN=5`` and 40 links on one page, 32 requests reached the
server at once). The window is still set as the slot's concurrency, as AutoThrottle sets
``slot.delay``. The middleware is the last one before the downloader (950, after
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
* one decrease per congestion event: trouble on a request let through before the last
  decrease (by any process) was sent under the old, larger window, and that decrease
  already answered it. Otherwise one burst of eight 429s, all sent before the first
  came back, would take the window from 40 to the minimum, and three processes would
  halve it three times. Nor does a clean fetch sent before it count towards growing.

Two floors on top of the window:

* ``Retry-After`` (seconds or an HTTP date, at most ``CRAWLYX_WINDOW_RETRY_AFTER_MAX``
  seconds) on a 429 or a 503: no request to that host starts until it has elapsed, in
  any process. The slot is held too (:func:`crawlyx.middlewares.slots.hold`). Requests
  already in flight finish; queued ones, and the retry of the request that got the
  429, wait. A crawl ending (one Ctrl-C, or ``max_pages`` reached) does not wait for
  the pause to end: the requests it holds fail with :class:`HeldAtStop`, never sent,
  and the spider leaves their pages for the job's next run.
* ``Crawl-delay`` from robots.txt (at most ``CRAWLYX_MAX_CRAWL_DELAY``): each request
  start takes the host's next start time from the job's budget at the gate. Not the
  slot's delay: a slot delays a request after the gate let it through, which would
  shift its start past the time the other processes were told.

Responses are judged on the ``response_downloaded`` signal (as AutoThrottle does): it
fires before the downloader frees the transfer slot and looks at its queue, so a
pause or a smaller window applies to the very next request. Failures come through
``process_exception``, which sees every failed attempt before RetryMiddleware (550)
turns it into a retry. Every access to Scrapy's private downloader internals is in
:mod:`crawlyx.middlewares.slots`.

Stats: ``crawlyx/window/<host>`` (the current window), ``crawlyx/window/shrinks``,
``crawlyx/window/grows``, ``crawlyx/window/retry_after_waits`` (the changes this process
made, and the pauses it waited out). Shrinks, pauses and their end are logged at INFO,
grows at DEBUG (the progress line shows the windows).
"""

from __future__ import annotations

import asyncio
import logging
import time

from scrapy import signals
from scrapy.exceptions import IgnoreRequest, NotConfigured, StopDownload
from scrapy.utils.asyncio import call_later, create_looping_call
from twisted.python.failure import Failure

from crawlyx.errors import CrawlyxIgnore, classify
from crawlyx.frontier.state import REDIS_DOWN, outage
from crawlyx.middlewares import installed, slots
from crawlyx.middlewares.budget import SYNC_INTERVAL, BudgetReport, Host, SharedBudget
from crawlyx.middlewares.retry_after import parse_retry_after
from crawlyx.middlewares.robots import RobotsMiddleware
from crawlyx.parts import shared_parts
from crawlyx.urls.normalize import url_origin

logger = logging.getLogger(__name__)

# Statuses that say "the host is blocking us or overloaded".
OVERLOADED = frozenset({429, 502, 503, 504})
# Statuses whose Retry-After is honoured (RFC 9110: 503; RFC 6585: 429).
RETRY_AFTER_STATUSES = frozenset({429, 503})
# Failure classes (crawlyx.errors) that say the same about a host.
TROUBLE_ERRORS = frozenset({"timeout", "connection", "too_large"})

# The request.meta key of the window generation a request was let through under.
GEN_META = "crawlyx_window_gen"
# A process whose share is full asks the job's budget for more at most this often (s).
MIN_REPORT_GAP = 0.1
# A share not heard of for this long (a late report: a busy or stalled process) is not
# used before the next report: the window may have shrunk meanwhile.
SHARE_LIFETIME = 2 * SYNC_INTERVAL


class HeldAtStop(IgnoreRequest):
    """A request held for its host's Retry-After pause when the crawl stopped: not sent,
    left for the job's next run."""


class WindowMiddleware:
    def __init__(self, crawler, parts):
        settings = crawler.settings
        if not settings.getbool("CRAWLYX_WINDOW_ENABLED"):
            raise NotConfigured
        self.crawler = crawler
        self.parts = parts  # the crawl's shared parts: the job's budget is in its Redis
        self.stats = crawler.stats
        self.settings = settings
        self.minimum, self.maximum = self.check_settings(settings)
        self.start = settings.getint("CRAWLYX_WINDOW_START")
        self.slow = settings.getfloat("CRAWLYX_WINDOW_SLOW_SECONDS")
        self.large = settings.getint("CRAWLYX_WINDOW_LARGE_BYTES")
        self.retry_after_max = settings.getfloat("CRAWLYX_WINDOW_RETRY_AFTER_MAX")
        self.windows: dict[str, Host] = {}
        self.budget: SharedBudget | None = None  # the job's, once the spider is open
        self._reporting = None  # the looping call of the reports
        # Slots paused for a Retry-After (a slot dropped while idle is made anew).
        self._holds: dict[str, object] = {}
        # Crawl-delay: origin -> (the Robots it was read from, seconds or None).
        self._crawl_delays: dict[str, tuple[object, float | None]] = {}
        self._robots: RobotsMiddleware | None | bool = False  # False: not looked up yet
        self._counted: dict[object, str] = {}  # request through the gate -> its slot key
        self._wakeups: dict[str, object] = {}  # slot key -> the timer of a Crawl-delay wait
        crawler.signals.connect(self._reached, signal=signals.request_reached_downloader)
        crawler.signals.connect(self._left, signal=signals.request_left_downloader)
        crawler.signals.connect(self._downloaded, signal=signals.response_downloaded)
        crawler.signals.connect(self._engine_started, signal=signals.engine_started)
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)

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
        return cls(crawler, shared_parts(crawler))

    @property
    def downloader(self):
        return self.crawler.engine.downloader

    def window(self, key: str) -> Host:
        """The host's window as this process last heard it (``.value``)."""
        host = self.windows.get(key)
        if host is None:
            maximum = self.maximum
            # A DOWNLOAD_SLOTS entry with its own concurrency caps the window.
            own = slots.configured_concurrency(self.downloader, key)
            if own:
                maximum = max(1, min(maximum, own))
            value = min(max(self.start, min(self.minimum, maximum)), maximum)
            host = self.windows[key] = Host(key, maximum, value)
            self.stats.set_value(f"crawlyx/window/{key}", host.value)
            self._cap_dequeuing()
        return host

    def _cap_dequeuing(self) -> None:
        """The engine takes requests from the frontier (shared by every process of the
        crawl) while the downloader holds fewer than its total concurrency. Requests
        beyond the windows would only wait at the gate, leased to this process, while
        other processes starve: the total is what this process may have through, its
        share of each host's window (one for a host with a Crawl-delay: it starts one
        request per delay)."""
        shares = (1 if host.delay else max(1, host.share) for host in self.windows.values())
        total = sum(shares) or self.start
        slots.set_total_concurrency(self.downloader, total)

    # -- the job's budget --------------------------------------------------------------

    def _engine_started(self) -> None:
        slots.check(self.downloader)  # a Scrapy upgrade that moved them fails here
        self._cap_dequeuing()
        if self.budget is None:
            table = self.parts.visited
            self.budget = SharedBudget(self.parts.state, lambda: table.owner, self.settings)
        self._reporting = create_looping_call(self._report_all)
        self._reporting.start(SYNC_INTERVAL, now=False)

    def _spider_closed(self) -> None:
        if self._reporting is not None and self._reporting.running:
            self._reporting.stop()
        self._report_all()  # nothing through: the shares go back

    def _report_all(self) -> None:
        # Stopping (paused), or draining (max_pages reached): nothing waits out a pause.
        if not self.crawler.engine.running or getattr(self.crawler.spider, "closing", False):
            self._let_go_held()
        for host in list(self.windows.values()):
            if host.busy:
                self._report(host)

    def _report(self, host: Host, asking: bool = False, start: bool = False) -> BudgetReport | None:
        """Report to the job's budget and act on the answer; None if Redis is unreachable
        (what was pending goes with the next report)."""
        if self.budget is None:
            return None
        before, share, trouble = host.value, host.share, host.trouble
        try:
            report = self.budget.report(host, asking, start)
        except REDIS_DOWN as exc:
            outage(self.stats, f"sharing the window of {host.key}", exc)
            # Nothing more through until Redis answers (the frontier waits for it too).
            host.share, host.synced_at = min(host.share, host.through), time.monotonic()
            return None
        key = host.key
        if report.grew:
            self.stats.inc_value("crawlyx/window/grows", report.grew)
            # Routine (dozens in a short crawl): the progress line shows where windows stand.
            self._changed(host, "grow", level=logging.DEBUG)
        if report.shrank_from is not None:
            self.stats.inc_value("crawlyx/window/shrinks")
            self._changed(host, f"shrink from {report.shrank_from}: {trouble}")
        elif not report.grew and host.value != before:
            self._changed(host, "by another process", level=logging.DEBUG)
        elif host.share != share:
            self._cap_dequeuing()
        if report.paused > max(0.0, host.paused_until - time.monotonic()) + 0.05:
            self.pause(key, report.paused)  # set by another process
        if not asking:  # else the gate is deciding already
            self._wake(key)
        return report

    def _changed(self, host: Host, why: str, level: int = logging.INFO) -> None:
        self.stats.set_value(f"crawlyx/window/{host.key}", host.value)
        slot = slots.slot_of(self.downloader, host.key)
        if slot is not None:
            slots.set_concurrency(slot, host.value)
        self._cap_dequeuing()
        logger.log(level, "crawlyx: window %s %d (%s)", host.key, host.value, why)

    # -- the gate ----------------------------------------------------------------------

    def _open(self, host: Host) -> bool:
        """May one more request to the host go through? (Counts it if so.)"""
        now = time.monotonic()
        if host.paused_until > now:
            return False
        age = now - host.synced_at
        full = host.through >= host.share and host.share < host.value
        if (full and age >= MIN_REPORT_GAP) or age >= SHARE_LIFETIME:
            self._report(host, asking=True)  # there may be more to have, or less
        if host.through >= host.share:
            return False
        if host.delay:
            return self._start(host, now)
        host.through += 1
        return True

    def _start(self, host: Host, now: float) -> bool:
        """Crawl-delay: take the host's next start from the job's budget, once the delay
        has passed since this process's last request to the host (robots.txt included,
        fetched before the delay was known)."""
        host.next_start = max(host.next_start, host.last_start + host.delay)
        if host.next_start <= now:
            report = self._report(host, asking=True, start=True)
            if report is not None and report.started:
                return True
            host.next_start = now + (report.wait if report else 1.0)
        if host.next_start > now and host.key not in self._wakeups:
            self._wakeups[host.key] = call_later(host.next_start - now, self._woken, host.key)
        return False

    def _woken(self, key: str) -> None:
        del self._wakeups[key]
        self._wake(key)

    async def process_request(self, request):
        key = slots.key_of(self.downloader, request)
        host = self.window(key)
        if not request.meta.get("dont_obey_robotstxt"):
            delay = self._crawl_delay(request)
            if delay != host.delay:
                host.delay = delay
                self._cap_dequeuing()
        # First come, first served: nobody overtakes a request already waiting.
        if host.waiting or not self._open(host):
            await self._wait_turn(host)
        self._counted[request] = key
        request.meta[GEN_META] = host.gen
        host.last_start = time.monotonic()  # past the gate a request starts at once
        return None

    async def _wait_turn(self, host: Host) -> None:
        """Wait until :meth:`_wake` counts this request through."""
        waiting, front = host.waiting, False
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
                    host.through -= 1
                    self._wake(host.key)
                elif turn in waiting:
                    waiting.remove(turn)
                raise
            if host.paused_until <= time.monotonic():
                return
            # A Retry-After pause began between our turn and now: give the place back
            # and wait at the front.
            host.through -= 1
            front = True

    def _left(self, request, **kwargs):
        key = self._counted.pop(request, None)
        if key is not None:
            self.windows[key].through -= 1
            self._wake(key)

    def _wake(self, key: str) -> None:
        """Count waiters for ``key`` through, first come first served, while they fit."""
        host = self.windows[key]
        waiting = host.waiting
        while waiting and self._open(host):
            turn = waiting.popleft()
            if turn.done():
                host.through -= 1  # cancelled meanwhile: the place goes to the next
            else:
                turn.set_result(None)

    # -- requests entering a slot ------------------------------------------------------

    def _reached(self, request, **kwargs):
        """A request is being queued in its slot (the slot exists now): put the window,
        Crawl-delay and any Retry-After pause on the slot before the downloader looks
        at its queue."""
        key = slots.reached_key(self.downloader, request)
        slot = slots.slot_of(self.downloader, key)
        if slot is None:
            return
        host = self.window(key)
        slots.set_concurrency(slot, host.value)
        # A slot idle for a minute is dropped by the downloader and made anew: a
        # pause still running must be put on the new one.
        remaining = host.paused_until - time.monotonic()
        if remaining > 0 and self._holds.get(key) is not slot:
            self._holds[key] = slot
            slots.hold(self.downloader, slot, remaining)

    def _crawl_delay(self, request) -> float | None:
        robots_mw = self._robots_middleware()
        if robots_mw is None:
            return None
        origin = url_origin(request.url)
        robots = robots_mw.cached(origin)
        if robots is None:
            return None
        cached = self._crawl_delays.get(origin)
        if cached is None or cached[0] is not robots:
            cached = self._crawl_delays[origin] = (robots, robots_mw.crawl_delay(origin, robots))
        return cached[1]

    def _robots_middleware(self) -> RobotsMiddleware | None:
        if self._robots is False:
            self._robots = installed(self.crawler, RobotsMiddleware)
        return self._robots

    # -- outcomes ----------------------------------------------------------------------

    def _downloaded(self, response, request, **kwargs):
        key = slots.reached_key(self.downloader, request)
        if key is None:
            return
        latency = request.meta.get("download_latency") or 0.0
        status = response.status
        host = self.window(key)
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
            if request.meta.get(GEN_META) == host.gen:
                host.cleans += 1  # reported with the next report
            return
        self._trouble(host, request, reason)

    def process_exception(self, request, exception):
        if isinstance(exception, (IgnoreRequest, StopDownload)) and not isinstance(
            exception, CrawlyxIgnore
        ):
            return None  # refused on purpose (robots, offsite, ...): says nothing of the host
        if request.meta.get("playwright"):
            return None  # a browser's failure (a script, a timeout) says nothing of the host
        error_class = classify(Failure(exception))
        if error_class in TROUBLE_ERRORS:
            host = self.window(slots.key_of(self.downloader, request))
            self._trouble(host, request, error_class)
        return None

    def _trouble(self, host: Host, request, reason: str) -> None:
        """Trouble on a request let through under the current generation: reported at
        once. Of an older one (sent under the old, larger window), the decrease that ended
        it answered it already."""
        if request.meta.get(GEN_META, host.gen) == host.gen:
            host.trouble = reason
        if host.trouble or host.pause:
            self._report(host)

    # -- Retry-After -------------------------------------------------------------------

    def pause(self, key: str, seconds: float) -> None:
        """No request to ``key``'s slot starts in the next ``seconds`` (in any process of
        the job, from their next report)."""
        host = self.window(key)
        now = time.monotonic()
        before = host.paused_until
        if now + seconds <= before:
            return  # already paused at least that long
        host.paused_until = host.pause = now + seconds  # the job hears of it next report
        if before <= now:
            # A new wait; a burst of 429s that extends it by a hair is the same wait.
            self.stats.inc_value("crawlyx/window/retry_after_waits")
            logger.info("crawlyx: window %s paused %.1f s (Retry-After)", key, seconds)
            call_later(seconds, self._resume, key)  # the gate reopens then
        slot = slots.slot_of(self.downloader, key)
        if slot is not None:
            self._holds[key] = slot
            slots.hold(self.downloader, slot, seconds)

    def _let_go_held(self) -> None:
        """The crawl is ending: the requests held for a Retry-After pause, at the gate or
        in their slot's queue, fail with :class:`HeldAtStop` instead of being sent when it
        ends, up to CRAWLYX_WINDOW_RETRY_AFTER_MAX seconds later. They were never sent:
        the job's next run fetches them."""
        now = time.monotonic()
        for key, host in self.windows.items():
            if host.paused_until <= now:
                continue
            held = HeldAtStop(f"held for the Retry-After pause of {key} as the crawl stopped")
            while host.waiting:
                turn = host.waiting.popleft()
                if not turn.done():
                    turn.set_exception(held)
            slot = self._holds.get(key)
            if slot is not None:
                slots.fail_queued(slot, held)

    def _resume(self, key: str) -> None:
        remaining = self.windows[key].paused_until - time.monotonic()
        if remaining > 0:  # extended meanwhile, or the timer fired a hair early
            call_later(remaining, self._resume, key)
        else:
            logger.info("crawlyx: window %s resumed (Retry-After elapsed)", key)
            self._wake(key)
