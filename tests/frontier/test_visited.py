"""The visited table against a real Redis: claim once, leases, dead owners."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
import uuid

import pytest
import redis
from scrapy.settings import Settings

from crawlyx.frontier.shards import frontier_shards
from crawlyx.frontier.state import OWNERS, State
from crawlyx.frontier.visited import LEASE_META, VisitedTable


@pytest.fixture(params=[1, 8], ids=["one-shard", "8-shards"])
def state(request, redis_client):
    """A job's state whose frontier is one shard, or eight (each its own hash tag)."""
    state = State(redis_client, f"test-{uuid.uuid4().hex[:8]}")
    state.fix_shards(request.param)
    yield state
    state.delete_all()


def fp(n: int) -> str:
    return f"{n:040x}"


def test_claim_is_won_once(state):
    table = VisitedTable(state)
    assert table.claim(fp(1), b"payload-1") is True
    assert table.claim(fp(1), b"payload-1-again") is False
    assert table.queued() == 1
    assert table.state_of(fp(1)) == b"q"


def _race(url: str, job: str, count: int, results) -> None:
    client = redis.Redis.from_url(url)
    table = VisitedTable(State(client, job))
    results.put(sum(table.claim(fp(n), b"x") for n in range(count)))


def test_claims_race_across_processes(redis_url, state):
    count, workers = 2000, 4
    results = multiprocessing.get_context("spawn").Queue()
    procs = [
        multiprocessing.get_context("spawn").Process(
            target=_race, args=(redis_url, state.job, count, results)
        )
        for _ in range(workers)
    ]
    for proc in procs:
        proc.start()
    wins = [results.get(timeout=60) for _ in procs]
    for proc in procs:
        proc.join(10)
    # Every URL won by exactly one process, and enqueued exactly once.
    assert sum(wins) == count
    assert VisitedTable(state).queued() == count


def test_pop_leases_and_done_finishes(state):
    table = VisitedTable(state)
    table.claim(fp(1), b"one")
    assert table.pop() == (fp(1), b"one")
    assert table.state_of(fp(1)) == b"l"
    assert table.leased() == 1 and table.own_leases() == [fp(1)]
    assert table.done(fp(1)) is True
    assert table.state_of(fp(1)) == b"d"
    assert table.leased() == 0
    assert table.pop() is None


def test_pop_skips_stale_copies(state):
    table = VisitedTable(state)
    table.claim(fp(1), b"one")
    table.claim(fp(2), b"two")
    for n in (1, 2):  # second copies, as an older version could leave them
        state.client.lpush(table.shards[0].queue, f"{fp(n)}again".encode())
    assert table.pop_many(2) == [(fp(1), b"one"), (fp(2), b"two")]
    table.done(fp(1))
    assert table.pop_many(5) == []  # done or leased: dropped, never fetched again
    assert table.queued() == 0


def test_a_retry_under_a_lease_is_queued_once_when_its_owner_dies(state):
    owner = VisitedTable(state, owner="owner")
    other = VisitedTable(state, owner="other")
    owner.heartbeat()
    other.heartbeat()
    owner.claim(fp(1), b"first")
    assert owner.pop() == (fp(1), b"first")
    owner.push(fp(1), b"retry")  # a retry (or a render) under the lease
    owner.sync()
    assert owner.state_of(fp(1)) == b"q" and owner.leased() == 0
    owner.retire()  # its heartbeat key is gone: it died before popping the retry
    assert other.requeue_dead() == 0  # no lease left to requeue
    assert state.client.lrange(other.shards[0].queue, 0, -1) == [fp(1).encode() + b"retry"]
    assert other.pop_many(5) == [(fp(1), b"retry")]
    assert other.pop_many(5) == []


def test_a_push_under_a_lease_taken_back_queues_nothing(state):
    owner = VisitedTable(state, owner="owner")
    other = VisitedTable(state, owner="other")
    other.heartbeat()
    owner.claim(fp(1), b"first")
    assert owner.pop() == (fp(1), b"first")
    _expired(state, "owner")
    assert other.requeue_dead() == 1  # no heartbeat from the owner: it seems dead
    assert other.pop() == (fp(1), b"first")
    owner.push(fp(1), b"retry")  # the owner was alive after all
    assert owner.queued() == 0  # the page is the other process's now
    assert owner.state_of(fp(1)) == b"l" and other.own_leases() == [fp(1)]


