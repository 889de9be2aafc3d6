"""Crawler traps: URLs that are infinite by construction, refused by rule.

A trap is not ended by exhausting max_pages: each rule looks at one URL and says
whether it can be a real page.

- Too long: real pages have short URLs; generated ones grow without bound.
- A path segment repeated (``/a/b/a/b/a/b``, ``/x/x/x/x``): relative links resolved
  against the wrong base nest forever.
- Too many query parameters: faceted search multiplying filters.
- A date far from today (``/calendar?month=2391-04``, ``/2087/06/``): "next month" links
  on an event calendar run into the future forever; no real archive is years ahead
  (or before 1900).

Those look at a URL alone. A counter (``/cal?month=27`` linking ``month=28`` and
``month=26``) looks like real pagination (``/shop?page=2``) until the pages are read:
:class:`PatternTraps` compares each page with the pages of its URL pattern before it, and
counts the pages of a pattern in a row that led to nothing new.
"""

from __future__ import annotations

import hashlib
import heapq
import re
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import parse_qsl, urlsplit

# A year and a month with a separator (2031-01, 2087/06, 2030_12): a bare number is an id.
_DATE = re.compile(r"(?<![0-9])([0-9]{4})[-/_.](0[1-9]|1[0-2])(?![0-9])")


class TrapRules:
    def __init__(
        self,
        max_url_length: int = 2048,
        max_segment_repeats: int = 3,
        max_query_params: int = 24,
        future_years: int = 3,
        now: datetime | None = None,
    ):
        self.max_url_length = max_url_length
        self.max_segment_repeats = max_segment_repeats
        self.max_query_params = max_query_params
        year = (now or datetime.now(UTC)).year
        self.years = range(1900, year + future_years + 1)

    @classmethod
    def from_settings(cls, settings) -> TrapRules:
        return cls(
            max_url_length=settings.getint("CRAWLYX_TRAP_MAX_URL_LENGTH"),
            max_segment_repeats=settings.getint("CRAWLYX_TRAP_MAX_SEGMENT_REPEATS"),
            max_query_params=settings.getint("CRAWLYX_TRAP_MAX_QUERY_PARAMS"),
            future_years=settings.getint("CRAWLYX_TRAP_FUTURE_YEARS"),
        )

    def reason(self, url: str) -> str | None:
        """Why ``url`` (normalized) is a trap, or None."""
        if len(url) > self.max_url_length:
            return f"URL longer than {self.max_url_length} characters"
        parts = urlsplit(url)
        segments = [s for s in parts.path.split("/") if s]
        if segments:
            segment, count = Counter(segments).most_common(1)[0]
            if count > self.max_segment_repeats:
                return f"path segment {segment!r} repeated {count} times"
        if parts.query:
            params = parse_qsl(parts.query, keep_blank_values=True)
            if len(params) > self.max_query_params:
                return f"{len(params)} query parameters"
        for year in self._years(parts.path, parts.query):
            if year not in self.years:
                return f"date in {year}, outside {self.years.start}-{self.years.stop - 1}"
        return None

    @staticmethod
    def _years(path: str, query: str):
        for match in _DATE.finditer(path + "?" + query):
            yield int(match.group(1))


# -- URL patterns: chains of near-duplicate pages, and a budget per pattern -----------

_DIGITS = re.compile(r"[0-9]+")
_WORD = re.compile(r"\w+")
# A date that ends a path, its day optional (/2026/12/03/, /events/2026-12): a calendar's
# or an archive's day or month. A date followed by more (/blog/2026/12/03/a-post) is a page.
_PATH_DATE = re.compile(
    r"(?<![0-9])[0-9]{4}([-/_.])(0[1-9]|1[0-2])(\1(0[1-9]|[12][0-9]|3[01]))?(?=/?$)"
)
SIGNATURE_HASHES = 64  # the bottom-k sketch's k: 64 hashes of 8 bytes at most per page
SIGNATURE_CHARS = 2048  # a longer text is signed by its first and last this many characters


def url_pattern(url: str) -> str | None:
    """The path and query of ``url`` (normalized) with every query value that holds a
    digit masked, parameters sorted, and the numbers of a date that ends the path:
    ``/cal?month=*``, ``/shop?cat=shoes&page=*``, ``/events/*/*/*/``. None when nothing
    is masked: a URL without a counter belongs to no pattern."""
    parts = urlsplit(url)
    path, masked = _PATH_DATE.subn(lambda date: _DIGITS.sub("*", date[0]), parts.path)
    params = []
    for param in parts.query.split("&") if parts.query else ():
        name, eq, value = param.partition("=")
        if _DIGITS.search(value):
            param, masked = f"{name}{eq}*", True
        params.append(param)
    if not masked:
        return None
    return f"{path}?{'&'.join(sorted(params))}" if params else path


