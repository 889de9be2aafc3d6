"""Local feed files whose items are in the file as soon as they are exported.

Scrapy's file storage writes through a buffer: an item smaller than it stays in the
process until more follow. A page is marked done once its item is exported (see
:mod:`crawlyx.middlewares.lease`), so a crawl process killed outright would lose the
buffered items of pages it will not fetch again. Here every write is handed to the
operating system at once (one more system call per item, no fsync: a killed process
loses nothing; a machine that loses power may). A file appended to (``-o``, a resumed
job) first loses the line a killed crawl left cut short.

A page's release goes to Redis a moment after its item is written (with the crawl core's
next batch): a crawl killed in between leaves the page to be fetched and written again.
So each run records where it writes (``crawlyx:{job}:outputs``), and a run of the job
reads the last items of every such file on this machine before it pops anything, and
again before it takes back the leases of processes that died (:func:`release_written`,
from the scheduler): their pages, if the job still has them queued or leased, are done.

The markdown formats (:mod:`crawlyx.exporters`) keep that record in JSON lines too: the
folder format's URI names a folder, and the storage opens its manifest (one JSON line
per page file written); the one-file format's lines are page text, never read as
items: its exporter records its spool instead.
"""

from __future__ import annotations

import json
import logging
import os

from scrapy.extensions.feedexport import FileFeedStorage as ScrapyFileFeedStorage

from crawlyx.exporters import FOLDER_FORMATS, TEXT_FORMATS
from crawlyx.exporters.folder import MANIFEST
from crawlyx.frontier.fingerprint import normalized_fingerprint
from crawlyx.frontier.state import REDIS_DOWN, outage
from crawlyx.parts import shared_parts

logger = logging.getLogger(__name__)

# The last items of an output whose pages may not be released yet: a killed crawl can
# only have written a few past its last batch.
TAIL_ITEMS = 64
TAIL_BYTES = 64 << 20  # read at most this much of a file's end for them
OUTPUTS = "outputs"  # crawlyx:{job}:outputs, a set of absolute paths


class FileFeedStorage(ScrapyFileFeedStorage):
    def __init__(self, uri, *, feed_options=None, parts=None):
        super().__init__(uri, feed_options=feed_options)
        self.parts = parts  # the crawl's shared parts (None: a file of no crawl's)
        self.format = (feed_options or {}).get("format")
        if self.format in FOLDER_FORMATS:  # the URI names a folder: its manifest
            self.path = os.path.join(self.path, MANIFEST)

    @classmethod
    def from_crawler(cls, crawler, uri, *, feed_options=None):
        return cls(uri, feed_options=feed_options, parts=shared_parts(crawler))

    def open(self, spider):
        file = super().open(spider)
        if self.write_mode == "ab":
            _drop_cut_line(file)
        if self.format not in TEXT_FORMATS:
            record_output(self.parts, file.name)
        return FlushedFile(file, getattr(getattr(spider, "crawler", None), "stats", None))


def record_output(parts, path: str) -> None:
    """``path`` is where this run of the crawl's job writes its items, as JSON lines;
    ``parts``: the crawl's shared parts (crawlyx/parts.py), None outside a crawl."""
    if parts is None or getattr(parts.crawler.spider, "job", None) is None:
        return  # not a crawlyx crawl
    try:
        state = parts.state
        state.client.sadd(state.key(OUTPUTS), os.path.abspath(path))
    except REDIS_DOWN as exc:
        outage(parts.crawler.stats, "recording the job's output", exc)


def release_written(table) -> int:
    """Done: the pages of the last items of the job's outputs on this machine that the
    job still has queued or leased. Called as a run starts, before anything is popped
    (Scrapy opens a feed with its first item). How many."""
    paths = sorted(raw.decode() for raw in table.redis.smembers(table.state.key(OUTPUTS)))
    urls = [url for path in paths for url in _last_urls(path, TAIL_ITEMS)]
    done = table.written([normalized_fingerprint(url) for url in urls])
    if done:
        logger.info("crawlyx: %d pages an earlier run wrote were not released: done", done)
    return done


def _last_urls(path: str, items: int) -> list[str]:
    """The ``url`` of the last ``items`` lines of a JSON lines file (none if it is gone)."""
    try:
        reader = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError:
        return []
    with reader:
        end = reader.seek(0, os.SEEK_END)
        start, chunks, newlines = end, [], 0
        while start > 0 and newlines <= items and end - start < TAIL_BYTES:
            size = min(start, 1 << 20)
            start -= size
            reader.seek(start)
            chunks.append(reader.read(size))
            newlines += chunks[-1].count(b"\n")
    lines = b"".join(reversed(chunks)).split(b"\n")[-items - 1 :]
    urls = []
    for line in lines:
        try:
            url = json.loads(line).get("url")
        except (ValueError, AttributeError):
            continue  # the partial first line, or not an item
        if isinstance(url, str):
            urls.append(url)
    return urls


def _drop_cut_line(file) -> None:
    """A crawl killed while writing an item leaves its line cut short, without its
    newline; appending would glue the next item to it. The page of a cut line was not
    done (it is marked done once its item is out) and is written again by the resumed
    crawl: the cut line goes."""
    end = file.seek(0, os.SEEK_END)
    if end == 0:
        return
    with open(file.name, "rb") as reader:
        reader.seek(max(0, end - 1))
        if reader.read(1) == b"\n":
            return
        # Back to the last newline (one item is rarely more than a few MiB).
        keep = end
        while keep > 0:
            start = max(0, keep - 65536)
            reader.seek(start)
            chunk = reader.read(keep - start)
            newline = chunk.rfind(b"\n")
            if newline >= 0:
                keep = start + newline + 1
                break
            keep = start
    file.truncate(keep)


class FlushedFile:
    """A binary file whose writes are flushed right away, counted in ``stats``
    (``crawlyx/feed/bytes``: what the crawl stores, for its cost); anything else is the
    file's."""

    def __init__(self, file, stats=None):
        self._file = file
        self._stats = stats

    def write(self, data) -> int:
        written = self._file.write(data)
        self._file.flush()
        if self._stats is not None:
            self._stats.inc_value("crawlyx/feed/bytes", written)
        return written

    def __getattr__(self, name):
        return getattr(self._file, name)
