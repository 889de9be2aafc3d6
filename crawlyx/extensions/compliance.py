"""Whether the crawl kept its word to the sites: Crawl-delay and opt-out signals, audited.

The politeness components decide (the window's budget spaces requests by a host's
Crawl-delay, the spider keeps opted-out pages out of the output); this module only
checks, at the doors, that what they decided is what happened, and counts what was not.

**Crawl-delay.** Every request that reaches the downloader for an origin whose
robots.txt sets a Crawl-delay is a *start* (robots.txt itself aside: it is fetched
before the delay is known). A start closer than the delay to another start of the same
origin, by any process of the job, is a violation; a violation counts once, for the
later of the two starts. Starts are kept in memory and sent to the job's Redis with the
crawl core's batches (crawlyx/frontier/core.py: no round trip of their own, off the
reactor thread), where one script per origin files each start in a sorted set (wall
clock milliseconds; the processes' clocks are taken to agree, as on one machine or
under NTP) and counts the violations it makes: with the start before it, and with a
start after it that had none close before (a process's starts may reach Redis after
those of a process that started later). A gap shorter than the delay by less than
``SLACK`` of it is no violation: two processes' event loops put a few milliseconds of
their own between the start the budget granted and the request leaving, and a site
cannot tell 0.95 s from 1 s. The sorted set keeps ``HORIZON`` of starts and expires
with them.

**Opt-out.** Every item leaving the crawl is held against its response's robots
directives (``X-Robots-Tag``, and ``<meta name="robots">`` in the page's head, read
here on its own): an item from a page carrying one of ``CRAWLYX_OPT_OUT_DIRECTIVES``
was emitted despite it. The share honoured is opted-out pages kept out (the
``opted_out`` error class) over those plus the ones emitted.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import defaultdict

from scrapy import signals
from twisted.internet import task

from crawlyx.extensions.telemetry import shared
from crawlyx.frontier.core import retryable
from crawlyx.frontier.state import INDEX
from crawlyx.middlewares import installed
from crawlyx.middlewares.robots import RobotsMiddleware
from crawlyx.policy.optout import OptOut
from crawlyx.urls.normalize import url_origin

logger = logging.getLogger(__name__)

SLACK = 0.05  # of the delay
HORIZON = 600.0  # seconds of starts kept per origin
HEAD_MAX = 1 << 18  # bytes of a page searched for the end of its head
NUDGE = 1.0  # seconds: starts wait at most this long for a batch to join

# KEYS: the origin's sorted set of starts, the job's index of keys (it is added).
# ARGV: [1] the shortest gap allowed (ms), [2] horizon (ms), then pairs (start in epoch
# ms, a unique member).
# Returns the violations the new starts made.
_FILE_STARTS = """
local key, gap, horizon = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2])
redis.call('SADD', KEYS[2], key)
local found, latest = 0, 0
for i = 3, #ARGV, 2 do
  local t, member = tonumber(ARGV[i]), ARGV[i + 1]
  if #redis.call('ZRANGEBYSCORE', key, '(' .. (t - gap), t, 'LIMIT', 0, 1) > 0 then
    found = found + 1
  end
  local after = redis.call('ZRANGEBYSCORE', key, '(' .. t, '(' .. (t + gap), 'WITHSCORES')
  for j = 2, #after, 2 do
    local s = tonumber(after[j])
    if redis.call('ZCOUNT', key, '(' .. (s - gap), s) <= 1 then
      found = found + 1
    end
  end
  redis.call('ZADD', key, t, member)
  if t > latest then latest = t end
end
redis.call('ZREMRANGEBYSCORE', key, '-inf', '(' .. (latest - horizon))
redis.call('PEXPIRE', key, math.floor(horizon))
return found
"""

_META = re.compile(rb"<meta\b[^>]*>", re.I)
_ATTR = re.compile(rb"""\b(name|content)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.I)


