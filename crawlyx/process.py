"""Whether a process is still there, from its PID."""

from __future__ import annotations

import os


def running(pid: int) -> bool:
    """The process exists and has not exited. A zombie (killed, not yet reaped by its
    parent) has exited; another user's process exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):  # no /proc: existing is all that can be told
        return True
