"""``scrapy audit``: the site audit, the site tree and llms.txt of a job, from its graph.

    scrapy audit docs -o audit.json
    scrapy audit docs -o audit.md --tree tree.md --llms-txt llms.txt --llms-full llms-full.txt

Reads the job's recorded link graph from Redis (``CRAWLYX_REDIS_URL`` or the embedded
server) and writes the same files ``-a audit=``, ``-a tree=``, ``-a llms_txt=`` and
``-a llms_full=`` write at the end of a crawl; nothing is fetched again. ``-o`` ending in
``.md`` writes the markdown summary, any other name the JSON report. llms-full.txt
needs the pages' markdown, kept only by a crawl run with ``-a llms_full=``: for a job
that kept none, ``--llms-full`` says so and exits 1, writing nothing. A job still
running is audited as recorded so far (with a warning).
"""

from __future__ import annotations

import sys

import redis
from scrapy.commands import ScrapyCommand

from crawlyx.arguments import JOB_NAME, ArgumentError, _writable
from crawlyx.cli import program
from crawlyx.commands import failer
from crawlyx.frontier.jobs import RECORD, live_owners
from crawlyx.frontier.state import State
from crawlyx.graph.extension import Audit, top_findings
from crawlyx.graph.outputs import Outputs, PageMarkdown, load_graph, write_outputs

fail = failer("audit")


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings = {"LOG_LEVEL": "WARNING"}

    def syntax(self) -> str:
        return "JOB [-o AUDIT] [--tree FILE] [--llms-txt FILE] [--llms-full FILE]"

    def short_desc(self) -> str:
        return "Write a job's site audit, site tree and llms.txt from its link graph"

    def add_options(self, parser):
        super().add_options(parser)
        parser.add_argument("-o", "--output", metavar="FILE", help="the audit (.json or .md)")
        parser.add_argument("--tree", metavar="FILE", help="the site tree, as markdown")
        parser.add_argument("--llms-txt", metavar="FILE", help="llms.txt")
        parser.add_argument("--llms-full", metavar="FILE", help="llms-full.txt")

    def run(self, args, opts):
        if len(args) != 1:
            fail(f"give one job name (see {program()} jobs)")
        job = args[0]
        if not JOB_NAME.fullmatch(job):
            fail(f"bad job name {job!r}")
        try:
            outputs = Outputs(
                _writable("-o", opts.output),
                _writable("--tree", opts.tree),
                _writable("--llms-txt", opts.llms_txt),
                _writable("--llms-full", opts.llms_full),
            )
            max_depth = Audit.check_settings(self.settings)
        except (ArgumentError, ValueError) as exc:
            fail(str(exc))
        if not outputs:
            fail("nothing to write: give -o, --tree, --llms-txt or --llms-full")
        try:
            state = State.connect(self.settings, job)
        except RuntimeError as exc:
            fail(str(exc), code=1)
        try:
            if not state.client.exists(state.key(RECORD)):
                fail(f"no job {job} (see {program()} jobs)", 1)
            markdown = PageMarkdown(state)
            if outputs.llms_full and not markdown.kept():
                fail(f"job {job} kept no markdown for llms-full.txt: only a crawl run with "
                     "-a llms_full=FILE keeps the pages' markdown", 1)  # fmt: skip
            if live_owners(state):
                print(f"crawlyx: audit: job {job} is still running; auditing it as recorded "
                      "so far", file=sys.stderr)  # fmt: skip
            graph = load_graph(state, self.settings)
            report = write_outputs(graph, outputs, max_depth, markdown.get)
        except redis.RedisError as exc:
            fail(f"reading Redis failed: {exc}", code=1)
        finally:
            state.close()
        if report:
            print(f"crawlyx: {top_findings(report)}")
        for path in outputs.paths():
            print(f"crawlyx: written {path}")
