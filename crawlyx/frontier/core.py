"""The crawl core: a crawl process's per-page Redis work, batched, off the reactor thread.

Every page costs the crawl some Redis work: the claims of the links it found, its
lease's release, its records in the link graph, its row in the page registry. Sent one
command at a time from the reactor thread, each is a round trip the reactor waits for
(about seven per page, half the crawl process's time). Here the components that have
such work (*parties*: the visited table, the graph recorder, the page registry) keep it
pending, and the core sends what they all have in one pipelined round trip, from one
I/O thread, while the reactor goes on. One batch is in flight at a time. Work nobody
waits for (releases, records, rows) lingers :attr:`CrawlCore.LINGER` for more to join
it; work the engine waits for (requests to fetch) goes at once, or as soon as the batch
in flight is back.

Order is what makes this safe. Within a batch the parties' commands run in the order
the parties were registered (the graph's records and the registry's rows before the
visited table's claims and releases), and batches reach Redis in the order they were
taken, so a page's lease is never released before the claims of the links it found or
its records: a process killed outright loses only work whose page is still leased, and
that page is fetched again. A component that must talk to Redis directly (rare paths:
a redirect, a lease given back, the end-of-crawl checks) calls :meth:`CrawlCore.wait`
first, so what it sends cannot overtake a batch already taken.

Redis unreachable: each party gets the error and keeps its work for the next batch,
which is tried again after :attr:`CrawlCore.RETRY_DELAY`. Stats: ``crawlyx/redis/batches``
(round trips the core made).
"""

from __future__ import annotations

import asyncio
import logging
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol

from redis.exceptions import NoScriptError

from crawlyx.frontier.outage import REDIS_DOWN, outage

logger = logging.getLogger(__name__)


class Party(Protocol):
    def take(self):
        """The party's pending work, handed over: None when there is none, or
        ``(commands, handle)``: ``commands(pipe)`` queues its commands on a pipeline (it
        runs on the I/O thread; what it needs must be copied out of the party here) and
        returns how many it queued; ``handle(results)`` gets their results, in order, on
        the reactor thread (a Redis error in place of a command that failed), or the
        exception that failed the whole batch."""


