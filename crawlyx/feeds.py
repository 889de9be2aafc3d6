"""Local feed files whose items are in the file as soon as they are exported.

Scrapy's file storage writes through a buffer: an item smaller than it stays in the
process until more follow. A page is marked done once its item is exported (see
:mod:`crawlyx.middlewares.lease`), so a crawl process killed outright would lose the
buffered items of pages it will not fetch again. Here every write is handed to the
operating system at once (one more system call per item, no fsync: a killed process
loses nothing; a machine that loses power may). A file appended to (``-o``, a resumed
job) first loses the line a killed crawl left cut short.
"""

from __future__ import annotations

import os

from scrapy.extensions.feedexport import FileFeedStorage as ScrapyFileFeedStorage


class FileFeedStorage(ScrapyFileFeedStorage):
    def open(self, spider):
        file = super().open(spider)
        if self.write_mode == "ab":
            _drop_cut_line(file)
        return FlushedFile(file)


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
    """A binary file whose writes are flushed right away; anything else is the file's."""

    def __init__(self, file):
        self._file = file

    def write(self, data) -> int:
        written = self._file.write(data)
        self._file.flush()
        return written

    def __getattr__(self, name):
        return getattr(self._file, name)
