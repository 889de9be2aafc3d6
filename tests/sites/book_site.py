"""A documentation book as mdBook builds one, on 127.0.0.1: its table of contents is drawn
by scripts and offered without them in ``<noscript><iframe src="toc.html">``; each
chapter links only to the previous and the next one.

:data:`CHAPTERS` is the book in reading order, each with the chapter it is nested under
in the table of contents. ``toc.html`` nests them as mdBook does (a chapter's sections
in the next list item, which holds only their list) and, for the last chapter, as lists
usually do (the sections' list inside the chapter's item). Every page also embeds a
video player in an iframe outside noscript: content, never navigation.
``noscript=False`` serves the table of contents in a plain iframe instead, ``toc=False``
answers 404 for it. ``counts`` holds the requests per path.
"""

from __future__ import annotations

import threading
from collections import Counter
from urllib.parse import urlsplit

from tests.sites.site import QuietHandler, Serving

# path, title, the path of the chapter it is nested under (None: top level)
CHAPTERS = [
    ("/", "Introduction", None),
    ("/start.html", "Getting started", None),
    ("/start/install.html", "Installation", "/start.html"),
    ("/start/hello.html", "Hello, world", "/start.html"),
    ("/start/hello/cargo.html", "Hello, Cargo", "/start/hello.html"),
    ("/guess.html", "A guessing game", None),
    ("/concepts.html", "Common concepts", None),
    ("/concepts/variables.html", "Variables", "/concepts.html"),
    ("/concepts/types.html", "Data types", "/concepts.html"),
    ("/concepts/functions.html", "Functions", "/concepts.html"),
    ("/ownership.html", "Ownership", None),
    ("/ownership/borrowing.html", "Borrowing", "/ownership.html"),
]
TITLE = "The Book"

TOC = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><base target="_parent">
<meta name="robots" content="noindex"></head><body>
<ol class="chapter">
<li class="chapter-item"><a href="./">Introduction</a></li>
<li class="part-title">Guide</li>
<li class="chapter-item"><a href="start.html"><strong>1.</strong> Getting started</a></li>
<li><ol class="section">
  <li class="chapter-item"><a href="start/install.html"><strong>1.1.</strong> Installation</a></li>
  <li class="chapter-item"><a href="start/hello.html"><strong>1.2.</strong> Hello, world</a></li>
  <li><ol class="section">
    <li class="chapter-item"><a href="start/hello/cargo.html">1.2.1. Hello, Cargo</a></li>
  </ol></li>
</ol></li>
<li class="chapter-item"><a href="guess.html"><strong>2.</strong> A guessing game</a></li>
<li class="chapter-item"><a href="concepts.html"><strong>3.</strong> Common concepts</a></li>
<li><ol class="section">
  <li class="chapter-item"><a href="concepts/variables.html">3.1. Variables</a></li>
  <li class="chapter-item"><a href="concepts/types.html">3.2. Data types</a></li>
  <li class="chapter-item"><a href="concepts/functions.html">3.3. Functions</a></li>
</ol></li>
<li class="chapter-item"><a href="ownership.html"><strong>4.</strong> Ownership</a>
  <ol class="section">
    <li class="chapter-item"><a href="ownership/borrowing.html">4.1. Borrowing</a></li>
  </ol></li>
</ol></body></html>
"""

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title} - {book}</title>
<meta name="description" content="The chapter {title}."></head><body>
<nav id="sidebar" class="sidebar">
<mdbook-sidebar-scrollbox class="sidebar-scrollbox"></mdbook-sidebar-scrollbox>
{toc}
</nav>
<main>
<h1>{title}</h1>
<p>This chapter of the book is about {title}; read it after the one before.</p>
<iframe class="player" src="{root}player/embed.html" title="A video"></iframe>
<p>Each chapter builds on the last, so read them in order.</p>
</main>
<nav class="nav-wrapper">{prev}{next}</nav>
<script src="{root}toc.js"></script>
</body></html>
"""


def _root(path: str) -> str:
    """The relative path from ``path`` to the book's root (mdBook's path_to_root)."""
    return "../" * (path.count("/") - 1)


def _href(root: str, path: str) -> str:
    return root + (path.lstrip("/") or "./")


def page(index: int, noscript: bool = True) -> str:
    path, title, _ = CHAPTERS[index]
    root = _root(path)
    frame = f'<iframe class="sidebar-iframe-outer" src="{root}toc.html"></iframe>'
    prev = nxt = ""
    if index > 0:
        prev = f'<a rel="prev" href="{_href(root, CHAPTERS[index - 1][0])}">Previous</a>'
    if index + 1 < len(CHAPTERS):
        nxt = f'<a rel="next" href="{_href(root, CHAPTERS[index + 1][0])}">Next</a>'
    return PAGE.format(
        title=title,
        book=TITLE,
        root=root,
        toc=f"<noscript>{frame}</noscript>" if noscript else frame,
        prev=prev,
        next=nxt,
    )


class BookSite(Serving):
    """The book; ``with BookSite() as site: site.base``."""

    def __init__(self, noscript: bool = True, toc: bool = True):
        self.counts: Counter[str] = Counter()
        self.lock = threading.Lock()
        pages = {path: page(i, noscript) for i, (path, _, _) in enumerate(CHAPTERS)}
        if toc:
            pages["/toc.html"] = TOC
        pages["/player/embed.html"] = "<html><body><a href='/player/ad'>An ad</a></body></html>"
        site = self

        class Handler(QuietHandler):
            def do_GET(self):  # noqa: N802
                path = urlsplit(self.path).path
                with site.lock:
                    site.counts[path] += 1
                body = pages.get(path)
                if body is None:
                    self.reply(404, "not found", "text/plain")
                else:
                    self.reply(200, body)

        super().__init__(Handler)
