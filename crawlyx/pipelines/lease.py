"""Drops the item of a page whose lease this process lost while it stalled.

A process stopped (SIGSTOP, a paused VM) or blocked past its heartbeat's TTL is taken
for dead: another process puts its leases back on the queue, and a third may fetch and
emit their pages. When the first resumes, the pages it was handling are not its own any
more, and their items would be written twice. So the last pipeline, just before the
feed exporter writes an item, checks that its page's lease is still this process's
(:meth:`crawlyx.frontier.visited.VisitedTable.still_mine`: no round trip while the
heartbeat is fresh) and drops the item otherwise, counted under ``crawlyx/lease/lost``.
"""

from __future__ import annotations

from scrapy.exceptions import DropItem

from crawlyx.parts import shared_parts


class LeaseCheck:
    def __init__(self, parts):
        self.parts = parts
        # The lease middleware: Scrapy builds the spider middlewares before the pipelines.
        self.leases = parts.leases

    @classmethod
    def from_crawler(cls, crawler):
        return cls(shared_parts(crawler))

    def process_item(self, item):
        fp = self.leases.lease_of(item)
        if fp is not None and not self.parts.visited.still_mine(fp):
            raise DropItem(
                "its page was taken over by another process while this one stalled",
                log_level="DEBUG",  # the stall itself is logged once, as a warning
            )
        return item
