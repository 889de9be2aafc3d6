"""A hostile site on 127.0.0.1: traps, bombs, tarpits, garbage and opt-out signals."""

from __future__ import annotations

import gzip
import secrets
import threading
import time
import zlib
from collections import Counter
from datetime import UTC, datetime
from functools import cache
from urllib.parse import parse_qs, urlsplit

from tests.sites.site import QuietHandler, Serving


@cache
def gzip_bomb() -> bytes:
    """1 GiB of zeros, gzip-compressed to about 1 MB."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = bytes(1 << 20)
    return b"".join([deflate.compress(chunk) for _ in range(1024)] + [deflate.flush()])


def _page(title: str, body: str = "", head: str = "") -> bytes:
    return (
        f"<html><head><title>{title}</title>{head}</head><body><h1>{title}</h1>"
        f"<p>Some text about {title}, long enough to be content.</p>{body}</body></html>"
    ).encode()


HOME_LINKS = [
    "/calendar?month={month}",
    "/bomb",
    "/tarpit",
    "/binary",
    "/gzipped",
    "/latin1",
    "/utf8",
    "/broken",
    "/loop-a",
    "/endless",
    "/refresh-js",
    "/nowhere",
    "/unasked",
    "/empty",
    "/nocontent",
    "/member/0",
    "/noai",
    "/xrobots",
    "/otherbot",
    "/nofollow",
    "/deep/a/a/a/a/page",
    "/long?q=" + "x" * 3000,
]


MEMBERS = 4  # pages /member/0-3: a forum that keeps sessions in its URLs, not in cookies


# A calendar whose months differ (each lists its own events) and link the months before
# and after, for ever; and a catalog of CATALOG_PAGES pages, each linking the pages
# before and after and products of its own. Both from /agenda only.
CATALOG_PAGES = 60
PRODUCTS_PER_PAGE = 2
_KINDS = "concert lecture market workshop screening reading fair recital tasting tour".split()
_PLACES = "library harbour square museum garden chapel theatre station bakery mill".split()
_HOSTS = "choir guild rowers poets potters weavers brewers scouts painters dancers".split()


def _words(n: int, i: int) -> str:
    """Three words that differ for each n (and i): digits alone would not, being masked."""
    return f"{_KINDS[(n + i) % 10]} {_PLACES[(n // 10 + 3 * i) % 10]} {_HOSTS[(n // 100 + i) % 10]}"


def _agenda(path: str, query: str) -> bytes | None:
    """The calendar, catalog and products, or None for another path."""
    if path == "/agenda":
        return _page(
            "Agenda", '<a href="/events?month=1">Events</a> <a href="/catalog?page=1">Shop</a>'
        )
    if path == "/events":
        n = int(parse_qs(query)["month"][0])
        events = "".join(f"<li>The {_words(n, i)} event</li>" for i in range(3))
        nav = (
            f'<a href="/events?month={n - 1}">Previous</a> <a href="/events?month={n + 1}">Next</a>'
        )
        return _page("Events", f"<ul>{events}</ul>{nav}")
    if path == "/catalog":
        n = int(parse_qs(query)["page"][0])
        ids = range((n - 1) * PRODUCTS_PER_PAGE, n * PRODUCTS_PER_PAGE)
        items = "".join(f'<li><a href="/product/{i}">The {_words(i, 0)} set</a></li>' for i in ids)
        nav = "".join(
            f'<a href="/catalog?page={p}">Page {p}</a> '
            for p in (n - 1, n + 1)
            if 1 <= p <= CATALOG_PAGES
        )
        return _page("Catalog", f"<ul>{items}</ul>{nav}")
    if path.startswith("/product/"):
        return _page(f"Product {path.removeprefix('/product/')}")
    return None


class HostileSite(Serving):
    def __init__(self):
        self.counts: Counter[str] = Counter()
        self.lock = threading.Lock()
        super().__init__(self._handler())
        now = datetime.now(UTC)
        self.this_month = f"{now.year}-{now.month:02d}"

    def _handler(self):
        site = self

        class Handler(QuietHandler):
            def send(self, status, body: bytes, ctype="text/html; charset=utf-8", **headers):
                self.reply(
                    status, body, ctype, {k.replace("_", "-"): v for k, v in headers.items()}
                )

            def do_GET(self):  # noqa: N802
                parts = urlsplit(self.path)
                path = parts.path.split(";")[0]  # a session id in the path is no other page
                with site.lock:
                    site.counts[path] += 1
                if path == "/robots.txt":
                    return self.send(200, bytes(range(256)) * 40, "text/plain")
                if path == "/sitemap.xml":
                    return self.send(200, b"<urlset><url><loc>not a url", "application/xml")
                if path == "/":
                    links = "".join(
                        f'<a href="{href.format(month=site.this_month)}">x</a>'
                        for href in HOME_LINKS
                    )
                    return self.send(200, _page("Home", links))
                if path == "/calendar":
                    year, month = map(int, parse_qs(parts.query)["month"][0].split("-"))
                    year, month = (year + 1, 1) if month == 12 else (year, month + 1)
                    nxt = f'<a href="/calendar?month={year}-{month:02d}">next month</a>'
                    return self.send(200, _page(f"Calendar {parts.query}", nxt))
                agenda = _agenda(path, parts.query)
                if agenda is not None:
                    return self.send(200, agenda)
                if path == "/bomb":
                    return self.send(200, gzip_bomb(), Content_Encoding="gzip")
                if path == "/tarpit":
                    self.send_response(200)
                    self.send_header("Content-Type", "text/html")
                    self.send_header("Content-Length", "100000")
                    self.end_headers()
                    try:
                        for _ in range(60):  # at most ~30 s, one byte at a time
                            self.wfile.write(b"<")
                            self.wfile.flush()
                            time.sleep(0.5)
                    except OSError:
                        pass  # the crawler gave up: what the test expects
                    return None
                if path == "/binary":
                    return self.send(200, bytes(range(256)) * 64)
                if path == "/gzipped":  # stored compressed, served without its encoding
                    return self.send(200, gzip.compress(_page("Gzipped")))
                if path == "/latin1":  # labelled UTF-8, written in Windows-1252
                    body = _page("Latin1").replace(b"Some text", "Caf\xe9 text".encode("cp1252"))
                    return self.send(200, body)
                if path == "/utf8":  # a server's default label on a UTF-8 page
                    body = _page("Utf8").replace(b"Some text", "Caf\xe9 cr\xe8me".encode())
                    return self.send(200, body, "text/html; charset=iso-8859-1")
                if path == "/broken":
                    body = b"<html><body><h1>Broken<div><p>Unclosed <b>bold <table><td>cell</p>"
                    return self.send(200, body + b"</div></div></span><p>tail text here")
                if path == "/loop-a":
                    return self.send(302, b"", Location="/loop-b")
                if path == "/loop-b":
                    return self.send(302, b"", Location="/loop-a")
                if path == "/endless":  # a body without a length that never ends
                    self.send_response(200)
                    self.send_header("Content-Type", "text/html")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    chunk = b"<p>" + b"endless " * 8000 + b"</p>"
                    try:
                        while True:  # until the crawler hangs up
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    except OSError:
                        return None
                if path == "/refresh-js":  # a refresh to nowhere a crawler can go
                    head = '<meta http-equiv="refresh" content="0; url=javascript:void(0)">'
                    return self.send(200, _page("RefreshJs", head=head))
                if path == "/nowhere":  # a redirect without its Location
                    return self.send(302, b"")
                if path == "/unasked":  # "not modified" to a request that asked nothing
                    return self.send(304, b"")
                if path == "/empty":
                    return self.send(200, b"  \n")
                if path == "/nocontent":
                    return self.send(204, b"")
                if path.startswith("/member/"):  # a new session in every link served
                    sid = secrets.token_hex(16)
                    links = "".join(
                        f'<a href="/member/{i};jsessionid={sid}">Member {i}</a> '
                        f'<a href="/member/{i}?PHPSESSID={sid}">Member {i} again</a> '
                        for i in range(MEMBERS)
                    )
                    return self.send(200, _page(f"Member {path[8:]}", links))
                if path == "/noai":
                    return self.send(200, _page("NoAI", head='<meta name="robots" content="noai">'))
                if path == "/xrobots":
                    return self.send(200, _page("XRobots"), X_Robots_Tag="noindex")
                if path == "/otherbot":
                    return self.send(200, _page("Otherbot"), X_Robots_Tag="googlebot: noindex")
                if path == "/nofollow":
                    meta = '<meta name="robots" content="nofollow">'
                    body = '<a href="/only-from-nofollow">secret</a>'
                    return self.send(200, _page("Nofollow", body, head=meta))
                return self.send(404, b"not found")

        return Handler