class DelayAudit:
    """Crawl-delay violations across the job's processes (see the module docstring)."""

    def __init__(self, crawler, parts):
        self.crawler = crawler
        self.parts = parts  # the crawl's shared parts: the starts are filed in its Redis
        self.checked = 0  # starts filed and checked
        self.violations = 0
        self.failed = 0  # starts Redis would not take (unchecked)
        self._lock = threading.Lock()  # the counts are read by the metrics endpoint's thread
        self._pending: dict[str, list] = defaultdict(list)  # origin -> [ms, member, ...]
        self._gaps: dict[str, float] = {}  # origin -> the shortest gap allowed, ms
        self._delays: dict[str, tuple[object, float | None]] = {}  # origin -> (rules, delay)
        self._robots: RobotsMiddleware | None | bool = False  # False: not looked up yet
        self._core = self._script = None
        self._owner = ""
        self._serial = 0
        self._nudge: task.LoopingCall | None = None
        crawler.signals.connect(self._reached, signal=signals.request_reached_downloader)
        crawler.signals.connect(self._opened, signal=signals.spider_opened)
        crawler.signals.connect(self.close, signal=signals.spider_closed)

    def _opened(self, spider):
        parts = self.parts
        self._core = parts.core
        self._prefix = parts.state.key("delays:")
        self._index = parts.state.key(INDEX)
        self._owner = parts.visited.owner
        self._script = parts.state.client.register_script(_FILE_STARTS)
        self._core.register(self)
        # Starts join the batches the crawl sends anyway; a host crawled one page per
        # delay sends few, so they are nudged out at least this often.
        self._nudge = task.LoopingCall(self._send)
        self._nudge.start(NUDGE, now=False)

    def _send(self) -> None:
        if self._pending and self._core is not None:
            self._core.wake()

    def close(self, spider=None) -> None:
        """Send the starts still held and wait for the verdict (the crawl is closing)."""
        if self._nudge is not None and self._nudge.running:
            self._nudge.stop()
        if self._pending and self._core is not None:
            self._core.drain()

    def counts(self) -> tuple[int, int, int]:
        with self._lock:
            return self.checked, self.violations, self.failed

    # -- starts ------------------------------------------------------------------------

    def _reached(self, request, **kwargs):
        if request.meta.get("dont_obey_robotstxt"):
            return
        delay, origin = self._delay(request.url)
        if not delay or self._core is None:
            return
        self._serial += 1
        pending = self._pending[origin]
        pending += (round(time.time() * 1000, 3), f"{self._owner}:{self._serial}")
        self._gaps[origin] = delay * 1000 * (1 - SLACK)

    def _delay(self, url: str) -> tuple[float | None, str]:
        if self._robots is False:
            self._robots = installed(self.crawler, RobotsMiddleware)
        if self._robots is None:
            return None, ""
        origin = url_origin(url)
        rules = self._robots.cached(origin)
        if rules is None:
            return None, origin
        cached = self._delays.get(origin)
        if cached is None or cached[0] is not rules:
            cached = self._delays[origin] = (rules, self._robots.crawl_delay(origin, rules))
        return cached[1], origin

    # -- the crawl core's party ----------------------------------------------------------

    def take(self):
        if not self._pending:
            return None
        batch = [(origin, starts, self._gaps[origin]) for origin, starts in self._pending.items()]
        self._pending = defaultdict(list)
        horizon = HORIZON * 1000
        core, script, prefix, index = self._core, self._script, self._prefix, self._index

        def commands(pipe) -> int:
            for origin, starts, gap in batch:
                core.script(pipe, script, [prefix + origin, index], [gap, horizon, *starts])
            return len(batch)

        def handle(results) -> None:
            if isinstance(results, Exception):
                results = [results] * len(batch)
            for (origin, starts, _), result in zip(batch, results, strict=True):
                if isinstance(result, Exception):
                    if retryable(result):
                        self._pending[origin][:0] = starts  # with the next batch
                    else:
                        with self._lock:
                            self.failed += len(starts) // 2
                        logger.error("crawlyx: Crawl-delay audit of %s failed: %s", origin, result)
                    continue
                with self._lock:
                    self.checked += len(starts) // 2
                    self.violations += int(result)
                if result:
                    logger.warning(
                        "crawlyx: %d fetch(es) of %s closer than its Crawl-delay", result, origin
                    )

        return commands, handle


class OptOutAudit:
    """Items emitted from pages that opted out (see the module docstring)."""

    def __init__(self, crawler):
        self.stats = crawler.stats
        self.opt_out = OptOut.from_settings(crawler.settings)
        self.names = (b"robots", self.opt_out.bot.encode())
        self.emitted = 0
        crawler.signals.connect(self._scraped, signal=signals.item_scraped)

    @property
    def honoured(self) -> int:
        return self.stats.get_value("crawlyx/error/opted_out", 0)

    def _scraped(self, item, response=None, **kwargs):
        if response is None or not hasattr(response, "headers"):
            return
        directives = self.opt_out.directives(response.headers, self._meta(response))
        if self.opt_out.refused(directives):
            self.emitted += 1
            logger.error("crawlyx: emitted %s despite its opt-out (%s)", response.url, directives)

    def _meta(self, response) -> list[tuple[str, str]]:
        """The ``<meta name content>`` pairs of the page's head that may be robots
        directives; nothing is parsed unless the head names robots or our bot."""
        body = getattr(response, "body", b"")
        end = body.find(b"</head", 0, HEAD_MAX)
        head = body[: end if end >= 0 else HEAD_MAX].lower()
        if not any(name in head for name in self.names):
            return []
        pairs = []
        for tag in _META.findall(head):
            attrs = {}
            for name, *values in _ATTR.findall(tag):
                attrs[name.decode()] = next((v for v in values if v), b"").decode("latin-1")
            if "name" in attrs and "content" in attrs:
                pairs.append((attrs["name"], attrs["content"]))
        return pairs


class Compliance:
    """The crawl's compliance audits, made on first use (by the metrics or the report)."""

    def __init__(self, crawler, parts):
        self.delay = DelayAudit(crawler, parts)
        self.opt_out = OptOutAudit(crawler)


def compliance(crawler, parts) -> Compliance:
    """The crawl's one :class:`Compliance`, made (and connected) on first use; ``parts``:
    the crawl's shared parts (crawlyx/parts.py)."""
    return shared(crawler, Compliance, lambda c: Compliance(c, parts))
