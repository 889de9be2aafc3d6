"""Documents a site links (PDFs, Word documents, markdown and plain text), read into pages
like HTML; every other response that is no page is named.

The crawl process only tells what a response is (:func:`kind_of`, from its Content-Type
and first bytes: no reader is imported there); a document is read in the page workers
(:func:`crawlyx.content.documents.reader.read_document`, with the read budget of any
page), into the same shape :func:`crawlyx.content.page.analyze` gives an HTML page; a
reader that cannot raises :class:`crawlyx.content.documents.errors.Unreadable`.
"""

from __future__ import annotations

import re

from scrapy.http import HtmlResponse, TextResponse

from crawlyx.content.encoding import page_text

# Document types crawlyx reads (CRAWLYX_DOCUMENTS): name -> Content-Types.
DOCUMENT_TYPES = {
    "pdf": ("application/pdf", "application/x-pdf", "application/acrobat"),
    "docx": ("application/vnd.openxmlformats-officedocument.wordprocessingml.document",),
    # Text a site serves as it is: its pages' markdown (a docs site's .md pages, its
    # llms.txt) and plain text. Read as a text's characters, not its bytes.
    "markdown": ("text/markdown", "text/x-markdown"),
    "text": ("text/plain",),
}
TEXT_DOCUMENTS = frozenset({"markdown", "text"})
_MARKDOWN_PATHS = (".md", ".markdown")

# Content-Types that say nothing of what a body is: its first bytes are looked at.
_GENERIC = frozenset(
    {
        "",
        "application/octet-stream",
        "binary/octet-stream",
        "application/binary",
        "application/download",
        "application/force-download",
        "application/x-download",
        "application/unknown",
    }
)

_ARCHIVES = frozenset(
    {
        "application/zip",
        "application/x-zip-compressed",
        "application/gzip",
        "application/x-gzip",
        "application/x-tar",
        "application/x-bzip2",
        "application/x-xz",
        "application/x-7z-compressed",
        "application/vnd.rar",
        "application/x-rar-compressed",
        "application/zstd",
        "application/java-archive",
    }
)


def document_types(settings) -> tuple[str, ...]:
    """CRAWLYX_DOCUMENTS: the document types read (a list, or comma-separated text);
    ValueError naming the setting for a type crawlyx does not know."""
    names = tuple(name.strip().lower() for name in settings.getlist("CRAWLYX_DOCUMENTS"))
    names = tuple(name for name in names if name)
    for name in names:
        if name not in DOCUMENT_TYPES:
            known = ", ".join(DOCUMENT_TYPES)
            raise ValueError(
                f"CRAWLYX_DOCUMENTS: unknown document type {name!r}; known: {known}"
                " (empty reads none)"
            )
    return names


def content_type(response) -> str:
    """The response's media type, lowercased, without parameters ('' when none)."""
    return media_type(response.headers)


def media_type(headers) -> str:
    """The media type of ``headers``' Content-Type, lowercased, without parameters."""
    value = headers.get(b"Content-Type") or b""
    return value.split(b";")[0].strip().lower().decode("latin-1")


def told_by_headers(ctype: str, types: tuple[str, ...]) -> bool:
    """A response of this media type is no page nor a document of ``types``
    (CRAWLYX_DOCUMENTS), whatever its body: an image, an archive, a video, a script, data.
    :func:`kind_of` names it without its body."""
    if ctype in _GENERIC or ctype in HTML_TYPES:
        return False  # its first bytes tell what it is
    return not any(ctype in DOCUMENT_TYPES[name] for name in types)


# What a browser shows as a page; anything else it shows in a viewer (a PDF) or as text.
HTML_TYPES = frozenset({"", "text/html", "application/xhtml+xml"})


def html_type(response) -> bool:
    """The response's Content-Type is HTML's (or there is none)."""
    return content_type(response) in HTML_TYPES


# First bytes of bodies that are no text, whatever their Content-Type says: a server that
# labels everything text/html, a page stored gzipped and served without its
# Content-Encoding. A browser would show them as garbage; crawlyx reads a PDF as one and
# names the rest.
_MAGIC = (
    (b"%PDF-", "a PDF"),
    (b"\x1f\x8b", "gzip data"),
    (b"PK\x03\x04", "a zip archive"),
    (b"\x89PNG", "an image"),
    (b"\xff\xd8\xff", "an image"),
    (b"GIF8", "an image"),
)
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")  # and UTF-32's, which start alike


