"""``md``: every page in one markdown file, in the site's reading order.

``-O pages.md`` (or ``-O out.txt:md``, ``FEEDS = {"pages.md": {"format": "md"}}``). Each
page is a section headed by its URL, as in llms-full.txt
(:func:`crawlyx.graph.tree.write_llms_full`)::

    Source: https://docs.example.com/guide/intro.html

    # Introduction
    ...

    ---

    Source: https://docs.example.com/guide/install.html

A page's markdown starts with its title as a heading; a page with no markdown left is
its title alone.

A crawl reads pages breadth first, not in the order a reader meets them; so each item is
spooled as it comes, as a JSON line in ``<file>.spool.jsonl`` beside the output (on disk,
not in memory: only each page's URL and place in the spool are kept), and the file is
written when the feed closes, in the order of the site tree that the link graph gives
(:func:`crawlyx.graph.tree.build_tree`, the order of tree.md and llms.txt): the pages the
tree holds first, in its order, then the others (copies, pages the tree leaves out) in
crawl order. With the link graph off (``CRAWLYX_GRAPH_ENABLED = False``) or unreadable,
in crawl order. Then the spool goes.

The spool is where the items are until then: it is the job's record of what this feed
wrote (:mod:`crawlyx.feeds`), so a resumed job does not fetch again the pages a killed
run spooled, and a run that appends (``-o``) takes a spool left by a killed run into its
file first. A run that overwrites (``-O``) starts a new spool, as it starts a new file.
``-o`` adds this run's pages to the file as further sections, ordered among themselves.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile

import redis
from itemadapter import ItemAdapter
from scrapy.exporters import BaseItemExporter

from crawlyx.feeds import record_output
from crawlyx.graph.outputs import load_graph
from crawlyx.graph.tree import build_tree
from crawlyx.parts import shared_parts
from crawlyx.urls.normalize import normalize_url

logger = logging.getLogger(__name__)

SEPARATOR = "\n---\n\n"  # between two pages' sections (after the first's last newline)


class MarkdownExporter(BaseItemExporter):
    def __init__(self, file, *, parts=None, **kwargs):
        super().__init__(dont_fail=True, **kwargs)
        self.file = file
        self.parts = parts  # the crawl's shared parts (None: a feed of no crawl's)
        self.spool = None
        self.spooled: list[tuple[str, int]] = []  # (the page's graph node, its offset)

    @classmethod
    def from_crawler(cls, crawler, file, **kwargs):
        return cls(file, parts=shared_parts(crawler), **kwargs)

    def start_exporting(self) -> None:
        name = getattr(self.file, "name", None)
        if not isinstance(name, str) or not os.path.isfile(name):
            self.spool = tempfile.TemporaryFile()  # noqa: SIM115 - closed when done
            return
        path = f"{name}.spool.jsonl"
        append = "a" in getattr(self.file, "mode", "")
        self.spool = open(path, "a+b" if append else "w+b")  # noqa: SIM115 - closed when done
        if append:
            self._read_spool()
        record_output(self.parts, path)

    def _read_spool(self) -> None:
        """A killed run's spool: its items are this run's too. A last line cut short
        (the run was killed writing it) goes: its page was not done."""
        self.spool.seek(0)
        offset = 0
        for line in self.spool:
            if not line.endswith(b"\n"):
                self.spool.truncate(offset)
                break
            try:
                self.spooled.append((json.loads(line)["node"], offset))
            except (ValueError, KeyError, TypeError):
                pass
            offset += len(line)
        self.spool.seek(0, os.SEEK_END)

    def export_item(self, item) -> None:
        page = ItemAdapter(item)
        url = page.get("url") or ""
        try:  # the graph's node of the page: the URL its content came from
            node = normalize_url(page.get("final_url") or url)
        except ValueError:
            node = url
        entry = {
            "url": url,
            "node": node,
            "title": page.get("title"),
            "fetched_at": page.get("fetched_at"),
            "markdown": page.get("markdown") or "",
        }
        offset = self.spool.seek(0, os.SEEK_END)
        self.spool.write(json.dumps(entry, ensure_ascii=False).encode() + b"\n")
        self.spool.flush()  # a killed crawl leaves it whole, for the run that resumes it
        self.spooled.append((node, offset))

    def finish_exporting(self) -> None:
        order = {url: place for place, url in enumerate(reading_order(self.parts))}
        last = len(order)
        spooled = sorted(
            range(len(self.spooled)), key=lambda i: (order.get(self.spooled[i][0], last), i)
        )
        first = _at_start(self.file)
        for index in spooled:
            self.spool.seek(self.spooled[index][1])
            entry = json.loads(self.spool.readline())
            self.file.write(((SEPARATOR if not first else "") + _section(entry)).encode())
            first = False
        name = self.spool.name
        self.spool.close()
        if isinstance(name, str):
            os.unlink(name)


def reading_order(parts) -> list[str]:
    """The site's pages in its reading order, from the job's link graph of the crawl whose
    shared parts are ``parts``; none when the graph is off or cannot be read, or outside a
    crawl (then the feed keeps the crawl's order)."""
    if parts is None:
        return []
    settings = parts.crawler.settings
    if not settings.getbool("CRAWLYX_GRAPH_ENABLED"):
        return []
    try:
        recorder = parts.__dict__.get("graph")  # built by the spider once it read a page
        if recorder is not None:
            recorder.flush()  # what this process learnt last, before the graph is read
        tree = build_tree(load_graph(parts.state, settings))
    except (RuntimeError, redis.RedisError) as exc:
        logger.warning("crawlyx: md feed: the link graph was not read (%s): crawl order", exc)
        return []
    return [node.url for _, node in tree.walk()]


def _at_start(file) -> bool:
    """Nothing in the file yet (``-O``, or ``-o`` of a new file)."""
    try:
        return file.seek(0, os.SEEK_END) == 0
    except (AttributeError, OSError, ValueError):  # a stream: it starts here
        return True


def _section(entry: dict) -> str:
    markdown = entry["markdown"].strip()
    if not markdown and entry.get("title"):
        markdown = f"# {entry['title']}"
    return f"Source: {entry['url']}\n\n{markdown}\n"
