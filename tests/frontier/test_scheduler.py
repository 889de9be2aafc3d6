"""The scheduler against a real Redis, outside a running crawl."""

from __future__ import annotations

import logging
import pickle
import threading
import uuid
from types import SimpleNamespace

import pytest
import redis
from scrapy import Request, signals
from scrapy.exceptions import CloseSpider
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler

from crawlyx import render
from crawlyx import settings as project
from crawlyx.feeds import FileFeedStorage
from crawlyx.frontier import queued
from crawlyx.frontier import round_trips as round_trips_module
from crawlyx.frontier.scheduler import Scheduler
from crawlyx.frontier.state import OWNERS
from crawlyx.frontier.visited import LEASE_META, VisitedTable
from crawlyx.items import PageItem
from crawlyx.middlewares.lease import LeaseMiddleware
from crawlyx.render.fallback import RenderFallback
from crawlyx.spiders.site import SiteSpider


def open_scheduler(redis_url: str, origin="http://127.0.0.1:9/", **arguments) -> Scheduler:
    settings = {name: value for name, value in vars(project).items() if name.isupper()}
    settings["CRAWLYX_REDIS_URL"] = redis_url
    crawler = get_crawler(SiteSpider, settings_dict=settings)
    crawler._apply_settings()
    crawler.spider = SiteSpider.from_crawler(crawler, start="http://127.0.0.1:9/", **arguments)
    scheduler = Scheduler.from_crawler(crawler)
    scheduler.open(crawler.spider)
    if origin is not None:
        crawler.spider.scope.fix(origin)  # as the start URL's response does
    return scheduler


def close_scheduler(scheduler: Scheduler) -> None:
    scheduler.close("finished")
    scheduler.parts.state.delete_all()
    scheduler.spider.parts.workers.close()  # started by the spider, stopped by the engine


@pytest.fixture
def scheduler(redis_url):
    scheduler = open_scheduler(redis_url)
    yield scheduler
    close_scheduler(scheduler)


@pytest.fixture
def own_scheduler(own_redis):
    """A scheduler on a Redis of its own, which the test may stop and start again."""
    scheduler = open_scheduler(own_redis.url)
    yield scheduler
    close_scheduler(scheduler)


def test_dedup_sees_normalized_urls(scheduler):
    spider = scheduler.spider
    assert scheduler.enqueue_request(Request("http://127.0.0.1:9/a?y=2&x=1", spider.parse))
    for variant in (
        "http://127.0.0.1:9/a?x=1&y=2#frag",
        "HTTP://127.0.0.1:9/a/?x=1&y=2&utm_source=z",
        "http://127.0.0.1:9/%61?x=1&y=2",
    ):
        assert not scheduler.enqueue_request(Request(variant, spider.parse)), variant
    assert len(scheduler) == 1
    assert scheduler.enqueue_request(Request("http://127.0.0.1:9/A?x=1&y=2", spider.parse))


def test_unserializable_request_is_an_error_naming_the_url(scheduler, caplog):
    spider = scheduler.spider
    url = "http://127.0.0.1:9/locked"
    meta = {render.HTTP_PAGE_META: {"lock": threading.Lock()}}  # not plain data
    with caplog.at_level(logging.ERROR):
        assert not scheduler.enqueue_request(Request(url, spider.parse, meta=meta))
    assert f"Cannot queue {url}" in caplog.text
    assert scheduler.stats.get_value("crawlyx/frontier/unserializable") == 1
    # Not claimed: a request for the same URL that serializes is still crawled.
    assert scheduler.enqueue_request(Request(url, spider.parse))
    assert len(scheduler) == 1


def test_popped_requests_carry_their_lease(scheduler):
    spider = scheduler.spider
    scheduler.enqueue_request(Request("http://127.0.0.1:9/page", spider.parse))
    request = scheduler.next_request()
    assert request.url == "http://127.0.0.1:9/page"
    assert request.callback == spider.parse
    fp = request.meta[LEASE_META]
    assert scheduler.visited.state_of(fp) == b"l"


def test_not_finished_while_another_live_process_holds_a_lease(scheduler):
    spider = scheduler.spider
    other = VisitedTable(scheduler.visited.state, owner="other-process")
    other.heartbeat()
    scheduler.enqueue_request(Request("http://127.0.0.1:9/theirs", spider.parse))
    assert scheduler.visited.queued() == 1
    assert other.pop() is not None
    assert scheduler.has_pending_requests() is True  # they may still discover pages
    other.retire()  # they died: the lease comes back to the queue
    assert scheduler.has_pending_requests() is True
    request = scheduler.next_request()
    assert request.url == "http://127.0.0.1:9/theirs"


