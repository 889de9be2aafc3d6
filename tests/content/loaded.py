"""Run in a page worker by tests/content/test_workers.py: whether the worker imported a package."""

from __future__ import annotations

import sys


def imported(package: str) -> bool:
    return any(name == package or name.startswith(package + ".") for name in sys.modules)
