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

from crawlyx.frontier.embedded import EmbeddedRedis
from crawlyx.frontier.state import (
    CLUSTER_SCHEMES,
    REDIS_SCHEMES,
    cluster_nodes,
    connect_url,
    redact,
)


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
    failures = (redis.RedisError, RedisClusterException, ValueError)
    where = f"{redact(url)} (CRAWLYX_REDIS_URL)"
    try:
        client = connect_url(
            url,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 0),
        )
        try:
            client.ping()
            # A cluster's node named as one server answers MOVED for most of the job's
            # keys: the crawl would run, and lose what it writes to them.
            single = urlsplit(url).scheme not in CLUSTER_SCHEMES
            clustered = single and client.info("cluster").get("cluster_enabled") == 1
        finally:
            client.close()
    except failures as exc:
        raise ValueError(f"cannot reach Redis at {where}: {exc}") from None
    if clustered:
        scheme = "rediss+cluster" if urlsplit(url).scheme == "rediss" else "redis+cluster"
        raise ValueError(
            f"Redis at {where} is a node of a Redis Cluster; name the cluster: "
            f"{scheme}://{redact(url).split('://', 1)[-1]}"
        )


def check_data_dir(settings) -> None:
    """ValueError unless CRAWLYX_DATA_DIR can hold the embedded Redis, and no other process
    has been starting or stopping it for long (that wait is done here, before the crawl)."""
    embedded = EmbeddedRedis(settings.get("CRAWLYX_DATA_DIR") or ".crawlyx")
    try:
        embedded.check_dir()
        embedded.wait_unlocked()
    except RuntimeError as exc:
        raise ValueError(str(exc)) from None
