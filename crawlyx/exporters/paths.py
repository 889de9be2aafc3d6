"""Where a page's markdown file goes in a folder export: a relative path made from its URL
alone, safe on Linux, macOS and Windows, that cannot leave the folder.

Rules:

* The URL's path, segment by segment (split on ``/`` before percent-decoding: an encoded
  slash ``%2F`` stays inside its segment, and a decoded ``/`` or ``\\`` is no separator).
* A folder (a path ending in ``/``, or none; or fetched so: a normalized URL has no
  last slash) is its ``index.md``; a file's ``.html``,
  ``.htm``, ``.xhtml``, ``.md`` or ``.markdown`` extension gives way to ``.md``; any other
  is kept (``manual.pdf`` -> ``manual.pdf.md``).
* A query string is a suffix of its hash (``search-q1a2b3c4d.md``): two URLs differing by
  their query never share a name. The host is not part of the path (a crawl is one
  origin); the exporter gives a URL whose name another URL holds a name of its own.
* In each segment, the characters Windows refuses (``<>:"/\\|?*``, control characters)
  become ``_``; trailing dots and spaces go (Windows drops them); a segment left empty or
  made of dots (``..``, ``%2e%2e``) is ``_``; a leading dot is kept behind ``_`` (no
  hidden files, and none like the exporter's own temporary files); Windows' reserved
  device names (``CON``, ``nul.txt``, ``COM1``...) get a ``_`` before them. Text is
  NFC-normalized (macOS stores names decomposed).
* A segment longer than :data:`MAX_BYTES` in UTF-8 is cut, at a character, and ends in
  a hash of the whole segment.

The path is relative and has no ``..``; the exporter still resolves it under the folder
and refuses one that leaves it (a symbolic link inside the folder).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from pathlib import PurePosixPath
from urllib.parse import unquote, urlsplit

MAX_BYTES = 200  # per segment, the ".md" and the query's hash included (most systems: 255)
PAGE_EXTENSIONS = (".html", ".htm", ".xhtml", ".md", ".markdown")
_UNSAFE = re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f]')
_RESERVED = re.compile(r"^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])(\..*)?$", re.IGNORECASE)


def short_hash(text: str, length: int = 8) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:length]


def page_path(url: str, folder: bool = False) -> PurePosixPath:
    """The page's file, relative to the folder: ``/guide/intro.html`` -> ``guide/intro.md``,
    ``/guide/`` -> ``guide/index.md``; ``folder``: the URL is a folder's written without
    its last slash (a normalized URL: ``/guide``, fetched as ``/guide/``)."""
    parts = urlsplit(url)
    path = parts.path + "/" if folder and not parts.path.endswith("/") else parts.path
    segments = path.split("/")
    folders, name = segments[:-1], segments[-1]
    folders = [safe_segment(unquote(s, errors="replace")) for s in folders if s]
    name = unquote(name, errors="replace")
    if not name:
        name = "index"
    else:
        lowered = name.lower()
        for extension in PAGE_EXTENSIONS:
            if lowered.endswith(extension) and len(name) > len(extension):
                name = name[: -len(extension)]
                break
    suffix = f"-q{short_hash(parts.query)}.md" if parts.query else ".md"
    return PurePosixPath(*folders, safe_segment(name, suffix))


def safe_segment(segment: str, suffix: str = "") -> str:
    """One path segment (with ``suffix`` after it) safe as a file or folder name."""
    segment = unicodedata.normalize("NFC", segment)
    name = _UNSAFE.sub("_", segment).rstrip(". ")
    if not name.strip("."):
        name = "_"
    if name.startswith("."):
        name = "_" + name
    if _RESERVED.match(name) or _RESERVED.match(name + suffix):
        name = "_" + name
    room = MAX_BYTES - len(suffix.encode())
    if len(name.encode()) > room:
        tail = "-" + short_hash(segment)
        cut = name.encode()[: room - len(tail)].decode("utf-8", "ignore").rstrip(". ")
        name = cut + tail
    return name + suffix


def hashed_path(url: str) -> PurePosixPath:
    """A page's file when its own name is taken or cannot be written: a hash of its URL
    in the folder named ``_``."""
    return PurePosixPath("_", f"{short_hash(url, 16)}.md")
