"""``crawlyx``: the project's commands from any folder, as ``scrapy`` runs them in the checkout.

Scrapy finds a project through ``scrapy.cfg``, so outside the checkout ``scrapy crawl site``
is not available. Installed with pip, crawlyx has this console script instead:

* ``crawlyx crawl URL [options]`` is ``scrapy crawl site -a start=URL [options]``;
* ``crawlyx COMMAND [options]`` is ``scrapy COMMAND [options]``: ``jobs``, ``audit``,
  ``breadth``, ``demand``, ``visits`` and Scrapy's own (``settings``, ``version``...).

The settings are crawlyx's wherever it runs (a ``scrapy.cfg`` around is not read): the
module in ``SCRAPY_SETTINGS_MODULE`` if set, else the profile ``SCRAPY_PROJECT`` names,
as the checkout's ``scrapy.cfg`` maps them (``default``: ``crawlyx.settings``; ``local``,
``shared``, ``fragile``, ``render``, ``scrapyd``: the ``settings`` package installed
with crawlyx), else ``crawlyx.settings``.
"""

from __future__ import annotations

import os
import pkgutil
import sys

import crawlyx.commands

DEFAULT = "crawlyx.settings"
# Set by the console script for the commands it runs: the lines that name a command to
# run next (``crawlyx jobs --drop NAME``) name it the way the user can type it.
PROGRAM_ENV = "CRAWLYX_PROGRAM"

USAGE = """\
usage: crawlyx crawl URL [scrapy crawl options]
       crawlyx COMMAND [options]

Crawl a website into clean markdown for LLMs, one JSON line per page.

  crawlyx crawl https://docs.example.com/ -O pages.jsonl
  crawlyx crawl https://docs.example.com/ -a job=docs -a max_pages=500 -o pages.jsonl
  crawlyx jobs
  crawlyx audit docs -o audit.md --tree tree.md --llms-txt llms.txt

`crawlyx crawl URL` is `scrapy crawl site -a start=URL`; any other command is the scrapy
command of that name, run with crawlyx's settings:
  {commands}, and Scrapy's own (settings, version, fetch, shell...)
`crawlyx COMMAND -h` lists a command's options.
Profiles: SCRAPY_PROJECT={profiles} crawlyx ...
"""


def profiles() -> dict[str, str]:
    """Profile name -> settings module: ``default``, and each module of the ``settings``
    package installed with crawlyx (the checkout's ``scrapy.cfg`` maps them alike)."""
    found = {"default": DEFAULT}
    try:
        import settings as package
    except ImportError:
        return found
    for module in pkgutil.iter_modules(package.__path__):
        found[module.name] = f"settings.{module.name}"
    return found


def usage() -> str:
    names = (m.name for m in pkgutil.iter_modules(crawlyx.commands.__path__))
    commands = sorted(name for name in names if name != "crawl")
    return USAGE.format(commands=", ".join(commands), profiles="|".join(profiles()))


def settings_module() -> str:
    """The settings module to run with; ValueError for an unknown profile."""
    module = os.environ.get("SCRAPY_SETTINGS_MODULE")
    if module:
        return module
    name = os.environ.get("SCRAPY_PROJECT") or "default"
    known = profiles()
    if name not in known:
        raise ValueError(f"unknown profile SCRAPY_PROJECT={name}; one of {', '.join(known)}")
    return known[name]


def program() -> str:
    """How the user runs crawlyx's commands: ``crawlyx`` (the console script, from any
    folder) or ``scrapy`` (in the checkout)."""
    return os.environ.get(PROGRAM_ENV) or "scrapy"


def scrapy_argv(args: list[str]) -> list[str]:
    """The scrapy command line for crawlyx's arguments; ValueError for a crawl without
    its URL."""
    if args[0] != "crawl":
        return ["crawlyx", *args]
    if len(args) > 1 and args[1] in ("-h", "--help"):
        return ["crawlyx", "crawl", "-h"]
    if len(args) < 2 or args[1].startswith("-"):
        raise ValueError("crawl needs the start URL first: crawlyx crawl URL [options]")
    return ["crawlyx", "crawl", "site", "-a", f"start={args[1]}", *args[2:]]


def main(argv: list[str] | None = None) -> None:
    # Ctrl-C may come at any moment of the start, however early: everything main does is
    # under the guard, so that it ends in one line, never a traceback. (Before main runs,
    # Python is still starting and importing this module: that much no code here covers.)
    args: list[str] = []
    try:
        args = list(sys.argv[1:] if argv is None else argv)
        if not args or args[0] in ("-h", "--help", "help"):
            print(usage(), end="", file=sys.stdout if args else sys.stderr)
            sys.exit(0 if args else 2)
        try:
            command = scrapy_argv(args)
            os.environ["SCRAPY_SETTINGS_MODULE"] = settings_module()
            os.environ[PROGRAM_ENV] = "crawlyx"
        except ValueError as exc:
            print(f"crawlyx: {exc}", file=sys.stderr)
            sys.exit(2)
        from scrapy.cmdline import execute

        execute(command)
    except BrokenPipeError:  # `crawlyx jobs | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at exit
        sys.exit(1)
    except KeyboardInterrupt:  # before the command handles Ctrl-C itself: Scrapy loading
        if args[:1] == ["crawl"]:
            print("crawlyx: stopped before the crawl started; nothing was fetched", file=sys.stderr)
            sys.exit(0)
        print("crawlyx: interrupted", file=sys.stderr)
        sys.exit(130)


if __name__ == "__main__":
    main()