def _counters(url: str) -> set[str]:
    """The query parameters (``name=value``) of ``url`` whose value holds a digit."""
    return {p for p in urlsplit(url).query.split("&") if _DIGITS.search(p.partition("=")[2])}


def content_signature(text: str) -> bytes:
    """A MinHash signature of ``text``: the bottom-k sketch (the k smallest hashes, k =
    :data:`SIGNATURE_HASHES`) of its word 3-shingles, lowercased, digits masked, so that
    pages identical but for a counter are identical. 8-byte BLAKE2b hashes, concatenated.

    Bottom-k needs one hash per shingle where datasketch's MinHash needs one per
    permutation and shingle, and hashlib, not datasketch's import (which pulls in scipy:
    over a second per worker process). A long text is signed by its head and tail
    (:data:`SIGNATURE_CHARS` each), which bounds the cost per page: where a listing's
    pages differ, and what a forum thread's pages repeat (its first post) is not."""
    if len(text) > 2 * SIGNATURE_CHARS:
        text = f"{text[:SIGNATURE_CHARS]} {text[-SIGNATURE_CHARS:]}"
    words = _WORD.findall(_DIGITS.sub("0", text).lower())
    shingles = {" ".join(words[i : i + 3]) for i in range(max(1, len(words) - 2))}
    hashes = {hashlib.blake2b(s.encode(), digest_size=8).digest() for s in shingles if s}
    return b"".join(heapq.nsmallest(SIGNATURE_HASHES, hashes))


def similarity(a: bytes, b: bytes) -> float:
    """The Jaccard similarity of two texts' shingles, estimated from their signatures:
    the share of the k smallest hashes of both that both hold (exact for short texts,
    whose sketch is every shingle)."""
    x, y = _hashes(a), _hashes(b)
    union = heapq.nsmallest(SIGNATURE_HASHES, x | y)
    if not union:
        return 1.0  # two pages without text
    return sum(1 for h in union if h in x and h in y) / len(union)


def _hashes(signature: bytes) -> set[bytes]:
    return {signature[i : i + 8] for i in range(0, len(signature), 8)}


# The request.meta key of a link followed along its page's pattern: how many pages of the
# pattern in a row, up to that page, led to nothing new. It travels with the request
# through the job's queue, so every process and a resumed job go on counting.
HOPS_META = "crawlyx_pattern_hops"


@dataclass(frozen=True, slots=True)
class Chain:
    """A page of a URL pattern, as :meth:`PatternTraps.page` saw it."""

    pattern: str
    along: frozenset[str]  # its links of the same pattern
    hops: int  # pages of the pattern in a row, up to this one, that led to nothing new
    ended: tuple[str, str] | None  # (rule, why) when its links of the pattern are refused


