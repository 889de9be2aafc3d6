"""The error taxonomy: every failed or skipped URL gets exactly one class."""

from __future__ import annotations

from ssl import SSLError

from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadTimeoutError,
)
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.internet import error as net
from twisted.python.failure import Failure

ERROR_CLASSES = (
    "http_4xx",
    "http_5xx",
    "timeout",
    "dns",
    "tls",
    "connection",
    "robots_disallowed",
    "too_large",
    "ssrf_blocked",
    "trap",
    "render",
    "parse",
    "opted_out",
)


class CrawlyxIgnore(Exception):
    """Base for the reasons crawlyx refuses a request; ``error_class`` names it."""

    error_class = "trap"


def classify(failure: Failure) -> str:
    """The error class of a failed request."""
    exc = failure.value
    if isinstance(exc, CrawlyxIgnore):
        return exc.error_class
    if isinstance(exc, HttpError):
        return "http_5xx" if exc.response.status >= 500 else "http_4xx"
    if isinstance(exc, (DownloadTimeoutError, net.TimeoutError, net.TCPTimedOutError)):
        return "timeout"
    if isinstance(exc, (CannotResolveHostError, net.DNSLookupError)):
        return "dns"
    if isinstance(exc, DownloadCancelledError) and "max size" in str(exc):
        return "too_large"
    if isinstance(exc, SSLError) or "SSL" in type(exc).__name__:
        return "tls"
    return "connection"


def record_error(stats, error_class: str) -> None:
    stats.inc_value("crawlyx/error/count")
    stats.inc_value(f"crawlyx/error/{error_class}")
