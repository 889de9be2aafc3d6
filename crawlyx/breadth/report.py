"""Crawl breadth per UTC day: each bot's distinct URLs, the cross-bot union, coverage.

:class:`BreadthReport` is fed rows one at a time (:meth:`add`) and merges each into
one accumulator per (day, bot), so what stays in memory is one sketch per (day, bot),
never the rows read. :meth:`finish` computes the estimates: per bot, and per day the
union of the day's bots (a union, not a sum: a URL fetched by two bots counts once).

crawlyx's own fetches (rows its crawls marked, or, in rows from before they were, the
bot named CRAWLYX_BOT_NAME) are no visit to the site: they are shown apart (``own``),
and left out of the bots and their union. A crawl fetches robots.txt, sitemaps,
redirects and broken links besides the pages, so its own coverage passes 100 %.

Coverage is distinct URLs ÷ the site's *corpus*: the distinct pages crawlyx itself has
emitted for the site (the ``corpus`` row, fed by every crawl of the site, kept while
crawls come at least once per retention period). It is a ratio of two estimates and
can pass 100 % when a bot fetches URLs that are not pages crawlyx found (assets, 404s,
URLs outside the crawl's links). ``None`` when no crawl has recorded a corpus.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import date, timedelta

from crawlyx.breadth.recorder import bot_key
from crawlyx.breadth.sketch import Sketch, union
from crawlyx.breadth.store import Row, RowScan, utc_day
from crawlyx.frontier.state import State

MAX_DAYS = 31


@dataclass
class _Entry:
    sketch: Sketch
    shards: int = 0
    flushes: int = 0


@dataclass
class BreadthReport:
    days: list[str]  # newest first
    site: str | None = None
    bot: str | None = None
    own: str | None = None  # the stored name of crawlyx's own bot, for unmarked rows
    _by_day: dict[str, dict[str, _Entry]] = field(default_factory=dict)
    _own_by_day: dict[str, dict[str, _Entry]] = field(default_factory=dict)
    _corpus: Sketch | None = None
    _sites: set[str] = field(default_factory=set)

    def add(self, row: Row) -> None:
        """Merge one row into its (day, bot) accumulator; the row can then be dropped."""
        self._sites.add(row.site)
        if row.day is None:
            if self._corpus is None:
                self._corpus = row.sketch
            else:
                self._corpus.merge(row.sketch)
            return
        if row.day not in self.days:
            return
        own = row.own or (self.own is not None and row.bot == self.own)
        bots = (self._own_by_day if own else self._by_day).setdefault(row.day, {})
        entry = bots.get(row.bot)
        if entry is None:
            entry = bots[row.bot] = _Entry(row.sketch)  # the first row is the accumulator
        else:
            entry.sketch.merge(row.sketch)
        entry.shards += row.shards
        entry.flushes += row.flushes

    def finish(self, rows_read: int, truncated: bool) -> dict:
        corpus = self._corpus.count() if self._corpus is not None else None

        def coverage(distinct: int) -> float | None:
            return round(100.0 * distinct / corpus, 2) if corpus else None

        def rows(bots: dict[str, _Entry]) -> list[dict]:
            out = []
            for bot, entry in bots.items():
                distinct = entry.sketch.count()
                out.append(
                    {
                        "bot": bot,
                        "distinct_urls": distinct,
                        "shards": entry.shards,
                        "flushes": entry.flushes,
                        "coverage_pct": coverage(distinct),
                    }
                )
            return sorted(out, key=lambda row: (-row["distinct_urls"], row["bot"]))

        breadth = []
        for day in self.days:
            bots = self._by_day.get(day, {})
            total = union(entry.sketch for entry in bots.values()).count() if bots else 0
            breadth.append(
                {
                    "day": day,
                    "total": {"distinct_urls": total, "coverage_pct": coverage(total)},
                    "bots": rows(bots),
                    "own": rows(self._own_by_day.get(day, {})),
                }
            )
        return {
            "site": self.site,
            "sites": sorted(self._sites),
            "bot": self.bot,
            "days": len(self.days),
            "since": self.days[-1],
            "until": self.days[0],
            "corpus_pages": corpus,
            "rows_read": rows_read,
            "truncated": truncated,
            "breadth": breadth,
        }


def window(days: int, today: str | None = None) -> list[str]:
    """The ``days`` UTC days ending today, newest first."""
    if not 1 <= days <= MAX_DAYS:
        raise ValueError(f"days must be from 1 to {MAX_DAYS}")
    end = date.fromisoformat(today or utc_day(time.time()))
    return [(end - timedelta(days=n)).isoformat() for n in range(days)]


def read_breadth(
    state: State,
    *,
    site: str | None = None,
    days: int = 7,
    bot: str | None = None,
    cap: int = 4096,
    today: str | None = None,
    own: str | None = None,
) -> dict:
    """Stream the rows of the window and return the report (see :meth:`finish`);
    ``own``: CRAWLYX_BOT_NAME, crawlyx's own bot in rows its crawls did not mark."""
    own = bot_key(own) if own else None
    report = BreadthReport(window(days, today), site=site, bot=bot, own=own)
    scan = RowScan(state, site=site, days=set(report.days), bot=bot, cap=cap)
    for row in scan:
        report.add(row)
    return report.finish(scan.rows_read, scan.truncated)


def format_table(report: dict) -> str:
    """The report as a human-readable table."""
    corpus = report["corpus_pages"]
    where = report["site"] or "all sites"
    lines = [
        f"crawl breadth for {where}, {report['since']} .. {report['until']} (UTC); "
        + (
            f"corpus {corpus:,} pages (distinct pages crawlyx has emitted)"
            if corpus
            else "no corpus yet (no crawl of the site recorded): coverage unknown"
        )
    ]
    lines.append(f"{'day':<10}  {'bot':<24} {'distinct URLs':>13} {'shards':>7} {'coverage':>9}")

    def pct(value):
        return "-" if value is None else f"{value:.1f}%"

    for day in report["breadth"]:
        own = day.get("own", [])
        if not day["bots"] and not own:
            lines.append(f"{day['day']:<10}  (no data)")
            continue
        label = day["day"]
        if not day["bots"]:
            lines.append(f"{label:<10}  (no bot visits recorded)")
            label = ""
        for bot in day["bots"]:
            lines.append(
                f"{label:<10}  {bot['bot']:<24} {bot['distinct_urls']:>13,} "
                f"{bot['shards']:>7} {pct(bot['coverage_pct']):>9}"
            )
            label = ""
        if day["bots"]:
            total = day["total"]
            lines.append(
                f"{'':<10}  {'all bots (union)':<24} {total['distinct_urls']:>13,} "
                f"{'':>7} {pct(total['coverage_pct']):>9}"
            )
        for bot in own:
            name = f"{bot['bot']} (own crawls)"
            lines.append(
                f"{'':<10}  {name:<24} {bot['distinct_urls']:>13,} "
                f"{bot['shards']:>7} {pct(bot['coverage_pct']):>9}"
            )
    if report["truncated"]:
        lines.append(
            f"truncated: stopped after {report['rows_read']} rows; the figures above are "
            "incomplete (raise CRAWLYX_BREADTH_READ_CAP or narrow --days/--bot)"
        )
    return "\n".join(lines)
