"""The crawl's log as its user reads it.

Two kinds of line are the crawl's report to its user more than a log's: the one naming
the job and how to resume it, and the summary when it ends. They are logged at INFO with
``extra=SHOWN``; when the log hides INFO (``-L WARNING``, ``--nolog``), the crawl command
writes them to stderr all the same, bare (:func:`configure`). Scrapy's dump of the
overridden settings, the same on every run and the bulk of the log's start, goes down to
DEBUG.
"""

from __future__ import annotations

import logging
import sys

SHOWN = {"crawlyx_shown": True}  # logging's extra: a line shown at any log level

# Scrapy logs it at INFO once the crawler's settings are final (Crawler._apply_settings).
SETTINGS_DUMP = "Overridden settings"


def configure(settings) -> None:
    """For a crawl run by the crawl command, before it starts: Scrapy's settings dump at
    DEBUG, and the SHOWN lines on stderr if the log (``settings``) would hide them."""
    logging.getLogger("scrapy.crawler").addFilter(_settings_dump_at_debug)
    levels = logging.getLevelNamesMapping()
    level = settings.get("LOG_LEVEL")
    level = level if isinstance(level, int) else levels.get(str(level), logging.NOTSET)
    if settings.getbool("LOG_ENABLED") and level <= logging.INFO:
        return
    handler = logging.StreamHandler(sys.stderr)  # the bare message
    handler.addFilter(lambda record: getattr(record, "crawlyx_shown", False))
    logging.getLogger("crawlyx").addHandler(handler)


def _settings_dump_at_debug(record: logging.LogRecord) -> bool:
    if isinstance(record.msg, str) and record.msg.startswith(SETTINGS_DUMP):
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
    return True
