"""A document read as a page: the fields :func:`crawlyx.content.page.analyze` gives an
HTML page, from the document's text (a PDF's: :mod:`crawlyx.content.documents.layout`; a
Word document's: :mod:`crawlyx.content.documents.docx`; markdown and plain text as they
are), metadata and links. Runs in a worker process: the crawl process imports none of
this (nor PDFium), only :mod:`crawlyx.content.documents`, which tells what a response is."""

from __future__ import annotations

import re
from bisect import bisect_right
from urllib.parse import urljoin

from crawlyx.content.documents import docx, layout, pdf
from crawlyx.content.documents.errors import Unreadable
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


def read_document(kind: str, body: bytes | str, url: str, scope: str | None, neardup: bool) -> dict:
    """The document read as a page (see :func:`crawlyx.content.page.analyze`), in a
    worker; :class:`Unreadable` when it cannot be."""
    readers = {"pdf": read_pdf, "docx": read_docx, "markdown": read_text, "text": read_text}
    return readers[kind](body, url, scope, neardup=neardup)


def read_pdf(body: bytes, url: str, scope: str | None, *, neardup: bool = False) -> dict:
    doc = pdf.read(body)
    text, headings, shown = layout.markdown(doc)
    if _chars(text) < MIN_TEXT:
        if doc.images:
            raise Unreadable("no text: its pages are images (a scan without a text layer)")
        raise Unreadable("no text in the PDF")
    meta = {"title": doc.title, "description": doc.description, "lang": doc.lang}
    if shown:  # without a title in its metadata, the one its first page shows
        headings = [shown, *headings]
    return _page(text, meta, headings, doc.links, url, scope, neardup)


def read_docx(body: bytes, url: str, scope: str | None, *, neardup: bool = False) -> dict:
    text, meta, headings, links = docx.read(body)
    if _chars(text) < MIN_TEXT:
        raise Unreadable("no text in the Word document")
    return _page(text, meta, headings, links, url, scope, neardup)


def read_text(body: str, url: str, scope: str | None, *, neardup: bool = False) -> dict:
    """Markdown or plain text: its text is its markdown, but for a front matter (the
    metadata block atop a site generator's source page, whose title and description it
    gives). The title is the front matter's, else the first heading. The links are those
    the text writes: markdown links and their references, autolinks, bare URLs (an
    llms.txt, served as plain text, lists its pages as markdown links). Its links' and
    images' targets are made absolute, as an HTML page's are: the markdown is read away
    from the URL it came from."""
    text = "\n".join(line.rstrip() for line in body.lstrip("\ufeff").splitlines())
    meta, text = _front_matter(text.replace("\x00", "").strip("\n"))
    if _chars(text) < MIN_TEXT:
        raise Unreadable("no text in the document")
    prose = _CODE.sub("", text)  # a "# comment" or a "[link](...)" in code is neither
    heading = _HEADING.search(prose)
    headings = [(heading.group(1) or heading.group(2)).strip(" #")] if heading else []
    uris = (next(group for group in m.groups() if group) for m in _TEXT_LINK.finditer(prose))
    uris = (uri.rstrip(".,;:!?'\"") if uri.startswith("http") else uri for uri in uris)
    text = absolute_links(text, url)
    return _page(text, meta, headings, list(dict.fromkeys(uris)), url, scope, neardup)


# A front matter: YAML between lines of three dashes (Jekyll, Hugo, MkDocs, Docusaurus), or
# TOML between lines of three pluses (Hugo), at the very top.
_FRONT_MATTER = re.compile(r"\A(---|\+\+\+)[ \t]*\n(.*?)\n\1[ \t]*(?:\n|\Z)", re.DOTALL)
_META_LINE = re.compile(r"^(title|description)[ \t]*[:=][ \t]*(.+)$", re.MULTILINE)
# An ATX heading (# Title) or a setext one (Title over a line of = or -).
_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(\S.*)$|^ {0,3}(\S.*)\n {0,3}(?:=+|-{2,})[ \t]*$", re.M)
# Code: a fenced block (to its closing fence, or the end of the text) or a code span.
_CODE = re.compile(r"^ {0,3}(`{3,}|~{3,}).*?(?:\n {0,3}\1[`~]*[ \t]*$|\Z)|`[^`\n]+`", re.M | re.S)
# A link's text holds no bracket and is at most a line: a run of "[" costs a scan, not one
# per bracket.
_TEXT_LINK = re.compile(
    r"(?<!!)\[[^\[\]\n]*\]\(\s*<?([^()\s<>]+)>?"  # [text](url "title"), not an image
    r"|^ {0,3}\[[^\[\]\n]+\]:[ \t]*<?(\S+?)>?(?:[ \t].*)?$"  # [ref]: url
    r"|<(https?://[^\s<>]+)>"  # <https://...>
    r"|(?<![(<\w])(https?://[^\s<>()\[\]\"'`]+)",  # a bare URL
    re.MULTILINE,
)


# A link's or an image's target, and a reference definition's: what is made absolute.
_TARGET = re.compile(
    r"(?P<head>!?\[[^\[\]\n]*\]\(\s*<?)(?P<uri>[^()\s<>]+)"  # [text](url), ![alt](url)
    r"|(?P<ref>^ {0,3}\[[^\[\]\n]+\]:[ \t]*<?)(?P<refuri>[^\s<>]+)",  # [ref]: url
    re.MULTILINE,
)


def absolute_links(text: str, base: str) -> str:
    """``text`` with every relative link, image and reference target outside code
    resolved against ``base`` (an absolute one, ``mailto:`` and the like are left alone)."""

    code = [match.span() for match in _CODE.finditer(text)]  # left as it is written
    starts = [start for start, _ in code]
    parts, end = [], 0
    for match in _TARGET.finditer(text):
        head, uri = (
            (match["head"], match["uri"]) if match["head"] else (match["ref"], match["refuri"])
        )
        inside = bisect_right(starts, match.start()) - 1
        if inside >= 0 and match.start() < code[inside][1]:
            continue
        if re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", uri):
            continue  # absolute already, or not a web address (mailto:)
        parts += [text[end : match.start()], head, urljoin(base, uri)]
        end = match.end()
    parts.append(text[end:])
    return "".join(parts)


def _front_matter(text: str) -> tuple[dict, str]:
    """The front matter's title and description, and the text without it."""
    match = _FRONT_MATTER.match(text)
    if match is None:
        return {}, text
    meta = {name: value.strip().strip("'\"") for name, value in _META_LINE.findall(match[2])}
    return meta, text[match.end() :].strip("\n")


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
