"""The crawl process's cycle collector: what the start made is frozen, young objects are
collected less often."""

from __future__ import annotations

import gc

from scrapy import Spider, signals
from scrapy.utils.test import get_crawler

from crawlyx.extensions.collector import YOUNG_THRESHOLD, Collector
from tests.test_settings import crawl_settings


def test_a_crawl_has_the_collector_set():
    assert crawl_settings().getwithbase("EXTENSIONS")["crawlyx.extensions.collector.Collector"]


def test_the_engine_s_start_freezes_what_there_is_and_raises_the_young_threshold():
    threshold = gc.get_threshold()
    crawler = get_crawler(Spider)
    collector = Collector.from_crawler(crawler)  # noqa: F841 - signals hold it weakly
    try:
        crawler.signals.send_catch_log(signals.engine_started)
        assert gc.get_freeze_count() > 10_000  # this process's modules, pytest's...
        assert gc.get_threshold() == (YOUNG_THRESHOLD, *threshold[1:])
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
