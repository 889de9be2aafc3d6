"""``scrapy crawl``, with the spider's arguments checked before anything starts.

A bad argument or setting, or a setup the SSRF guard cannot protect (a proxy), ends the command
with one line naming it and what is accepted, before the crawler, Redis, the pool or a
single request exists (exit status 2). So does a job named with ``-a job=`` that cannot
run again: finished, or crawling another start URL (crawlyx.frontier.jobs.check_rerun),
checked last, in Redis, before the output file is opened. So does a crawl given no output
for its pages (:func:`check_output`). A crawl that emits nothing
because its start URL failed exits with status 1.

Ctrl-C (or SIGTERM) pauses the crawl; a second one stops it at once, with status 128 +
the signal's number (crawlyx.interrupt). One during the checks ends the command there.
"""

from __future__ import annotations

import sys

import redis
from scrapy.addons import AddonManager
from scrapy.commands.crawl import Command as ScrapyCrawl
from scrapy.spiderloader import get_spider_loader

from crawlyx import log
from crawlyx.addon import COMPONENTS, Addon, set_entries
from crawlyx.arguments import CrawlArgs
from crawlyx.frontier.checks import check_redis_reachable
from crawlyx.frontier.jobs import check_rerun
from crawlyx.frontier.state import State
from crawlyx.interrupt import Interrupts
from crawlyx.middlewares.ssrf import check_configuration
from crawlyx.parts import shared_parts
from crawlyx.policy.ssrf import SSRFGuardError


def check_output(settings, arguments: dict) -> None:
    """ValueError for a crawl whose pages would go nowhere. Its pages are marked done as
    they are read, so a crawl run without an output could not be run again to get them:
    it is refused before it starts. A page's markdown goes to a feed (``-O``, ``-o``, the
    ``FEEDS`` setting, scrapyd's ``items_dir``) or into llms-full.txt (``-a llms_full=``)."""
    if settings.getdict("FEEDS") or arguments.get("llms_full"):
        return
    raise ValueError(
        "the pages would go nowhere: add -O pages.jsonl (or -o to append to a file, "
        "or a FEEDS setting)"
    )


class Command(ScrapyCrawl):
    crawler = None
    # The named job's Redis, from its check until the crawl is over: an embedded server
    # started for the check is the crawl's, not started twice.
    job_state = None
    interrupts = None

    def _create_crawler(self, spidercls):
        self.crawler = super()._create_crawler(spidercls)
        self.interrupts.watch(self.crawler)
        return self.crawler

    def run(self, args, opts):
        log.configure(self.settings)
        self.interrupts = Interrupts(self.crawler_process)
        try:
            super().run(args, opts)
        finally:
            self.close_parts()
            self.let_go()
        if self.interrupts.forced:
            self.exitcode = self.interrupts.exit_status
            print(
                "crawlyx: stopped at once; what was being fetched is fetched again when "
                "the job resumes",
                file=sys.stderr,
            )
            return
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
        try:
            self.check_options(args, opts)
        except KeyboardInterrupt:
            self.let_go()
            print("crawlyx: stopped before the crawl started; nothing was fetched", file=sys.stderr)
            sys.exit(0)

    def check_options(self, args, opts):
        # -o/-O are read before the add-on sets the crawl's settings: its feed formats
        # (md, mdfiles) are known to them here, still at the add-on's priority.
        set_entries(self.settings, "FEED_EXPORTERS", COMPONENTS["FEED_EXPORTERS"])
        super().process_options(args, opts)
        try:  # before Scrapy sets its log up (a bad value is reported with the others)
            if log.check_settings(self.settings) == "json":
                log.use_json(self.settings)
        except ValueError:
            pass
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
            check_output(settings, opts.spargs)
            Addon.check_settings(settings)
            if check_settings is not None:
                check_settings(opts.spargs, settings)
            check_redis_reachable(settings)  # the checks that may take a while: last
            self.check_job(settings, opts.spargs)
        except ValueError as exc:
            self.let_go()
            print(f"crawlyx: {exc}", file=sys.stderr)
            sys.exit(2)

    def check_job(self, settings, arguments: dict) -> None:
        """ValueError if the job named with ``-a job=`` may not run (again) as asked."""
        args = CrawlArgs.parse(**arguments)
        if args.job is None:
            return  # a fresh name: a new job
        try:
            self.job_state = State.connect(settings, args.job)
            check_rerun(self.job_state, args.start, bool(args.refresh))
        except (RuntimeError, redis.RedisError) as exc:
            raise ValueError(f"reading job {args.job} failed: {exc}") from None
        finally:
            if self.job_state is not None:
                self.job_state.client.close()  # not needed while the crawl runs

    def close_parts(self) -> None:
        """The crawl's shared parts closed, if the crawl did not get as far as closing
        them (it failed before its engine ran)."""
        if self.crawler is None:
            return
        try:
            shared_parts(self.crawler).close()
        except RuntimeError:  # no crawlyx add-on
            pass

    def let_go(self) -> None:
        """Done with the job's Redis (the last user of an embedded server stops it)."""
        if self.job_state is not None:
            self.job_state.close()
            self.job_state = None
