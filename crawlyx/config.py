"""Checks of crawlyx's settings that no one component owns, run before anything starts.

Every ``CRAWLYX_*`` setting is one crawlyx declares (crawlyx/settings.py): a misspelt name
would otherwise be ignored, and the crawl run with the default. Every one whose default is
a number or a flag must read as one: a number is finite and never negative (no count, size
or duration is), a flag is ``true``/``false``/``1``/``0``. The Redis settings are checked
next to the Redis code (crawlyx/frontier/checks.py). Each component checks what its own
values mean (a window's bounds, a port's range) in its ``check_settings``; the add-on runs
those after these (crawlyx/addon.py).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable

from crawlyx import settings as defaults

PREFIX = "CRAWLYX_"


def closest(name: str, known: Iterable[str], prefix: str = "") -> str | None:
    """The name of ``known`` most like ``name`` (past their shared ``prefix``, in any
    case), or None when none is close: what a misspelt name most likely meant."""
    names = {k.removeprefix(prefix).lower(): k for k in known}
    match = difflib.get_close_matches(name.removeprefix(prefix).lower(), names, n=1)
    return names[match[0]] if match else None


# Settings crawlyx had and has no more, and why: named as such rather than as unknown.
REMOVED = {
    "CRAWLYX_MARKDOWN_SITE_BOILERPLATE": "a page's markdown is made from the page alone, "
    "never from what other pages of the crawl repeat",
}


def check_known(settings) -> None:
    """ValueError naming the first ``CRAWLYX_*`` setting crawlyx does not declare, and the
    declared one closest to it. The value is not shown: it may be a password."""
    known = {name for name in vars(defaults) if name.startswith(PREFIX)}
    for name in settings:
        if name in REMOVED:
            raise ValueError(f"{name} was removed: {REMOVED[name]}")
        if name.startswith(PREFIX) and name not in known:
            match = closest(name, known, PREFIX)
            hint = f"; did you mean {match}?" if match else " (see crawlyx/settings.py)"
            raise ValueError(f"{name} is not a crawlyx setting{hint}")


def check_types(settings) -> None:
    """ValueError naming the first ``CRAWLYX_*`` number or flag set to something else."""
    for name, default in vars(defaults).items():
        if not name.startswith(PREFIX) or name not in settings:
            continue
        value = settings.get(name)
        if isinstance(default, bool):
            try:
                settings.getbool(name)
            except ValueError:
                raise ValueError(f"{name} ({value}) must be true or false") from None
        elif isinstance(default, int | float):
            kind = "a whole number" if isinstance(default, int) else "a number"
            try:
                number = float(value) if isinstance(default, float) else _integer(value)
            except (TypeError, ValueError, OverflowError):
                raise ValueError(f"{name} ({value}) must be {kind}") from None
            if not 0 <= number < math.inf:  # NaN neither
                raise ValueError(f"{name} ({value}) must be {kind}, 0 or more")


def _integer(value) -> int:
    number = float(value)
    if number != int(number):
        raise ValueError(value)
    return int(number)
