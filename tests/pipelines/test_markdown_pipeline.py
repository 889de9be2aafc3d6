"""The markdown pipeline: the content hash taken and recorded in the link graph, except
for pages without content."""

from scrapy.utils.test import get_crawler

from crawlyx.pipelines.markdown import MarkdownPipeline
from crawlyx.spiders.site import SiteSpider

ADDON = {"ADDONS": {"crawlyx.addon.Addon": 0}}


class Hashes:
    """Stands in for the graph recorder: keeps what it is told."""

    def __init__(self):
        self.recorded = {}

    def content_hash(self, url, digest):
        self.recorded[url] = digest


def test_pages_without_content_are_hashed_but_not_recorded_as_duplicates():
    crawler = get_crawler(SiteSpider, settings_dict={"CRAWLYX_GRAPH_ENABLED": False, **ADDON})
    crawler._apply_settings()
    pipeline = MarkdownPipeline.from_crawler(crawler)
    pipeline.graph = Hashes()
    items = [
        {"url": "https://a.example/1", "markdown": "# One\n\nText one.\n"},
        {"url": "https://a.example/2", "markdown": ""},
        {"url": "https://a.example/3", "markdown": ""},
    ]
    for item in items:
        pipeline.process_item(item)
    assert all(len(item["content_hash"]) == 64 for item in items)
    assert list(pipeline.graph.recorded) == ["https://a.example/1"]