class PatternTraps:
    """Links refused by what the pages of a URL pattern held and led to.

    Each page whose URL has a pattern (see :func:`url_pattern`) is compared with the
    last :attr:`RECENT` pages of its pattern: a page at least ``similarity`` alike with
    one of them extends the pattern's run of near-duplicates, any other page ends it.

    - Once the run reaches ``duplicates`` (it then stays there), links of the pattern
      found on a page of the pattern are refused: the chain ends. A counter calendar's
      pages are all alike and end after a handful; real pagination, whose pages list
      different things, runs to its end. Links of the pattern from other pages (a
      menu's "this month") are still followed: they are as many as those pages, and a
      wrong verdict on pages alike by design (products on one template) cuts only
      their links to each other, not the listings that lead to them.
    - A calendar's months differ where it lists events, so a page also counts its hops:
      the pages of its pattern in a row, each linked from the one before, up to and with
      itself, whose links held no URL outside the pattern that the process had not
      offered before. After ``hops`` of them the chain ends the same way: a calendar's
      months past its events lead to nothing new, a listing's pages link new items and
      start the count over (pages of inline items alone end after ``hops``). A link that
      keeps the page's counters (``month=7`` -> ``month=7&view=list``: the month's other
      views) is nothing new. The count travels with the requests through the job's
      queue (:data:`HOPS_META`), so no other state is kept for it.
    - Once the pattern has had ``budget`` pages, its links are refused wherever they
      are found: the backstop for what comparing pages does not catch. A process learns
      it from the next page of the pattern it reads.

    The pages' state is a Redis hash per job (``patterns``; per pattern: its page count,
    run and last :attr:`RECENT` signatures, 512 bytes at most each), shared by every
    process of the job and kept for a resumed one. Read and written without a lock:
    processes reading a pattern at the same moment may each miss the other's page,
    which delays the verdict by a page or two and never prevents it. What each rule
    refuses is counted in ``crawlyx/traps/pattern_duplicates``, ``pattern_hops`` and
    ``pattern_budget``.
    """

    RECENT = 4

    def __init__(
        self,
        crawler,
        duplicates: int = 5,
        similarity: float = 0.9,
        budget: int = 10_000,
        hops: int = 40,
    ):
        self.crawler = crawler  # its stats are set once the crawl starts
        self.duplicates = duplicates
        self.similarity = similarity
        self.budget = budget
        self.hops = hops
        self.spent: dict[str, str] = {}  # patterns past the budget -> why

    @staticmethod
    def check_settings(settings) -> dict:
        """The rules' settings, as keyword arguments; ValueError for a similarity out of
        range (a count that is not one fails the check every number has)."""
        similarity = settings.getfloat("CRAWLYX_TRAP_PATTERN_SIMILARITY")
        if not 0 < similarity <= 1:
            raise ValueError(
                f"CRAWLYX_TRAP_PATTERN_SIMILARITY ({similarity}) must be more than 0 and at most 1"
            )
        return {
            "duplicates": settings.getint("CRAWLYX_TRAP_PATTERN_DUPLICATES"),
            "similarity": similarity,
            "budget": settings.getint("CRAWLYX_TRAP_PATTERN_BUDGET"),
            "hops": settings.getint("CRAWLYX_TRAP_PATTERN_HOPS"),
        }

    @classmethod
    def from_crawler(cls, crawler) -> PatternTraps:
        return cls(crawler, **cls.check_settings(crawler.settings))

    def page(
        self, state, url: str, signature: bytes | None, hops: int = 0, links=()
    ) -> Chain | None:
        """Record the page at ``url`` (normalized), its content signature and the
        ``links`` it offers (normalized, none offered by this process before), reached
        after ``hops`` pages of its pattern that led to nothing new (its request's
        :data:`HOPS_META`), in the crawl's :class:`~crawlyx.frontier.state.State`: its
        :class:`Chain`, for :meth:`reason` and :meth:`meta`; None if the URL has no
        pattern."""
        pattern = url_pattern(url)
        if pattern is None:
            return None
        along = frozenset(link for link in links if url_pattern(link) == pattern)
        counters = _counters(url)
        new = any(
            link not in along
            and not (counters and counters <= set(urlsplit(link).query.split("&")))
            for link in links
        )
        hops = 0 if new else hops + 1
        ended = self._compare(state, pattern, signature)
        if ended is None and self.hops and hops >= self.hops:
            why = f"{hops} pages in a row under {pattern} led to no new URL"
            ended = "pattern_hops", why
        return Chain(pattern, along, hops, ended)

    def _compare(self, state, pattern: str, signature: bytes | None) -> tuple[str, str] | None:
        """Count the page of ``pattern`` and compare it with the pattern's last pages:
        (rule, why) if its run of near-duplicates ends the chain."""
        if signature is None or not (self.duplicates or self.budget):
            return None  # no signature: the worker found no pattern
        key = state.key("patterns")
        names = [f"{pattern} pages", f"{pattern} run"]
        names += [f"{pattern} recent{i}" for i in range(self.RECENT)]
        pages, run, *recent = state.client.hmget(key, names)
        pages, run = int(pages or 0), int(run or 0)
        pipe = state.client.pipeline(transaction=False)
        pipe.hincrby(key, names[0], 1)
        if self.duplicates and run < self.duplicates:
            alike = any(
                s is not None and similarity(signature, s) >= self.similarity for s in recent
            )
            run = run + 1 if alike else 0
            pipe.hset(key, mapping={names[1]: run, names[2 + pages % self.RECENT]: signature})
        pages = pipe.execute()[0]
        if self.budget and pages >= self.budget:
            self.spent[pattern] = f"{pages} pages under {pattern} (the pattern's budget)"
        if self.duplicates and run >= self.duplicates:
            return "pattern_duplicates", f"{run} near-duplicate pages in a row under {pattern}"
        return None

    def reason(self, link: str, chain: Chain | None = None) -> str | None:
        """Why ``link`` (normalized), one of the links :meth:`page` was given with the
        page of ``chain``, is refused (counted in ``crawlyx/traps/<rule>``); None if it
        is not."""
        if chain is not None and chain.ended and link in chain.along:
            rule, why = chain.ended
        elif self.spent and (pattern := url_pattern(link)) in self.spent:
            rule, why = "pattern_budget", self.spent[pattern]
        else:
            return None
        self.crawler.stats.inc_value(f"crawlyx/traps/{rule}")
        return why

    def meta(self, link: str, chain: Chain | None) -> dict:
        """The request meta that carries the hops of ``chain`` to ``link``, if it is
        followed along the chain's pattern."""
        if chain is None or not (self.hops and chain.hops) or link not in chain.along:
            return {}
        return {HOPS_META: chain.hops}
