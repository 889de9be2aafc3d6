"""The test cluster (tests/cluster.py) and crawlyx's way into it: CRAWLYX_REDIS_URL as
``redis+cluster://host:port,...``, a RedisCluster client, the settings checks."""

from __future__ import annotations

import pytest
from redis.cluster import RedisCluster
from scrapy.settings import Settings

import crawlyx.settings
from crawlyx.config import check_redis_reachable, check_redis_url
from crawlyx.frontier.state import connect_url, is_cluster

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