def test_redirect_releases_the_lease_after_the_claim_of_the_target(scheduler, monkeypatch):
    spider, table = scheduler.spider, scheduler.visited
    scheduler.enqueue_request(Request("http://127.0.0.1:9/old", spider.parse))
    request = scheduler.next_request()
    old_fp = request.meta[LEASE_META]
    redirected = request.replace(url="http://127.0.0.1:9/new")
    new_fp = scheduler.fingerprinter.fingerprint(redirected).hex()
    round_trips = watch_round_trips(table, monkeypatch)
    assert scheduler.enqueue_request(redirected)
    # The target is claimed, then the lease released once the claim is answered: there
    # is no moment with the lease done and the target unclaimed.
    claim, release = round_trips
    assert claim["args"][2:5] == [0, b"c", new_fp.encode()]  # no release with it
    assert release["args"][2:] == [1, old_fp]
    assert table.state_of(old_fp) == b"d" and table.state_of(new_fp) == b"q"
    assert scheduler.stats.get_value("crawlyx/frontier/redirected") == 1
    target = scheduler.next_request()
    assert target.url == "http://127.0.0.1:9/new"
    assert target.meta[LEASE_META] != old_fp


def _redirected(request, url: str) -> Request:
    """``request``'s redirect to ``url``, as Scrapy's redirect middleware builds it."""
    meta = {**request.meta, "redirect_urls": [*request.meta.get("redirect_urls", []), request.url]}
    return request.replace(url=url, meta=meta)


def test_pages_that_redirect_to_each_other_across_fetches_are_a_trap(scheduler):
    spider, table, stats = scheduler.spider, scheduler.visited, scheduler.stats
    a, b, c = (f"http://127.0.0.1:9/{name}" for name in "abc")
    for url in (a, c):  # both linked
        scheduler.enqueue_request(Request(url, spider.parse))
    page_a, page_c = scheduler.next_request(), scheduler.next_request()
    leases = [page_a.meta[LEASE_META], page_c.meta[LEASE_META]]
    # c -> a, known: c is accounted for by a.
    assert not scheduler.enqueue_request(_redirected(page_c, a))
    assert stats.get_value("crawlyx/error/trap") is None
    # a -> b, new: one chain, fetched on; b -> c, known: the loop a -> b -> c -> a.
    assert scheduler.enqueue_request(_redirected(page_a, b))
    page_b = scheduler.next_request()
    leases.append(page_b.meta[LEASE_META])
    assert not scheduler.enqueue_request(_redirected(page_b, c))
    assert stats.get_value("crawlyx/error/trap") == 3  # each page once
    assert [table.state_of(fp) for fp in leases] == [b"d"] * 3
    assert table.leased() == 0


def test_redirect_to_another_spelling_keeps_the_lease(scheduler):
    spider = scheduler.spider
    scheduler.enqueue_request(Request("http://127.0.0.1:9/docs", spider.parse))
    request = scheduler.next_request()
    fp = request.meta[LEASE_META]
    assert scheduler.enqueue_request(request.replace(url="http://127.0.0.1:9/docs/"))
    again = scheduler.next_request()
    assert again.url == "http://127.0.0.1:9/docs/" and again.meta[LEASE_META] == fp


def test_idle_process_releases_its_lost_leases(scheduler):
    spider = scheduler.spider
    scheduler.enqueue_request(Request("http://127.0.0.1:9/lost", spider.parse))
    scheduler.next_request()  # leased, then never reported back
    assert scheduler.has_pending_requests() is False
    assert scheduler.stats.get_value("crawlyx/frontier/lost_leases") == 1


