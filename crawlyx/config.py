"""Checks of crawlyx's settings that no one component owns, run before anything starts.

Every ``CRAWLYX_*`` setting is one crawlyx declares (crawlyx/settings.py): a misspelt name
would otherwise be ignored, and the crawl run with the default. Every one whose default is
a number or a flag must read as one: a number is finite and never negative (no count, size
or duration is), a flag is ``true``/``false``/``1``/``0``. The Redis URL must be one
redis-py opens. Each component checks what its own values mean (a window's bounds, a port's
range) in its ``check_settings``; the add-on runs those after these (crawlyx/addon.py).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable
from urllib.parse import urlsplit

CLUSTER_SCHEMES = ("redis+cluster", "rediss+cluster")  # a Redis Cluster, by its nodes
REDIS_SCHEMES = ("redis", "rediss", "unix", *CLUSTER_SCHEMES)
PREFIX = "CRAWLYX_"


def closest(name: str, known: Iterable[str], prefix: str = "") -> str | None:
    """The name of ``known`` most like ``name`` (past their shared ``prefix``, in any
    case), or None when none is close: what a misspelt name most likely meant."""
    names = {k.removeprefix(prefix).lower(): k for k in known}
    match = difflib.get_close_matches(name.removeprefix(prefix).lower(), names, n=1)
    return names[match[0]] if match else None


# Settings crawlyx had and has no more, and why: named as such rather than as unknown.
REMOVED = {
    "CRAWLYX_MARKDOWN_SITE_BOILERPLATE": "a page's markdown is made from the page alone, "
    "never from what other pages of the crawl repeat",
}


def check_known(settings) -> None:
    """ValueError naming the first ``CRAWLYX_*`` setting crawlyx does not declare, and the
    declared one closest to it. The value is not shown: it may be a password."""
    from crawlyx import settings as defaults

    known = {name for name in vars(defaults) if name.startswith(PREFIX)}
    for name in settings:
        if name in REMOVED:
            raise ValueError(f"{name} was removed: {REMOVED[name]}")
        if name.startswith(PREFIX) and name not in known:
            match = closest(name, known, PREFIX)
            hint = f"; did you mean {match}?" if match else " (see crawlyx/settings.py)"
            raise ValueError(f"{name} is not a crawlyx setting{hint}")


def check_types(settings) -> None:
    """ValueError naming the first ``CRAWLYX_*`` number or flag set to something else."""
    from crawlyx import settings as defaults

    for name, default in vars(defaults).items():
        if not name.startswith(PREFIX) or name not in settings:
            continue
        value = settings.get(name)
        if isinstance(default, bool):
            try:
                settings.getbool(name)
            except ValueError:
                raise ValueError(f"{name} ({value}) must be true or false") from None
        elif isinstance(default, int | float):
            kind = "a whole number" if isinstance(default, int) else "a number"
            try:
                number = float(value) if isinstance(default, float) else _integer(value)
            except (TypeError, ValueError, OverflowError):
                raise ValueError(f"{name} ({value}) must be {kind}") from None
            if not 0 <= number < math.inf:  # NaN neither
                raise ValueError(f"{name} ({value}) must be {kind}, 0 or more")


def _integer(value) -> int:
    number = float(value)
    if number != int(number):
        raise ValueError(value)
    return int(number)


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
        from crawlyx.frontier.state import redact

        raise ValueError(
            f"CRAWLYX_REDIS_URL ({redact(url)}) must be a redis://, rediss://, unix:// or "
            "redis+cluster://host:port[,host:port...] URL, or empty for the embedded server"
        )


def cluster_nodes(url: str) -> list[tuple[str, int]]:
    """The (host, port) of each node a ``redis+cluster://`` URL names (none for another
    URL); ValueError for a node that is no ``host:port``."""
    parts = urlsplit(url)
    if parts.scheme not in CLUSTER_SCHEMES:
        return []
    nodes = []
    for node in parts.netloc.rpartition("@")[2].split(","):
        host, _, port = node.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"a cluster node is host:port, not {node!r}")
        nodes.append((host.strip("[]"), int(port)))
    return nodes


def check_redis_reachable(settings) -> None:
    """ValueError unless the Redis of CRAWLYX_REDIS_URL answers, asked once (the crawl
    itself rides out a Redis that goes away later). The embedded server is not asked (the
    crawl starts it, while it builds its components), but the directory it would keep its
    data and locks in must be one it can write."""
    url = settings.get("CRAWLYX_REDIS_URL") or ""
    if not url:
        check_data_dir(settings)
        return
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    from crawlyx.frontier.state import connect_url, redact

    timeout = settings.getfloat("CRAWLYX_REDIS_TIMEOUT")
    try:
        client = connect_url(
            url,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 0),
        )
        client.ping()
    except (redis.RedisError, redis.exceptions.RedisClusterException, ValueError) as exc:
        where = f"{redact(url)} (CRAWLYX_REDIS_URL)"
        raise ValueError(f"cannot reach Redis at {where}: {exc}") from None
    client.close()


def check_data_dir(settings) -> None:
    """ValueError unless CRAWLYX_DATA_DIR can hold the embedded Redis, and no other process
    has been starting or stopping it for long (that wait is done here, before the crawl)."""
    from crawlyx.frontier.state import EmbeddedRedis

    embedded = EmbeddedRedis(settings.get("CRAWLYX_DATA_DIR") or ".crawlyx")
    try:
        embedded.check_dir()
        embedded.wait_unlocked()
    except RuntimeError as exc:
        raise ValueError(str(exc)) from None
