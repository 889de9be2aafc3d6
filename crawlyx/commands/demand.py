"""``scrapy demand``: a site's pages per rung, what is due, and the visit ring's fill.

    scrapy demand --site https://docs.example.com
    scrapy demand --site https://docs.example.com --json
    scrapy demand --site https://docs.example.com --forget

See crawlyx.demand.report for what each figure means. ``--forget`` forgets the site's
page registry (every page's last fetch, validators, interval and due time): the next
refresh run of the site is a full crawl. The visit ring is kept: it holds what bots
visited, which no crawl can find again, and its rows expire on their own.
"""

from __future__ import annotations

import json

import redis
from scrapy.commands import ScrapyCommand

from crawlyx.commands import failer
from crawlyx.demand.ladder import check
from crawlyx.demand.registry import Registry, registry_state
from crawlyx.demand.report import format_table, read_demand
from crawlyx.demand.ring import RingConfig
from crawlyx.demand.store import MergedRing, connect
from crawlyx.urls.normalize import url_origin

fail = failer("demand")


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings = {"LOG_LEVEL": "WARNING"}

    def syntax(self) -> str:
        return "--site ORIGIN [--json | --forget]"

    def short_desc(self) -> str:
        return "Show demand: a site's pages per rung, pages due, the visit ring's fill"

    def add_options(self, parser):
        super().add_options(parser)
        parser.add_argument("--site", metavar="ORIGIN", help="the site (required)")
        parser.add_argument("--json", action="store_true", help="print JSON")
        parser.add_argument("--forget", action="store_true", help="forget the site's page registry")

    def run(self, args, opts):
        if args:
            fail(f"unexpected argument {args[0]!r}")
        if not opts.site:
            fail("--site is required (the site's origin, https://docs.example.com)")
        if opts.json and opts.forget:
            fail("--json and --forget do not go together")
        try:
            site = url_origin(opts.site)
        except ValueError as exc:
            fail(f"bad --site: {exc}")
        try:
            ladder = check(self.settings)
            config = RingConfig.from_settings(self.settings)
        except ValueError as exc:
            fail(str(exc))
        try:
            state = connect(self.settings)
        except RuntimeError as exc:
            fail(str(exc), code=1)
        try:
            registry = Registry.from_settings(registry_state(state.client), site, self.settings)
            if opts.forget:
                output = (
                    f"forgot the page registry of {site}: {registry.drop()} pages; the next "
                    "refresh run is a full crawl (the visit ring is kept)"
                )
            else:
                report = read_demand(registry, MergedRing(state, site, config), ladder)
                output = json.dumps(report, indent=2) if opts.json else format_table(report)
        except redis.RedisError as exc:
            fail(f"Redis failed: {exc}", code=1)
        finally:
            state.close()
        print(output)
