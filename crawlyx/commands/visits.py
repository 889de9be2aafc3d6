"""``scrapy visits``: record which URLs bots fetched, per UTC day, from access logs.

    scrapy visits --site https://docs.example.com access.log access.log.1
    tail -F /var/log/nginx/access.log | scrapy visits --site https://docs.example.com -

Each line's user agent names the bot (crawlyx.breadth.bots; people are skipped unless
``--humans``), its request target is normalized like the crawl's links against
``--site``, and the URL is recorded on the UTC day of the line's own timestamp (not
the day it is read). GET and HEAD requests count, whatever their status. The sketches
are merged into Redis (the crawl's, or the embedded server) every flush interval while
reading, and at the end. Bad lines are counted and reported, never fatal. One summary
line on stdout. crawlyx's own requests (its user agent) are skipped: its crawls record
what they fetch themselves, apart from the bots that visit the site.

With CRAWLYX_DEMAND_ENABLED the same pass feeds the demand ring (crawlyx.demand) at the
line's own time: named bots only (not people, not unnamed automation, not crawlyx),
visits older than the ring skipped.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections import Counter

import redis
from scrapy.commands import ScrapyCommand

from crawlyx.breadth.accesslog import BadLine, LogFormat, follow
from crawlyx.breadth.bots import OWN, BotTable
from crawlyx.breadth.recorder import Recorder
from crawlyx.breadth.store import DAY, BreadthStore, connect, utc_day
from crawlyx.commands import failer
from crawlyx.demand import DemandTracker, RingConfig
from crawlyx.demand.store import demand_state
from crawlyx.urls.normalize import normalize_url, url_origin

METHODS = frozenset({"GET", "HEAD"})
SIZE_FLUSH = 256  # sketches (4 MiB) in memory before flushing early
# Demand slices in memory before flushing early: by default 293 KiB of bits each, plus
# up to 16,384 pending digests (~1.5 MiB) each while a log goes back and forth in time.
DEMAND_SIZE_FLUSH = 24
CHECK_EVERY = 256  # lines between looks at the memory held and the days a line may have


fail = failer("visits")


class _Stop(Exception):
    """SIGTERM: stop reading, flush, summarize."""


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings = {"LOG_LEVEL": "WARNING"}

    def syntax(self) -> str:
        return "--site ORIGIN [options] FILE... (- reads stdin)"

    def short_desc(self) -> str:
        return "Record the distinct URLs bots fetched per UTC day, from access logs"

    def add_options(self, parser):
        super().add_options(parser)
        parser.add_argument(
            "--site", metavar="ORIGIN", help="the origin the log's paths belong to (required)"
        )
        parser.add_argument(
            "--format",
            metavar="REGEX",
            dest="log_format",
            default=None,
            help="a regex matching a whole line, with named groups time, agent and "
            "request (or path); default: the combined log format",
        )
        parser.add_argument(
            "--humans", action="store_true", help="also count people's browsers, as the bot 'human'"
        )
        parser.add_argument(
            "--flush-interval",
            metavar="SECONDS",
            type=float,
            default=None,
            help="seconds between flushes while reading (default CRAWLYX_BREADTH_FLUSH_INTERVAL)",
        )

    def run(self, args, opts):
        settings = self.settings
        if not opts.site:
            fail(
                "--site is required: the origin the log's paths belong to, "
                "e.g. --site https://docs.example.com"
            )
        try:
            site = url_origin(opts.site)
        except ValueError as exc:
            fail(f"bad --site: {exc}")
        if not args:
            fail("no log given: name files, or - for stdin")
        try:
            log_format = LogFormat(opts.log_format)
            bots = BotTable.from_settings(settings, humans=opts.humans)
        except ValueError as exc:
            fail(str(exc))
        ring = None
        interval = opts.flush_interval or settings.getfloat("CRAWLYX_BREADTH_FLUSH_INTERVAL")
        if settings.getbool("CRAWLYX_DEMAND_ENABLED"):
            try:
                ring = RingConfig.from_settings(settings)
            except ValueError as exc:
                fail(str(exc))
            if not opts.flush_interval:
                interval = min(interval, ring.flush_interval)
        if interval <= 0:
            fail("the flush interval must be positive")
        try:
            state = connect(settings)
        except RuntimeError as exc:
            fail(str(exc), code=1)
        bot = settings.get("CRAWLYX_BOT_NAME") or "crawlyx"
        demand = DemandTracker(demand_state(state.client), ring, bot) if ring is not None else None
        store = BreadthStore(state, settings.getint("CRAWLYX_BREADTH_RETENTION_DAYS"))
        reader = _Reader(
            site,
            log_format,
            bots,
            Recorder(site, settings.getint("CRAWLYX_BREADTH_MAX_BOTS")),
            store,
            interval,
            demand,
        )
        previous = signal.signal(signal.SIGTERM, _raise_stop)
        try:
            for name in args:
                reader.read(name)
        except (KeyboardInterrupt, _Stop):
            reader.counts["interrupted"] = 1
        finally:
            signal.signal(signal.SIGTERM, previous)
            saved = reader.flush()
            state.close()
        print(reader.summary())
        if not saved or reader.unreadable:
            self.exitcode = 1


def _raise_stop(signum, frame):
    raise _Stop


class _Reader:
    def __init__(self, site, log_format, bots, recorder, store, interval, demand=None):
        self.site, self.base = site, site + "/"
        self.format, self.bots, self.recorder, self.store = log_format, bots, recorder, store
        self.demand: DemandTracker | None = demand
        self.demand_horizon = 0.0  # visits before this have left the demand ring
        self.interval = interval
        self.counts: Counter[str] = Counter()
        self.first_bad: str | None = None
        self.unreadable: list[str] = []
        self.days: set[str] = set()
        self.bot_names: set[str] = set()
        self.flush_at = time.monotonic() + interval  # when the next flush is due
        self.flush_error: str | None = None
        self.oldest = self.newest = ""
        self._refresh_window()

    def _refresh_window(self) -> None:
        """The UTC days a line may have: from the first still within retention to
        tomorrow (a line further ahead has a broken clock; its rows would outlive
        retention)."""
        now = time.time()
        self.oldest = utc_day(now - self.store.retention_days * DAY)
        self.newest = utc_day(now + DAY)
        if self.demand is not None:
            self.demand_horizon = now - self.demand.config.span

    def read(self, name: str) -> None:
        if name == "-":
            self._read_fd(0, "stdin")
            return
        try:
            fd = os.open(name, os.O_RDONLY)
        except OSError as exc:
            print(f"crawlyx: visits: cannot read {name}: {exc.strerror}", file=sys.stderr)
            self.unreadable.append(name)
            return
        try:
            self._read_fd(fd, name)
        finally:
            os.close(fd)

    def _read_fd(self, fd: int, source: str) -> None:
        counts = self.counts
        number = 0
        # Flushes go by the clock, whether lines keep coming or not: every line looks at
        # it (a monotonic read), and quiet input wakes the loop at least every quarter
        # interval (or second), so a flush is at most that late.
        for raw in follow(fd, timeout=min(self.interval / 4, 1.0)):
            if raw is None:  # quiet for a while
                self.maybe_flush()
                continue
            number += 1
            self.line(raw, source, number)
            if counts["lines"] % CHECK_EVERY == 0 or time.monotonic() >= self.flush_at:
                self.maybe_flush()

    def line(self, raw: bytes, source: str, number: int) -> None:
        counts = self.counts
        text = raw.decode("utf-8", "replace").rstrip("\r")
        if not text.strip():
            return
        counts["lines"] += 1
        try:
            visit = self.format.parse_line(text)
            if visit.method not in METHODS:
                counts["other_methods"] += 1
                return
            bot = self.bots.classify(visit.agent)
            if bot is None:
                counts["humans"] += 1
                return
            if bot == OWN:  # crawlyx's crawls record their own fetches, apart
                counts["own"] += 1
                return
            try:
                url = normalize_url(visit.target, self.base)
            except ValueError as exc:
                raise BadLine(str(exc)) from None
        except BadLine as exc:
            counts["bad"] += 1
            if self.first_bad is None:
                self.first_bad = f"{source}:{number}: {exc}"
            return
        if not url.startswith(self.base):
            counts["off_site"] += 1
        elif visit.day < self.oldest:
            counts["too_old"] += 1
        elif visit.day > self.newest:
            counts["future"] += 1
        else:
            self.recorder.record(bot, url, visit.day)
            counts["recorded"] += 1
            self.days.add(visit.day)
            self.bot_names.add(bot)
            if self.demand is not None and visit.time >= self.demand_horizon:
                counts["demand"] += self.demand.record(self.site, url, bot, visit.time)

    def maybe_flush(self) -> None:
        self._refresh_window()
        due = time.monotonic() >= self.flush_at
        full = self.recorder.size() >= SIZE_FLUSH or (
            self.demand is not None and self.demand.dirty() >= DEMAND_SIZE_FLUSH
        )
        if due or full:
            self.flush()

    def flush(self) -> bool:
        self.flush_at = time.monotonic() + self.interval
        try:
            result = self.store.flush(self.recorder)
            self.counts["merged"] += result.merged
            self.counts["too_old"] += result.expired
            if self.demand is not None:
                self.counts["demand_merged"] += self.demand.flush()
        except redis.RedisError as exc:
            self.flush_error = str(exc)
            print(f"crawlyx: visits: flush failed, kept for the next one: {exc}", file=sys.stderr)
            return False
        self.flush_error = None
        return True

    def summary(self) -> str:
        c = self.counts
        bad = f"{c['bad']} bad lines" + (f" (first: {self.first_bad})" if self.first_bad else "")
        parts = [
            f"{c['lines']} lines",
            f"{c['recorded']} bot requests recorded "
            f"({len(self.bot_names)} bots, {len(self.days)} days)",
            f"{c['humans']} human skipped",
            bad,
            f"{c['off_site']} off-site",
            f"{c['other_methods']} other methods",
            f"{c['too_old']} older than retention",
        ]
        if c["future"]:
            parts.append(f"{c['future']} dated in the future")
        if c["own"]:
            parts.append(f"{c['own']} of crawlyx's own skipped")
        if self.demand is not None:
            parts.append(f"{c['demand']} demand visits ({c['demand_merged']} rows merged)")
        if self.unreadable:
            parts.append(f"{len(self.unreadable)} files unreadable")
        saved = f"{c['merged']} rows merged into Redis"
        if self.flush_error is not None:
            saved += f", NOT SAVED: {self.recorder.dirty_count()} sketches"
            if self.demand is not None:
                saved += f" and {self.demand.dirty()} demand slices"
            saved += f" ({self.flush_error})"
        if c["interrupted"]:
            saved += " (interrupted)"
        return f"crawlyx: visits {self.site}: " + ", ".join(parts) + "; " + saved
