"""Synthetic website server for crawler benchmarks.

Serves a deterministic site of N pages of about ``--page-kb`` KB of HTML each, full of
duplicate-URL traps (tracking parameters, permuted query strings, fragments, trailing slashes,
percent-encoded paths) that a naive crawler refetches but a URL-normalizing crawler does not.

Usage::

    python bench/site.py --pages 2000 --latency-ms 20 --port 0

Prints ``READY http://127.0.0.1:PORT/`` once listening, then serves until SIGTERM/SIGINT.
Other options: ``--seed S``, ``--page-kb K`` (default 40), ``--nav-variants V`` (nav links carry
``utm_medium`` cycling over V values instead of one per page, which lowers the duplicate load a
naive crawler sees from about N fetches per nav target to about V).

Routes:

* ``/``                      home: nav, every listing page, the first pages
* ``/p/{i}``                 content page, 0 <= i < N (also ``/p/{i}/``, ``/p/%31%32``, ...)
* ``/list?page=K&sort=asc``  listing page, 0 <= K < 50, 40 pages each (``sort=desc`` too)
* ``/private/{k}``           small page, disallowed by robots.txt
* ``/robots.txt``, ``/sitemap.xml``
* ``/_stats``                JSON counters, ``/_stats?full=1`` adds per-resource and per-URL
                             counts; ``/_reset`` clears them. Neither is counted nor delayed.
* ``/_robots_down?s=S``      robots.txt answers 503 for the next S seconds (an outage)
* anything else              404 (``/missing/{k}`` is linked from a few pages)

Only the standard library is used: asyncio streams with a minimal HTTP/1.1 parser
(keep-alive, pipelining, GET/HEAD).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import html
import json
import random
import re
import signal
import sys
import time
from collections import Counter
from functools import lru_cache
from urllib.parse import parse_qsl, unquote, urlencode

HOST = "127.0.0.1"
NAV_SIZE = 60
SIDEBAR_SIZE = 20
FOOTER_SIZE = 20
CONTENT_LINKS = 8
LIST_PAGES = 50
LIST_SIZE = 40
PRIVATE_PAGES = 5
TRACKING_PARAMS = ("gclid", "fbclid")
MAX_HEADER_BYTES = 64 * 1024
CONTENT_KINDS = frozenset({"home", "page", "list"})

REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    431: "Request Header Fields Too Large",
    505: "HTTP Version Not Supported",
}

_PCT_RE = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


# --------------------------------------------------------------------------------------------
# URL canonicalization (what the server counts as "the same resource")
# --------------------------------------------------------------------------------------------


def _decode_unreserved(s: str) -> str:
    """Percent-decode unreserved characters only; upper-case the remaining escapes."""

    def repl(m: re.Match[str]) -> str:
        byte = int(m.group(1), 16)
        return chr(byte) if byte in _UNRESERVED else "%" + m.group(1).upper()

    return _PCT_RE.sub(repl, s)


def _is_tracking(key: str) -> bool:
    key = key.lower()
    return key.startswith("utm_") or key in TRACKING_PARAMS


def canonicalize(target: str) -> tuple[str, str, list[tuple[str, str]]]:
    """Return ``(canonical_key, decoded_path, kept_query_pairs)`` for a request target.

    Canonical form: fragment dropped, unreserved percent-escapes decoded, trailing slash
    removed (except for ``/``), utm_*/gclid/fbclid dropped, remaining parameters sorted.
    """
    target = target.split("#", 1)[0]
    if "://" in target:  # absolute-form request target
        rest = target.split("://", 1)[1]
        slash = rest.find("/")
        target = rest[slash:] if slash >= 0 else "/"
    path, _, query = target.partition("?")
    path = _decode_unreserved(path) or "/"
    if len(path) > 1:
        path = path.rstrip("/") or "/"
    pairs = sorted(
        (k, v) for k, v in parse_qsl(query, keep_blank_values=True) if not _is_tracking(k)
    )
    key = path + ("?" + urlencode(pairs) if pairs else "")
    return key, unquote(path), pairs


# --------------------------------------------------------------------------------------------
# Site content
# --------------------------------------------------------------------------------------------


class Site:
    def __init__(
        self, pages: int, seed: int, page_kb: int, base_url: str, nav_variants: int = 0
    ) -> None:
        if pages < 1:
            raise ValueError("--pages must be >= 1")
        self.n = pages
        self.nav_variants = nav_variants
        self.seed = seed
        self.page_bytes = page_kb * 1024
        self.base_url = base_url.rstrip("/")
        rng = random.Random(f"{seed}:vocab")
        syllables = (
            "ka lo mi ren tu sa vor el qua dri po ni zet ar bu ce fin go hal ju ost ry wen xi"
        ).split()
        vocab: set[str] = set()
        while len(vocab) < 600:
            vocab.add("".join(rng.choices(syllables, k=rng.randint(1, 4))))
        self.vocab = sorted(vocab)
        self.titles = [self._title(random.Random(f"{seed}:title:{i}")) for i in range(self.n)]
        self.robots = (
            f"User-agent: *\nDisallow: /private/\n\nSitemap: {self.base_url}/sitemap.xml\n"
        ).encode()
        self.sitemap = self._sitemap()
        self.not_found = b"<html><body><h1>404 Not Found</h1></body></html>\n"

    # -- helpers -----------------------------------------------------------------------------

    def _title(self, rng: random.Random) -> str:
        return " ".join(rng.choices(self.vocab, k=3)).capitalize()

    def _words(self, rng: random.Random, k: int) -> str:
        return " ".join(rng.choices(self.vocab, k=k))

    def _sentences(self, rng: random.Random, n: int) -> str:
        return " ".join(self._words(rng, rng.randint(8, 18)).capitalize() + "." for _ in range(n))

    def _link(self, href: str, text: str) -> str:
        return f'<a href="{html.escape(href)}">{html.escape(text)}</a>'

    def _page_link(self, j: int, href: str | None = None) -> str:
        return self._link(href or f"/p/{j}", self.titles[j])

    def _nav(self, medium: str, n: int) -> str:
        # Same targets on every page, but the tracking value differs per page (or cycles over
        # --nav-variants values), so a naive crawler sees many URLs for each nav target.
        if self.nav_variants:
            medium = f"v{n % self.nav_variants}"
        items = [f"<li>{self._link(f'/?utm_source=nav&utm_medium={medium}', 'Home')}</li>"]
        for j in range(min(NAV_SIZE, self.n)):
            href = f"/p/{j}?utm_source=nav&utm_medium={medium}"
            items.append(f"<li>{self._page_link(j, href)}</li>")
        return '<header><nav class="site-nav"><ul>' + "".join(items) + "</ul></nav></header>"

    def _variant(self, j: int, kind: int, tag: str) -> str:
        """A URL for page ``j`` in one of several duplicate-producing spellings."""
        if kind == 0:
            return f"/p/{j}"
        if kind == 1:
            return f"/p/{j}/"
        if kind == 2:
            return f"/p/{j}?gclid={tag}"
        if kind == 3:
            return f"/p/{j}?fbclid={tag}"
        if kind == 4:
            return f"/p/{j}#section-{(j % 5) + 1}"
        if kind == 5:
            return "/p/" + "".join(f"%{ord(c):02X}" for c in str(j))
        if kind == 6:
            return f"/p/{j}/?utm_source=related&utm_campaign={tag}"
        return f"/p/{j}?utm_source=related&utm_medium=article"

    def _footer(self, i: int, tag: str) -> str:
        links = [self._link(f"/?utm_source=footer&utm_content={tag}", "Home")]
        for m in range(FOOTER_SIZE - 1 - PRIVATE_PAGES):
            k = (i + m * 3) % LIST_PAGES
            href = f"/list?page={k}&sort=asc" if (i + m) % 2 else f"/list?sort=asc&page={k}"
            links.append(self._link(href, f"Archive {k}"))
        for k in range(PRIVATE_PAGES):
            links.append(self._link(f"/private/{k}", f"Private {k}"))
        items = "".join(f"<li>{a}</li>" for a in links)
        return f'<footer><ul class="footer-links">{items}</ul><p>&copy; Bench site</p></footer>'

    def _document(self, title: str, description: str, body: str, canonical: str) -> bytes:
        return (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{html.escape(title)}</title>"
            f'<meta name="description" content="{html.escape(description)}">'
            f'<link rel="canonical" href="{html.escape(self.base_url + canonical)}">'
            f"</head><body>{body}</body></html>\n"
        ).encode()

    # -- pages -------------------------------------------------------------------------------

    @lru_cache(maxsize=8192)  # noqa: B019 - one Site per process
    def page(self, i: int) -> bytes:
        rng = random.Random(f"{self.seed}:page:{i}")
        n = self.n
        tag = f"{rng.getrandbits(48):012x}"

        sidebar = []
        for k in range(SIDEBAR_SIZE):
            j = (i * 13 + k * 17 + 5) % n
            sidebar.append(f"<li>{self._page_link(j, self._variant(j, k % 4, f'{tag}{k}'))}</li>")
        aside = '<aside class="sidebar"><h3>Related</h3><ul>' + "".join(sidebar) + "</ul></aside>"

        content = []
        for k in range(1, CONTENT_LINKS + 1):
            j = (i * 7 + k) % n
            content.append(self._page_link(j, self._variant(j, k - 1, f"{tag}c{k}")))
        if i % 10 == 3:
            content.append(self._link(f"/missing/{i // 10}", "Broken link"))

        parts = [
            f"<h1>{html.escape(self.titles[i])}</h1>",
            f'<p class="lead">{self._sentences(rng, 3)}</p>',
        ]
        # Spread the content links over the first sections.
        section = 0
        while section < 3 or content:
            section += 1
            links = " ".join(content[:3])
            content = content[3:]
            parts.append(
                f'<section id="section-{section}"><h2>{html.escape(self._title(rng))}</h2>'
                f"<p>{self._sentences(rng, 4)} {links}</p><p>{self._sentences(rng, 5)}</p>"
                "</section>"
            )
        rows = "".join(
            f"<tr><td>{r}</td><td>{self._words(rng, 2)}</td><td>{rng.randint(0, 9999)}</td>"
            f"<td>{rng.random():.3f}</td></tr>"
            for r in range(8)
        )
        parts.append(
            "<table><thead><tr><th>#</th><th>Name</th><th>Count</th><th>Ratio</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>"
        )
        fn = rng.choice(self.vocab)
        code = (
            f"def {fn}_{i}(items):\n"
            f'    """{self._words(rng, 6)}."""\n'
            "    total = 0\n"
            "    for item in items:\n"
            f"        if item > {rng.randint(1, 99)}:\n"
            "            total += item * 2\n"
            "    return total\n"
        )
        parts.append(f'<pre><code class="language-python">{html.escape(code)}</code></pre>')
        parts.append("<ul>" + "".join(f"<li>{self._words(rng, 5)}</li>" for _ in range(6)))
        parts.append("</ul>")

        head = self._nav(f"page{i}", i) + aside + "<main><article>"
        tail = "</article></main>" + self._footer(i, tag)
        size = len(head) + len(tail) + sum(map(len, parts)) + 300
        while size < self.page_bytes:
            section += 1
            chunk = (
                f'<section id="section-{section}"><h2>{html.escape(self._title(rng))}</h2>'
                f"<p>{self._sentences(rng, 6)}</p><p>{self._sentences(rng, 6)}</p></section>"
            )
            parts.append(chunk)
            size += len(chunk)
        description = self._words(rng, 12)
        body = head + "".join(parts) + tail
        return self._document(f"Page {i}", description, body, f"/p/{i}")

    @lru_cache(maxsize=256)  # noqa: B019
    def listing(self, k: int, sort: str) -> bytes:
        ids = [(k * LIST_SIZE + m) % self.n for m in range(LIST_SIZE)]
        if sort == "desc":
            ids.reverse()
        items = "".join(f"<li>{self._page_link(j)}</li>" for j in ids)
        pager = []
        if k > 0:
            pager.append(self._link(f"/list?page={k - 1}&sort={sort}", "Previous"))
        if k < LIST_PAGES - 1:
            pager.append(self._link(f"/list?sort={sort}&page={k + 1}", "Next"))
        pager.append(self._link(f"/list?sort={sort}&page={k}#top", "Top"))
        body = (
            self._nav(f"list{k}", k)
            + f'<main><h1 id="top">Archive {k}</h1><ul class="listing">{items}</ul>'
            + f'<p class="pager">{" ".join(pager)}</p></main>'
            + self._footer(k, f"list{k}")
        )
        canonical = f"/list?page={k}&sort={sort}"
        return self._document(f"Archive {k}", f"Archive page {k}", body, canonical)

    @lru_cache(maxsize=1)  # noqa: B019
    def home(self) -> bytes:
        lists = "".join(
            f"<li>{self._link(f'/list?page={k}&sort=asc', f'Archive {k}')}</li>"
            for k in range(LIST_PAGES)
        )
        first = "".join(f"<li>{self._page_link(j)}</li>" for j in range(min(self.n, 100)))
        body = (
            self._nav("home", 0)
            + "<main><h1>Bench site</h1>"
            + f'<h2>Latest</h2><ul class="latest">{first}</ul>'
            + f'<h2>Archives</h2><ul class="archives">{lists}</ul></main>'
            + self._footer(0, "home")
        )
        return self._document("Bench site", "Synthetic site for crawler benchmarks", body, "/")

    @lru_cache(maxsize=PRIVATE_PAGES)  # noqa: B019
    def private(self, k: int) -> bytes:
        return self._document(f"Private {k}", "private", f"<h1>Private {k}</h1>", f"/private/{k}")

    def _sitemap(self) -> bytes:
        urls = "".join(f"<url><loc>{self.base_url}/p/{i}</loc></url>" for i in range(self.n))
        return (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"{urls}</urlset>\n"
        ).encode()

    def route(self, path: str, pairs: list[tuple[str, str]]) -> tuple[str, int, str, bytes]:
        """Return ``(kind, status, content_type, body)`` for a canonical path and query."""
        text_html = "text/html; charset=utf-8"
        if path == "/":
            return "home", 200, text_html, self.home()
        if path.startswith("/p/"):
            num = path[3:]
            if num.isdigit() and str(int(num)) == num and int(num) < self.n:
                return "page", 200, text_html, self.page(int(num))
        elif path == "/list":
            params = dict(pairs)
            num, sort = params.get("page", "0"), params.get("sort", "asc")
            if (
                num.isdigit()
                and str(int(num)) == num
                and int(num) < LIST_PAGES
                and sort in ("asc", "desc")
                and set(params) <= {"page", "sort"}
            ):
                return "list", 200, text_html, self.listing(int(num), sort)
        elif path.startswith("/private/"):
            num = path[9:]
            if num.isdigit() and int(num) < PRIVATE_PAGES and str(int(num)) == num:
                return "private", 200, text_html, self.private(int(num))
        elif path == "/robots.txt":
            return "robots", 200, "text/plain; charset=utf-8", self.robots
        elif path == "/sitemap.xml":
            return "sitemap", 200, "application/xml", self.sitemap
        return "missing", 404, text_html, self.not_found


# --------------------------------------------------------------------------------------------
# Request accounting
# --------------------------------------------------------------------------------------------


class Stats:
    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.requests = 0
        self.bytes = 0
        self.by_kind: Counter[str] = Counter()
        self.by_status: Counter[int] = Counter()
        self.by_resource: Counter[str] = Counter()  # content resources only
        self.by_raw: Counter[str] = Counter()  # every counted request target
        self.started = time.monotonic()
        self.first: float | None = None  # first and last counted request
        self.last: float | None = None

    def record(self, raw: str, key: str, kind: str, status: int, nbytes: int) -> None:
        now = time.monotonic()
        if self.first is None:
            self.first = now
        self.last = now
        self.requests += 1
        self.bytes += nbytes
        self.by_kind[kind] += 1
        self.by_status[status] += 1
        self.by_raw[raw] += 1
        if kind in CONTENT_KINDS:
            self.by_resource[key] += 1

    def snapshot(self, full: bool = False) -> dict:
        content = sum(self.by_resource.values())
        data = {
            "requests": self.requests,
            "resources": len(self.by_resource),
            "duplicate_fetches": content - len(self.by_resource),
            "bytes": self.bytes,
            "content_requests": content,
            "raw_urls": len(self.by_raw),
            "by_kind": dict(self.by_kind),
            "by_status": {str(k): v for k, v in self.by_status.items()},
            "top_resources": self.by_resource.most_common(10),
            "elapsed_s": round(time.monotonic() - self.started, 3),
            "fetching_s": round((self.last or 0) - (self.first or 0), 3),
        }
        if full:
            data["per_resource"] = dict(self.by_resource)
            data["per_raw_url"] = dict(self.by_raw)
        return data


# --------------------------------------------------------------------------------------------
# HTTP server
# --------------------------------------------------------------------------------------------


class Server:
    def __init__(self, site_factory, latency: float) -> None:
        self.site_factory = site_factory
        self.site: Site | None = None
        self.latency = latency
        self.stats = Stats()
        self.robots_down_until = 0.0  # monotonic time until which robots.txt answers 503
        self.writers: set[asyncio.StreamWriter] = set()

    def _response(
        self, status: int, ctype: str, body: bytes, keep_alive: bool, head: bool
    ) -> list[bytes]:
        header = (
            f"HTTP/1.1 {status} {REASONS.get(status, 'Unknown')}\r\n"
            f"Content-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
            f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n"
        ).encode("latin-1")
        return [header] if head else [header, body]

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.add(writer)
        try:
            while await self._one_request(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            self.writers.discard(writer)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _one_request(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return False
        except asyncio.LimitOverrunError:
            writer.writelines(self._response(431, "text/plain", b"too large\n", False, False))
            await writer.drain()
            return False
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            status = 505 if len(parts) == 3 and parts[2].startswith("HTTP/") else 400
            writer.writelines(self._response(status, "text/plain", b"bad request\n", False, False))
            await writer.drain()
            return False
        method, target, version = parts
        headers = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        conn = headers.get("connection", "").lower()
        keep_alive = "close" not in conn if version == "HTTP/1.1" else "keep-alive" in conn
        length = headers.get("content-length", "0")
        if length.isdigit() and int(length) > 0:  # discard any request body
            await reader.readexactly(int(length))
        if "chunked" in headers.get("transfer-encoding", "").lower():
            writer.writelines(self._response(400, "text/plain", b"no chunked\n", False, False))
            await writer.drain()
            return False

        is_head = method == "HEAD"
        if method not in ("GET", "HEAD"):
            out = self._response(405, "text/plain", b"GET/HEAD only\n", keep_alive, False)
            writer.writelines(out)
            await writer.drain()
            return keep_alive

        key, path, pairs = canonicalize(target)
        if path in ("/_stats", "/_reset", "/_robots_down"):
            if path == "/_reset":
                self.stats.reset()
                self.robots_down_until = 0.0
                body = b'{"reset": true}\n'
            elif path == "/_robots_down":  # robots.txt answers 503 for the next s seconds
                seconds = float(dict(pairs).get("s", "0"))
                self.robots_down_until = time.monotonic() + seconds
                body = json.dumps({"robots_down_s": seconds}).encode() + b"\n"
            else:
                full = dict(pairs).get("full", "") not in ("", "0")
                body = json.dumps(self.stats.snapshot(full)).encode() + b"\n"
            writer.writelines(self._response(200, "application/json", body, keep_alive, is_head))
            await writer.drain()
            return keep_alive

        kind, status, ctype, body = self.site.route(path, pairs)
        if kind == "robots" and time.monotonic() < self.robots_down_until:
            status, ctype, body = 503, "text/plain", b"unavailable\n"
        self.stats.record(target, key, kind, status, 0 if is_head else len(body))
        if self.latency > 0:
            await asyncio.sleep(self.latency)
        writer.writelines(self._response(status, ctype, body, keep_alive, is_head))
        await writer.drain()
        return keep_alive

    async def run(self, port: int) -> None:
        server = await asyncio.start_server(
            self.handle, HOST, port, limit=MAX_HEADER_BYTES, backlog=4096, reuse_address=True
        )
        actual = server.sockets[0].getsockname()[1]
        base = f"http://{HOST}:{actual}/"
        self.site = self.site_factory(base)
        self.stats.reset()
        print(f"READY {base}", flush=True)

        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        async with server:
            await stop.wait()
            server.close()
            for w in list(self.writers):
                w.transport.abort()  # drop open keep-alive connections right away
        print("STOPPED", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=2000, help="number of /p/{i} pages")
    parser.add_argument("--latency-ms", type=float, default=20.0, help="delay per response")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--seed", type=int, default=1, help="content seed")
    parser.add_argument("--page-kb", type=int, default=40, help="approximate page size in KB")
    parser.add_argument(
        "--nav-variants",
        type=int,
        default=0,
        help="distinct utm_medium values on nav links (0: one per page, the default)",
    )
    args = parser.parse_args(argv)

    def factory(base: str) -> Site:
        return Site(args.pages, args.seed, args.page_kb, base, args.nav_variants)

    asyncio.run(Server(factory, args.latency_ms / 1000.0).run(args.port))


if __name__ == "__main__":
    main()
