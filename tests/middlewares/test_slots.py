"""The Scrapy downloader internals crawlyx's window relies on (crawlyx/middlewares/slots.py),
exercised on a real Downloader: a Scrapy upgrade that moves one fails here, by name."""

from __future__ import annotations

import asyncio
import time

import pytest
from scrapy import Request
from scrapy.core.downloader import Downloader
from scrapy.downloadermiddlewares.retry import RetryMiddleware
from scrapy.utils.test import get_crawler
from twisted.internet.defer import Deferred

from crawlyx.middlewares import slots


@pytest.fixture
def loop():
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)  # where Scrapy's timers and looping calls go
    yield loop
    loop.run_until_complete(asyncio.sleep(0))  # cancelled tasks see it
    loop.close()
    asyncio.set_event_loop(None)


@pytest.fixture
def downloader(loop):
    crawler = get_crawler(
        settings_dict={"DOWNLOAD_SLOTS": {"capped": {"concurrency": 3}}, "DOWNLOAD_DELAY": 0}
    )
    downloader = Downloader(crawler)
    yield downloader
    downloader.close()  # stops the slot collector a slot starts


def a_slot(downloader, url="http://host.test/page"):
    # The downloader makes a slot as a request reaches it (Downloader._get_slot); that is
    # the one place this test calls Scrapy itself privately.
    key, slot = downloader._get_slot(Request(url))
    return key, slot


def test_every_internal_is_where_it_was_checked(downloader):
    _, slot = a_slot(downloader)
    slots.check(downloader, slot)  # raises ScrapyInternalsMoved, naming what moved


def test_check_names_what_moved(downloader):
    _, slot = a_slot(downloader)
    del slot.latercall
    with pytest.raises(slots.ScrapyInternalsMoved, match=r"Slot\.latercall"):
        slots.check(downloader, slot)
    slot.latercall = None


def test_keys_slots_and_per_slot_settings(downloader):
    request = Request("http://host.test:8080/page")
    assert slots.key_of(downloader, request) == "host.test"
    key, slot = a_slot(downloader)
    assert slots.slot_of(downloader, key) is slot
    assert slots.slot_of(downloader, "elsewhere.test") is None
    request.meta[Downloader.DOWNLOAD_SLOT] = "recorded"
    assert slots.reached_key(downloader, request) == "recorded"
    assert slots.configured_concurrency(downloader, "capped") == 3
    assert slots.configured_concurrency(downloader, key) is None


def test_total_concurrency_bounds_what_the_engine_lets_in(downloader):
    slots.set_total_concurrency(downloader, 2)
    downloader.active.update({Request("http://a.test/1"), Request("http://a.test/2")})
    assert downloader.needs_backout()
    slots.set_total_concurrency(downloader, 3)
    assert not downloader.needs_backout()


def test_middlewares_are_the_instances(downloader):
    assert any(isinstance(mw, RetryMiddleware) for mw in slots.middlewares(downloader))


def test_concurrency_is_what_the_slot_uses(downloader):
    _, slot = a_slot(downloader)
    slots.set_concurrency(slot, 1)
    assert slot.free_transfer_slots() == 1


def test_a_held_slot_starts_nothing_until_released(downloader, loop):
    async def scenario():
        _, slot = a_slot(downloader)
        # The downloader's own delay is a pending slot.latercall: the mechanism we hold with.
        slot.delay, slot.jitter, slot.lastseen = 10.0, 0.0, time.monotonic()
        downloader._process_queue(slot)
        assert slot.latercall is not None
        slot.delay = 0.0
        slots.hold(downloader, slot, 0.05)
        slot.queue.append((Request("http://host.test/queued"), Deferred()))
        downloader._process_queue(slot)
        assert len(slot.queue) == 1  # held: the queue is left alone
        slots.set_concurrency(slot, 0)  # so that the release starts no real download
        await asyncio.sleep(0.2)
        assert slot.latercall is None  # released, and the queue processed (nothing fits)
        assert len(slot.queue) == 1

    loop.run_until_complete(scenario())


def test_queued_requests_fail_unsent(downloader):
    _, slot = a_slot(downloader)
    failed = []
    for path in ("/a", "/b"):
        deferred = Deferred()
        deferred.addErrback(lambda failure: failed.append(failure.value))
        slot.queue.append((Request(f"http://host.test{path}"), deferred))
    stop = RuntimeError("stopping")
    slots.fail_queued(slot, stop)
    assert not slot.queue and failed == [stop, stop]
