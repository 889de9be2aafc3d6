"""The ``Retry-After`` header (RFC 9110 section 10.2.3): seconds, or an HTTP date."""

from __future__ import annotations

import re
import time
from datetime import UTC
from email.utils import parsedate_to_datetime

_SECONDS = re.compile(r"\d+(?:\.\d+)?")


def parse_retry_after(value, now: float | None = None, date=None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value, or None when it is not one.

    ``value`` is delay-seconds (``"120"``) or an HTTP date. A date is measured from
    the response's ``Date`` header when given and valid (both are the server's
    clock, so a skewed local clock does not matter), else from ``now`` (epoch
    seconds, default the local clock). A date in the past means 0.
    """
    text = _text(value)
    if not text:
        return None
    if _SECONDS.fullmatch(text):
        return float(text)
    when = _http_date(text)
    if when is None:
        return None
    base = _http_date(_text(date)) if date else None
    if base is None:
        base = time.time() if now is None else now
    return max(0.0, when - base)


def _text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    return value.strip()


def _http_date(text: str) -> float | None:
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:  # "-0000": UTC, as HTTP dates always are
        when = when.replace(tzinfo=UTC)
    return when.timestamp()
