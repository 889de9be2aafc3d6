"""Crawler traps: URLs that are infinite by construction, refused by rule.

A trap is not ended by exhausting max_pages: each rule looks at one URL and says
whether it can be a real page.

- Too long: real pages have short URLs; generated ones grow without bound.
- A path segment repeated (``/a/b/a/b/a/b``, ``/x/x/x/x``): relative links resolved
  against the wrong base nest forever.
- Too many query parameters: faceted search multiplying filters.
- A date far from today (``/calendar?month=2391-04``, ``/2087/06/``): "next month" links
  on an event calendar run into the future forever; no real archive is years ahead
  (or before 1900).
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import UTC, datetime
from urllib.parse import parse_qsl, urlsplit

# A year and a month with a separator (2031-01, 2087/06, 2030_12): a bare number is an id.
_DATE = re.compile(r"(?<![0-9])([0-9]{4})[-/_.](0[1-9]|1[0-2])(?![0-9])")


class TrapRules:
    def __init__(
        self,
        max_url_length: int = 2048,
        max_segment_repeats: int = 3,
        max_query_params: int = 24,
        future_years: int = 3,
        now: datetime | None = None,
    ):
        self.max_url_length = max_url_length
        self.max_segment_repeats = max_segment_repeats
        self.max_query_params = max_query_params
        year = (now or datetime.now(UTC)).year
        self.years = range(1900, year + future_years + 1)

    @classmethod
    def from_settings(cls, settings) -> TrapRules:
        return cls(
            max_url_length=settings.getint("CRAWLYX_TRAP_MAX_URL_LENGTH"),
            max_segment_repeats=settings.getint("CRAWLYX_TRAP_MAX_SEGMENT_REPEATS"),
            max_query_params=settings.getint("CRAWLYX_TRAP_MAX_QUERY_PARAMS"),
            future_years=settings.getint("CRAWLYX_TRAP_FUTURE_YEARS"),
        )

    def reason(self, url: str) -> str | None:
        """Why ``url`` (normalized) is a trap, or None."""
        if len(url) > self.max_url_length:
            return f"URL longer than {self.max_url_length} characters"
        parts = urlsplit(url)
        segments = [s for s in parts.path.split("/") if s]
        if segments:
            segment, count = Counter(segments).most_common(1)[0]
            if count > self.max_segment_repeats:
                return f"path segment {segment!r} repeated {count} times"
        if parts.query:
            params = parse_qsl(parts.query, keep_blank_values=True)
            if len(params) > self.max_query_params:
                return f"{len(params)} query parameters"
        for year in self._years(parts.path, parts.query):
            if year not in self.years:
                return f"date in {year}, outside {self.years.start}-{self.years.stop - 1}"
        return None

    @staticmethod
    def _years(path: str, query: str):
        for match in _DATE.finditer(path + "?" + query):
            yield int(match.group(1))
