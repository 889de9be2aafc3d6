"""The test cluster (tests/cluster.py) and crawlyx's way into it: CRAWLYX_REDIS_URL as
``redis+cluster://host:port,...``, a RedisCluster client, the settings checks; and the
site's stores (breadth, demand, the page registry) written and read on it, each site's
keys in its own slot, read from their indexes."""

from __future__ import annotations

import hashlib
import json
import time
import uuid

import pytest
from redis.cluster import RedisCluster
from scrapy.settings import Settings

import crawlyx.settings
from crawlyx.breadth.recorder import Recorder as BreadthRecorder
from crawlyx.breadth.report import read_breadth
from crawlyx.breadth.store import BreadthStore, breadth_state, day_key, utc_day
from crawlyx.demand.recorder import DemandRecorder
from crawlyx.demand.registry import Registry, registry_state
from crawlyx.demand.ring import RingConfig
from crawlyx.demand.store import DemandStore, MergedRing, demand_state
from crawlyx.frontier.checks import check_redis_reachable, check_redis_url
from crawlyx.frontier.state import State, connect_url, is_cluster
from crawlyx.sitekeys import ROWS, site_key
from tests.breadth.test_breadth import GOOGLE, GPT, log_line, scrapy

MALFORMED = "redis+cluster://127.0.0.1:notaport"


def project_settings(**overrides) -> Settings:
    """crawlyx's defaults, then ``overrides``."""
    project = {name: v for name, v in vars(crawlyx.settings).items() if name.isupper()}
    return Settings({**project, **overrides})


@pytest.fixture
def cluster_client(redis_cluster):
    client = connect_url(redis_cluster.url)
    yield client
    client.close()


def test_the_fixture_is_a_cluster_of_three_loopback_nodes(redis_cluster):
    assert len(set(redis_cluster.ports)) == 3
    assert redis_cluster.url == "redis+cluster://" + ",".join(
        f"127.0.0.1:{port}" for port in redis_cluster.ports
    )
    for node in redis_cluster.nodes():
        try:
            assert node.cluster("INFO")["cluster_state"] == "ok"
            assert node.config_get("bind")["bind"] == "127.0.0.1"
            assert len(node.cluster("NODES")) == 3
        finally:
            node.close()


def test_connect_url_gives_a_cluster_client_that_reads_what_it_wrote(cluster_client):
    assert isinstance(cluster_client, RedisCluster) and is_cluster(cluster_client)
    assert len(cluster_client.get_primaries()) == 3  # found from the URL's nodes
    cluster_client.set("crawlyx:{cluster-test}:a", "written", ex=60)
    assert cluster_client.get("crawlyx:{cluster-test}:a") == b"written"


def test_keys_of_different_tags_land_on_more_than_one_node(redis_cluster, cluster_client):
    keys = [f"crawlyx:{{spread-{n}}}:k" for n in range(30)]
    for key in keys:
        cluster_client.set(key, 1, ex=60)
    nodes = {node.connection_pool.connection_kwargs["port"]: node for node in redis_cluster.nodes()}
    try:
        holders = set()
        for key in keys:
            port = cluster_client.get_node_from_key(key).port
            assert nodes[port].exists(key)  # asked of that node itself, not through the client
            holders.add(port)
        assert len(holders) >= 2
        assert sum(node.dbsize() > 0 for node in nodes.values()) >= 2
    finally:
        for node in nodes.values():
            node.close()


def test_the_settings_checks_take_the_cluster_url(redis_cluster):
    settings = project_settings(CRAWLYX_REDIS_URL=redis_cluster.url)
    check_redis_url(settings)
    check_redis_reachable(settings)


@pytest.mark.parametrize("check", [check_redis_url, check_redis_reachable])
def test_a_malformed_cluster_url_is_one_line_naming_the_setting(check):
    with pytest.raises(ValueError, match="CRAWLYX_REDIS_URL") as raised:
        check(project_settings(CRAWLYX_REDIS_URL=MALFORMED))
    assert "\n" not in str(raised.value)
    assert "notaport" in str(raised.value)


# -- the site's stores on the cluster ---------------------------------------------------


def a_site() -> str:
    return f"https://{uuid.uuid4().hex[:12]}.example"


