"""Every access crawlyx makes to Scrapy's private downloader internals, in one place.

The adaptive window (:mod:`crawlyx.middlewares.window`) steers the downloader's slots
the way AutoThrottle does, through attributes Scrapy does not document as API: the
``Downloader``'s ``slots``, ``per_slot_settings``, ``total_concurrency``,
``middleware.middlewares`` and ``_process_queue``, and a ``Slot``'s ``concurrency``,
``latercall`` and ``queue``. Setting an attribute Scrapy no longer reads fails silently, so
:func:`check` verifies them on the running downloader (the window calls it as the
engine starts) and ``tests/middlewares/test_slots.py`` exercises each one on a real ``Downloader``:
an upgrade that moves one fails loudly, naming it.

Checked against Scrapy 2.19.0.
"""

from __future__ import annotations

from scrapy.utils.asyncio import call_later
from twisted.python.failure import Failure

CHECKED_AGAINST = "2.19.0"

DOWNLOADER_ATTRIBUTES = (
    "DOWNLOAD_SLOT",
    "slots",
    "per_slot_settings",
    "total_concurrency",
    "middleware",
    "get_slot_key",
    "_process_queue",
)
SLOT_ATTRIBUTES = ("concurrency", "latercall", "queue")


class ScrapyInternalsMoved(RuntimeError):
    pass


def check(downloader, slot=None) -> None:
    """Raise :class:`ScrapyInternalsMoved` if the downloader (or a slot of it) lacks an
    attribute this module relies on."""
    missing = [f"Downloader.{a}" for a in DOWNLOADER_ATTRIBUTES if not hasattr(downloader, a)]
    if not hasattr(getattr(downloader, "middleware", None), "middlewares"):
        missing.append("Downloader.middleware.middlewares")
    if slot is not None:
        missing += [f"Slot.{a}" for a in SLOT_ATTRIBUTES if not hasattr(slot, a)]
    if missing:
        import scrapy

        raise ScrapyInternalsMoved(
            f"crawlyx's window relies on Scrapy downloader internals checked against "
            f"Scrapy {CHECKED_AGAINST}; Scrapy {scrapy.__version__} lacks: "
            f"{', '.join(missing)} (see crawlyx/middlewares/slots.py)"
        )


# -- the downloader ----------------------------------------------------------------------


def key_of(downloader, request) -> str:
    """The slot key ``request`` goes to (set in its meta once it reached its slot)."""
    return downloader.get_slot_key(request)


def reached_key(downloader, request) -> str | None:
    """The slot key the downloader recorded on a request that reached its slot."""
    return request.meta.get(downloader.DOWNLOAD_SLOT)


def slot_of(downloader, key: str):
    """The slot for ``key``, or None if the downloader has none (yet, or no more)."""
    return downloader.slots.get(key)


def configured_concurrency(downloader, key: str) -> int | None:
    """A ``DOWNLOAD_SLOTS`` entry's own concurrency for ``key``, if any."""
    own = downloader.per_slot_settings.get(key, {}).get("concurrency")
    return int(own) if own else None


def set_total_concurrency(downloader, total: int) -> None:
    """How many requests the engine lets into the downloader at once."""
    downloader.total_concurrency = total


def middlewares(downloader) -> tuple:
    """The downloader middleware instances, in order."""
    return tuple(downloader.middleware.middlewares)


# -- a slot ------------------------------------------------------------------------------


def set_concurrency(slot, value: int) -> None:
    slot.concurrency = value


def hold(downloader, slot, seconds: float) -> None:
    """Start no request queued in ``slot`` for ``seconds``, with the downloader's own
    mechanism for delays: a pending ``slot.latercall`` makes it leave the slot's queue
    alone. A pending latercall (its delay timer, or an earlier hold) is replaced; when
    ours fires it does what the downloader's own timer does (``Downloader._latercall``):
    clear it and process the queue, which recomputes any delay left."""
    if slot.latercall is not None:
        slot.latercall.cancel()
    timer = None

    def release() -> None:
        if slot.latercall is timer:  # not replaced meanwhile
            slot.latercall = None
            downloader._process_queue(slot)

    timer = slot.latercall = call_later(seconds, release)


def fail_queued(slot, exc: Exception) -> None:
    """Fail each request waiting in ``slot``'s queue with ``exc``, unsent."""
    while slot.queue:
        _, deferred = slot.queue.popleft()
        deferred.errback(Failure(exc))
