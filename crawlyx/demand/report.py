"""What ``scrapy demand`` shows of a site: the ladder's rungs, what is due, the ring's fill.

- Pages per rung, as they are (``actual``) and, in a dry run, where the ladder would
  have put them (``counterfactual``); the hot fraction is the share on a rung faster
  than the base (pages crawled more often because bots read them).
- Pages due now and in the next 24 hours (the registry's next-due times as stored).
- The visit ring's fill: per slice, the share of bits set; the false-positive rate a
  slice answers with is about ``fill ** hashes``, and a question over the base
  interval asks every slice in it, so its rate is about ``1 - prod(1 - fill ** hashes)``.
"""

from __future__ import annotations

import math
import time

from crawlyx.demand.ladder import Ladder, label
from crawlyx.demand.registry import Registry
from crawlyx.demand.store import MergedRing

DAY = 86400


def _rungs(ladder: Ladder, counts: dict[float, int]) -> dict:
    pages = sum(counts.values())
    faster = sum(n for interval, n in counts.items() if interval < ladder.base)
    return {
        "pages": {label(r): counts.get(r, 0) for r in ladder.rungs},
        "hot_fraction": round(faster / pages, 4) if pages else 0.0,
    }


def read_demand(
    registry: Registry, ring: MergedRing, ladder: Ladder, now: float | None = None
) -> dict:
    """The site's demand report (plain data: the command prints it or its JSON)."""
    now = time.time() if now is None else now
    actual = registry.histogram().counts
    report = {
        "site": registry.site,
        "mode": "acting" if ladder.acts else ("dry run" if ladder.enabled else "off"),
        "pages": sum(actual.values()),
        "actual": _rungs(ladder, actual),
        "due_now": registry.count_due(now),
        "due_24h": registry.count_due(now + DAY),
    }
    if ladder.enabled and not ladder.acts:  # a dry run: where the ladder would put them
        report["counterfactual"] = _rungs(ladder, registry.histogram(shadow=True).counts)
    ring.refresh(now)
    fills = []
    miss = 1.0  # odds that no slice in the base interval answers falsely
    for layout, data in sorted(ring.slices.items(), key=lambda item: item[0].start):
        fill = int.from_bytes(data).bit_count() / layout.bits
        fills.append(fill)
        if layout.end > now - ladder.base:
            miss *= 1 - fill**layout.hashes
    report["ring"] = {
        "slices": len(fills),
        "rows": ring.rows,
        "fill_mean": round(sum(fills) / len(fills), 6) if fills else 0.0,
        "fill_max": round(max(fills), 6) if fills else 0.0,
        "fp_rate_base_interval": _rate(1 - miss),
    }
    return report


def _rate(value: float) -> float:
    """A small rate kept readable: four significant digits."""
    return 0.0 if value <= 0 else round(value, 3 - math.floor(math.log10(value)))


def format_table(report: dict) -> str:
    lines = [
        f"demand for {report['site']}: {report['pages']:,} pages in the registry; "
        f"ladder {report['mode']}"
    ]
    columns = [("actual", report["actual"])]
    if "counterfactual" in report:
        columns.append(("counterfactual", report["counterfactual"]))
    lines.append(f"{'rung':<6}" + "".join(f"{name:>16}" for name, _ in columns))
    for rung in report["actual"]["pages"]:
        lines.append(f"{rung:<6}" + "".join(f"{c['pages'][rung]:>16,}" for _, c in columns))
    lines.append(
        f"{'hot':<6}"
        + "".join(f"{c['hot_fraction']:>16.1%}" for _, c in columns)
        + "   (share on a rung faster than the base)"
    )
    lines.append(f"due now {report['due_now']:,}, within 24h {report['due_24h']:,}")
    ring = report["ring"]
    lines.append(
        f"visit ring: {ring['slices']} slices from {ring['rows']} rows; fill mean "
        f"{ring['fill_mean']:.2%}, max {ring['fill_max']:.2%}; false-positive rate over "
        f"the base interval ~{ring['fp_rate_base_interval']:.3%}"
    )
    return "\n".join(lines)
