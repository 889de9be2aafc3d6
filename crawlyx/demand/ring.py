"""The ring's arithmetic and settings: time slices, slots, the span, each slice's size.

Time is cut into slices of ``slice`` seconds; slice number ``slot = ⌊t / slice⌋``
covers ``[slot·slice, (slot+1)·slice)`` in unix time, the same cut on every machine.
The ring keeps the last ``slices`` of them: its span, ``slices × slice``, is how far
back "visited within" can look. A visit at ``t`` reads as visited within ``w`` seconds
of ``now`` when its slice ends after ``now - w``: a slice is all or nothing, so the
answer may look up to one slice further back than asked (a false positive: a page
comes back sooner), never less far (no false negative). Slices after ``now`` count too:
a writer whose clock runs ahead still recorded a visit.
"""

from __future__ import annotations

from dataclasses import dataclass

from crawlyx.demand.bloom import byte_size, geometry
from crawlyx.demand.durations import parse_duration


@dataclass(frozen=True)
class RingConfig:
    slice: int  # seconds per slice
    slices: int  # slices in the ring
    slice_urls: int  # distinct URLs per slice the filters are sized for
    fp_rate: float  # false-positive rate at that many URLs
    flush_interval: float = 60.0  # seconds between merges into Redis
    refresh_interval: float = 60.0  # seconds a merged read is reused

    def __post_init__(self):
        if self.slice < 1 or self.slices < 1:
            raise ValueError("CRAWLYX_DEMAND_SLICE and CRAWLYX_DEMAND_SLICES must be positive")
        if self.flush_interval <= 0 or self.refresh_interval <= 0:
            raise ValueError("the demand flush and refresh intervals must be positive")
        geometry(self.slice_urls, self.fp_rate)  # raises for a size out of range

    @classmethod
    def from_settings(cls, settings) -> RingConfig:
        """The CRAWLYX_DEMAND_* settings; ValueError (naming the setting) if one is bad."""
        seconds = parse_duration(settings.get("CRAWLYX_DEMAND_SLICE"), "CRAWLYX_DEMAND_SLICE")
        if seconds != int(seconds):
            raise ValueError("CRAWLYX_DEMAND_SLICE must be a whole number of seconds")
        try:
            urls = settings.getint("CRAWLYX_DEMAND_SLICE_URLS")
            rate = settings.getfloat("CRAWLYX_DEMAND_FP_RATE")
            slices = settings.getint("CRAWLYX_DEMAND_SLICES")
        except ValueError as exc:
            raise ValueError(f"CRAWLYX_DEMAND_*: {exc}") from None
        if slices < 1:
            raise ValueError("CRAWLYX_DEMAND_SLICES must be 1 or more")
        if urls < 1 or not 0 < rate < 1:
            raise ValueError(
                "CRAWLYX_DEMAND_SLICE_URLS must be 1 or more and CRAWLYX_DEMAND_FP_RATE "
                "between 0 and 1"
            )
        return cls(
            int(seconds),
            slices,
            urls,
            rate,
            parse_duration(
                settings.get("CRAWLYX_DEMAND_FLUSH_INTERVAL"), "CRAWLYX_DEMAND_FLUSH_INTERVAL"
            ),
            parse_duration(
                settings.get("CRAWLYX_DEMAND_REFRESH_INTERVAL"), "CRAWLYX_DEMAND_REFRESH_INTERVAL"
            ),
        )

    @property
    def span(self) -> int:
        """Seconds the ring covers."""
        return self.slice * self.slices

    @property
    def bits(self) -> int:
        return geometry(self.slice_urls, self.fp_rate)[0]

    @property
    def hashes(self) -> int:
        return geometry(self.slice_urls, self.fp_rate)[1]

    @property
    def slice_bytes(self) -> int:
        return byte_size(self.bits)

    def slot(self, when: float) -> int:
        return int(when // self.slice)

    def oldest_slot(self, now: float) -> int:
        """The oldest slot still in the ring at ``now``."""
        return self.slot(now) - self.slices + 1
