"""Redis unreachable: the errors the crawl rides out, and how each is logged and counted.

Every Redis call is bounded and retried (crawlyx/frontier/state.py); one that still fails
raises one of :data:`REDIS_DOWN`, which the crawl's components survive: they keep their
work for later and say so with :func:`outage`.
"""

from __future__ import annotations

import logging

import redis

# The name these warnings have always been logged under (filters and alerts key on it).
logger = logging.getLogger("crawlyx.frontier.state")

# Redis unreachable or stalled: the call may be tried again later.
REDIS_DOWN = (redis.ConnectionError, redis.TimeoutError)


def outage(stats, doing: str, exc: Exception) -> None:
    """Log and count a Redis call that failed with one of :data:`REDIS_DOWN`."""
    logger.warning("Redis unreachable while %s: %s", doing, exc)
    if stats is not None:
        stats.inc_value("crawlyx/redis/errors")