def index(state: State, site: str) -> list[str]:
    return sorted(key.decode() for key in state.client.smembers(site_key(state, site, ROWS)))


def one_slot(client, keys: list[str]) -> bool:
    return len({client.keyslot(key) for key in keys}) == 1


def test_breadth_flushes_and_reads_on_a_cluster(cluster_client):
    state, today = breadth_state(cluster_client), utc_day(time.time())
    sites = [a_site() for _ in range(3)]
    for n, site in enumerate(sites):
        recorder = BreadthRecorder(site)
        for i in range(10 * (n + 1)):
            recorder.record("GPTBot", f"{site}/p/{i}", today)
            recorder.record("Googlebot", f"{site}/p/{i + 5}", today)
            recorder.record_corpus(f"{site}/p/{i}")
        assert BreadthStore(state, shard=f"s{n}").flush(recorder).merged == 3
    for site in sites:
        keys = index(state, site)
        assert len(keys) == 3 and one_slot(cluster_client, [*keys, site_key(state, site, ROWS)])
        assert all(key.startswith(f"crawlyx:_breadth:{{{site}}}:") for key in keys)
    assert {key.decode() for key in cluster_client.smembers(state.key("sites"))} >= set(sites)
    report = read_breadth(state, site=sites[1], days=1)
    assert report["corpus_pages"] == 20 and not report["truncated"]
    bots = {row["bot"]: row["distinct_urls"] for row in report["breadth"][0]["bots"]}
    assert bots == {"GPTBot": 20, "Googlebot": 20}
    assert report["breadth"][0]["total"]["distinct_urls"] == 25
    everything = read_breadth(state, days=1, cap=100_000)  # every site, from the sites set
    assert set(sites) <= set(everything["sites"])
    # A row found expired leaves its site's index (a script over the site's slot).
    gone = day_key(state, sites[0], today, "Googlebot")
    cluster_client.delete(gone)
    report = read_breadth(state, site=sites[0], days=1)
    assert [row["bot"] for row in report["breadth"][0]["bots"]] == ["GPTBot"]
    assert gone not in index(state, sites[0]) and len(index(state, sites[0])) == 2


def test_demand_flushes_and_reads_on_a_cluster(cluster_client):
    state, site, now = demand_state(cluster_client), a_site(), time.time()
    ring = RingConfig(slice=3600, slices=24, slice_urls=1000, fp_rate=0.01)
    for node in ("n1", "n2"):
        recorder = DemandRecorder(site, ring)
        recorder.record(f"{site}/{node}", now - 2 * 3600)
        recorder.record(f"{site}/both", now)
        assert DemandStore(state, ring, node=node).flush(recorder, now) == 2
    keys = index(state, site)
    assert len(keys) == 4 and one_slot(cluster_client, [*keys, site_key(state, site, ROWS)])
    assert site.encode() in cluster_client.smembers(state.key("sites"))
    read = MergedRing(state, site, ring)
    read.refresh(now)
    assert read.rows == 4 and len(read.slices) == 2
    assert read.visited_within(f"{site}/n1", 3 * 3600, now)
    assert read.visited_within(f"{site}/n2", 3 * 3600, now)
    assert not read.visited_within(f"{site}/n1", 3600, now)
    assert not read.visited_within(f"{site}/never", 3 * 3600, now)
    cluster_client.delete(keys[0])  # as if expired: it leaves the index
    read.refresh(now)
    assert read.rows == 3 and index(state, site) == keys[1:]


