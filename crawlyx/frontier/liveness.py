"""A crawl process's heartbeat in its job, and the leases of processes taken for dead.

A lease names the process that holds it (its *owner*), and every process of a job renews
its heartbeat in the job's ``owners`` (:meth:`~crawlyx.frontier.state.State.beat`). An
owner whose heartbeat expired, or that retired, is marked dead once and for good
(:meth:`~crawlyx.frontier.state.State.dead_owners`), and any process may put its leases
back on the queue (:data:`crawlyx.frontier.shards.REQUEUE_DEAD`). A process killed on this
machine need not wait out its heartbeat: its name says where its PID is (the host and
the PID namespace), so a later process of the job started here finds it gone and retires
it at once. A process that stalled past its heartbeat and resumes is told so by its next
renewal, and stops (:meth:`LivenessMixin.heartbeat`).
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid

from crawlyx.frontier.outage import REDIS_DOWN, outage
from crawlyx.process import running

# Logged under the visited table's name: a filter on it covers all of the table.
logger = logging.getLogger("crawlyx.frontier.visited")


class LivenessMixin:
    """Heartbeat and takeover methods of :class:`~crawlyx.frontier.visited.VisitedTable`,
    over the state its ``__init__`` sets up (the leases held and lost, when the last
    heartbeat was sent)."""

    HEARTBEAT_TTL = 30  # seconds without a heartbeat before a process counts as dead
    # A process that has not renewed its heartbeat for this long may have been taken for
    # dead (stopped, or its reactor blocked): its leases may be another's now. Short of
    # the TTL by a margin for the round trip and for clocks.
    STALL = HEARTBEAT_TTL - 10

    def heartbeat(self) -> None:
        """Renew this process's heartbeat. A process another took for dead (a stall past
        the heartbeat: see :meth:`State.dead_owners`) is told so by the renewal, and is
        dead for good: what it did under its name goes to Redis (the batch in flight, the
        releases of pages it wrote), every lease it still holds is lost (other processes
        take them back, and fetch and emit their pages) and it hands nothing more out
        (:attr:`dead`: the crawl stops; run it again to rejoin the job)."""
        now = time.monotonic()
        stalled = now - self._beat_at
        alive = self.dead or self.state.beat(self.owner, self.HEARTBEAT_TTL)
        self._beat_at = now
        if alive:
            return
        self.dead = True
        self._want = 0
        self.sync()
        lost = list(self.held)
        self.lost.update(lost)
        self.held.clear()
        if self.stats is not None:
            self.stats.inc_value("crawlyx/lease/lost", len(lost))
        logger.warning(
            "This process stalled for %.0f s (past the %d s heartbeat) and was taken for "
            "dead: its %d leases are other processes' now, which emit their pages; it "
            "stops (run it again to rejoin the job)",
            stalled, self.HEARTBEAT_TTL, len(lost),
        )  # fmt: skip

    def still_mine(self, fp: str) -> bool:
        """Whether this process still holds the lease of ``fp``, so may emit its page. No
        round trip while its heartbeat is fresh: no other process can have taken a lease
        before the heartbeat expires. Past that, the heartbeat is renewed first (see
        :meth:`heartbeat`). With Redis unreachable, what is known."""
        if time.monotonic() - self._beat_at > self.STALL:
            try:
                self.heartbeat()
            except REDIS_DOWN as exc:
                outage(self.stats, "checking this process's leases", exc)
        return fp not in self.lost

    def retire(self) -> None:
        """This process stops: its leases become requeueable at once."""
        self.state.retire([self.owner])

    def retire_gone_neighbours(self) -> int:
        """Retire the owners whose process ran where this one runs (same host, same PID
        namespace) and is gone, killed outright: their leases need not wait out the
        heartbeat TTL. A PID in use again counts as alive, which only means waiting."""
        home = _home()
        dead = [owner for owner in self.state.owners() if gone(owner, home)]
        if dead:
            self.state.retire(dead)
        return len(dead)

    def requeue_dead(self) -> int:
        """The leases of processes taken for dead back on the queue; how many."""
        self.sync()
        dead = self.state.dead_owners()
        if not dead:
            return 0
        keys = lambda s: [s.visited, s.queue, s.leases]  # noqa: E731
        return sum(self._each_shard(self._requeue_dead, keys, dead))

    def own_leases(self) -> list[str]:
        self._quiet()
        mine = self.owner.encode() + b"|"
        return [
            fp.decode()
            for shard in self.shards
            for fp, value in self.redis.hscan_iter(shard.leases)
            if value.startswith(mine)
        ]


def owner_name() -> str:
    """A new owner's name for this process: where its PID names it, the PID and a random
    tag (read back by :func:`gone`)."""
    return f"{_home()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def gone(owner: str, home: str | None = None) -> bool:
    """The process ``owner`` names ran where this one runs (``home``) and is gone."""
    parts = owner.rsplit("-", 2)  # home, pid, tag
    if len(parts) != 3 or parts[0] != (home or _home()) or not parts[1].isdigit():
        return False  # elsewhere: only its heartbeat's expiry tells
    return not running(int(parts[1]))


def _home() -> str:
    """Where this process's PID names it: the host and its PID namespace."""
    try:
        namespace = os.readlink("/proc/self/ns/pid")  # "pid:[4026531836]"
    except OSError:
        namespace = ""
    return f"{socket.gethostname()}/{namespace}"
