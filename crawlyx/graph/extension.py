"""``-a audit=``, ``-a tree=``, ``-a llms_txt=``, ``-a llms_full=``: files made from the
crawl's link graph when the crawl ends (see :mod:`crawlyx.graph.outputs`).

Off (NotConfigured) unless one of them is given: loading the graph at the end costs time
and memory in proportion to the site. With ``-a audit=``, the findings' counts are also
logged when the crawl ends. With ``-a llms_full=``, every emitted page's markdown is kept
in the job's Redis as it is scraped (one HSET per page, ~1/3 of the markdown's size),
so the file can be written by whichever process ends the crawl, or later by
``scrapy audit JOB --llms-full FILE``.

Each process of a job writes the files when it closes, from the graph as recorded so
far: with several processes, the last one to close writes the whole site's (or run
``scrapy audit JOB`` once they are all done).

Stats: ``crawlyx/audit/markdown_saved``, ``crawlyx/audit/written``.
"""

from __future__ import annotations

import logging

import redis
from itemadapter import ItemAdapter
from scrapy import signals
from scrapy.exceptions import NotConfigured

from crawlyx.graph.audit import FINDINGS
from crawlyx.graph.outputs import Outputs, PageMarkdown, load_graph, write_outputs
from crawlyx.parts import shared_parts
from crawlyx.urls.normalize import normalize_url

logger = logging.getLogger(__name__)


class Audit:
    def __init__(self, crawler, parts, outputs: Outputs, max_depth: int):
        self.crawler = crawler
        self.stats = crawler.stats
        self.parts = parts  # the crawl's shared parts: the link graph is in its Redis
        self.outputs = outputs
        self.max_depth = max_depth
        self.markdown: PageMarkdown | None = None

    @staticmethod
    def check_settings(settings) -> int:
        max_depth = settings.getint("CRAWLYX_AUDIT_MAX_DEPTH")
        if max_depth < 0:
            raise ValueError("CRAWLYX_AUDIT_MAX_DEPTH must be 0 or more")
        return max_depth

    @classmethod
    def from_crawler(cls, crawler):
        try:
            args = crawler.spider.args
        except (RuntimeError, AttributeError):
            raise NotConfigured from None
        outputs = Outputs(args.audit, args.tree, args.llms_txt, args.llms_full)
        if not outputs:
            raise NotConfigured
        ext = cls(crawler, shared_parts(crawler), outputs, cls.check_settings(crawler.settings))
        if outputs.llms_full:
            crawler.signals.connect(ext.item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    def item_scraped(self, item, **kwargs):
        page = ItemAdapter(item)
        markdown = page.get("markdown")
        if markdown is None:
            return
        # Under the URL the content came from: the graph's node of the page.
        url = normalize_url(page.get("final_url") or page["url"])
        if self.markdown is None:
            self.markdown = PageMarkdown(self.parts.state)
        try:
            self.markdown.save(url, markdown)
        except redis.RedisError as exc:
            logger.warning("crawlyx: audit: %s not kept for llms-full: %s", url, exc)
            return
        self.stats.inc_value("crawlyx/audit/markdown_saved")

    def spider_closed(self, spider, reason):
        state = self.parts.state
        try:
            graph = load_graph(state, self.crawler.settings)
            report = write_outputs(graph, self.outputs, self.max_depth, PageMarkdown(state).get)
        except (redis.RedisError, OSError) as exc:
            logger.error("crawlyx: audit: the graph's files were not written: %s", exc)
            return
        self.stats.set_value("crawlyx/audit/written", 1)
        if report:
            logger.info("crawlyx: %s", top_findings(report))
        for path in self.outputs.paths():
            logger.info("crawlyx: written %s", path)


def top_findings(report: dict) -> str:
    """The findings the audit made, what to fix first first, as a short markdown list."""
    counts = report["summary"]
    found = [(counts[key], label) for key, label in FINDINGS if counts[key]]
    head = f"site audit of {counts['pages']} pages"
    if report["graph_truncated"]:
        head += " (link graph truncated: " + ", ".join(report["skipped"]) + " not checked)"
    if not found:
        return head + ": nothing found"
    return head + ":\n" + "\n".join(f"- {label}: {count}" for count, label in found)
