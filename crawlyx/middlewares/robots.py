"""robots.txt, fetched once per origin for the whole job and shared through Redis.

Policy (RFC 9309): redirects are followed up to five hops (past that the file counts
as unavailable, like a 4xx); a 2xx body is parsed (at most ``ROBOTS_MAX_BYTES``); a 4xx
means there are no rules; a 5xx, a 429 or a network error means "disallow everything"
for now, and is not kept: the next request to that origin after
``RETRY_AFTER_FAILURE`` seconds tries again. A parsed file is fresh for 24 hours; its age
is in the stats (``crawlyx/robots/age_seconds/<origin>``). A disallowed request fails
with :class:`RobotsDisallowed` (class ``robots_disallowed``). Replaces Scrapy's
RobotsTxtMiddleware, which treats a 5xx as
"allow all" and keeps one answer for the whole crawl.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from contextlib import suppress

from protego import Protego
from scrapy import Request
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http.request import NO_CALLBACK

from crawlyx.errors import CrawlyxIgnore
from crawlyx.normalize import url_origin
from crawlyx.state import REDIS_DOWN, crawl_state, outage

logger = logging.getLogger(__name__)

ROBOTS_MAX_BYTES = 500 * 1024
MAX_REDIRECTS = 5
FRESH_FOR = 24 * 3600
RETRY_AFTER_FAILURE = 300
LOCK_TTL = 60


class RobotsDisallowed(CrawlyxIgnore, IgnoreRequest):
    error_class = "robots_disallowed"


class Robots:
    """One origin's rules."""

    def __init__(self, status: int, body: str, fetched_at: float):
        self.status = status
        self.fetched_at = fetched_at
        self.body = body if 200 <= status < 300 else ""
        self.parser = Protego.parse(self.body) if 200 <= status < 300 else None

    @property
    def disallow_all(self) -> bool:
        return not (200 <= self.status < 500) or self.status == 429

    def allowed(self, url: str, agent: str) -> bool:
        if self.disallow_all:
            return False
        return self.parser is None or self.parser.can_fetch(url, agent)

    def crawl_delay(self, agent: str) -> float | None:
        return self.parser.crawl_delay(agent) if self.parser else None

    @property
    def sitemaps(self) -> list[str]:
        return list(self.parser.sitemaps) if self.parser else []

    def fresh(self, now: float) -> bool:
        ttl = FRESH_FOR if not self.disallow_all else RETRY_AFTER_FAILURE
        return now - self.fetched_at < ttl


class RobotsMiddleware:
    def __init__(self, crawler):
        settings = crawler.settings
        if not settings.getbool("CRAWLYX_ROBOTS_ENABLED"):
            raise NotConfigured
        self.crawler = crawler
        self.agent = settings.get("CRAWLYX_BOT_NAME") or settings.get("BOT_NAME")
        self._robots: dict[str, Robots] = {}
        self._pending: dict[str, asyncio.Future] = {}

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    async def process_request(self, request):
        if request.meta.get("dont_obey_robotstxt"):
            return None
        robots = await self.robots_for(url_origin(request.url))
        if not robots.allowed(request.url, self.agent):
            raise RobotsDisallowed(f"forbidden by robots.txt: {request.url}")
        return None

    def cached(self, origin: str) -> Robots | None:
        """The rules this process holds for ``origin``, without fetching (None: not yet)."""
        return self._robots.get(origin)

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
        return robots

    async def _load(self, origin: str) -> Robots:
        state = crawl_state(self.crawler)
        key = _robots_key(state, origin)
        lock = key + ":lock"
        redis = state.client
        while True:
            try:
                robots = cached_robots(state, origin)
                if robots is not None and robots.fresh(time.time()):
                    return robots
                # One process of the job fetches; the others wait for its answer.
                locked = redis.set(lock, 1, nx=True, ex=LOCK_TTL)
            except REDIS_DOWN as exc:  # the origin's requests wait for Redis
                outage(self.crawler.stats, f"reading robots.txt of {origin}", exc)
                await asyncio.sleep(1.0)
                continue
            if locked:
                try:
                    robots = await self._fetch(origin)
                    record = {"status": robots.status, "at": robots.fetched_at, "body": robots.body}
                    redis.set(key, json.dumps(record), ex=FRESH_FOR)
                except REDIS_DOWN as exc:  # this process has the rules, the others wait
                    outage(self.crawler.stats, f"storing robots.txt of {origin}", exc)
                finally:
                    with suppress(*REDIS_DOWN):  # or the lock expires
                        redis.delete(lock)
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
            logger.warning("robots.txt of %s unavailable (%s): disallowing for now", origin, exc)
            stats.inc_value("crawlyx/robots/unavailable")
            return Robots(0, "", time.time())
        stats.inc_value(f"crawlyx/robots/status/{response.status}")
        body = response.body[:ROBOTS_MAX_BYTES].decode("utf-8", "replace")
        return Robots(response.status, body, time.time())


def _robots_key(state, origin: str) -> str:
    return state.key(f"robots:{origin}")


def cached_robots(state, origin: str) -> Robots | None:
    """The job's stored answer for ``origin``, whichever process fetched it."""
    raw = state.client.get(_robots_key(state, origin))
    if raw is None:
        return None
    record = json.loads(raw)
    return Robots(record["status"], record["body"], record["at"])
