"""crawlyx's monitoring extensions (a feature's own extension sits in its folder), and what
the extensions that flush to Redis on a timer (crawl breadth's, demand's) share."""

from __future__ import annotations

import logging

import redis

logger = logging.getLogger(__name__)


def flush_counted(stats, name: str, merge) -> bool:
    """Run ``merge`` (a flush of what a process recorded into Redis; it returns the rows
    merged) for the extension ``name``: counted under ``crawlyx/{name}/flushes``,
    ``.../rows_merged`` and ``.../flush_failures``. It never raises: it runs from a
    LoopingCall, which an exception would stop. False when it failed; what a failed
    flush did not send stays recorded for the next one."""
    try:
        merged = merge()
    except redis.RedisError as exc:
        stats.inc_value(f"crawlyx/{name}/flush_failures")
        logger.warning("crawlyx: %s flush failed, kept for the next one: %s", name, exc)
        return False
    except Exception:  # a bug must not stop the LoopingCall (nor the crawl)
        stats.inc_value(f"crawlyx/{name}/flush_failures")
        logger.exception("crawlyx: %s flush failed", name)
        return False
    stats.inc_value(f"crawlyx/{name}/flushes")
    stats.inc_value(f"crawlyx/{name}/rows_merged", merged)
    return True
