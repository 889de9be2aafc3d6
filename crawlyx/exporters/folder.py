"""``mdfiles``: one markdown file per page, in a folder mirroring the site's paths.

``-O site/:mdfiles`` (or ``FEEDS = {"site/": {"format": "mdfiles"}}``): the feed's URI
names the folder. Scrapy's storage opens one file per feed, so crawlyx's file storage
(:mod:`crawlyx.feeds`) opens the folder's manifest, ``site/manifest.jsonl``: one JSON
line per page written (``url``, ``file``, ``title``, ``fetched_at``), the index of the
export, and what a resumed job reads to know which pages were written (as it reads a
JSON lines feed). The pages' files are written by this exporter, each as the item comes:

* its name from its URL (:func:`crawlyx.exporters.paths.page_path`; a folder's page,
  fetched at a URL ending in ``/``, is its ``index.md``); a URL whose name
  another URL of the export holds (compared as a case-insensitive system would), or
  whose name cannot be written there, gets a name of its own
  (:func:`crawlyx.exporters.paths.hashed_path`);
* resolved under the folder: a path that would leave it (through a symbolic link) is
  refused for the hashed name, which is then checked the same way;
* a YAML front matter (``url``, ``title``, ``fetched_at``) then the page's markdown;
* written whole or not at all: a temporary file (a name starting with ``.``, which no
  page's has) renamed over the page's file, then its manifest line.

``-O`` starts a new manifest and writes each page's file over any there; ``-o`` (and a
resumed job) appends to the manifest and keeps the names it gave. Files of pages the
crawl does not write stay: remove the folder first for an export of this crawl alone.
Memory: each page's name, as a crawl keeps its URL.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import unicodedata
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

from itemadapter import ItemAdapter
from scrapy.exporters import BaseItemExporter

from crawlyx.exporters import yaml_string
from crawlyx.exporters.paths import hashed_path, page_path

logger = logging.getLogger(__name__)

MANIFEST = "manifest.jsonl"


class MarkdownFilesExporter(BaseItemExporter):
    def __init__(self, file, *, stats=None, **kwargs):
        super().__init__(dont_fail=True, **kwargs)
        if os.path.basename(getattr(file, "name", "")) != MANIFEST:
            raise ValueError(
                "the mdfiles format writes a local folder: give a folder as the feed's URI"
                " (-O site/:mdfiles)"
            )
        self.file = file  # the manifest
        self.root = Path(os.path.dirname(os.path.abspath(file.name))).resolve()
        self.stats = stats
        self.names: dict[str, str] = {}  # a name's key -> the URL that holds it

    @classmethod
    def from_crawler(cls, crawler, file, **kwargs):
        return cls(file, stats=crawler.stats, **kwargs)

    def start_exporting(self) -> None:
        """An appended manifest's names stay their pages' (and taken for any other)."""
        if self.file.tell() == 0:
            return
        with open(self.file.name, "rb") as manifest:
            for line in manifest:
                try:
                    entry = json.loads(line)
                    self.names.setdefault(_key(entry["file"]), entry["url"])
                except (ValueError, KeyError, TypeError):
                    continue

    def export_item(self, item) -> None:
        page = ItemAdapter(item)
        url = page.get("url") or ""
        text = _document(page)
        # A folder's page is its index.md: fetched at a URL ending in a slash.
        fetched = urlsplit(page.get("final_url") or url).path
        name = self._write(url, page_path(url, fetched.endswith("/")), text) or self._write(
            url, hashed_path(url), text
        )
        if name is None:
            logger.error("crawlyx: mdfiles: %s not written under %s", url, self.root)
            if self.stats is not None:
                self.stats.inc_value("crawlyx/feed/mdfiles_failed")
            return
        entry = {
            "url": url,
            "file": name,
            "title": page.get("title"),
            "fetched_at": page.get("fetched_at"),
        }
        self.file.write(json.dumps(entry, ensure_ascii=False).encode() + b"\n")

    def _write(self, url: str, relative: PurePosixPath, text: str) -> str | None:
        """Write ``text`` at ``relative`` for ``url``: its name (POSIX), or None if the
        name is another URL's, leaves the folder or cannot be written."""
        name = relative.as_posix()
        holder = self.names.get(_key(name))
        if holder is not None and holder != url:
            return None
        target = self.root.joinpath(*relative.parts)
        try:
            # What the name is on disk, links followed: inside the folder, or refused;
            # before any folder is made, and again once they are.
            if not self._inside(target.parent):
                return None
            target.parent.mkdir(parents=True, exist_ok=True)
            if not self._inside(target.parent) or target.is_symlink():
                return None
            fd, partial = tempfile.mkstemp(prefix=".", suffix=".partial", dir=target.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
                    out.write(text)
                os.replace(partial, target)
            except BaseException:
                os.unlink(partial)
                raise
        except OSError as exc:  # a file where a folder goes, a name the system refuses
            logger.debug("crawlyx: mdfiles: %s not written at %s: %s", url, name, exc)
            return None
        self.names[_key(name)] = url
        return name

    def _inside(self, folder: Path) -> bool:
        return folder.resolve().is_relative_to(self.root)


def _key(name: str) -> str:
    """Names one on a case-insensitive, normalizing file system (macOS, Windows) are one."""
    return unicodedata.normalize("NFC", name).casefold()


def _document(page: ItemAdapter) -> str:
    markdown = (page.get("markdown") or "").strip()
    if not markdown and page.get("title"):
        markdown = f"# {page['title']}"
    head = "\n".join(
        f"{field}: {yaml_string(page.get(field))}" for field in ("url", "title", "fetched_at")
    )
    return f"---\n{head}\n---\n\n{markdown}\n"
