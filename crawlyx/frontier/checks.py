"""Checks of the Redis settings, run before anything starts: the URL's form (with the
other settings checks, crawlyx/addon.py), then whether that Redis answers or the embedded
one's directory can hold it (the crawl command, last: they may take a while).
"""

from __future__ import annotations

from urllib.parse import urlsplit

import redis
from redis.backoff import NoBackoff
from redis.exceptions import RedisClusterException
from redis.retry import Retry

from crawlyx.frontier.state import REDIS_SCHEMES, EmbeddedRedis, cluster_nodes, connect_url, redact


def check_redis_url(settings) -> None:
    """ValueError unless CRAWLYX_REDIS_URL is empty (the embedded server) or a Redis URL."""
    url = settings.get("CRAWLYX_REDIS_URL") or ""
    if not url:
        return
    try:
        cluster_nodes(url)  # a cluster's nodes are each host:port
        bad = urlsplit(url).scheme not in REDIS_SCHEMES
    except ValueError:
        bad = True
    if bad:
        raise ValueError(
            f"CRAWLYX_REDIS_URL ({redact(url)}) must be a redis://, rediss://, unix:// or "
            "redis+cluster://host:port[,host:port...] URL, or empty for the embedded server"
        )


def check_redis_reachable(settings) -> None:
    """ValueError unless the Redis of CRAWLYX_REDIS_URL answers, asked once (the crawl
    itself rides out a Redis that goes away later). The embedded server is not asked (the
    crawl starts it, while it builds its components), but the directory it would keep its
    data and locks in must be one it can write."""
    url = settings.get("CRAWLYX_REDIS_URL") or ""
    if not url:
        check_data_dir(settings)
        return
    timeout = settings.getfloat("CRAWLYX_REDIS_TIMEOUT")
    try:
        client = connect_url(
            url,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 0),
        )
        client.ping()
    except (redis.RedisError, RedisClusterException, ValueError) as exc:
        where = f"{redact(url)} (CRAWLYX_REDIS_URL)"
        raise ValueError(f"cannot reach Redis at {where}: {exc}") from None
    client.close()


def check_data_dir(settings) -> None:
    """ValueError unless CRAWLYX_DATA_DIR can hold the embedded Redis, and no other process
    has been starting or stopping it for long (that wait is done here, before the crawl)."""
    embedded = EmbeddedRedis(settings.get("CRAWLYX_DATA_DIR") or ".crawlyx")
    try:
        embedded.check_dir()
        embedded.wait_unlocked()
    except RuntimeError as exc:
        raise ValueError(str(exc)) from None
