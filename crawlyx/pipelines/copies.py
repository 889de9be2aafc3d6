"""Writes each document once: a page whose markdown is byte for byte another's is an alias.

Many sites serve one page under many addresses that no canonical names (a client-side
search's ``?search=...``, a print view): an LLM corpus wants the document once. The
first page of the job to claim a markdown's hash is written; a later one with the same
hash is not, and is recorded in the errors file under the ``duplicate`` class, its
detail naming the page that holds the document (``same markdown as URL``). It runs after
the markdown pipeline (which takes the hash) and before the feed exporter.

The claims are a hash in Redis (``crawlyx:{job}:copies``, the markdown's sha256 -> URL of
the page that claimed it: some 90 bytes a page and its URL) that lives and dies with the
job's other keys, so a copy is found across the job's processes and its runs. A claim is
one ``HSETNX`` (a script that answers the owner's URL) sent with the crawl core's next
batch (crawlyx/frontier/core.py): no round trip of its own, and the item waits for its
answer off the reactor's path, as it waits for the page registry's. A hash claimed twice
in one batch: the script runs them one after the other, the first wins.

The policy, safe against a process killed at any moment:

* the claim is made before the item is written, and names the page (its URL), not the
  process. The page that holds a claim is written; a page that finds the hash claimed by
  another URL is dropped (the pipeline's DropItem: its page is done all the same, see
  crawlyx/middlewares/lease.py) and its ``max_pages`` slot given back.
* a claimant killed before writing its item still holds its lease, so its page is
  fetched again when the job resumes (or another process takes the lease over): it finds
  its own URL in the claim and is written then. A copy dropped meanwhile is never the
  document's only address in the output. What this does not cover: the claimant's page
  answering differently when fetched again (changed, gone), which leaves the document
  under none of its addresses for this job.
* a page whose markdown is empty is no copy of anything: not claimed.
* a copy dropped is no output's under its URL: the page registry forgets its content hash
  and validators (crawlyx/demand/registry.py), so a later refresh run fetches it without
  conditions and writes it if it is no copy any more (its twin changed meanwhile).

Which copy is written: the one the site's navigation links to. The crawl reads breadth
first, so the pages a site's menus and tables of contents link to (every page shows them)
are read, and claim, before a page a single other page links to. The one page read before
the navigation is known is the start page, which many generators publish as a copy of
the first chapter (an mdBook's ``index.html``, linked by no menu): its claim waits until
the pages it links to (the first :data:`START_LINKS` of its ``links``) are done, at most
:data:`START_WAIT` seconds, so a twin among them, the navigation's, holds the document,
and the start page is its ``duplicate``.

A refresh run that starts a finished job afresh starts with no claims (crawlyx.frontier.jobs).
CRAWLYX_COPIES_ENABLED=false turns this off (every page is written, as the audit's
``duplicates.exact`` then lists). Stats: ``crawlyx/copies/claimed``,
``crawlyx/copies/dropped``.
"""

from __future__ import annotations

import asyncio
import logging

from redis.commands.core import Script
from scrapy.exceptions import DropItem, NotConfigured

from crawlyx.errors import record_error
from crawlyx.frontier.core import retryable
from crawlyx.frontier.fingerprint import normalized_fingerprint
from crawlyx.frontier.outage import REDIS_DOWN, outage
from crawlyx.frontier.shards import LEASED, QUEUED
from crawlyx.parts import shared_parts

logger = logging.getLogger(__name__)

COPIES = "copies"  # crawlyx:{job}:copies, markdown hash -> the URL whose item holds it
START_LINKS = 200  # the start page's links its claim waits for
START_WAIT = 60.0  # seconds at most
POLL = 0.2  # seconds between two looks at those links
QUEUING = (QUEUED, LEASED)  # a link's states while it is not done

# The hash's owner after the claim: ARGV[2] itself if it won (or held it already).
_CLAIM = """
redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])
return redis.call('HGET', KEYS[1], ARGV[1])
"""


