"""The error taxonomy: every failed or skipped URL gets exactly one class."""

from __future__ import annotations

import json
from contextlib import suppress
from http import HTTPStatus
from ssl import SSLError

from scrapy import signals
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadFailedError,
    DownloadTimeoutError,
    IgnoreRequest,
    ResponseDataLossError,
)
from scrapy.spidermiddlewares.httperror import HttpError
from scrapy.utils.response import response_status_message
from twisted.internet import error as net
from twisted.python.failure import Failure
from twisted.web.client import ResponseFailed

from crawlyx.signals import url_failed

ERROR_CLASSES = (
    "http_3xx",  # a 3xx that leads nowhere: no Location, a 300, a 304 nobody asked for
    "http_4xx",
    "http_5xx",
    "timeout",
    "dns",
    "tls",
    "connection",
    "robots_disallowed",
    "robots_unavailable",
    "too_large",
    "ssrf_blocked",
    "trap",
    "render",
    "parse",
    "read_timeout",  # the page's read ran past CRAWLYX_READ_TIMEOUT (crawlyx/content/workers.py)
    "opted_out",
    "out_of_scope",
    "gone",
    # a document (CRAWLYX_DOCUMENTS) that cannot be read: encrypted, broken, no text
    "unreadable",
    "not_a_page",  # a response crawlyx does not read: an image, an archive, no content...
    # Another address of a document written under one address only (no failure):
    "duplicate",  # its markdown is byte for byte an earlier page's (crawlyx/pipelines/copies.py)
    "alias",  # its rel=canonical names another page of the site, which confirms it
)

# The classes of a page that was read fine and is written under another address: the
# link graph keeps it as the page it is (the audit's duplicates and canonicals list it).
ALIASES = ("duplicate", "alias")

# The classes of a URL that was fetched (or tried) and did not come back fine.
FETCH_FAILURES = (
    "http_3xx", "http_4xx", "http_5xx", "timeout", "dns", "tls", "connection", "too_large"
)  # fmt: skip


def error_counts(stats) -> dict[str, int]:
    """The crawl's errors so far by class (classes with none left out), from the stats."""
    counts = {name: stats.get_value(f"crawlyx/error/{name}", 0) for name in ERROR_CLASSES}
    return {name: count for name, count in counts.items() if count}


class CrawlyxIgnore(Exception):
    """Base for the reasons crawlyx refuses a request; ``error_class`` names it."""

    error_class = "trap"


def describe(failure: Failure) -> str:
    """A failure in words, for the errors file and the log: an HTTP error by its status
    (``HTTP 404 Not Found``), anything else by its exception and message, in words where
    Scrapy's say nothing (a body cut short) or hold a list of reprs (a malformed response)."""
    exc = failure.value
    if isinstance(exc, HttpError):
        return f"HTTP {_status_message(exc.response.status)}"
    if isinstance(exc, DownloadCancelledError) and not str(exc):  # see classify
        return "DownloadCancelledError: the body went past DOWNLOAD_MAXSIZE as it came in"
    if isinstance(exc, ResponseDataLossError):  # says nothing itself
        return (
            "ResponseDataLossError: the connection closed before the whole body came"
            " (shorter than its Content-Length, or a broken chunked body)"
        )
    if isinstance(exc, DownloadFailedError) and isinstance(exc.__cause__, ResponseFailed):
        # Its message is the repr of a list of failures: what they say, in words.
        reasons = "; ".join(_said(reason.value) for reason in exc.__cause__.reasons)
        return f"DownloadFailedError: {reasons}"
    if type(exc).__module__ in _DECODERS:  # zlib.error, brotli.error...
        name = f"{type(exc).__module__}.{type(exc).__name__}"
        return f"the body does not decode as its Content-Encoding says ({name}: {exc})"
    return _said(exc)


# The modules whose errors mean a body is not what its Content-Encoding says (Scrapy's
# HttpCompressionMiddleware decodes gzip and deflate with zlib, br and zstd with these).
_DECODERS = frozenset({"zlib", "brotli", "brotlicffi", "zstandard", "compression.zstd"})


def _said(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _status_message(status: int) -> str:
    """``404 Not Found``; Python names the statuses Twisted does not (451)."""
    message = response_status_message(status)
    if message.endswith(" Unknown Status"):
        with suppress(ValueError):
            message = f"{status} {HTTPStatus(status).phrase}"
    return message


def classify(failure: Failure) -> str:
    """The error class of a failed request."""
    exc = failure.value
    if isinstance(exc, CrawlyxIgnore):
        return exc.error_class
    if isinstance(exc, HttpError):
        status = exc.response.status
        return "http_5xx" if status >= 500 else "http_4xx" if status >= 400 else "http_3xx"
    if isinstance(exc, (DownloadTimeoutError, net.TimeoutError, net.TCPTimedOutError)):
        return "timeout"
    if isinstance(exc, (CannotResolveHostError, net.DNSLookupError)):
        return "dns"
    if isinstance(exc, DownloadCancelledError) and ("max size" in str(exc) or not str(exc)):
        # Said with a length that is over the cap; a body that passes it as it streams in
        # (no length given) is cancelled without a word.
        return "too_large"
    if isinstance(exc, IgnoreRequest):
        message = str(exc)
        if "DOWNLOAD_MAXSIZE" in message:  # a decompression bomb, stopped while inflating
            return "too_large"
        if "max redirections" in message:  # a redirect chain that does not end
            return "trap"
    if isinstance(exc, SSLError) or "SSL" in type(exc).__name__:
        return "tls"
    return "connection"


def record_error(
    crawler,
    url: str,
    error_class: str,
    detail: str = "",
    referrer: str | None = None,
    *,
    status: int | None = None,
    depth: int | None = None,
    holder: str | None = None,
) -> None:
    """Record ``url`` as failed, skipped or an alias under ``error_class``: sent as
    :data:`crawlyx.signals.url_failed` to whoever keeps a record of it (the error log,
    the job's link graph, the fetch tally). ``holder``: of an alias (a page written
    once), the URL it is written under."""
    if error_class not in ERROR_CLASSES:
        raise ValueError(f"unknown error class {error_class!r}")
    crawler.signals.send_catch_log(
        signal=url_failed, url=url, error_class=error_class, detail=detail,
        referrer=referrer, status=status, depth=depth, holder=holder,
    )  # fmt: skip


class ErrorLog:
    """Every failed or skipped URL (:data:`crawlyx.signals.url_failed`), counted under
    its class in the stats (``crawlyx/error/<class>``) and, with ``-a errors=PATH``,
    written there as one JSON line: url, class, detail, referrer. A resumed job appends
    to the file. The job's link graph (:mod:`crawlyx.graph.recorder`: its class, the
    status of an HTTP error) and the fetch tally of the metrics and report (errors by
    host) subscribe to the same signal."""

    def __init__(self, crawler, path: str | None = None, append: bool = False):
        self.crawler = crawler
        self.file = open(path, "a" if append else "w", encoding="utf-8") if path else None
        crawler.signals.connect(self.url_failed, signal=url_failed)
        crawler.signals.connect(self.close, signal=signals.spider_closed)

    def url_failed(self, url, error_class, detail="", referrer=None, **kwargs):
        stats = self.crawler.stats
        stats.inc_value("crawlyx/error/count")
        stats.inc_value(f"crawlyx/error/{error_class}")
        if self.file is not None:
            line = {"url": url, "class": error_class, "detail": detail[:500], "referrer": referrer}
            self.file.write(json.dumps(line, ensure_ascii=False) + "\n")

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None
