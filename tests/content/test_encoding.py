"""A page's text when its charset label is wrong, and bodies labelled HTML that are no text."""

import pytest
from scrapy.http import HtmlResponse

from crawlyx.content.documents import binary
from crawlyx.content.encoding import page_text

URL = "https://example.org/page"


def _response(body: bytes, ctype: str = "text/html") -> HtmlResponse:
    return HtmlResponse(URL, body=body, headers={"Content-Type": ctype})


@pytest.mark.parametrize(
    ("body", "ctype", "text"),
    [
        # UTF-8 under a server's Latin-1 default: the bytes are UTF-8.
        ("<p>Café crème</p>".encode(), "text/html; charset=iso-8859-1", "<p>Café crème</p>"),
        ("<p>Café crème</p>".encode(), "text/html; charset=windows-1252", "<p>Café crème</p>"),
        # Windows-1252 under a UTF-8 label: no byte beyond ASCII decodes.
        ("<p>Café crème</p>".encode("cp1252"), "text/html; charset=utf-8", "<p>Café crème</p>"),
        # ... unless the page's own <meta> says what it is.
        (
            '<meta charset="windows-1250"><p>Rząd</p>'.encode("cp1250"),
            "text/html; charset=utf-8",
            '<meta charset="windows-1250"><p>Rząd</p>',
        ),
        # A UTF-8 page with a stray byte under a Latin-1 label is UTF-8 still; a page in
        # another encoding under it is what its <meta> says.
        (
            "<p>Café crème, naïve, déjà vu</p>".encode() * 3 + b"\xff",
            "text/html; charset=iso-8859-1",
            "<p>Café crème, naïve, déjà vu</p>" * 3 + "\ufffd",
        ),
        (
            '<meta charset="gb18030"><p>中文</p>'.encode("gb18030"),
            "text/html; charset=iso-8859-1",
            '<meta charset="gb18030"><p>中文</p>',
        ),
        # Labels that are right stay, and so does a UTF-8 page with one stray byte.
        ("<p>Café</p>".encode("cp1252"), "text/html; charset=iso-8859-1", "<p>Café</p>"),
        (b"<p>plain</p>", "text/html; charset=iso-8859-1", "<p>plain</p>"),
        (b"<p>Caf\xc3\xa9 \xe9t\xc3\xa9</p>", "text/html; charset=utf-8", "<p>Café \ufffdté</p>"),
        ("<p>a \ufffd drawn</p>".encode(), "text/html; charset=utf-8", "<p>a \ufffd drawn</p>"),
        # UTF-16 said of bytes without a NUL (in UTF-16 "<" is 3C 00): they are UTF-8, else
        # Windows-1252; a page that is UTF-16 stays so.
        (
            '<meta charset="utf-16"><p>Café</p>'.encode(),
            "text/html",
            '<meta charset="utf-16"><p>Café</p>',
        ),
        ("<p>Café</p>".encode(), "text/html; charset=utf-16", "<p>Café</p>"),
        ("<p>Café</p>".encode("cp1252"), "text/html; charset=utf-16le", "<p>Café</p>"),
        ("<p>Café</p>".encode("utf-16-le"), "text/html; charset=utf-16le", "<p>Café</p>"),
        # No label: Scrapy's own reading (the <meta>, then a guess).
        (
            '<meta charset="utf-8"><p>Café</p>'.encode(),
            "text/html",
            '<meta charset="utf-8"><p>Café</p>',
        ),
    ],
)
def test_a_wrong_charset_label_is_read_past(body, ctype, text):
    assert page_text(_response(body, ctype)) == text


@pytest.mark.parametrize(
    ("body", "ctype", "what"),
    [
        (b"\x1f\x8b\x08\x00compressed", "text/html", "gzip data"),
        (b"%PDF-1.7\n", "text/html", "a PDF"),
        (b"\x89PNG\r\n\x1a\n", "text/html", "an image"),
        (bytes(range(256)), "text/html; charset=utf-8", "binary data"),
        (b"<html><body>text</body></html>", "text/html", None),
        ("<p>UTF-16</p>".encode("utf-16"), "text/html", None),
        ("<p>UTF-16</p>".encode("utf-16-le"), "text/html; charset=utf-16le", None),
    ],
)
def test_a_body_labelled_html_that_is_no_text_is_named(body, ctype, what):
    assert binary(_response(body, ctype)) == what