def _expired(state, owner: str) -> None:
    """``owner``'s heartbeat, long expired."""
    state.client.zadd(state.key(OWNERS), {owner: 1})


def test_a_process_that_stalled_past_its_heartbeat_emits_nothing_twice(state):
    stalled = VisitedTable(state, owner="stalled")
    other = VisitedTable(state, owner="other")
    other.heartbeat()
    for n in (1, 2):
        stalled.claim(fp(n), f"p{n}".encode())
    assert stalled.pop_many(2) == [(fp(1), b"p1"), (fp(2), b"p2")]
    stalled._beat_at -= VisitedTable.HEARTBEAT_TTL + 5  # stopped while its key expired
    _expired(state, "stalled")
    assert other.requeue_dead() == 2  # it seems dead: its leases go back on the queue
    taken, _ = other.pop()  # another process has one of them now, the other is queued
    left = fp(1) if taken == fp(2) else fp(2)
    # The stalled process resumes: neither page is its own to emit any more...
    assert stalled.still_mine(taken) is False
    assert stalled.still_mine(left) is False
    # It was told so by its heartbeat: it is dead for good, and pops nothing more.
    assert stalled.dead and state.owners() == ["other"]
    stalled.want(5)
    assert not stalled.pending
    # ...and its late releases leave the other's lease and the queued page alone.
    stalled.release(_Request(taken))
    stalled.unlease(_Request(left))
    stalled.finish(left)
    assert other.own_leases() == [taken]
    assert (other.state_of(taken), other.state_of(left)) == (b"l", b"q")
    assert other.done(taken) is True
    assert other.pop()[0] == left


def test_a_live_process_keeps_its_leases_without_a_round_trip(state):
    table = VisitedTable(state, owner="live")
    table.heartbeat()
    table.claim(fp(1), b"p1")
    assert table.pop() == (fp(1), b"p1")
    state.client.hdel(table.shards[0].leases, fp(1))  # would be noticed only after a stall
    assert table.still_mine(fp(1)) is True


def test_a_long_backlog_of_claims_goes_in_chunks_and_the_release_with_the_last(state):
    table = VisitedTable(state, owner="chunks")
    table.CHUNK = 3
    table.claim(fp(0), b"page")
    assert table.pop() == (fp(0), b"page")
    for n in range(1, 11):  # the page's links, then its release
        table.claim_later(fp(n), b"link")
    table._dones.append(fp(0))
    first, dones = table._chunk()
    assert len(first) == 3 * 3 and dones == []  # the release waits for the last claims
    table._pending[:0] = first
    calls = _script_calls(state.client)
    table.sync()
    # 10 claims, 3 a call; with shards, the release once the claims are answered.
    assert _script_calls(state.client) - calls == (4 if state.shards == 1 else 5)
    assert table.queued() == 10 and table.state_of(fp(0)) == b"d"


def _script_calls(client) -> int:
    return client.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0)


def test_requests_outside_the_table(state):
    table = VisitedTable(state)
    table.push(None, b"free")
    assert table.pop() == (None, b"free")
    assert table.leased() == 0


def test_leases_of_dead_owners_are_requeued(state):
    alive = VisitedTable(state, owner="alive")
    dead = VisitedTable(state, owner="dead")
    alive.heartbeat()
    dead.heartbeat()
    for n in (1, 2):
        alive.claim(fp(n), f"p{n}".encode())
    assert dead.pop() == (fp(1), b"p1")
    assert alive.pop() == (fp(2), b"p2")
    assert alive.requeue_dead() == 0  # both owners alive
    dead.retire()
    assert alive.requeue_dead() == 1
    assert alive.state_of(fp(1)) == b"q"
    assert alive.leased() == 1
    assert alive.pop() == (fp(1), b"p1")
    assert set(alive.own_leases()) == {fp(1), fp(2)}


class _Request:
    def __init__(self, lease):
        self.meta = {LEASE_META: lease}


def test_release_and_unlease(state):
    table = VisitedTable(state)
    table.claim(fp(1), b"one")
    table.claim(fp(2), b"two")
    assert table.pop() == (fp(1), b"one")
    assert table.pop() == (fp(2), b"two")
    table.release(_Request(fp(1)))
    table.unlease(_Request(fp(2)))
    assert table.state_of(fp(1)) == b"d"
    assert table.state_of(fp(2)) == b"q"
    assert table.pop() == (fp(2), b"two")  # handed back to the front of the queue
    request = _Request(fp(2))
    table.release(request)
    table.release(request)  # idempotent
    assert table.leased() == 0