def binary(response) -> str | None:
    """What the body of a response labelled HTML or text is when it is no text (in words),
    else None: nothing (a 204, an empty 200), or by its first bytes, or a NUL byte among them
    (no HTML has one, but in UTF-16)."""
    head = response.body[:1024]
    if not head.strip() and not response.body.strip():
        return "no content"
    for magic, what in _MAGIC:
        if head.startswith(magic):
            return what
    if b"\x00" in head and not head.startswith(_UTF16_BOMS):
        charset = (response.headers.get(b"Content-Type") or b"").lower()
        if b"utf-16" not in charset and b"utf-32" not in charset:
            return "binary data"
    return None


# The start of an HTML document: a doctype or an <html> tag, after comments at most.
_HTML_START = re.compile(rb"\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html)[\s>]", re.I | re.S)


def as_page(response):
    """``response`` as an HTML page when it is one served as plain text (a server that
    labels every file ``text/plain``): read as text, its markdown would be its markup.
    Any other response as it is."""
    if type(response) is TextResponse and content_type(response) == "text/plain":
        if _HTML_START.match(response.body[:1024].removeprefix(b"\xef\xbb\xbf")):
            return response.replace(cls=HtmlResponse)
    return response


def kind_of(response, types: tuple[str, ...]) -> tuple[str | None, str]:
    """(the document type to read the response as, or None; what it is, in words for
    the errors file when it is not read).

    A document is one by its Content-Type or, when the Content-Type says nothing
    (``application/octet-stream``, none) or says HTML of a body that is none
    (:func:`binary`), by its first bytes: ``%PDF-``, or a zip archive at a URL ending in
    ``.docx``; or, saying nothing, markdown at a URL ending in ``.md``. A text document
    whose body is no text (:func:`binary`) is none."""
    ctype = content_type(response)
    kind = next((name for name, types_ in DOCUMENT_TYPES.items() if ctype in types_), None)
    if kind is None and (ctype in _GENERIC or ctype in HTML_TYPES):
        if b"%PDF-" in response.body[:1024]:
            kind = "pdf"
        elif response.body.startswith(b"PK\x03\x04") and _path(response.url).endswith(".docx"):
            kind = "docx"
        elif ctype in _GENERIC and _path(response.url).endswith(_MARKDOWN_PATHS):
            kind = "markdown"
    if kind in types:
        what = binary(response) if kind in TEXT_DOCUMENTS else None  # a text with no text
        if what is None:
            return kind, ""
        return None, f"{ctype or 'no Content-Type'}: {what}, not a page"
    if kind is not None:
        name = {
            "pdf": "a PDF",
            "docx": "a Word document",
            "markdown": "markdown",
            "text": "plain text",
        }[kind]
        return None, f"{ctype or 'no Content-Type'}: {name} (not in CRAWLYX_DOCUMENTS)"
    if ctype in HTML_TYPES:
        what = binary(response) or "no text"
        return None, f"{ctype or 'no Content-Type'}: {what}, not a page"
    return None, f"{ctype or 'no Content-Type'}: {_what(ctype)}, not a page"


def _path(url: str) -> str:
    return url.split("?", 1)[0].split("#", 1)[0].lower()


def _what(ctype: str) -> str:
    major = ctype.partition("/")[0]
    if major in ("image", "video", "audio", "font"):
        return f"an {major}" if major in ("image", "audio") else f"a {major}"
    if ctype in _ARCHIVES:
        return "an archive"
    if ctype in ("text/css", "text/javascript", "application/javascript"):
        return "a script or style sheet"
    if "officedocument" in ctype or "opendocument" in ctype or "ms-" in ctype or "msword" in ctype:
        return "an office document"
    if "json" in ctype or "xml" in ctype or ctype in ("text/csv", "text/plain"):
        return "data or plain text"
    return "a type crawlyx does not read"


def document_body(kind: str, response) -> bytes | str:
    """What a worker reads of a document of ``kind``: a text document's characters
    (decoded as a page is, see :mod:`crawlyx.content.encoding`), any other's bytes."""
    if kind not in TEXT_DOCUMENTS:
        return response.body
    if isinstance(response, TextResponse):
        return page_text(response)
    try:  # served as bytes of no type (a .md file)
        return response.body.decode("utf-8")
    except UnicodeDecodeError:
        return response.body.decode("cp1252", "replace")
