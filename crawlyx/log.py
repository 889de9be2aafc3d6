"""The crawl's log as its user reads it.

Two kinds of line are the crawl's report to its user more than a log's: the one naming
the job and how to resume it, and the summary when it ends. They are logged at INFO with
``extra=SHOWN``; when the log hides INFO (``-L WARNING``, ``--nolog``), the crawl command
writes them to stderr all the same, bare (:func:`configure`). Scrapy's dump of the
overridden settings, the same on every run and the bulk of the log's start, goes down to
DEBUG, without the passwords it holds.

With ``CRAWLYX_LOG_FORMAT=json`` every record is one line holding one JSON object
(:func:`use_json`): ``timestamp`` (UTC), ``level``, ``logger``, ``message``, and, when the
record is about a URL, ``url`` and ``trace_id``: the URL's request fingerprint
(crawlyx/frontier/fingerprint.py), the same on every line about it, in every process of
the job and in its Redis state. A record is about the URL it carries: a request or a
response among its arguments (Scrapy's "Crawled" and "Scraped" lines, a spider error),
a URL logged as an argument, or ``extra={"url": ...}``. An exception's traceback is the
``exception`` field, not lines of its own.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import traceback
from collections.abc import Mapping
from datetime import UTC, datetime

from scrapy.http import Request, Response

from crawlyx.frontier.fingerprint import url_fingerprint

SHOWN = {"crawlyx_shown": True}  # logging's extra: a line shown at any log level

# Scrapy logs it at INFO once the crawler's settings are final (Crawler._apply_settings).
SETTINGS_DUMP = "Overridden settings"


def hides_info(settings) -> bool:
    """Whether the log (``settings``) leaves INFO lines out: ``-L WARNING``, ``--nolog``."""
    levels = logging.getLevelNamesMapping()
    level = settings.get("LOG_LEVEL")
    level = level if isinstance(level, int) else levels.get(str(level), logging.NOTSET)
    return not settings.getbool("LOG_ENABLED") or level > logging.INFO


def configure(settings) -> None:
    """For a crawl run by the crawl command, before it starts: Scrapy's settings dump at
    DEBUG, and the SHOWN lines on stderr if the log (``settings``) would hide them."""
    logging.getLogger("scrapy.crawler").addFilter(_settings_dump_at_debug)
    if not hides_info(settings):
        return
    handler = logging.StreamHandler(sys.stderr)  # the bare message
    handler.addFilter(lambda record: getattr(record, "crawlyx_shown", False))
    logging.getLogger("crawlyx").addHandler(handler)


class ProgressLine:
    """The crawl's progress line, written in place on a terminal whose log hides INFO
    (the quiet ``-L WARNING``), where the progress record would not be seen: one line,
    rewritten at each tick. A log line about to be written clears it first (it is the
    filter of every handler writing to the same terminal), so the two never share a line."""

    CLEAR = "\r\033[K"

    def __init__(self, stream):
        self.stream = stream
        self.shown = False
        self._watching = False

    @classmethod
    def for_settings(cls, settings, stream=None) -> ProgressLine | None:
        """One for a crawl logging to a terminal and hiding INFO, else None (``--nolog``
        shows no progress)."""
        stream = stream or sys.stderr
        if not settings.getbool("LOG_ENABLED") or not hides_info(settings):
            return None
        return cls(stream) if stream.isatty() else None

    def show(self, text: str) -> None:
        if not self._watching:  # the log's handlers exist once the crawl runs
            self._watching = True
            for name in (None, "crawlyx"):
                for handler in logging.getLogger(name).handlers:
                    if getattr(handler, "stream", None) is self.stream:
                        handler.addFilter(self)
        self.stream.write(self.CLEAR + text)
        self.stream.flush()
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            self.stream.write(self.CLEAR)
            self.stream.flush()
            self.shown = False

    def filter(self, record: logging.LogRecord) -> bool:
        self.clear()
        return True


def _settings_dump_at_debug(record: logging.LogRecord) -> bool:
    if isinstance(record.msg, str) and record.msg.startswith(SETTINGS_DUMP):
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        if isinstance(record.args, Mapping) and isinstance(record.args.get("settings"), str):
            record.args = {**record.args, "settings": redact_settings(record.args["settings"])}
    return True


# In the settings dump: a setting named for a secret (HTTPAUTH_PASS, a token), and the
# password of a URL (CRAWLYX_REDIS_URL's, a proxy's).
_SECRET_SETTING = re.compile(
    r"""('[A-Z0-9_]*(?:PASS|PASSWORD|SECRET|TOKEN)[A-Z0-9_]*': )(?:'[^']*'|"[^"]*")"""
)
_URL_PASSWORD = re.compile(r"(://[^:/@\s'\"]*:)[^@/\s'\"]*@")


def redact_settings(dump: str) -> str:
    """Scrapy's dump of the overridden settings without the secrets they hold."""
    return _URL_PASSWORD.sub(r"\1***@", _SECRET_SETTING.sub(r"\1'***'", dump))


FORMATS = ("text", "json")


def check_settings(settings) -> str:
    """CRAWLYX_LOG_FORMAT; ValueError (one line naming it) if it is not a format."""
    value = settings.get("CRAWLYX_LOG_FORMAT")
    fmt = str(value or "text").strip().lower()
    if fmt not in FORMATS:
        raise ValueError(f"CRAWLYX_LOG_FORMAT ({value}) must be one of {', '.join(FORMATS)}")
    return fmt


def use_json(settings) -> None:
    """Before Scrapy sets its log up (the crawl command, as its options are read): its
    handler writes the message alone, and every record's message is its JSON object."""
    settings.set("LOG_FORMAT", "%(message)s", priority="cmdline")
    logging.setLogRecordFactory(JsonRecord)


class JsonRecord(logging.LogRecord):
    """A log record whose message is the record as one JSON object (see the module
    docstring). Its traceback goes into the object: a handler's formatter then has
    none left to append on lines of its own."""

    _json: str | None = None

    def getMessage(self) -> str:  # noqa: N802 - logging's name
        if self._json is None:
            self._json = json.dumps(self._fields(), ensure_ascii=False, default=str)
        return self._json

    def _fields(self) -> dict:
        fields = {
            "timestamp": datetime.fromtimestamp(self.created, UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": self.levelname,
            "logger": self.name,
            "message": super().getMessage(),
        }
        url, trace = about(self)
        if url is not None:
            fields["url"] = url
            fields["trace_id"] = trace
        if self.exc_info:
            fields["exception"] = "".join(traceback.format_exception(*self.exc_info)).rstrip()
        elif self.exc_text:
            fields["exception"] = self.exc_text
        if self.stack_info:
            fields["stack"] = self.stack_info
        self.exc_info = self.exc_text = self.stack_info = None
        return fields


def about(record: logging.LogRecord) -> tuple[str | None, str | None]:
    """(URL, its fingerprint) a record is about, or (None, None)."""
    url = getattr(record, "url", None)
    if isinstance(url, str):
        return url, url_fingerprint(url)
    args = record.args
    values = args.values() if isinstance(args, Mapping) else args or ()
    if isinstance(args, Mapping) and "request" in args:  # a redirect's: "to ... from request"
        values = [args["request"], *values]
    for value in values:
        if isinstance(value, Response):
            value = value.request if value.request is not None else value.url
        if isinstance(value, Request):
            return value.url, url_fingerprint(value.url, value.method, value.body)
        if isinstance(value, str) and value.startswith(("http://", "https://")):
            return value, url_fingerprint(value)
    return None, None
