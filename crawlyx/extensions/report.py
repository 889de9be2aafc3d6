"""``-a report=PATH``: a JSON report of the crawl, written when it ends.

It holds what an operator asks of a finished crawl: how many pages and how fast, how
many fetches succeeded and how long they took, the errors by class, whether the frontier
was draining, why the crawl ended, and the service-level objectives, each with its
value, its target and whether it was met. A value that cannot be computed (no fetch,
robots.txt not obeyed) is null, and its objective is not met.

Definitions (also in docs/monitoring.md):

* success rate: pages emitted / (pages emitted + URLs that failed to fetch, i.e. were
  recorded under a fetch error class: ``FETCH_FAILURES``). URLs refused by policy
  (robots.txt, scope, traps, opt-out) were never attempted and count in neither; nor
  do sitemaps, which are no pages (a missing one is ``crawlyx/sitemap/missing``).
* latency: of every fetch that got a response, from the fixed-bucket histogram of
  crawlyx/extensions/telemetry.py; a percentile is interpolated inside its bucket.
* drain rate: over the last ``DRAIN_WINDOW`` seconds (or the whole crawl if shorter),
  requests this process took from the frontier per request it added to it. Below 1 the
  frontier grows; null when nothing was added.
* robots compliance: the share of fetches the robots.txt rules allowed, checked at the
  downloader (crawlyx/extensions/telemetry.py).
* cost: what the crawl used (CPU seconds by component and fetch mode, bytes received
  and written) priced by ``CRAWLYX_COST_*`` (crawlyx/cost/model.py), and per page
  emitted; its objective is ``CRAWLYX_COST_TARGET_PER_URL``.
* compliance: Crawl-delay violations and the opt-out signals honoured
  (crawlyx/extensions/compliance.py), and the age of each origin's robots.txt rules.
* workers and resources: the page workers' reads, their duration and how busy the pool
  was; the memory of the crawl's processes at the end (crawlyx/extensions/usage.py).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections import deque
from datetime import UTC, datetime

from scrapy import signals
from scrapy.exceptions import NotConfigured
from twisted.internet import task

from crawlyx.cost.model import Prices, breakdown
from crawlyx.errors import FETCH_FAILURES, error_counts
from crawlyx.extensions.compliance import compliance
from crawlyx.extensions.telemetry import fetch_tally
from crawlyx.extensions.usage import usage_meter
from crawlyx.middlewares import installed
from crawlyx.middlewares.robots import RobotsMiddleware
from crawlyx.parts import shared_parts

logger = logging.getLogger(__name__)

# The objectives (from the crawl-monitoring SLO table): name -> (comparison, target).
SLOS = {
    "fetch_success_rate": (">=", 0.95),
    "fetch_latency_p95_seconds": ("<=", 3.0),
    "robots_compliance": ("==", 1.0),
}

DRAIN_WINDOW = 300.0  # seconds
DRAIN_SAMPLE = 10.0  # seconds between samples of the frontier counters

# Why a crawl ends, by close reason (Scrapy's, or crawlyx's own: max_pages).
ENDINGS = {
    "finished": "nothing left: the frontier is empty and no URL is leased",
    "max_pages": "max_pages reached; what is still queued stays for a resumed job",
    "shutdown": "stopped by a signal (Ctrl-C, SIGTERM); the same job resumes it",
    "cancelled": "cancelled (by scrapyd or a spider callback)",
}


def _met(comparison: str, value, target: float) -> bool:
    if value is None:
        return False
    if comparison == ">=":
        return value >= target
    if comparison == "<=":
        return value <= target
    return value == target


def _ratio(part, whole) -> float | None:
    return round(part / whole, 6) if whole else None


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)


class Report:
    def __init__(self, crawler, parts, path: str):
        self.crawler = crawler
        self.stats = crawler.stats
        self.path = path
        self.tally = fetch_tally(crawler)  # now: it counts from the first fetch
        # Before this report's own handlers: they close first, with their last samples.
        self.usage = usage_meter(crawler, parts)
        self.audits = compliance(crawler, parts)
        self.prices = Prices.from_settings(crawler.settings)
        self.cost_target = crawler.settings.getfloat("CRAWLYX_COST_TARGET_PER_URL")
        self.started = time.monotonic()
        self.started_at = datetime.now(UTC)
        # (monotonic time, requests taken from the frontier, requests added to it)
        self.samples: deque = deque(maxlen=int(DRAIN_WINDOW / DRAIN_SAMPLE) + 1)
        self._task: task.LoopingCall | None = None
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler):
        try:
            spider = crawler.spider
        except RuntimeError:
            raise NotConfigured from None
        path = getattr(getattr(spider, "args", None), "report", None)
        if not path:
            raise NotConfigured
        return cls(crawler, shared_parts(crawler), path)

    def spider_opened(self, spider):
        self.started = time.monotonic()
        self.started_at = datetime.now(UTC)
        self._task = task.LoopingCall(self.sample)
        self._task.start(DRAIN_SAMPLE, now=True)

    def sample(self) -> None:
        self.samples.append(
            (
                time.monotonic(),
                self.stats.get_value("crawlyx/frontier/dequeued", 0),
                self.stats.get_value("crawlyx/frontier/enqueued", 0),
            )
        )

    def spider_closed(self, spider, reason):
        if self._task is not None and self._task.running:
            self._task.stop()
        self.sample()
        self.usage.close()
        self.audits.delay.close()
        report = self.build(reason, getattr(spider, "job", None))
        partial = f"{self.path}.partial"
        with open(partial, "w", encoding="utf-8") as out:
            json.dump(report, out, indent=2, ensure_ascii=False)
            out.write("\n")
        os.replace(partial, self.path)
        logger.info("crawlyx: report written to %s", self.path)

    def build(self, reason: str, job: str | None) -> dict:
        snap = self.tally.snapshot()
        wall = time.monotonic() - self.started
        pages = self.stats.get_value("item_scraped_count", 0)
        errors = error_counts(self.stats)
        failed = sum(errors.get(name, 0) for name in FETCH_FAILURES)
        latency = {
            f"p{round(q * 100)}": _round(snap.latency.quantile(q)) for q in (0.5, 0.95, 0.99)
        }
        robots = snap.robots_checked - snap.robots_violations
        cost = breakdown(self.usage.usage(), self.prices)
        cost["target_per_url"] = self.cost_target
        values = {
            "fetch_success_rate": _ratio(pages, pages + failed),
            "fetch_latency_p95_seconds": latency["p95"],
            "robots_compliance": _ratio(robots, snap.robots_checked),
            "cost_per_url": cost["per_url"]["all"],
        }
        slos = {**SLOS, "cost_per_url": ("<=", self.cost_target)}
        return {
            "job": job,
            "ended": {"reason": reason, "why": ENDINGS.get(reason, f"closed: {reason}")},
            "started_at": self.started_at.isoformat(timespec="seconds"),
            "wall_seconds": round(wall, 3),
            "pages": pages,
            "pages_per_second": round(pages / wall, 3) if wall > 0 else None,
            "success_rate": {
                "value": values["fetch_success_rate"],
                "pages": pages,
                "failed": failed,
            },
            "fetches": {
                "count": sum(snap.fetches.values()),
                "by_status_class": snap.by_status_class(),
                "by_mode": dict(sorted(snap.modes.items())),
            },
            "latency_seconds": {**latency, "count": snap.latency.count},
            "errors": {"count": sum(errors.values()), "by_class": errors},
            "drain_rate": self.drain_rate(),
            "robots": {
                "checked": snap.robots_checked,
                "disallowed_fetched": snap.robots_violations,
                "compliance": values["robots_compliance"],
            },
            "cost": cost,
            "compliance": self.compliance(),
            "workers": self.workers(wall),
            "rss_bytes": self.usage.rss(),
            "slos": {
                name: {
                    "value": values[name],
                    "target": target,
                    "comparison": comparison,
                    "met": _met(comparison, values[name], target),
                }
                for name, (comparison, target) in slos.items()
            },
        }

    def compliance(self) -> dict:
        checked, violations, unchecked = self.audits.delay.counts()
        honoured, emitted = self.audits.opt_out.honoured, self.audits.opt_out.emitted
        robots = installed(self.crawler, RobotsMiddleware)
        now = time.time()
        ages = {
            origin: round(max(0.0, now - rules.fetched_at), 3)
            for origin, rules in sorted((robots.held() if robots else {}).items())
        }
        return {
            "crawl_delay": {"checked": checked, "violations": violations, "unchecked": unchecked},
            "opt_out": {
                "honoured": honoured,
                "emitted": emitted,
                "share_honoured": _ratio(honoured, honoured + emitted),
            },
            "robots_age_seconds": ages,
        }

    def workers(self, wall: float) -> dict | None:
        tally = self.usage.workers
        if tally is None:
            return None
        snap = tally.snapshot()
        return {
            "workers": snap.workers,
            "reads": snap.reads,
            "failures": dict(sorted(snap.failures.items())),
            "read_seconds": {
                f"p{round(q * 100)}": _round(snap.duration.quantile(q)) for q in (0.5, 0.95, 0.99)
            },
            "busy_share": _ratio(snap.busy_seconds, snap.workers * wall) if wall > 0 else None,
        }

    def drain_rate(self) -> dict:
        (then, taken_then, added_then), (now, taken, added) = self.samples[0], self.samples[-1]
        taken, added = taken - taken_then, added - added_then
        return {
            "value": _ratio(taken, added),
            "seconds": round(now - then, 3),
            "taken": taken,
            "added": added,
        }