@pytest.mark.parametrize(
    "kwargs",
    [
        lambda spider: {"callback": spider.parse, "errback": spider.on_error},
        lambda spider: {"callback": spider.parse_sitemap},
        lambda spider: {},
        # a retry: dont_filter, its count
        lambda spider: {"callback": spider.parse, "dont_filter": True, "meta": {"retry_times": 1}},
        # a redirect: its trail, and downloader state it carries that is not queued
        lambda spider: {
            "callback": spider.parse,
            "meta": {
                "redirect_times": 1,
                "redirect_ttl": 19,
                "redirect_urls": ["http://127.0.0.1:9/old"],
                "redirect_reasons": [301],
                "download_slot": "127.0.0.1",
                "download_latency": 0.1,
            },
        },
        # a render: scrapy-playwright's meta, and that the page's HTTP version was fine
        lambda spider: {
            "callback": spider.parse,
            "dont_filter": True,
            "meta": {**spider.browser_meta, render.HTTP_PAGE_META: True},
        },
    ],
)
def test_requests_survive_the_queue(scheduler, kwargs):
    spider = scheduler.spider
    kwargs = kwargs(spider)
    meta = {"depth": 3, "crawlyx_referrer": "http://127.0.0.1:9/", **kwargs.pop("meta", {})}
    request = Request(
        "http://127.0.0.1:9/p?b=2",
        meta=meta,
        priority=2,
        headers={"Referer": "http://127.0.0.1:9/", "Accept": "text/html"},
        **kwargs,
    )
    again = queued.decode(queued.encode(request, spider), spider)
    assert again.url == request.url and again.method == "GET"
    assert (again.callback, again.errback) == (request.callback, request.errback)
    assert (again.priority, again.dont_filter) == (2, request.dont_filter)
    assert again.headers.to_unicode_dict() == {"Referer": "http://127.0.0.1:9/"}
    kept = {k: v for k, v in meta.items() if k not in ("download_slot", "download_latency")}
    if request.callback == spider.parse_sitemap:  # its size cap, computed again
        kept["download_maxsize"] = spider.sitemap_max_bytes
    assert again.meta == kept


@pytest.mark.parametrize(
    "kwargs",
    [
        lambda spider: {"callback": _not_a_spider_method},
        lambda spider: {"callback": spider.parse, "errback": spider.idle},
        lambda spider: {"method": "POST"},
        lambda spider: {"cb_kwargs": {"x": 1}},
    ],
)
def test_requests_that_are_not_queued(scheduler, kwargs):
    request = Request("http://127.0.0.1:9/p", **kwargs(scheduler.spider))
    with pytest.raises(queued.Refused):
        queued.encode(request, scheduler.spider)


def _not_a_spider_method(failure):
    pass


def test_a_planted_pickle_is_refused_not_run(scheduler, tmp_path):
    spider, table = scheduler.spider, scheduler.visited
    marker = tmp_path / "ran"
    planted = pickle.dumps(_Exploit(str(marker)))
    fp = "f" * 40
    table.claim(fp, planted)  # as anyone who can write to the Redis could
    for payload in (
        b'{"url": "http://127.0.0.1:9/x"}',  # not the schema
        queued.encode(Request("http://127.0.0.1:9/x"), spider).replace(b'"GET"', b'"POST"'),
        queued.encode(Request("http://127.0.0.1:9/y"), spider).replace(
            b'"meta":{', b'"meta":{"proxy":"http://e/",'
        ),
        queued.encode(Request("http://127.0.0.1:9/z"), spider).replace(
            b'"callback":null', b'"callback":"close"'
        ),
    ):
        table.push(None, payload)
    scheduler.enqueue_request(Request("http://127.0.0.1:9/page", spider.parse))
    request = scheduler.next_request()
    assert request.url == "http://127.0.0.1:9/page"  # the refused ones are skipped
    assert not marker.exists()
    assert scheduler.stats.get_value("crawlyx/queue/refused") == 5
    assert table.state_of(fp) == b"d" and table.leased() == 1  # the page's lease only


class _Exploit:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_unstarted_popped_requests_go_back_to_the_queue_on_close(scheduler):
    spider = scheduler.spider
    for n in range(3):
        scheduler.enqueue_request(Request(f"http://127.0.0.1:9/n{n}", spider.parse))
    first = scheduler.next_request()
    assert first.url.endswith("/n0")
    assert len(scheduler) == 2  # popped ahead, still counted
    scheduler.close("shutdown")
    table = scheduler.visited
    assert table.leased() == 1  # only the started one
    assert [fp is not None for fp, _ in table.pop_many(5)] == [True, True]