def test_parked_requests_wait_for_the_next_run(state):
    table = VisitedTable(state)
    table.claim(fp(1), b"one")
    assert table.pop() == (fp(1), b"one")
    table.park(_Request(fp(1)))
    # Neither queued nor leased (the run can end), not done, and not claimable again.
    assert (table.queued(), table.leased(), table.state_of(fp(1))) == (0, 0, b"q")
    assert table.claim(fp(1), b"one") is False
    assert table.pop() is None
    assert VisitedTable(state).unpark() == 1  # the next run
    assert table.pop() == (fp(1), b"one")
    assert table.unpark() == 0


def test_local_cache_is_bounded(state):
    table = VisitedTable(state)
    table.LOCAL_CACHE_SIZE = 10
    for n in range(25):
        assert table.known(fp(n)) is False
        table.remember(fp(n))
    assert table.known(fp(24)) is True
    assert table.known(fp(0)) is False  # evicted: Redis decides again
    assert len(table._offered) == 10


def test_pop_many_leases_in_queue_order_and_give_back_restores_it(state):
    table = VisitedTable(state)
    for n in (1, 2, 3):
        table.claim(fp(n), f"p{n}".encode())
    table.push(None, b"free")
    popped = table.pop_many(3)
    assert popped == [(fp(1), b"p1"), (fp(2), b"p2"), (fp(3), b"p3")]
    assert table.leased() == 3
    table.give_back(popped[1:])
    assert table.leased() == 1
    assert table.pop_many(10) == [(fp(2), b"p2"), (fp(3), b"p3"), (None, b"free")]
    table.give_back([(None, b"free")])
    assert table.pop() == (None, b"free")
    assert table.pop_many(5) == []


def _lease_and_wait(url: str, job: str, ready) -> None:
    table = VisitedTable(State(redis.Redis.from_url(url), job))
    table.heartbeat()
    table.pop()
    ready.set()
    time.sleep(60)  # killed before this ends


def test_leases_of_a_process_killed_on_this_host_are_requeued_at_once(redis_url, state):
    table = VisitedTable(state)
    table.claim(fp(1), b"p1")
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Event()
    proc = ctx.Process(target=_lease_and_wait, args=(redis_url, state.job, ready))
    proc.start()
    assert ready.wait(30)
    assert table.leased() == 1
    assert table.retire_gone_neighbours() == 0  # alive: its lease stays
    assert table.requeue_dead() == 0
    os.kill(proc.pid, signal.SIGKILL)
    proc.join(10)
    assert table.retire_gone_neighbours() == 1  # its heartbeat has 30 s left
    assert table.requeue_dead() == 1
    assert table.pop() == (fp(1), b"p1")


def test_owners_elsewhere_are_left_to_their_heartbeat(state):
    table = VisitedTable(state)
    for owner in ("otherhost/pid:[1]-1-abcd1234", f"{table.owner.rsplit('-', 2)[0]}-x-y", "odd"):
        VisitedTable(state, owner=owner).heartbeat()
    assert table.retire_gone_neighbours() == 0


def page_url(n: int) -> str:
    return f"http://127.0.0.1:9/{n}"


def _redirect(table: VisitedTable, n: int, to: int) -> tuple[bool, list]:
    """Page ``n``, leased, redirected to page ``to``."""
    return table.redirect(fp(n), fp(to), b"x", [(fp(n), page_url(n), fp(to))])


def test_redirects_to_known_pages_that_close_a_loop_return_it(state):
    table, other = VisitedTable(state), VisitedTable(state, owner="other")
    for n in (1, 2, 3):
        table.claim(fp(n), b"x")
    assert [fp for fp, _ in table.pop_many(3)] == [fp(1), fp(2), fp(3)]
    # A redirect to a new page: claimed, nothing recorded (its chain goes on in one fetch).
    assert table.redirect(fp(3), fp(4), b"x", [(fp(3), page_url(3), fp(4))]) == (True, [])
    assert not state.client.exists(table.redirects_key)
    assert table.state_of(fp(3)) == b"d"
    # 1 -> 2, both known: recorded, and 1 released (accounted for by 2).
    assert _redirect(table, 1, 2) == (False, [])
    assert table.state_of(fp(1)) == b"d"
    # 2 -> 1, in another process: the loop, from the page that closed it; its lease kept.
    assert _redirect(other, 2, 1) == (False, [[page_url(2), page_url(1)]])
    assert table.state_of(fp(2)) == b"l"
    assert state.client.hlen(table.redirects_key) == 2