class ContentClaims:
    """The crawl core's party for markdown hash claims: :meth:`claim` answers a future
    with the claim's owner, with the core's next batch."""

    def __init__(self, state, core, stats=None):
        self.key = state.key(COPIES)
        self.core = core
        self.stats = stats
        self.script = Script(state.client, _CLAIM)
        self._claims: list[tuple[asyncio.Future, str, str]] = []
        core.register(self)

    def claim(self, digest: str, url: str):
        """The URL holding the document whose markdown hashes to ``digest`` (hex): ``url``
        if it is the first to claim it. A future when the core is live; else sent now."""
        field = bytes.fromhex(digest)  # half the memory of its hex
        if not self.core.live:
            return self.script(keys=[self.key], args=[field, url]).decode()
        future = asyncio.get_running_loop().create_future()
        self._claims.append((future, field, url))
        self.core.wake()
        return future

    def take(self):
        if not self._claims:
            return None
        claims, self._claims = self._claims, []
        core, key, script = self.core, self.key, self.script

        def commands(pipe) -> int:
            for _, digest, url in claims:
                core.script(pipe, script, [key], [digest, url])
            return len(claims)

        def handle(results) -> None:
            if isinstance(results, Exception):
                results = [results] * len(claims)
            failed = []
            for claim, result in zip(claims, results, strict=True):
                future, _, url = claim
                if retryable(result):
                    failed.append(claim)  # sent again with the next batch
                    continue
                if isinstance(result, Exception):
                    # Not known: written rather than risk losing the document.
                    logger.error("A markdown hash claim failed: %s", result)
                    result = url
                elif isinstance(result, bytes):
                    result = result.decode()
                if not future.done():
                    future.set_result(result)
            self._claims[:0] = failed

        return commands, handle


class CopiesPipeline:
    def __init__(self, crawler, parts):
        self.crawler = crawler
        self.stats = crawler.stats
        self.parts = parts  # the crawl's shared parts (crawlyx/parts.py)
        self._claims: ContentClaims | None = None

    @classmethod
    def from_crawler(cls, crawler):
        if not crawler.settings.getbool("CRAWLYX_COPIES_ENABLED"):
            raise NotConfigured("CRAWLYX_COPIES_ENABLED is off")
        return cls(crawler, shared_parts(crawler))

    @property
    def claims(self) -> ContentClaims:
        if self._claims is None:  # the job's state exists once the spider runs
            self._claims = ContentClaims(self.parts.state, self.parts.core, self.stats)
        return self._claims

    def process_item(self, item):
        if not item.get("markdown") or not item.get("content_hash"):
            return item
        if item.get("depth") == 0:
            return self._start_page(item)
        return self._claim(item)

    def _claim(self, item):
        owner = self.claims.claim(item["content_hash"], item["url"])
        if isinstance(owner, asyncio.Future):
            return self._answered(owner, item)
        return self._decide(owner, item)

    async def _start_page(self, item):
        """The start page claims once the pages it links to are done (or the wait is
        over, or the crawl is closing): a copy of it among them has claimed first."""
        visited = self.parts.visited
        own = normalized_fingerprint(item["url"])
        links = dict.fromkeys(normalized_fingerprint(url) for url in item.get("links") or ())
        waiting = [fp for fp in links if fp != own][:START_LINKS]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + START_WAIT
        while waiting and loop.time() < deadline and not self._closing():
            await asyncio.sleep(POLL)
            try:
                states = visited.states(waiting)
            except REDIS_DOWN as exc:  # no waiting through an outage: the claim waits it out
                outage(self.stats, "looking at the start page's links", exc)
                break
            # Done, or never queued (off the crawl's scope): nothing to wait for.
            waiting = [fp for fp, state in zip(waiting, states, strict=True) if state in QUEUING]
        result = self._claim(item)
        return await result if asyncio.iscoroutine(result) else result

    def _closing(self) -> bool:
        """Stopped (Ctrl-C), or max_pages written: what is in flight drains now."""
        spider = self.crawler.spider
        return not self.crawler.engine.running or getattr(spider, "closing", False)

    async def _answered(self, owner: asyncio.Future, item):
        return self._decide(await owner, item)

    def _decide(self, owner: str, item):
        if owner == item["url"]:
            self.stats.inc_value("crawlyx/copies/claimed")
            return item
        self.stats.inc_value("crawlyx/copies/dropped")
        spider = self.crawler.spider
        record_error(
            self.crawler,
            item["url"],
            "duplicate",
            f"same markdown as {owner}",
            item.get("referrer"),
            holder=owner,
        )
        spider.recrawl.unwritten(item["url"])  # written by the next crawl if no copy then
        quota = getattr(spider, "quota", None)
        if quota is not None:  # no page written: its max_pages slot is free again
            quota.put_back()
        raise DropItem(f"same markdown as {owner}", log_level="DEBUG")
