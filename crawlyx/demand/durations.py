"""Durations in settings: ``90s``, ``30m``, ``6h``, ``2d``, or plain seconds (``3600``).

Every ``CRAWLYX_DEMAND_*`` duration is written this way; :func:`parse_duration` turns
one into seconds, or raises ``ValueError`` naming the setting and what is accepted.
"""

from __future__ import annotations

import math
import re

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*([smhd])", re.IGNORECASE)


def seconds(value, name: str = "duration") -> float:
    """Seconds in ``value``: ``<number>s|m|h|d``, or plain seconds (a number or its text,
    which may be 0, negative or infinite: the caller decides). Anything else raises
    ValueError naming the setting."""
    if not isinstance(value, bool):  # a bool is an int to Python, never a duration
        if isinstance(value, int | float):
            return float(value)
        text = str(value).strip()
        match = _DURATION.fullmatch(text)
        if match:
            return float(match[1]) * UNITS[match[2].lower()]
        try:
            return float(text)
        except ValueError:
            pass
    raise ValueError(f"{name}: {value!r} is not a duration (90s, 30m, 6h, 2d or seconds)")


def parse_duration(value, name: str = "duration") -> float:
    """Seconds in ``value``, which must be a positive, finite duration."""
    result = seconds(value, name)
    if not math.isfinite(result) or result <= 0:
        raise ValueError(f"{name}: {value!r} must be a positive duration")
    return result