def test_a_loop_through_a_chain_is_found_by_its_last_hop(state):
    table = VisitedTable(state)
    for n in (1, 3):
        table.claim(fp(n), b"x")
    # 3 -> 1, known: recorded; 1 -> 2 (new) -> 3 (known), fetched as one chain.
    assert _redirect(table, 3, 1) == (False, [])
    hops = [(fp(1), page_url(1), fp(2)), (fp(2), page_url(2), fp(3))]
    assert table.redirect(fp(2), fp(3), b"x", hops) == (
        False,
        [[page_url(2), page_url(3), page_url(1)]],
    )


def test_loop_walks_are_bounded(state):
    table = VisitedTable(state, loop_hops=3)
    for n in range(1, 6):
        table.claim(fp(n), b"x")
    # 1 -> 2 -> 1 is a loop; 5 -> 1 leads into it without being part of it.
    assert _redirect(table, 1, 2) == (False, [])
    assert _redirect(table, 2, 1)[1] == [[page_url(2), page_url(1)]]
    assert _redirect(table, 5, 1) == (False, [])
    # 3 -> 4 -> 5 -> 3: three pages, found; one more is past the walk's bound.
    assert _redirect(table, 3, 4) == (False, [])
    assert _redirect(table, 4, 5) == (False, [])
    assert _redirect(table, 5, 3)[1] == [[page_url(5), page_url(3), page_url(4)]]
    shorter = VisitedTable(state, loop_hops=2)
    for n in (6, 7, 8):
        shorter.claim(fp(n), b"x")
    assert _redirect(shorter, 6, 7) == (False, [])
    assert _redirect(shorter, 7, 8) == (False, [])
    assert _redirect(shorter, 8, 6) == (False, [])


def _redirect_ring(url_: str, job: str, pages: int, worker: int, workers: int, results) -> None:
    client = redis.Redis.from_url(url_)
    table = VisitedTable(State(client, job), loop_hops=pages)
    loops = []
    for n in range(worker, pages, workers):
        loops += _redirect(table, n, (n + 1) % pages)[1]
    results.put(loops)


def test_a_loop_is_found_by_one_process(redis_url, state):
    pages, workers = 40, 4
    table = VisitedTable(state)
    for n in range(pages):
        table.claim(fp(n), b"x")
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    procs = [
        context.Process(
            target=_redirect_ring, args=(redis_url, state.job, pages, w, workers, results)
        )
        for w in range(workers)
    ]
    for proc in procs:
        proc.start()
    loops = [loop for _ in procs for loop in results.get(timeout=60)]
    for proc in procs:
        proc.join(10)
    # Every page redirects to the next, each in its own fetch, in four processes at
    # once: the loop they make is found once, whole.
    assert len(loops) == 1
    assert sorted(loops[0]) == sorted(page_url(n) for n in range(pages))


def test_a_jobs_shards_are_fixed_by_its_first_run(redis_client):
    job = f"shards-{uuid.uuid4().hex[:8]}"
    assert State(redis_client, job).fix_shards(8) == 8
    resumed = State(redis_client, job)
    assert resumed.fix_shards(64) == 8  # its own, whatever the setting says now
    assert VisitedTable(resumed).shards[5].visited == f"crawlyx:{{{job}/5}}:visited"
    resumed.delete_all()
    # A job recorded before its frontier had shards keeps the one it has.
    old = State(redis_client, f"old-{uuid.uuid4().hex[:8]}")
    redis_client.hset(old.key("job"), "created", "2026-11-01T00:00:00Z")
    assert old.fix_shards(64) == 1
    assert VisitedTable(old).shards[0].visited == old.key("visited")
    old.delete_all()


@pytest.mark.parametrize("value", [3, -1, 2048])
def test_frontier_shards_must_be_a_power_of_two(value):
    settings = Settings({"CRAWLYX_FRONTIER_SHARDS": value})
    with pytest.raises(ValueError, match=r"CRAWLYX_FRONTIER_SHARDS \(\S+\) must be a power of two"):
        frontier_shards(settings, cluster=False)
    assert frontier_shards(Settings({"CRAWLYX_FRONTIER_SHARDS": 0}), cluster=True) == 64
    assert frontier_shards(Settings({"CRAWLYX_FRONTIER_SHARDS": 0}), cluster=False) == 1