def test_a_pages_links_are_claimed_with_its_release_in_one_round_trip(scheduler, monkeypatch):
    spider = scheduler.spider
    table = scheduler.visited
    scheduler.enqueue_request(Request("http://127.0.0.1:9/page", spider.parse))
    page = scheduler.next_request()
    lease = page.meta[LEASE_META]
    links = [Request(f"http://127.0.0.1:9/link{n}", spider.parse) for n in range(3)]
    for link in links:
        assert scheduler.enqueue_request(link)  # sent later: no round trip yet
    theirs = scheduler.fingerprinter.fingerprint(links[1]).hex()
    assert VisitedTable(table.state, owner="other").claim(theirs, b"found there first")
    round_trips = watch_round_trips(table, monkeypatch)
    table.release(page)
    assert len(round_trips) == 1
    assert table.state_of(lease) == b"d"
    assert scheduler.stats.get_value("crawlyx/frontier/enqueued") == 3  # the page, 2 links
    assert scheduler.stats.get_value("crawlyx/frontier/duplicates") == 1
    assert table.queued() == 3


def watch_round_trips(table, monkeypatch) -> list[dict]:
    """The arguments of each visited-table script call ``table`` makes from now on."""
    round_trips = []
    direct, batched = round_trips_module.run_scripts, table.core.script

    def run(client, calls, loaded):  # calls that need an answer now
        round_trips.extend({"keys": k, "args": a} for s, k, a in calls if s is table._sync)
        return direct(client, calls, loaded)

    def queue(pipe, script, keys, args):  # in the crawl core's batches
        if script is table._sync:
            round_trips.append({"keys": keys, "args": args})
        batched(pipe, script, keys, args)

    monkeypatch.setattr(round_trips_module, "run_scripts", run)
    monkeypatch.setattr(table.core, "script", queue)
    return round_trips


def engine_over(scheduler):
    """The engine's part the lease middleware uses: scheduling a request."""
    return SimpleNamespace(crawl=scheduler.enqueue_request)


def test_a_page_without_item_is_released_with_the_claims_of_its_links(scheduler, monkeypatch):
    crawler, spider, table = scheduler.crawler, scheduler.spider, scheduler.visited
    crawler.engine = engine_over(scheduler)
    lease = LeaseMiddleware.from_crawler(crawler)
    scheduler.enqueue_request(Request("http://127.0.0.1:9/sitemap.xml", spider.parse))
    request = scheduler.next_request()
    fp = request.meta[LEASE_META]
    response = HtmlResponse(request.url, body=b"<urlset/>", request=request)
    links = [Request(f"http://127.0.0.1:9/listed{n}", spider.parse) for n in range(3)]
    round_trips = watch_round_trips(table, monkeypatch)
    passed_on = []
    for output in lease.process_spider_output(response, iter(links)):
        # Scheduled by the middleware as they come: nothing left for the scraper to do
        # after the output ends, when the lease is released.
        passed_on.append(output)
        assert table.state_of(fp) == b"l"
    assert passed_on == []
    assert len(round_trips) == 1  # the claims and the release, atomically
    assert table.state_of(fp) == b"d"
    for link in links:
        assert table.state_of(scheduler.fingerprinter.fingerprint(link).hex()) == b"q"


def test_a_page_is_done_only_once_its_item_is_out(scheduler):
    crawler, spider, table = scheduler.crawler, scheduler.spider, scheduler.visited
    crawler.engine = engine_over(scheduler)
    lease = LeaseMiddleware.from_crawler(crawler)
    for n, scraped in ((1, signals.item_scraped), (2, signals.item_dropped), (3, None)):
        scheduler.enqueue_request(Request(f"http://127.0.0.1:9/page{n}", spider.parse))
        request = scheduler.next_request()
        fp = request.meta[LEASE_META]
        response = HtmlResponse(request.url, body=b"<html></html>", request=request)
        item = PageItem(url=request.url)
        output = [Request("http://127.0.0.1:9/next", spider.parse)]
        if scraped is not None:
            output.append(item)
        assert list(lease.process_spider_output(response, output)) == output[1:]
        if scraped is None:  # no item: done once the callback's output is consumed
            assert table.state_of(fp) == b"d"
            continue
        assert table.state_of(fp) == b"l"  # the item carries the lease
        crawler.signals.send_catch_log(scraped, item=item, response=response, spider=spider)
        assert table.state_of(fp) == b"d"


