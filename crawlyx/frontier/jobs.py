"""Jobs: every crawl is one, and its state outlives the process.

A crawl's state (the visited table, the queue, the leases, robots.txt, ...) lives in
Redis under ``crawlyx:{job}:``, so a crawl that stops (Ctrl-C, SIGTERM, ``max_pages``,
a kill) goes on where it stopped when run again with ``-a job=NAME``. A crawl started
without ``job`` is given a name: its host, its UTC start time and a short random tag (two
crawls of a site started in the same second stay apart). The name is logged when the
crawl starts, and again if it is paused.

A named job is checked before its crawl starts (:func:`check_rerun`, from the crawl
command): a job crawls one start URL, and a finished job has nothing left to crawl, so
running it again would only empty its output. Both are refused, with what the job is and
what to run instead. A paused or running job goes on; a finished one run with
``-a refresh=1`` starts afresh (:func:`restart`).

A job's keys expire ``CRAWLYX_JOB_TTL_DAYS`` (7) after its last process stops, when the
job is finished, or, whatever its state, when it is unnamed: each run makes them
persistent when it starts (nothing expires under a running crawl) and the last process
out sets the expiry (keys with an expiry of their own, heartbeats and robots.txt records,
keep it). A paused job its user named is kept until ``scrapy jobs --drop NAME``: it is
meant to be resumed. So a folder's embedded Redis does not grow with every crawl run
there, and a later start does not load them all. Whether a job is unnamed is fixed by
its first run: an unnamed job resumed by name still expires. A process killed outright
sets no expiry; the job's keys stay until it is resumed or dropped.

Each job has a record, ``crawlyx:{job}:job`` (a hash): the start URL, when it was
created and last run, whether it expires, the pages emitted (each counted as it is
marked done, in the same script: :mod:`crawlyx.frontier.shards`, so a run killed
outright or stopped at once counts what it wrote, and its next run what it wrote last)
and why its last run stopped. ``scrapy jobs`` lists the records with
the job's state, read from the frontier itself: *running* while a live process holds a
heartbeat, *paused* while anything is left to fetch (queued, parked, or leased by a
process that is gone), *finished* otherwise.
"""

from __future__ import annotations

import logging
import re
import secrets
from datetime import UTC, datetime
from urllib.parse import urlsplit

from scrapy import signals

from crawlyx.cli import program
from crawlyx.frontier.liveness import gone
from crawlyx.frontier.shards import RECORD
from crawlyx.frontier.state import JOBS, REDIS_DOWN, State, outage
from crawlyx.frontier.visited import VisitedTable
from crawlyx.log import SHOWN
from crawlyx.urls.normalize import normalize_url

logger = logging.getLogger(__name__)

DAY = 86400
START_FAILED = "start_failed"  # a run's last_stop when it could not fetch its start URL


def generated_name(start: str, now: datetime | None = None) -> str:
    """A readable, fresh job name for a crawl of ``start``: host-YYYYmmdd-HHMMSS-tag."""
    host = re.sub(r"[^A-Za-z0-9.-]+", "-", urlsplit(start).hostname or "")
    host = host.strip(".-")[:60].rstrip(".-") or "crawl"
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%d-%H%M%S")
    return f"{host}-{stamp}-{secrets.token_hex(2)}"


