"""``max_pages`` for a whole job, across every process crawling it.

The job's page count is a Redis counter. Asking it for every page would cost a round
trip per page, so a process takes page slots in blocks: a block is a sixteenth of what
the count it last saw leaves, at most :attr:`PageQuota.MAX_BLOCK` and at least one, so
slots are taken in bulk early on and one by one near the limit. The counter counts
slots taken, which may pass the limit (a block that did not fit): past the limit,
nothing fits, in this run or in a resumed one. Slots a process took and did not use
go back when it closes; a process killed outright takes its unused ones with it, so a
resumed job may stop up to one block short of the limit.
"""

from __future__ import annotations


class PageQuota:
    MAX_BLOCK = 32

    def __init__(self, client, key: str, limit: int, field: str = "pages"):
        self.client = client
        self.key = key
        self.field = field
        self.limit = limit
        self.seen = 0  # the counter as last read
        self.slots = 0  # taken, not used yet
        self.exhausted = False  # the counter has reached the limit

    def take(self) -> tuple[bool, bool]:
        """Use a slot for a page: (it fits, no slot is left for this process)."""
        if not self.slots and not self.exhausted:
            block = max(1, min(self.MAX_BLOCK, (self.limit - self.seen) // 16))
            self.seen = int(self.client.hincrby(self.key, self.field, block))
            self.slots = max(0, min(block, self.limit - (self.seen - block)))
            self.exhausted = self.seen >= self.limit
        if not self.slots:
            return False, True
        self.slots -= 1
        return True, self.exhausted and not self.slots

    def put_back(self) -> None:
        """Give back the slot of a page that was not emitted after all."""
        self.slots += 1

    def release(self) -> None:
        """Give the slots taken and not used back to the job."""
        if self.slots:
            self.client.hincrby(self.key, self.field, -self.slots)
            self.slots = 0
