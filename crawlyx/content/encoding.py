"""A page's text, decoded as its label says unless its bytes prove the label wrong.

Scrapy decodes a page as a browser does: by its byte order mark, its Content-Type's
charset, its ``<meta charset>``, then a guess. A browser shows a wrong label's result as
it is; a corpus should not keep it. Two labels are wrong often enough on real sites to
check, at the cost of a scan of the text, and only then of the bytes:

* a page labelled Latin-1 or Windows-1252 (a server's default charset) whose bytes are
  valid UTF-8 with characters beyond ASCII is UTF-8: "CafÃ©" is "Café". Latin-1 text
  is valid UTF-8 only by an accident of letter pairs no language writes.
* a page labelled UTF-8 whose every byte beyond ASCII is invalid UTF-8 is Windows-1252
  (a page saved in a legacy editor, served with the site's UTF-8 header): "Caf� cr�me"
  is "Café crème". A UTF-8 page with one stray byte keeps its label: its other
  characters decode.
"""

from __future__ import annotations

import codecs
import re

# Encodings a server labels UTF-8 pages with by default.
_SINGLE_BYTE = frozenset({"ascii", "latin-1", "iso8859-1", "cp1252", "iso8859-15"})
_REPLACEMENT = "\ufffd"
# A valid UTF-8 sequence of two bytes or more.
_UTF8_SEQUENCE = re.compile(
    rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}"
)


def page_text(response) -> str:
    """``response.text``, or the page's bytes decoded as what they are (see above)."""
    text = response.text
    encoding = codecs.lookup(response.encoding).name
    body = response.body
    if encoding in _SINGLE_BYTE:
        if body.isascii():
            return text
        try:
            return body.decode("utf-8")
        except UnicodeDecodeError:
            return text
    if encoding == "utf-8" and _REPLACEMENT in text and not _UTF8_SEQUENCE.search(body):
        return body.decode("cp1252", errors="replace")
    return text