def ttl_seconds(settings) -> int:
    """``CRAWLYX_JOB_TTL_DAYS`` in seconds (0: jobs are kept until dropped)."""
    days = settings.getfloat("CRAWLYX_JOB_TTL_DAYS")
    if days < 0:
        raise ValueError(f"CRAWLYX_JOB_TTL_DAYS ({days:g}) must be 0 or more")
    return round(days * DAY)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class JobRun:
    """One run of the crawl's job: the job's record when it starts and stops, its keys'
    expiry, and the lines that name the job. Built with the spider, before the add-on: it
    reaches the job's state through the spider its signals hand it (``spider.parts``)."""

    def __init__(self, crawler, ttl: int, scope: str):
        self.crawler = crawler
        self.ttl = ttl
        self.scope = scope  # the root the start URL gives, before its redirects

    @classmethod
    def from_crawler(cls, crawler, job: str, scope: str):
        """Built with the spider of job ``job``, before Scrapy lists the crawl's
        components: the line naming the job and the pages it crawls comes first."""
        run = cls(crawler, ttl_seconds(crawler.settings), scope)
        logger.info(
            "crawlyx: job %s (resume with -a job=%s), scope %s", job, job, scope, extra=SHOWN
        )
        crawler.signals.connect(run.opened, signal=signals.spider_opened)
        crawler.signals.connect(run.closed, signal=signals.spider_closed)
        return run

    def anchored(self, root: str) -> None:
        """The start URL was answered: its redirects may have moved the crawl's scope."""
        if root != self.scope:
            logger.info("crawlyx: scope %s (the start URL redirects)", root, extra=SHOWN)

    def opened(self, spider):
        state = spider.parts.state
        record, now = state.key(RECORD), _now()
        pipe = state.client.pipeline(transaction=False)
        pipe.sadd(JOBS, state.job)
        pipe.hsetnx(record, "start", spider.args.start)
        pipe.hsetnx(record, "created", now)
        pipe.hsetnx(record, "expires", int(spider.args.job is None))
        pipe.hset(record, "last_run", now)
        pipe.hget(record, "expires")
        pipe.ttl(record)
        try:
            unnamed, ttl = pipe.execute()[-2:]
            if unnamed == b"1" or ttl >= 0:  # a finished job's keys may be expiring
                state.expire_all(None)  # nothing expires under a running crawl
            if unnamed == b"1":
                state.ttl = self.ttl  # set by the last process out (State.close)
        except REDIS_DOWN as exc:  # the crawl waits for Redis; the job is kept, unexpiring
            outage(self.crawler.stats, "recording the job", exc)

    def closed(self, spider, reason):
        try:
            state = spider.parts.state
            record = state.key(RECORD)
            # Its pages counted as they were done (crawlyx.frontier.shards).
            stop = last_stop(spider, reason)
            state.client.hset(record, mapping={"last_run": _now(), "last_stop": stop})
            if not state.ttl and sum(VisitedTable(state).size()) == 0:
                state.ttl = self.ttl  # finished: it expires too, once the last one is out
        except REDIS_DOWN as exc:
            outage(self.crawler.stats, "recording the job", exc)
        if reason == "shutdown":  # the first Ctrl-C or SIGTERM: what was in flight is done
            logger.info("crawlyx: paused; resume with -a job=%s", spider.job, extra=SHOWN)


# -- a named job run again --------------------------------------------------------------


def check_rerun(state: State, start: str, refresh: bool) -> None:
    """Before a crawl of ``start`` runs as ``state``'s job, named by its user: ValueError
    if the job crawls another start URL, or if it is finished (unless ``refresh``: a
    refresh run of a finished job starts it afresh)."""
    job = describe(state)
    if job["created"] is None:
        return  # a new job
    name = state.job
    if normalize_url(job["start"]) != normalize_url(start):
        raise ValueError(
            f"job {name} crawls {job['start']}, not {start}; use a new job name, "
            f"or {program()} jobs --drop {name}"
        )
    if job["state"] != "finished":
        return  # paused: it resumes; running: this process joins it
    if not refresh:
        raise ValueError(
            f"job {name} finished on {_utc(job['last_run'])} UTC with {job['pages']} pages; "
            f"use a new job name, -a refresh=1 for what changed since, "
            f"or {program()} jobs --drop {name}"
        )
    restart(state)


def restart(state: State) -> None:
    """A finished job starts afresh, as a job of its own would: every key of it is
    removed but its record (its start URL, when it was created, whether it expires, the
    pages its runs emitted)."""
    record = state.key(RECORD).encode()
    for keys in state.keys():
        state.unlink([key for key in keys if key != record])


# -- scrapy jobs ------------------------------------------------------------------------


def live_owners(state: State) -> list[str]:
    """The processes crawling the job now (a heartbeat not expired, not known dead)."""
    return [owner for owner in state.owners() if not gone(owner)]


def job_names(client) -> list[str]:
    """Every job with keys in Redis: the index of jobs, kept as their records are made.
    A job whose keys all expired leaves the index as it is found gone."""
    names = sorted(name.decode() for name in client.smembers(JOBS))
    pipe = client.pipeline(transaction=False)
    for name in names:
        pipe.exists(State(client, name).key(RECORD))
    alive = dict(zip(names, pipe.execute(), strict=True))
    gone_jobs = [name for name, exists in alive.items() if not exists]
    if gone_jobs:
        client.srem(JOBS, *gone_jobs)
    return [name for name, exists in alive.items() if exists]


