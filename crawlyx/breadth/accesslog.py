"""Reading web server access logs: one request per line, never fatal.

The default format is the combined log format (Apache ``%h %l %u %t "%r" %>s %b
"%{Referer}i" "%{User-agent}i"``, nginx's ``combined``). Any other format is a regular
expression with named groups: ``time``, ``agent`` and either ``request`` (``GET /path
HTTP/1.1``) or ``path`` (with ``method`` optional). ``time`` may be in the combined
form (``10/Oct/2000:13:55:36 -0700``), ISO 8601 (``2000-10-10T20:55:36Z``; no offset
means UTC) or unix seconds.

A line counts only if the format matches it whole. A line cut short (log rotation
mid-write leaves one ending inside the user agent, with no closing quote) is a bad
line, not a visit by an agent named by half a string. In the combined format the
referrer and the agent are required (a common-format line names no agent to count it
under) and end with their closing quotes; after the agent, only complete fields may
follow (quoted and closed, or bare tokens: nginx's ``main`` format, Apache's
``combinedio``), so anything else after it, or a field cut inside, makes a bad line.

:func:`parse_line` returns a :class:`Visit` or raises :class:`BadLine` with a short
reason; the caller counts those. :func:`follow` reads a stream line by line without
blocking past a timeout, so a ``tail -F | scrapy visits -`` pipe still flushes on time
when the log goes quiet.
"""

from __future__ import annotations

import os
import re
import select
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

_QUOTED = r'"(?:[^"\\]|\\.)*"'  # a quoted field, closed, with \" escapes
COMBINED = (
    r'(?P<host>\S+) \S+ \S+ \[(?P<time>[^\]]+)\] "(?P<request>(?:[^"\\]|\\.)*)" '
    rf'(?P<status>\d{{3}}|-) \S+ {_QUOTED} "(?P<agent>(?:[^"\\]|\\.)*)"'
    # Fields some servers log after the agent (nginx's "main": "$http_x_forwarded_for";
    # Apache's combinedio: %I %O), each complete: quoted and closed, or a bare token.
    rf'(?: +(?:{_QUOTED}|[^"\s]\S*))* *'
)
MAX_LINE = 64 * 1024  # longer lines are bad lines, not memory

_MONTHS = {
    m: i
    for i, m in enumerate(
        ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1
    )
}
_COMBINED_TIME = re.compile(
    r"(\d{1,2})/([A-Z][a-z]{2})/(\d{4}):(\d{2}):(\d{2}):(\d{2})(?: ([+-])(\d{2})(\d{2}))?"
)


class BadLine(ValueError):
    """A line that is not a request in the expected format; the message says why."""


@dataclass(frozen=True)
class Visit:
    day: str  # UTC, YYYY-MM-DD
    method: str
    target: str  # the request target as logged: a path, or an absolute URL
    agent: str
    status: str | None
    time: float = 0.0  # unix seconds


class LogFormat:
    """A compiled line format with the UTC-day cache its timestamps go through."""

    CACHE_LIMIT = 4096

    def __init__(self, pattern: str | None = None):
        try:
            self.regex = re.compile(pattern or COMBINED)
        except re.error as exc:
            raise ValueError(f"bad log format regex: {exc}") from None
        groups = self.regex.groupindex
        missing = {"time", "agent"} - set(groups)
        if "request" not in groups and "path" not in groups:
            missing.add("request or path")
        if missing:
            raise ValueError(f"log format regex lacks the named groups {sorted(missing)}")
        self._request = "request" in groups
        self._method = "method" in groups
        self._status = "status" in groups
        self._moments: dict[str, tuple[str, float]] = {}

    def parse_line(self, line: str) -> Visit:
        match = self.regex.fullmatch(line)
        if match is None:
            raise BadLine("does not match the log format")
        if self._request:
            parts = (match["request"] or "").split()
            if len(parts) == 3 and parts[2].startswith("HTTP/"):
                method, target = parts[0], parts[1]
            elif len(parts) == 2:  # HTTP/0.9
                method, target = parts
            else:
                raise BadLine("malformed request line")
        else:
            method = (match["method"] if self._method else None) or "GET"
            target = match["path"] or ""
        if not target:
            raise BadLine("empty request target")
        agent = (match["agent"] or "").replace('\\"', '"')
        status = match["status"] if self._status else None
        day, moment = self.moment(match["time"] or "")
        return Visit(day, method.upper(), target, agent, status, moment)

    def moment(self, stamp: str) -> tuple[str, float]:
        """The UTC day and unix time of a log timestamp (cached: a busy log repeats
        each second's stamp on many lines)."""
        found = self._moments.get(stamp)
        if found is None:
            moment = _utc_time(stamp)
            found = (datetime.fromtimestamp(moment, UTC).date().isoformat(), moment)
            if len(self._moments) >= self.CACHE_LIMIT:
                self._moments.clear()
            self._moments[stamp] = found
        return found


def _utc_time(stamp: str) -> float:
    stamp = stamp.strip()
    match = _COMBINED_TIME.fullmatch(stamp)
    try:
        if match is not None:
            d, mon, y, hh, mm, ss, sign, oh, om = match.groups()
            month = _MONTHS.get(mon)
            if month is None:
                raise BadLine(f"bad month in time {stamp!r}")
            local = datetime(int(y), month, int(d), int(hh), int(mm), int(ss), tzinfo=UTC)
            offset = timedelta(hours=int(oh or 0), minutes=int(om or 0))
            utc = local - offset if sign != "-" else local + offset
            return utc.timestamp()
        if stamp.replace(".", "", 1).isdigit():
            seconds = float(stamp)
            datetime.fromtimestamp(seconds, UTC)  # in range
            return seconds
        moment = datetime.fromisoformat(stamp)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)  # no offset means UTC
        return moment.timestamp()
    except (ValueError, OverflowError, OSError) as exc:
        raise BadLine(f"bad time {stamp!r}: {exc}") from None


def follow(fd: int, timeout: float) -> Iterator[bytes | None]:
    """Lines (without the newline) from a file descriptor until end of file; None
    whenever ``timeout`` seconds pass without a complete line. A line longer than
    MAX_LINE comes out cut at MAX_LINE (and fails to parse); the rest of it is dropped
    rather than buffered."""
    pending = bytearray()
    skipping = False  # inside the tail of an overlong line
    while True:
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            yield None
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        pending += chunk
        start = 0
        while True:
            end = pending.find(b"\n", start)
            if end < 0:
                break
            if not skipping:
                yield bytes(pending[start:end])
            skipping = False
            start = end + 1
        del pending[:start]
        if len(pending) > MAX_LINE:
            if not skipping:
                yield bytes(pending[:MAX_LINE])
            skipping = True
            pending.clear()
    if pending and not skipping:
        yield bytes(pending)
