"""``scrapy breadth``: distinct URLs per bot per UTC day, their union, and coverage.

    scrapy breadth --site https://docs.example.com --days 7
    scrapy breadth --site https://docs.example.com --bot GPTBot --json

Per day, newest first: each bot's distinct URLs and the shards (processes) merged into
it, the cross-bot union (not the sum), and coverage against the site's corpus (the
distinct pages crawlyx has emitted for it; see crawlyx.breadth.report). crawlyx's own
crawls are shown apart, after the union, which leaves them out. Without
``--site``, every site's rows are merged (URLs carry their origin, so that union is
exact too): the sites are those the breadth store lists. The rows are streamed, a
batch at a time from each site's index, and merged one by one; past
CRAWLYX_BREADTH_READ_CAP rows the answer says ``truncated`` rather than passing off
a short read as complete.
"""

from __future__ import annotations

import json

import redis
from scrapy.commands import ScrapyCommand

from crawlyx.breadth.report import MAX_DAYS, format_table, read_breadth
from crawlyx.breadth.store import connect
from crawlyx.commands import failer
from crawlyx.urls.normalize import url_origin

fail = failer("breadth")


def parse_days(value: str) -> int:
    try:
        days = int(str(value).strip())
    except ValueError:
        days = 0
    if not 1 <= days <= MAX_DAYS:
        raise ValueError(f"bad --days {value!r}: use a whole number from 1 to {MAX_DAYS}")
    return days


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings = {"LOG_LEVEL": "WARNING"}

    def syntax(self) -> str:
        return "[--site ORIGIN] [--days N] [--bot NAME] [--json]"

    def short_desc(self) -> str:
        return "Show crawl breadth: distinct URLs per bot per UTC day, and coverage"

    def add_options(self, parser):
        super().add_options(parser)
        parser.add_argument("--site", metavar="ORIGIN", help="one site (default: all)")
        parser.add_argument(
            "--days",
            metavar="N",
            default="7",
            help=f"UTC days ending today (default 7, at most {MAX_DAYS})",
        )
        parser.add_argument("--bot", metavar="NAME", help="only this bot")
        parser.add_argument("--json", action="store_true", help="print JSON")

    def run(self, args, opts):
        if args:
            fail(f"unexpected argument {args[0]!r}")
        try:
            days = parse_days(opts.days)
        except ValueError as exc:
            fail(str(exc))
        site = None
        if opts.site:
            try:
                site = url_origin(opts.site)
            except ValueError as exc:
                fail(f"bad --site: {exc}")
        cap = self.settings.getint("CRAWLYX_BREADTH_READ_CAP")
        if cap < 1:
            fail("CRAWLYX_BREADTH_READ_CAP must be 1 or more")
        try:
            state = connect(self.settings)
        except RuntimeError as exc:
            fail(str(exc), code=1)
        try:
            own = self.settings.get("CRAWLYX_BOT_NAME") or "crawlyx"
            report = read_breadth(state, site=site, days=days, bot=opts.bot, cap=cap, own=own)
        except redis.RedisError as exc:
            fail(f"reading Redis failed: {exc}", code=1)
        finally:
            state.close()
        print(json.dumps(report, indent=2) if opts.json else format_table(report))