def status(owners: list[str], left: int, last_stop: str | None) -> str:
    """A job's state as ``jobs`` shows it: *running* while a process crawls it, *failed*
    when its last run could not fetch its start URL (run it again once the site is up),
    *paused* while anything is left to fetch, *finished* otherwise."""
    if owners:
        return "running"
    if last_stop == START_FAILED:
        return "failed"
    return "paused" if left else "finished"


def last_stop(spider, reason: str) -> str:
    """Why a run stopped, as its job records it: Scrapy's reason, or :data:`START_FAILED`
    when the start URL failed (not when the user stopped the crawl while it waited)."""
    return START_FAILED if reason != "shutdown" and spider.start_failed() else reason


def outcome(state: State, owner: str, stop: str) -> str:
    """The job's state as process ``owner``, stopping for ``stop`` (:func:`last_stop`),
    leaves it: what the crawl's last line says, and ``jobs`` then shows."""
    others = [other for other in live_owners(state) if other != owner]
    return status(others, sum(VisitedTable(state).size()), stop)


def describe(state: State) -> dict:
    """What ``scrapy jobs`` shows of one job."""
    table = VisitedTable(state)  # its keys' names; nothing is sent
    record_key = state.key(RECORD)
    pipe = state.client.pipeline(transaction=False)
    pipe.hgetall(record_key)
    pipe.ttl(record_key)
    raw, ttl = pipe.execute()
    queued, parked, leased = table.size()
    record = {k.decode(): v.decode(errors="replace") for k, v in raw.items()}
    owners = live_owners(state)
    return {
        "job": state.job,
        "state": status(owners, queued + parked + leased, record.get("last_stop")),
        "processes": len(owners),
        "start": record.get("start"),
        "pages": table.pages(),
        "queued": queued + parked,
        "leased": leased,
        "created": record.get("created"),
        "last_run": record.get("last_run"),
        "last_stop": record.get("last_stop"),
        "expires": record.get("expires") == "1",
        "expires_in": ttl if ttl >= 0 else None,
    }


def list_jobs(client) -> list[dict]:
    """Every job, the most recently run first."""
    jobs = [describe(State(client, name)) for name in job_names(client)]
    return sorted(jobs, key=lambda job: job["last_run"] or "", reverse=True)


def _utc(stamp: str | None) -> str:
    """A record's time (``2026-11-30T03:15:09Z``) as shown: ``2026-11-30 03:15:09``."""
    return (stamp or "-").replace("T", " ").rstrip("Z")


def _expiry(job: dict) -> str:
    seconds = job["expires_in"]
    if seconds is None:
        if job["state"] == "running":
            return "after stop" if job["expires"] else "if finished"
        return "never"
    days, rest = divmod(seconds, DAY)
    hours, rest = divmod(rest, 3600)
    if days:
        return f"{days}d {hours}h"
    return f"{hours}h {rest // 60}m" if hours else f"{rest // 60}m {rest % 60}s"


def format_table(jobs: list[dict], ttl: int) -> str:
    """The jobs' table, and how long a job is kept (``ttl`` seconds, 0: until dropped)."""
    if ttl:
        kept = f"{ttl / DAY:g} days" if ttl >= DAY else f"{ttl} s"
        kept = f"finished and unnamed jobs are kept {kept} after their last run"
    else:
        kept = "jobs are kept until dropped"
    kept += f" (CRAWLYX_JOB_TTL_DAYS); {program()} jobs --drop NAME removes one now"
    if not jobs:
        return f"no jobs\n{kept}"
    rows = [("job", "state", "pages", "queued", "leased", "last run (UTC)", "expires", "start")]
    for job in jobs:
        rows.append(
            (job["job"], job["state"], str(job["pages"]), str(job["queued"]),
             str(job["leased"]), _utc(job["last_run"]), _expiry(job), job["start"] or "-")
        )  # fmt: skip
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for row in rows:
        cells = [
            cell.rjust(width) if 2 <= i <= 4 else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=False))
        ]
        lines.append("  ".join([*cells, row[-1]]))
    return "\n".join([*lines, kept])