class CrawlCore:
    RETRY_DELAY = 1.0  # seconds before a batch Redis refused is tried again
    # Seconds work waits for more to join its batch, unless it waits for the answer: a
    # page's release, records and row are in no hurry, and a batch every few pages costs
    # Redis and the crawl far less than one every reactor turn.
    LINGER = 0.01

    def __init__(self, client, stats=None):
        self.client = client
        self.stats = stats
        self.parties: list[Party] = []
        self._last = 0  # parties registered last
        self._loaded: set = set()  # scripts the server has (used on the I/O thread only)
        self._executor: ThreadPoolExecutor | None = None
        self._inflight: tuple[Future, list] | None = None
        self._scheduled = None  # the reactor's call to send the next batch
        self._notify: list = []  # called once after the next batch is handled
        self._urgent = False  # work came that waits for the batch in flight to be back

    def register(self, party: Party, last: bool = False) -> None:
        """Add a party; its commands run after those of the parties before it, and
        before every ``last`` one's (the visited table's: its releases go last)."""
        if last:
            self.parties.append(party)
            self._last += 1
        else:
            self.parties.insert(len(self.parties) - self._last, party)

    @property
    def busy(self) -> bool:
        """A batch is in flight or due: the crawl's state in Redis is not final."""
        return self._inflight is not None or self._scheduled is not None

    def notify(self, callback) -> None:
        """Call ``callback`` once the next batch is answered and handled."""
        if callback not in self._notify:
            self._notify.append(callback)

    @property
    def live(self) -> bool:
        """In a running reactor: batches are sent from the I/O thread. Outside one (a
        tool, a test driving components by hand), :meth:`wake` sends at once and waits."""
        return _loop() is not None

    def wake(self, now: bool = False) -> None:
        """A party has work: send it within :attr:`LINGER`, or at once (``now``: the
        engine waits for requests to fetch, a written item for its page's release), or
        as soon as the batch in flight is back. See :attr:`live`."""
        loop = _loop()
        if loop is None:
            self.drain()
        elif self._inflight is not None:
            self._urgent = self._urgent or now
        elif now:
            self._unschedule()
            self._send()
        elif self._scheduled is None:
            self._scheduled = loop.call_later(self.LINGER, self._send)

    def _send(self) -> None:
        self._scheduled = None
        if self._inflight is not None:
            return
        taken = [work for work in (party.take() for party in self.parties) if work]
        if not taken:
            self._settled()
            return
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="crawlyx-redis")
        future = self._executor.submit(self._execute, [commands for commands, _ in taken])
        self._inflight = (future, [handle for _, handle in taken])
        loop = _loop()

        def answered(f: Future) -> None:
            if loop is None:
                return  # not live: wait() handles it
            try:
                loop.call_soon_threadsafe(self._done, f)
            except RuntimeError:  # the loop is closed: wait() handles it, if anyone
                pass

        future.add_done_callback(answered)

    def script(self, pipe, script, keys: list, args: list) -> None:
        """Queue a registered Lua ``script`` on ``pipe`` (in a party's ``commands``).
        By its hash alone, once loaded: redis-py would ask whether the script is loaded
        first, a round trip of its own for every batch. A server that lost its scripts
        (restarted) answers NoScriptError: they are loaded again with the next batch,
        and the party sends its work again (:func:`retryable`)."""
        queue_script(self.client, pipe, script, keys, args, self._loaded)

    def _execute(self, commands) -> list:
        """On the I/O thread: every party's commands in one pipeline, one round trip."""
        pipe = self.client.pipeline(transaction=False)
        counts = [queue(pipe) for queue in commands]
        results = pipe.execute(raise_on_error=False)
        if any(isinstance(result, NoScriptError) for result in results):
            self._loaded.clear()  # the server restarted: loaded again with the next batch
        out, at = [], 0
        for n in counts:
            out.append(results[at : at + n])
            at += n
        return out

    def _done(self, future: Future) -> None:
        if self._inflight is None or self._inflight[0] is not future:
            return  # handled already, by wait()
        handles = self._inflight[1]
        self._inflight = None
        if self.stats is not None:
            self.stats.inc_value("crawlyx/redis/batches")
        try:
            results = future.result()
        except REDIS_DOWN as exc:
            outage(self.stats, "sending the crawl's batch", exc)
            _hand(handles, [exc] * len(handles))
            loop = _loop()
            if loop is not None:  # not live: sent again by the next call that needs it
                self._scheduled = loop.call_later(self.RETRY_DELAY, self._send)
            return
        except Exception as exc:  # a fault in a party's commands: theirs to report
            logger.error("Redis batch failed: %s: %s", type(exc).__name__, exc)
            _hand(handles, [exc] * len(handles))
        else:
            _hand(handles, results)
        urgent, self._urgent = self._urgent, False
        self.wake(now=urgent)

    def _settled(self) -> None:
        """Nothing left to send: whoever waited for that is told."""
        callbacks, self._notify = self._notify, []
        for callback in callbacks:
            callback()

    def wait(self) -> None:
        """Block until no batch is in flight: the one in flight is answered and handled,
        and so is any its answer sent at once."""
        while self._inflight is not None:
            future = self._inflight[0]
            futures.wait([future])
            self._done(future)

    def drain(self) -> None:
        """Send everything pending now and wait for it (the crawl is closing). What
        Redis refuses stays pending: retrying is for a crawl still running."""
        self.wait()
        self._unschedule()
        self._send()
        self.wait()
        self._unschedule()

    def _unschedule(self) -> None:
        if self._scheduled is not None:
            self._scheduled.cancel()
            self._scheduled = None

    def close(self) -> None:
        self.drain()
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None


def queue_script(client, pipe, script, keys: list, args: list, loaded: set) -> None:
    """Queue the registered Lua ``script`` on ``pipe`` by its hash, loaded first (on every
    node of a cluster) unless it is in ``loaded``, the scripts loaded so far. Queued as a
    command of its own: redis-py's cluster pipeline refuses its ``evalsha`` method."""
    if script not in loaded:
        script.sha = client.script_load(script.script)
        loaded.add(script)
    pipe.execute_command("EVALSHA", script.sha, len(keys), *keys, *args)


def run_scripts(client, calls, loaded: set) -> list:
    """Registered Lua scripts, ``calls`` of (script, keys, args), in one pipeline on
    ``client`` (a call that needs its answers now, outside the core's batches). By hash
    once loaded (``loaded``: the scripts loaded so far); a server that lost them answers
    NoScriptError, and only those calls are sent again, once loaded. Raises the first
    error of a call."""
    results: list = [None] * len(calls)
    todo = list(range(len(calls)))
    for _ in range(2):
        pipe = client.pipeline(transaction=False)
        for i in todo:
            queue_script(client, pipe, *calls[i], loaded)
        answers = pipe.execute(raise_on_error=False)
        for i, answer in zip(todo, answers, strict=True):
            results[i] = answer
        todo = [i for i in todo if isinstance(results[i], NoScriptError)]
        if not todo:
            break
        loaded.clear()  # the server restarted
    for result in results:
        if isinstance(result, Exception):
            raise result
    return results


def retryable(result) -> bool:
    """A party's result that means "send it again with the next batch"."""
    return isinstance(result, (*REDIS_DOWN, NoScriptError))


def _hand(handles, results) -> None:
    """Each party's results to its handler; one that fails does not stop the others."""
    for handle, result in zip(handles, results, strict=True):
        try:
            handle(result)
        except Exception:
            logger.exception("Handling a Redis batch's results failed")


def _loop() -> asyncio.AbstractEventLoop | None:
    """The running reactor's event loop, if any."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
