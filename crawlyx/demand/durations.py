"""Durations in settings: ``90s``, ``30m``, ``6h``, ``2d``, or plain seconds (``3600``).

Every ``CRAWLYX_DEMAND_*`` duration is written this way; :func:`parse_duration` turns
one into seconds, or raises ``ValueError`` naming the setting and what is accepted.
"""

from __future__ import annotations

import math
import re

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhd]?)")


def parse_duration(value, name: str = "duration") -> float:
    """Seconds in ``value``: a positive number, or a string ``<number>[s|m|h|d]``."""
    if isinstance(value, bool):  # a bool is an int to Python, never a duration
        raise ValueError(f"{name} must be a duration like 90s, 30m, 6h, 2d or 3600, not {value!r}")
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        match = _DURATION.fullmatch(str(value).strip().lower())
        if match is None:
            raise ValueError(
                f"{name} must be a duration like 90s, 30m, 6h, 2d or 3600, not {value!r}"
            )
        seconds = float(match[1]) * UNITS[match[2] or "s"]
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"{name} must be a positive duration, not {value!r}")
    return seconds
