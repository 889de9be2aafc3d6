"""``scrapy crawl``, with the spider's arguments checked before anything starts.

A bad argument ends the command with one line naming it and what is accepted,
before the crawler, Redis, the pool or a single request exists.
"""

from __future__ import annotations

import sys

from scrapy.commands.crawl import Command as ScrapyCrawl
from scrapy.spiderloader import get_spider_loader


class Command(ScrapyCrawl):
    def process_options(self, args, opts):
        super().process_options(args, opts)
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