def test_a_page_whose_reading_meets_a_redis_outage_is_given_back(scheduler):
    crawler, spider, table = scheduler.crawler, scheduler.spider, scheduler.visited
    crawler.engine = engine_over(scheduler)
    lease = LeaseMiddleware.from_crawler(crawler)
    raised = {"outage": redis.ConnectionError("down"), "bug": ValueError("a bug")}
    for name in raised:
        scheduler.enqueue_request(Request(f"http://127.0.0.1:9/{name}", spider.parse))
    for _ in raised:
        request = scheduler.next_request()
        fp = request.meta[LEASE_META]
        response = HtmlResponse(request.url, body=b"<html></html>", request=request)
        name = request.url.rsplit("/", 1)[1]
        lease.process_spider_exception(response, raised[name])
        # Redis failing the page's reading leaves it to fetch again; a bug is its end.
        assert table.state_of(fp) == (b"q" if name == "outage" else b"d")
    again = []
    while (request := scheduler.next_request()) is not None:
        again.append(request.url)
    assert again == ["http://127.0.0.1:9/outage"]


def test_a_failed_render_fetches_the_page_again_under_its_lease(scheduler):
    crawler, spider, table = scheduler.crawler, scheduler.spider, scheduler.visited
    page = Request("http://127.0.0.1:9/shell", spider.parse, errback=spider.on_error)
    scheduler.enqueue_request(page)
    request = scheduler.next_request()
    fp = request.meta[LEASE_META]
    # Sent to the browser after its HTTP version was read fine; the browser fails on it.
    request.meta.update({**spider.browser_meta, render.HTTP_PAGE_META: True})
    fallback = RenderFallback(crawler)
    retry = fallback.process_exception(request, TimeoutError("navigation timed out"))
    assert scheduler.enqueue_request(retry)  # as the engine does with it, under the lease
    assert table.state_of(fp) == b"l"
    assert scheduler.stats.get_value("crawlyx/render/failed") == 1
    assert scheduler.stats.get_value("crawlyx/error/render") is None  # with its outcome
    again = scheduler.next_request()
    assert again.url == request.url and again.meta[LEASE_META] == fp
    assert again.meta[render.RENDER_META] == "fallback"
    assert "navigation timed out" in again.meta[render.RENDER_FAILED_META]
    assert "playwright" not in again.meta and render.HTTP_PAGE_META not in again.meta
    assert again.callback == spider.parse and again.errback == spider.on_error


def test_feed_files_get_each_item_at_once(tmp_path):
    path = tmp_path / "pages.jsonl"
    file = FileFeedStorage(str(path), feed_options={"overwrite": True}).open(None)
    file.write(b'{"url": "http://127.0.0.1:9/"}\n')
    assert path.read_bytes() == b'{"url": "http://127.0.0.1:9/"}\n'  # not left in a buffer
    file.close()


def test_a_page_written_by_a_killed_run_is_not_fetched_again(redis_url, tmp_path):
    job = f"killed-{uuid.uuid4().hex[:8]}"
    killed = open_scheduler(redis_url, job=job)
    spider, table = killed.spider, killed.visited
    for name in ("written", "pending", "queued"):
        killed.enqueue_request(Request(f"http://127.0.0.1:9/{name}", spider.parse))
    written, pending = killed.next_request(), killed.next_request()
    # Its feed file, as the feed exporter opens it; the item of /written is in it, and
    # the process is killed before its page's release is sent.
    path = tmp_path / "first.jsonl"
    appending = {"overwrite": False}
    storage = FileFeedStorage.from_crawler(spider.crawler, str(path), feed_options=appending)
    file = storage.open(spider)
    file.write(b'{"url": "http://127.0.0.1:9/written"}\n{"url": "http://127.0.0.1:9/other"}\n')
    file.close()
    table.state.retire([table.owner])  # as it dies
    killed._popped.clear()  # popped in vain: taken back as a dead process's leases
    resumed = open_scheduler(redis_url, job=job)
    try:
        fps = [r.meta[LEASE_META] for r in (written, pending)]
        assert [table.state_of(fp) for fp in fps] == [b"d", b"q"]
        urls = []
        while (request := resumed.next_request()) is not None:
            urls.append(request.url)
        assert sorted(urls) == ["http://127.0.0.1:9/pending", "http://127.0.0.1:9/queued"]
    finally:
        close_scheduler(resumed)


