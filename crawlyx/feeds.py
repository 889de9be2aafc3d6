"""Local feed files whose items are in the file as soon as they are exported.

Scrapy's file storage writes through a buffer: an item smaller than it stays in the
process until more follow. A page is marked done once its item is exported (see
:mod:`crawlyx.middlewares.lease`), so a crawl process killed outright would lose the
buffered items of pages it will not fetch again. Here every write is handed to the
operating system at once (one more system call per item, no fsync: a killed process
loses nothing; a machine that loses power may).
"""

from __future__ import annotations

from scrapy.extensions.feedexport import FileFeedStorage as ScrapyFileFeedStorage


class FileFeedStorage(ScrapyFileFeedStorage):
    def open(self, spider):
        return FlushedFile(super().open(spider))


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
