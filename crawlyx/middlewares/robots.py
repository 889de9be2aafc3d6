"""robots.txt, fetched once per origin for the whole job and shared through Redis.

Policy (RFC 9309): redirects are followed up to five hops (past that the file counts
as unavailable, like a 4xx); a 2xx body is parsed (at most ``ROBOTS_MAX_BYTES``); a 4xx
means there are no rules. A parsed file is fresh for 24 hours; its age is in the stats
(``crawlyx/robots/age_seconds/<origin>``). A disallowed request fails with
:class:`RobotsDisallowed` (class ``robots_disallowed``): the page is done.

A 5xx, a 429 or a network error means robots.txt is *unreachable*: nothing of the
origin may be fetched for now, and nothing is decided either. Its requests wait here
while robots.txt is asked again after a back-off (``RETRY_FIRST`` seconds, doubling
up to ``RETRY_MAX``); once it answers they go on. A request that has waited out
``CRAWLYX_ROBOTS_RETRY_FOR`` seconds of an origin's outage (or that is waiting when the
crawl stops) fails with :class:`RobotsUnavailable` (class ``robots_unavailable``), and the
spider leaves its page queued for the job's next run instead of marking it done. Each
process sees an outage afresh: an unreachable answer stored by an earlier run (or another
process) is asked again, not waited on.

Except for a site that never answered: when the start URL's own host does not resolve or
refuses connections while the start page waits (nothing of the site fetched yet), there is
no outage to ride out but a mistyped or dead host. The start page fails at once with
:class:`HostUnreachable` (class ``dns`` or ``connection``), left queued like any page
waiting for robots.txt, and the crawl ends saying so.

One process of the job fetches an origin's robots.txt at a time (:class:`FetchLock`); the
others wait for the answer it stores.

A ``Crawl-delay`` is applied by the window (:mod:`crawlyx.middlewares.window`), at most
``CRAWLYX_MAX_CRAWL_DELAY`` seconds: a site asking for a day between requests gets the
cap instead (logged once per origin, counted in ``crawlyx/robots/crawl_delay_capped``).

Replaces Scrapy's RobotsTxtMiddleware, which treats a 5xx as "allow all" and keeps one
answer for the whole crawl.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import time

from protego import Protego
from redis.exceptions import LockError, LockNotOwnedError
from scrapy import Request
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http.request import NO_CALLBACK
from twisted.python.failure import Failure

from crawlyx.errors import CrawlyxIgnore, classify
from crawlyx.frontier.state import REDIS_DOWN, outage
from crawlyx.parts import shared_parts
from crawlyx.urls.normalize import url_origin

logger = logging.getLogger(__name__)

ROBOTS_MAX_BYTES = 500 * 1024
MAX_REDIRECTS = 5
FRESH_FOR = 24 * 3600
RETRY_FIRST = 1.0  # seconds from an unreachable answer to the next attempt; doubles
RETRY_MAX = 30.0  # the back-off's cap
# Seconds a robots.txt fetch lock outlives its holder's last renewal (see FetchLock).
LOCK_TTL = 30.0


class RobotsDisallowed(CrawlyxIgnore, IgnoreRequest):
    error_class = "robots_disallowed"


class RobotsUnavailable(CrawlyxIgnore, IgnoreRequest):
    """robots.txt stayed unreachable for longer than the crawl waits: the page is not
    fetched, and not done either."""

    error_class = "robots_unavailable"


class HostUnreachable(RobotsUnavailable):
    """The start URL's host does not resolve (``dns``) or refuses connections
    (``connection``), and nothing of the site was fetched yet."""

    def __init__(self, message: str, error_class: str):
        super().__init__(message)
        self.error_class = error_class


# Why a host may never have been there at all (the classes of crawlyx.errors.classify).
NO_HOST = ("dns", "connection")


class Robots:
    """One origin's rules, or the news that its robots.txt is unreachable (``failures``:
    unreachable answers in a row, this one included; ``reason``: why; ``error``: the
    class of the network error, if there was one)."""

    def __init__(self, status: int, body: str, fetched_at: float, failures=0, reason="", error=""):
        self.status = status
        self.fetched_at = fetched_at
        # A file saved with a byte order mark (Windows editors) has it before its first
        # "User-agent", which would then name no group: the rules are the file's all the same.
        self.body = body.removeprefix("\ufeff") if 200 <= status < 300 else ""
        self.parser = Protego.parse(self.body) if 200 <= status < 300 else None
        self.failures = failures if self.unreachable else 0
        self.reason = reason
        self.error = error

    @property
    def unreachable(self) -> bool:
        """A 5xx, a 429 or no answer (status 0): disallow everything, for now."""
        return not (200 <= self.status < 500) or self.status == 429

    def allowed(self, url: str, agent: str) -> bool:
        if self.unreachable:
            return False
        return self.parser is None or self.parser.can_fetch(url, agent)

    def crawl_delay(self, agent: str) -> float | None:
        return self.parser.crawl_delay(agent) if self.parser else None

    @property
    def sitemaps(self) -> list[str]:
        return list(self.parser.sitemaps) if self.parser else []

    @property
    def retry_in(self) -> float:
        """Seconds an unreachable answer stands before robots.txt is asked again."""
        return min(RETRY_FIRST * 2 ** max(self.failures - 1, 0), RETRY_MAX)

    def fresh(self, now: float) -> bool:
        ttl = self.retry_in if self.unreachable else FRESH_FOR
        return now - self.fetched_at < ttl

    def record(self) -> str:
        return json.dumps(
            {
                "status": self.status,
                "at": self.fetched_at,
                "body": self.body,
                "failures": self.failures,
                "reason": self.reason,
                "error": self.error,
            }
        )


class FetchLock:
    """Which process of the job fetches an origin's robots.txt: a Redis key holding the
    holder's token (one per process), expiring ``ttl`` seconds after it was taken or last
    renewed, so that a holder that dies frees it soon.

    No fixed expiry covers a fetch: it may wait at the window for the host's turn or a
    Retry-After pause, then take retries and five redirects of up to DOWNLOAD_TIMEOUT
    each. So the holder renews the lock while it fetches (:meth:`keep`). Renewing and
    releasing compare the token first, atomically (redis-py's Lua scripts): a holder whose
    lock expired meanwhile (a stalled process) neither extends nor deletes the next
    holder's; at worst both fetch robots.txt."""

    def __init__(self, client, key: str, token: str, ttl: float = LOCK_TTL):
        self._lock = client.lock(key, timeout=ttl, blocking=False, thread_local=False)
        self._token = token

    def acquire(self) -> bool:
        return self._lock.acquire(token=self._token)

    async def keep(self) -> None:
        """Renew the lock every third of its expiry, until cancelled or the lock is lost."""
        while True:
            await asyncio.sleep(self._lock.timeout / 3)
            try:
                self._lock.reacquire()
            except LockNotOwnedError:
                return  # expired, maybe taken: the new holder's is left alone
            except REDIS_DOWN:
                pass  # it may expire meanwhile, and another process fetch as well

    def release(self) -> bool:
        """Delete the lock if it is still ours; whether it was."""
        try:
            self._lock.release()
        except (LockError, *REDIS_DOWN):  # not ours any more, or it expires on its own
            return False
        return True


class RobotsMiddleware:
    def __init__(self, crawler, parts):
        settings = crawler.settings
        if not settings.getbool("CRAWLYX_ROBOTS_ENABLED"):
            raise NotConfigured
        self.crawler = crawler
        self.parts = parts  # the crawl's shared parts: robots.txt is kept in its Redis
        self.agent = settings.get("CRAWLYX_BOT_NAME") or settings.get("BOT_NAME")
        self.retry_for = settings.getfloat("CRAWLYX_ROBOTS_RETRY_FOR")
        self.max_crawl_delay = settings.getfloat("CRAWLYX_MAX_CRAWL_DELAY")
        self._capped: set[str] = set()  # origins whose Crawl-delay was capped, logged once
        self._token = secrets.token_hex(8)  # this process's, in the fetch locks it holds
        self._robots: dict[str, Robots] = {}
        self._pending: dict[str, asyncio.Future] = {}
        # origin -> when this process found its robots.txt unreachable, until it answers.
        self._down_since: dict[str, float] = {}
        self._start_origins: set[str] = set()  # origins of start pages seen here

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler, shared_parts(crawler))

    async def process_request(self, request):
        if request.meta.get("dont_obey_robotstxt"):
            return None
        origin = url_origin(request.url)
        start = request.meta.get("crawlyx_anchor")
        if start:
            self._start_origins.add(origin)
        robots = await self.robots_for(origin)
        if start and robots.unreachable and robots.error in NO_HOST:
            raise HostUnreachable(robots.reason, robots.error)
        while robots.unreachable:
            now = time.time()
            waited = now - self._down_since.get(origin, now)
            # A stopping crawl waits for its requests: this one goes, for the next run.
            if waited >= self.retry_for or not self.crawler.engine.running:
                raise RobotsUnavailable(
                    f"robots.txt unreachable for {waited:.0f} s: {robots.reason}"
                )
            # Back when the answer goes stale or patience runs out, and at least each second.
            wake = min(robots.fetched_at + robots.retry_in - now, self.retry_for - waited, 1.0)
            await asyncio.sleep(max(wake, 0.05))
            robots = await self.robots_for(origin)
        if not robots.allowed(request.url, self.agent):
            raise RobotsDisallowed(f"forbidden by robots.txt: {request.url}")
        return None

    def cached(self, origin: str) -> Robots | None:
        """The rules this process holds for ``origin``, without fetching (None: not yet)."""
        return self._robots.get(origin)

    def held(self) -> dict[str, Robots]:
        """The rules this process holds, by origin: a copy, made in one step under the
        interpreter's lock, so another thread (the metrics endpoint's) may ask."""
        return dict(self._robots)

    def crawl_delay(self, origin: str, robots: Robots) -> float | None:
        """The Crawl-delay ``robots`` (``origin``'s) sets for our token, in seconds, at
        most CRAWLYX_MAX_CRAWL_DELAY; None if it sets none."""
        delay = robots.crawl_delay(self.agent)
        if delay is None or delay <= self.max_crawl_delay:
            return delay
        if origin not in self._capped:
            self._capped.add(origin)
            self.crawler.stats.inc_value("crawlyx/robots/crawl_delay_capped")
            logger.warning(
                "robots.txt of %s asks for a Crawl-delay of %g s: capped at %g s "
                "(CRAWLYX_MAX_CRAWL_DELAY)",
                origin,
                delay,
                self.max_crawl_delay,
            )
        return self.max_crawl_delay

    async def robots_for(self, origin: str) -> Robots:
        robots = self._robots.get(origin)
        now = time.time()
        if robots is not None and robots.fresh(now):
            self.crawler.stats.set_value(
                f"crawlyx/robots/age_seconds/{origin}", int(now - robots.fetched_at)
            )
            return robots
        pending = self._pending.get(origin)
        if pending is None:
            pending = self._pending[origin] = asyncio.ensure_future(self._load(origin))
            pending.add_done_callback(lambda _: self._pending.pop(origin, None))
        robots = await asyncio.shield(pending)
        self._robots[origin] = robots
        if robots.unreachable:
            self._down_since.setdefault(origin, robots.fetched_at)
        else:
            self._down_since.pop(origin, None)
        return robots

    async def _load(self, origin: str) -> Robots:
        state = self.parts.state
        key = _robots_key(state, origin)
        lock = FetchLock(state.client, key + ":lock", self._token)
        redis = state.client
        while True:
            try:
                stored = cached_robots(state, origin)
                # An outage is only waited on by a process that has seen it begin.
                if stored is not None and stored.fresh(time.time()):
                    if not stored.unreachable or origin in self._down_since:
                        return stored
                # One process of the job fetches; the others wait for its answer.
                locked = lock.acquire()
            except REDIS_DOWN as exc:  # the origin's requests wait for Redis
                outage(self.crawler.stats, f"reading robots.txt of {origin}", exc)
                await asyncio.sleep(1.0)
                continue
            if locked:
                state.index(key, key + ":lock")
                keeping = asyncio.ensure_future(lock.keep())
                try:
                    robots = await self._fetch(origin)
                    if robots.unreachable:
                        robots.failures = 1
                        if stored is not None and origin in self._down_since:
                            robots.failures += stored.failures
                        if robots.error not in NO_HOST or origin not in self._start_origins:
                            logger.warning(  # (a start page's failure says it otherwise)
                                "%s: its pages wait; asking again in %.0f s",
                                robots.reason,
                                robots.retry_in,
                            )
                    redis.set(key, robots.record(), ex=FRESH_FOR)
                except REDIS_DOWN as exc:  # this process has the rules, the others wait
                    outage(self.crawler.stats, f"storing robots.txt of {origin}", exc)
                finally:
                    keeping.cancel()
                    lock.release()
                return robots
            await asyncio.sleep(0.1)

    async def _fetch(self, origin: str) -> Robots:
        stats = self.crawler.stats
        request = Request(
            origin + "/robots.txt",
            priority=1000,
            callback=NO_CALLBACK,
            meta={"dont_obey_robotstxt": True, "redirect_ttl": MAX_REDIRECTS},
        )
        try:
            response = await self.crawler.engine.download_async(request)
        except IgnoreRequest as exc:
            if "max redirections" not in str(exc):
                raise
            # RFC 9309: past five redirects the file counts as unavailable, like a 4xx.
            logger.warning("robots.txt of %s: more than %d redirects", origin, MAX_REDIRECTS)
            stats.inc_value("crawlyx/robots/too_many_redirects")
            return Robots(410, "", time.time())
        except Exception as exc:
            stats.inc_value("crawlyx/robots/unavailable")
            error = classify(Failure(exc))
            reason = f"{origin} could not be reached ({error}: {exc})"
            return Robots(0, "", time.time(), reason=reason, error=error)
        stats.inc_value(f"crawlyx/robots/status/{response.status}")
        body = response.body[:ROBOTS_MAX_BYTES].decode("utf-8", "replace")
        reason = f"robots.txt of {origin} answered {response.status}"
        return Robots(response.status, body, time.time(), reason=reason)


def _robots_key(state, origin: str) -> str:
    return state.key(f"robots:{origin}")


def cached_robots(state, origin: str) -> Robots | None:
    """The job's stored answer for ``origin``, whichever process fetched it."""
    raw = state.client.get(_robots_key(state, origin))
    if raw is None:
        return None
    record = json.loads(raw)
    return Robots(
        record["status"],
        record["body"],
        record["at"],
        record.get("failures", 0),
        record.get("reason", ""),
        record.get("error", ""),
    )
