"""``scrapy jobs``: the crawl jobs in Redis, and dropping one.

    scrapy jobs
    scrapy jobs --json
    scrapy jobs --drop docs

One row per job, the most recently run first: its state (running, paused, failed,
finished), the pages it emitted, what is left queued and leased, when it last ran and
when its keys expire (finished and unnamed jobs; see crawlyx.frontier.jobs), and its
start URL; then how long jobs are kept. ``--drop``
removes every key of a job; a job a live process is crawling is refused (stop it
first). Reads the crawl's Redis (``CRAWLYX_REDIS_URL``) or the embedded server.
"""

from __future__ import annotations

import json

import redis
from scrapy.commands import ScrapyCommand

from crawlyx.arguments import JOB_NAME
from crawlyx.commands import failer
from crawlyx.frontier.jobs import format_table, list_jobs, live_owners, ttl_seconds
from crawlyx.frontier.state import State

NAMESPACE = "_jobs"  # the connection's own State; no job can be named so


fail = failer("jobs")


def drop(state: State) -> str:
    """Remove the job's keys; the line to print. Exits with status 1 if it cannot."""
    owners = live_owners(state)
    if owners:
        fail(f"job {state.job} is running ({len(owners)} processes); stop it first", 1)
    removed = state.delete_all()
    if not removed:
        fail(f"no job {state.job}", 1)
    return f"crawlyx: dropped job {state.job} ({removed} keys)"


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings = {"LOG_LEVEL": "WARNING"}

    def syntax(self) -> str:
        return "[--json] [--drop NAME]"

    def short_desc(self) -> str:
        return "List crawl jobs (running, paused, finished) or drop one"

    def add_options(self, parser):
        super().add_options(parser)
        parser.add_argument("--json", action="store_true", help="print JSON")
        parser.add_argument("--drop", metavar="NAME", help="remove every key of this job")

    def run(self, args, opts):
        if args:
            fail(f"unexpected argument {args[0]!r}")
        if opts.drop is not None and not JOB_NAME.fullmatch(opts.drop):
            fail(f"bad job name {opts.drop!r}")
        try:
            state = State.connect(self.settings, NAMESPACE)
        except RuntimeError as exc:
            fail(str(exc), code=1)
        try:
            if opts.drop is not None:
                output = drop(State(state.client, opts.drop))
            else:
                jobs = list_jobs(state.client)
                if opts.json:
                    output = json.dumps(jobs, indent=2)
                else:
                    output = format_table(jobs, ttl_seconds(self.settings))
        except redis.RedisError as exc:
            fail(f"reading Redis failed: {exc}", code=1)
        finally:
            state.close()
        print(output)
