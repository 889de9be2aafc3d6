"""``scrapy crawl``, with the spider's arguments checked before anything starts.

A bad argument or setting, or a setup the SSRF guard cannot protect (a proxy), ends the command
with one line naming it and what is accepted, before the crawler, Redis, the pool or a
single request exists (exit status 2). A crawl that emits nothing because its start URL
failed exits with status 1.
"""

from __future__ import annotations

import sys

from scrapy.addons import AddonManager
from scrapy.commands.crawl import Command as ScrapyCrawl
from scrapy.spiderloader import get_spider_loader

from crawlyx import log
from crawlyx.addon import Addon
from crawlyx.config import check_redis_reachable
from crawlyx.middlewares.ssrf import check_configuration
from crawlyx.policy.ssrf import SSRFGuardError


class Command(ScrapyCrawl):
    crawler = None

    def _create_crawler(self, spidercls):
        self.crawler = super()._create_crawler(spidercls)
        return self.crawler

    def run(self, args, opts):
        log.configure(self.settings)
        super().run(args, opts)
        if self.crawler is None:
            return
        try:
            stats = self.crawler.stats
        except RuntimeError:  # the crawl never started (its failure is in the log)
            self.exitcode = self.exitcode or 1
            return
        # The spider logged why (see SiteSpider.closed_start).
        if stats.get_value("crawlyx/start_failed"):
            self.exitcode = self.exitcode or 1

    def process_options(self, args, opts):
        super().process_options(args, opts)
        # The settings as the crawler process will have them (the DNS resolver is the
        # add-on's); the add-on's other settings are below the project's, never in the way.
        settings = self.settings.copy()
        AddonManager.load_pre_crawler_settings(settings)
        if not settings.getbool("CRAWLYX_ALLOW_PRIVATE"):
            try:
                check_configuration(settings)
            except SSRFGuardError as exc:
                print(exc, file=sys.stderr)
                sys.exit(2)
        if len(args) != 1:
            return
        loader = get_spider_loader(self.settings)
        if args[0] not in loader.list():
            return
        check = getattr(loader.load(args[0]), "check_arguments", None)
        if check is None:
            return
        try:
            check(opts.spargs)
        except ValueError as exc:
            print(f"crawlyx: bad argument {exc}", file=sys.stderr)
            sys.exit(2)
        check_settings = getattr(loader.load(args[0]), "check_settings", None)
        try:  # each component's own settings; render=always without a browser
            Addon.check_settings(settings)
            if check_settings is not None:
                check_settings(opts.spargs, settings)
            check_redis_reachable(settings)  # last: the one check that may take a while
        except ValueError as exc:
            print(f"crawlyx: {exc}", file=sys.stderr)
            sys.exit(2)
