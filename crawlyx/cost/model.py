"""What a crawl costs, from what it measured and a price table in the settings.

    cost per URL = (compute + egress + proxy + storage) / pages emitted

* compute: CPU seconds of the crawl's processes (crawlyx/cost/processes.py) times
  ``CRAWLYX_COST_CPU_SECOND``. The browser is its own component: a rendered page costs
  many times a plain one.
* egress: bytes of the responses (plain HTTP: as they came over the wire; the browser:
  every byte its pages received through its proxy, subresources included) times
  ``CRAWLYX_COST_EGRESS_GB``.
* proxy: with ``CRAWLYX_COST_PROXY_TIER`` naming a tier of ``CRAWLYX_COST_PROXY_PRICES``,
  its price per request times the fetches plus its price per GB times the response bytes.
* storage: bytes written to the output feeds times ``CRAWLYX_COST_STORAGE_GB``.

A URL is a page emitted (an item in the output): what the crawl is for. Fetches that
emit nothing (errors, redirects, robots.txt, sitemaps) are part of what pages cost.

Prices are in any one currency; the defaults are list prices of a public cloud, to be
replaced by your own (a general-purpose vCPU-hour at $0.045, internet transfer at $0.09
per GB, object storage at $0.023 per GB-month, proxy bandwidth at market rates).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

GB = 1e9
MODES = ("http", "browser")
CATEGORIES = ("compute", "egress", "proxy", "storage")
NO_PROXY = "none"


@dataclass(frozen=True)
class Prices:
    cpu_second: float
    egress_gb: float
    storage_gb: float
    proxy_tier: str
    proxy_request: float
    proxy_gb: float

    @classmethod
    def from_settings(cls, settings) -> Prices:
        """The price table; ValueError (one line naming the setting) if it is not one.
        (CRAWLYX_COST_CPU_SECOND and the other single prices are numbers, 0 or more:
        crawlyx/config.py checks them with every number.)"""
        try:
            tiers = settings.getdict("CRAWLYX_COST_PROXY_PRICES")
        except (TypeError, ValueError):
            raise ValueError(
                "CRAWLYX_COST_PROXY_PRICES must be tiers and their [price per request, "
                'price per GB], as JSON: {"datacenter": [0, 0.6]}'
            ) from None
        tier = str(settings.get("CRAWLYX_COST_PROXY_TIER") or NO_PROXY)
        table = {str(name): _tier_prices(name, value) for name, value in tiers.items()}
        table.setdefault(NO_PROXY, (0.0, 0.0))
        if tier not in table:
            raise ValueError(
                f"CRAWLYX_COST_PROXY_TIER ({tier}) must be one of "
                f"{', '.join(sorted(table))} (the tiers of CRAWLYX_COST_PROXY_PRICES)"
            )
        request, per_gb = table[tier]
        return cls(
            settings.getfloat("CRAWLYX_COST_CPU_SECOND"),
            settings.getfloat("CRAWLYX_COST_EGRESS_GB"),
            settings.getfloat("CRAWLYX_COST_STORAGE_GB"),
            tier,
            request,
            per_gb,
        )


def _tier_prices(name, value) -> tuple[float, float]:
    """A tier's [price per request, price per GB]."""
    try:
        request, per_gb = (float(v) for v in value)
    except (TypeError, ValueError):
        request = per_gb = -1.0
    if not (0 <= request < math.inf and 0 <= per_gb < math.inf):
        raise ValueError(
            f"CRAWLYX_COST_PROXY_PRICES: tier {name} must be [price per request, price per GB],"
            f" two numbers, 0 or more, not {value!r}"
        )
    return request, per_gb


@dataclass
class Usage:
    """What the crawl used so far, by fetch mode (crawlyx/extensions/usage.py)."""

    cpu: dict[tuple[str, str], float]  # (component, mode) -> CPU seconds
    response_bytes: dict[str, int]  # mode -> bytes
    fetches: dict[str, int]  # mode -> fetches
    pages: dict[str, int]  # mode -> pages emitted
    written_bytes: int  # to the output, all modes


def costs(usage: Usage, prices: Prices) -> dict[tuple[str, str], float]:
    """(category, mode) -> cost so far. The output's storage is shared between the
    modes by their pages (a rendered page's markdown is no bigger for being rendered)."""
    pages = sum(usage.pages.values())
    out = {}
    for mode in MODES:
        cpu = sum(seconds for (_, m), seconds in usage.cpu.items() if m == mode)
        received = usage.response_bytes.get(mode, 0) / GB
        stored = usage.written_bytes / GB * (usage.pages.get(mode, 0) / pages if pages else 0)
        out["compute", mode] = cpu * prices.cpu_second
        out["egress", mode] = received * prices.egress_gb
        out["proxy", mode] = (
            usage.fetches.get(mode, 0) * prices.proxy_request + received * prices.proxy_gb
        )
        out["storage", mode] = stored * prices.storage_gb
    return out


def per_url(cost: dict[tuple[str, str], float], pages: dict[str, int], mode=None) -> float | None:
    """The cost of a page emitted in ``mode`` (None: all modes), so far; None before one."""
    modes = MODES if mode is None else (mode,)
    count = sum(pages.get(m, 0) for m in modes)
    if not count:
        return None
    return sum(value for (_, m), value in cost.items() if m in modes) / count


def breakdown(usage: Usage, prices: Prices) -> dict:
    """The report's ``cost`` section: the prices, what was used, the cost by category
    and mode, and per URL (per mode and in all)."""
    cost = costs(usage, prices)
    cpu_by_component: dict[str, dict[str, float]] = {}
    for (component, mode), seconds in sorted(usage.cpu.items()):
        cpu_by_component.setdefault(component, {})[mode] = round(seconds, 3)
    return {
        "prices": {
            "cpu_second": prices.cpu_second,
            "egress_gb": prices.egress_gb,
            "storage_gb": prices.storage_gb,
            "proxy_tier": prices.proxy_tier,
            "proxy_request": prices.proxy_request,
            "proxy_gb": prices.proxy_gb,
        },
        "cpu_seconds": {
            "total": round(sum(usage.cpu.values()), 3),
            "by_component": cpu_by_component,
            "by_mode": {
                mode: round(sum(s for (_, m), s in usage.cpu.items() if m == mode), 3)
                for mode in MODES
            },
        },
        "response_bytes": {mode: usage.response_bytes.get(mode, 0) for mode in MODES},
        "written_bytes": usage.written_bytes,
        "fetches": {mode: usage.fetches.get(mode, 0) for mode in MODES},
        "pages": {mode: usage.pages.get(mode, 0) for mode in MODES},
        "cost": {
            category: {mode: cost[category, mode] for mode in MODES} for category in CATEGORIES
        },
        "total": sum(cost.values()),
        "per_url": {
            "all": per_url(cost, usage.pages),
            **{mode: per_url(cost, usage.pages, mode) for mode in MODES},
        },
    }
