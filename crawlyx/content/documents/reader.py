"""A document read as a page: the fields :func:`crawlyx.content.page.analyze` gives an
HTML page, from the document's text (a PDF's: :mod:`crawlyx.content.documents.layout`; a
Word document's: :mod:`crawlyx.content.documents.docx`), metadata and links. Runs in a
worker process."""

from __future__ import annotations

import re

from crawlyx.content.documents import Unreadable, docx, layout, pdf
from crawlyx.content.page import markdown_keys
from crawlyx.frontier.fingerprint import normalized_fingerprint
from crawlyx.urls.normalize import fetch_form, normalize_url

MIN_TEXT = 16  # characters of text, at least, in a readable document
# A title a writer left in the metadata by default: the file's name, not its title.
_FILE_TITLE = re.compile(
    r"^(?:microsoft\s+\w+\s+-\s+)?.*\.(?:docx?|pdf|tex|dvi|indd|pptx?|xlsx?|odt|rtf|html?)$"
    r"|^untitled|^[a-z]+://",
    re.IGNORECASE,
)


def read_pdf(body: bytes, url: str, scope: str | None, *, neardup: bool = False) -> dict:
    doc = pdf.read(body)
    text, headings = layout.markdown(doc)
    if _chars(text) < MIN_TEXT:
        if doc.images:
            raise Unreadable("no text: its pages are images (a scan without a text layer)")
        raise Unreadable("no text in the PDF")
    meta = {"title": doc.title, "description": doc.description, "lang": doc.lang}
    return _page(text, meta, headings, doc.links, url, scope, neardup)


def read_docx(body: bytes, url: str, scope: str | None, *, neardup: bool = False) -> dict:
    text, meta, headings, links = docx.read(body)
    if _chars(text) < MIN_TEXT:
        raise Unreadable("no text in the Word document")
    return _page(text, meta, headings, links, url, scope, neardup)


def _chars(text: str) -> int:
    return sum(1 for char in text if not char.isspace())


def _page(text, meta, headings, uris, url, scope, neardup) -> dict:
    title = (meta.get("title") or "").strip()
    if not title or _FILE_TITLE.search(title):
        title = headings[0] if headings else None
    data = {
        "title": title or None,
        "description": (meta.get("description") or "").strip() or None,
        "lang": meta.get("lang"),
        "canonical": None,
        "links": _links(uris, url, scope),
        "anchors": {},
        "robots": [],
        "frames": [],
        "shell": False,
        "markdown": text,
    }
    data.update(markdown_keys(text, url, neardup))
    return data


def _links(uris: list[str], base: str, scope: str | None) -> dict:
    """The document's links on the crawl's origin, as :func:`crawlyx.content.page.analyze`
    gives a page's: normalized URL -> (the URL to fetch, its fingerprint)."""
    found: dict[str, tuple[str, str]] = {}
    if scope is None:
        return found
    prefix = scope + "/"
    for uri in uris:
        uri = uri.strip()
        if not uri.lower().startswith(("http:", "https:", "/", ".")) and ":" in uri[:12]:
            continue  # mailto:, javascript:...
        try:
            link = normalize_url(uri, base)
        except ValueError:
            continue
        if link.startswith(prefix) and link not in found:
            found[link] = (fetch_form(link, uri), normalized_fingerprint(link))
    return found