def test_a_page_a_killed_neighbour_wrote_is_not_fetched_again_by_a_live_process(
    redis_url, tmp_path
):
    job = f"neighbour-{uuid.uuid4().hex[:8]}"
    live = open_scheduler(redis_url, job=job)
    killed = open_scheduler(redis_url, job=job)
    spider, table = killed.spider, killed.visited
    for name in ("written", "pending"):
        killed.enqueue_request(Request(f"http://127.0.0.1:9/{name}", spider.parse))
    written, pending = killed.next_request(), killed.next_request()
    path = tmp_path / "killed.jsonl"  # its feed: the item of /written, not yet released
    appending = {"overwrite": False}
    storage = FileFeedStorage.from_crawler(spider.crawler, str(path), feed_options=appending)
    file = storage.open(spider)
    file.write(b'{"url": "http://127.0.0.1:9/written"}\n')
    file.close()
    table.state.retire([table.owner])  # as it dies
    try:
        # The live process, idle, finds the dead process's leases: the written page is
        # done, the other one is queued again and is its to fetch.
        assert live.has_pending_requests() is True
        fps = [request.meta[LEASE_META] for request in (written, pending)]
        assert [table.state_of(fp) for fp in fps] == [b"d", b"q"]
        assert live.next_request().url == "http://127.0.0.1:9/pending"
        assert live.next_request() is None
    finally:
        close_scheduler(live)
        killed.spider.parts.workers.close()


def test_a_redis_error_skips_a_heartbeat_and_the_beating_goes_on(own_redis, own_scheduler):
    table, loop = own_scheduler.visited, own_scheduler._heartbeat
    owners = table.state.key(OWNERS)
    own_redis.stop()
    loop.call.cancel()
    loop()  # a beat, as the reactor runs it
    assert loop.running
    assert own_scheduler.stats.get_value("crawlyx/redis/heartbeat_failures") == 1
    own_redis.start()  # its data survived, the first beat's key with it
    table.redis.zrem(owners, table.owner)
    loop.call.cancel()
    loop()
    assert loop.running
    assert table.redis.zscore(owners, table.owner) > 0


def test_a_redis_outage_pauses_the_frontier_and_loses_nothing(own_redis, own_scheduler):
    scheduler, spider, table = own_scheduler, own_scheduler.spider, own_scheduler.visited
    scheduler.enqueue_request(Request("http://127.0.0.1:9/page", spider.parse))
    page = scheduler.next_request()
    fp = page.meta[LEASE_META]
    own_redis.stop()
    assert scheduler.enqueue_request(Request("http://127.0.0.1:9/link", spider.parse))
    table.release(page)  # not sent: kept for the next round trip
    assert scheduler.next_request() is None  # nothing to fetch now
    assert scheduler.has_pending_requests() is True  # but the crawl is not over
    assert scheduler.stats.get_value("crawlyx/redis/errors") >= 3
    own_redis.start()
    assert scheduler.has_pending_requests() is True  # the link
    assert table.state_of(fp) == b"d"  # the release went with it
    assert scheduler.next_request().url == "http://127.0.0.1:9/link"


def test_a_pop_whose_answer_was_lost_is_queued_again(scheduler):
    spider, table = scheduler.spider, scheduler.visited
    scheduler.enqueue_request(Request("http://127.0.0.1:9/lost-answer", spider.parse))
    table.sync()
    # The pop ran in Redis but its answer never reached this process.
    table._sync(keys=table.shards[0].sync_keys, args=[table.owner, 1, 0])
    assert table.leased() == 1 and table.queued() == 0
    assert scheduler.has_pending_requests() is True
    assert scheduler.stats.get_value("crawlyx/frontier/unanswered_pops") == 1
    assert scheduler.next_request().url == "http://127.0.0.1:9/lost-answer"


def test_a_process_taken_for_dead_hands_nothing_more_out_and_its_spider_stops(scheduler):
    spider, table = scheduler.spider, scheduler.visited
    for name in ("a", "b"):
        scheduler.enqueue_request(Request(f"http://127.0.0.1:9/{name}", spider.parse))
    held = scheduler.next_request()
    table.state.retire([table.owner])  # another process found its heartbeat expired
    table.heartbeat()
    assert table.dead and held.meta[LEASE_META] in table.lost
    assert scheduler.next_request() is None
    assert scheduler.has_pending_requests() is False
    with pytest.raises(CloseSpider) as stopped:
        spider.idle()
    assert stopped.value.reason == "taken_for_dead"