def test_the_registry_writes_and_reads_on_a_cluster(cluster_client):
    site, t0 = a_site(), 1_800_000_000.0
    registry = Registry(registry_state(cluster_client), site, base=86400.0, retention=30 * 86400.0)
    assert one_slot(cluster_client, [*registry.keys, registry.key("writes")])
    for n in range(5):
        assert registry.fetched(f"{site}/{n}", t0 + n, f"h{n}", f'"e{n}"')
    assert not registry.fetched(f"{site}/0", t0 + 10, "h0")  # unchanged
    assert registry.page(f"{site}/3").etag == '"e3"' and registry.count() == 5
    registry.write_interval(f"{site}/1", 2 * 86400.0, shadow=False)
    assert registry.histogram().counts == {86400.0: 4, 2 * 86400.0: 1}
    assert registry.forget(f"{site}/4") and registry.count() == 4
    # The due list is copied to a job's key: another slot than the site's.
    snapshot = f"crawlyx:{{refresh-{uuid.uuid4().hex[:8]}}}:refresh:due"
    assert cluster_client.keyslot(snapshot) != cluster_client.keyslot(registry.key("due"))
    due = [page.url for page in registry.due_pages(t0 + 2 * 86400, snapshot, batch=2)]
    assert sorted(due) == [f"{site}/{n}" for n in range(4)]
    assert cluster_client.zcard(snapshot) == 4 and not cluster_client.exists(snapshot + ":~copy")
    cluster_client.delete(snapshot)
    assert registry.prune(t0 + 40 * 86400) == 4 and registry.count() == 0
    registry.fetched(f"{site}/again", t0 + 41 * 86400)
    assert registry.drop() == 1  # `scrapy demand --forget`: every key of the site, at once
    assert not cluster_client.exists(*registry.keys, registry.key("base"))


def test_visits_breadth_and_demand_commands_on_a_cluster(redis_cluster, cluster_client, tmp_path):
    site = f"http://{uuid.uuid4().hex[:12]}.example"
    lines = [log_line(f"/docs/{i}", GOOGLE) for i in range(30)]
    lines += [log_line(f"/docs/{i}", GPT) for i in range(20, 50)]
    log = tmp_path / "access.log"
    log.write_text("\n".join(lines) + "\n")
    url = redis_cluster.url
    demand = ("-s", "CRAWLYX_DEMAND_ENABLED=1")
    result = scrapy("visits", "--site", site, str(log), *demand, redis_url=url, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "60 bot requests recorded" in result.stdout
    result = scrapy("breadth", "--site", site, "--days", "1", "--json", redis_url=url, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    day = json.loads(result.stdout)["breadth"][0]
    assert {row["bot"]: row["distinct_urls"] for row in day["bots"]} == {
        "Googlebot": 30,
        "GPTBot": 30,
    }
    assert day["total"]["distinct_urls"] == 50
    result = scrapy("breadth", "--days", "1", "--json", redis_url=url, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert site in json.loads(result.stdout)["sites"]
    result = scrapy("demand", "--site", site, "--json", redis_url=url, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["ring"]["rows"] >= 1


def test_a_jobs_keys_are_listed_expired_and_dropped_by_slot_on_a_cluster(cluster_client):
    from crawlyx.frontier.visited import VisitedTable

    state = State(cluster_client, f"slots-{uuid.uuid4().hex[:8]}")
    assert state.fix_shards(64) == 64
    table = VisitedTable(state, owner="one")
    fps = [hashlib.sha1(str(n).encode()).hexdigest() for n in range(300)]
    for fp in fps:
        table.claim_later(fp, b"page")
    table.sync()
    used = {table.shard(fp).n for fp in fps}
    assert len(used) > 48  # the fingerprints spread over the shards
    cluster_client.hset(state.key("graph:meta"), "next", 1)  # a key of the job's own slot
    keys = {key for batch in state.keys() for key in batch}
    shard_keys = {key for key in keys if key.startswith(f"crawlyx:{{{state.job}/".encode())}
    assert len(shard_keys) == 2 * len(used)  # each shard's visited table and queue
    assert state.key("graph:meta").encode() in keys and state.key("job").encode() in keys
    state.expire_all(600)
    assert all(0 < cluster_client.ttl(key) <= 600 for key in keys)
    assert state.delete_all() == len(keys)
    assert not any(cluster_client.exists(key) for key in keys)


def test_a_cluster_node_named_as_one_server_is_refused_before_the_crawl(redis_cluster, crawl):
    node = f"redis://127.0.0.1:{redis_cluster.ports[0]}"
    result = crawl("start=http://127.0.0.1:9/", settings={"CRAWLYX_REDIS_URL": node})
    assert result.returncode == 2
    assert result.log == (
        f"crawlyx: Redis at {node} (CRAWLYX_REDIS_URL) is a node of a Redis Cluster; "
        f"name the cluster: redis+cluster://127.0.0.1:{redis_cluster.ports[0]}\n"
    )
