"""The board a pool of page workers writes on: which read each worker is on, and until
when. Shared memory, so that a thread of the crawl process can see a read past its
budget and kill its worker (crawlyx/content/workers.py)."""

from __future__ import annotations

import os
import time


class Board:
    """What each worker of a pool is reading and until when, in memory the crawl process
    shares with them: per worker its pid, its task's number, and the task's deadline
    (monotonic nanoseconds; 0 while idle or without a budget). A worker writes its own
    row only; the crawl process reads."""

    def __init__(self, context, workers: int):
        self.cells = context.RawArray("q", 3 * workers)
        self.taken = context.Value("i", 0)  # rows taken by the workers started so far
        self.row = -1  # this worker's, in a worker

    def join(self) -> None:
        """In a worker as it starts: take a row."""
        with self.taken.get_lock():
            row = self.taken.value
            self.taken.value += 1
        if 3 * row < len(self.cells):
            self.row = 3 * row
            self.cells[self.row] = os.getpid()

    def start(self, task: int, budget_ns: int) -> None:
        if self.row >= 0:
            cells, row = self.cells, self.row
            cells[row + 2] = 0  # no deadline while the task changes
            cells[row + 1] = task
            cells[row + 2] = time.monotonic_ns() + budget_ns if budget_ns else 0

    def stop(self) -> None:
        if self.row >= 0:
            self.cells[self.row + 2] = 0

    def overdue(self, now_ns: int) -> list[tuple[int, int]]:
        """(pid, task) of each worker past its task's deadline."""
        found = []
        cells = self.cells
        for row in range(0, len(cells), 3):
            task = cells[row + 1]
            deadline = cells[row + 2]
            if deadline and now_ns > deadline and cells[row + 1] == task:
                found.append((cells[row], task))
        return found


_board: Board | None = None  # this worker's pool's board
