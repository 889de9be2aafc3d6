"""crawlyx's Scrapy commands (COMMANDS_MODULE): crawl, jobs, visits, breadth, demand, audit."""

from __future__ import annotations

import sys


def failer(command: str):
    """``command``'s way out: ``fail(message, code=2)`` prints one line on stderr,
    ``crawlyx: COMMAND: message``, and exits with ``code`` (2: bad use, 1: it failed)."""

    def fail(message: str, code: int = 2):
        print(f"crawlyx: {command}: {message}", file=sys.stderr)
        sys.exit(code)

    return fail
