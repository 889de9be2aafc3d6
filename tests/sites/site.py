"""The fixture site the crawl tests run against, on 127.0.0.1.

Every resource has an id; the server maps each request to the id of the resource it
serves (so ``/about/`` and ``/about?utm_source=x`` both count against ``about``) and
counts requests per id. The site is served for two host names: ``127.0.0.1`` (the
start URL, which redirects) and ``localhost`` (the crawl's scope, as apex -> www).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, unquote, urlsplit

PAGE = """<!doctype html>
<html lang="en"><head><title>{title}</title>
<meta name="description" content="About {title}">
<style>body {{ color: red }}</style>
<script>var tracking = "SCRIPT-CONTENT";</script>
</head><body>
<h1>{title}</h1>
<p>Text of {title}.</p>
{body}
<p class="note">Written by the fixture team, who keep this test site tidy.</p>
</body></html>
"""


class QuietHandler(BaseHTTPRequestHandler):
    """The fixture servers' request handler: HTTP/1.1, no log lines, one way to answer."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body=b"", ctype="text/html; charset=utf-8", headers=None):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


class Site:
    """Pages by id: (path, query) -> id, and id -> (status, headers, body)."""

    def __init__(
        self,
        port: int,
        latency: float = 0.0,
        generated: int = 0,
        redirects: dict | None = None,
        linked: tuple[str, ...] = (),
    ):
        self.port = port
        self.latency = latency
        self.generated = generated
        # Extra redirects, path -> Location, linked from the home page unless an earlier
        # one leads there.
        self.redirects = redirects or {}
        self.linked = linked  # more paths linked from the home page
        self.base = f"http://localhost:{port}"
        self.counts: Counter[str] = Counter()
        self.agents: dict[str, set[str]] = {}
        self.lock = threading.Lock()

    # Ids of the HTML pages a complete crawl must emit, each exactly once.
    def expected_pages(self) -> set[str]:
        pages = {
            "/", "/about", "/docs/intro?a=1&b=2", "/cycle/a", "/cycle/b", "/new",
            "/~user/page", "/Case/Page", "/case/page", "/orphan", "/sitemap-only",
            "/deep/1", "/deep/2", "/deep/3", "/deep/4", "/ctype",
        }  # fmt: skip
        pages.update(f"/gen/{i}" for i in range(self.generated))
        return {self.base + p for p in pages}

    def resource(self, host: str, path: str, query: str) -> str:
        """The id of the resource a request names (how the server sees it)."""
        path = unquote(path)
        if len(path) > 1:
            path = path.rstrip("/")
        params = sorted(
            (k, v) for k, v in parse_qsl(query, keep_blank_values=True) if not k.startswith("utm_")
        )
        query = "&".join(f"{k}={v}" for k, v in params)
        return path + ("?" + query if query else "")

    def respond(self, host: str, rid: str):
        b = self.base
        if rid == "/robots.txt":
            body = (
                "User-agent: *\nDisallow: /private/\n"
                f"Sitemap: {b}/sitemap_index.xml\nSitemap: http://elsewhere.invalid/sitemap.xml\n"
            )
            return 200, "text/plain", body
        if rid == "/sitemap_index.xml":
            return 200, "application/xml", _sitemap("sitemapindex", [b + "/sitemap-pages.xml"])
        if rid == "/sitemap-pages.xml":
            urls = [b + "/orphan", b + "/docs/intro?b=2&a=1", "http://elsewhere.invalid/x"]
            return 200, "application/xml", _sitemap("urlset", urls)
        if rid == "/sitemap.xml":
            return 200, "application/xml", _sitemap("urlset", [b + "/sitemap-only"])
        if rid == "/start" and host.startswith("127.0.0.1"):
            return 301, {"Location": b + "/"}, ""
        if rid == "/redirect-me":
            return 302, {"Location": "/about"}, ""
        if rid == "/old":
            return 301, {"Location": "/new"}, ""
        if rid in self.redirects:
            return 302, {"Location": self.redirects[rid]}, ""
        if rid == "/file.pdf":
            return 200, "application/pdf", "%PDF-1.4 not html"
        if rid == "/ctype":
            return 200, "text/html; charset=utf-8", _page("Ctype", "<p>café</p>")
        if rid == "/private/secret":
            return 200, "text/html", _page("Secret", "")
        if rid.startswith(("/cal?", "/shop?")):
            return _paged(rid)
        links = PAGES.get(rid)
        if links is None and rid.startswith("/gen/"):
            i = int(rid.rsplit("/", 1)[1])
            if i < self.generated:
                kids = [f"/gen/{j}" for j in (2 * i + 1, 2 * i + 2) if j < self.generated]
                links = kids + ["/", "/gen/0?utm_source=gen"]
        if links is None:
            return 404, "text/html", "<html><body>not found</body></html>"
        if not self.generated:
            links = [link for link in links if not link.startswith("/gen/")]
        if rid == "/":
            targets = list(self.redirects.values())
            links = links + [p for i, p in enumerate(self.redirects) if p not in targets[:i]]
            links += self.linked
        title = "Home" if rid == "/" else rid
        anchors = "\n".join(
            f'<a href="{href.format(b=b, port=self.port)}">{href}</a>' for href in links
        )
        return 200, "text/html; charset=utf-8", _page(title, anchors + EXTRA.get(rid, ""))

    def handler(self):
        site = self

        class Handler(QuietHandler):
            def do_GET(self):  # noqa: N802
                host = self.headers.get("Host", "")
                parts = urlsplit(self.path)
                rid = site.resource(host, parts.path, parts.query)
                with site.lock:
                    site.counts[rid] += 1
                    agent = self.headers.get("User-Agent", "")
                    site.agents.setdefault(agent, set()).add(rid)
                if site.latency and rid.startswith("/gen/"):
                    time.sleep(site.latency)
                status, ctype, body = site.respond(host, rid)
                headers = {"ETag": f'"{hash(rid) & 0xFFFF:x}"'}
                if isinstance(ctype, dict):  # a redirect: its headers
                    headers.update(ctype)
                    ctype = "text/html"
                self.reply(status, body, ctype, headers)

        return Handler


def _page(title: str, body: str) -> str:
    return PAGE.format(title=title, body=body)


# A counter calendar: every month links the next and the previous one, for ever, and
# every month looks the same. And a shop's real pagination: 30 pages of 10 products
# each, built from few words, so pages share much of their vocabulary but not their
# products. Both are reached from /traps only.
SHOP_PAGES = 30
_COLORS = "red blue green black white grey amber olive navy coral ivory teal".split()
_THINGS = "chair table lamp shelf desk stool sofa bench rug clock mirror vase".split()
_STUFF = "oak pine steel glass linen wool brass cotton walnut maple cane jute".split()


def _product(i: int) -> str:
    color, thing = _COLORS[i % 12], _THINGS[i // 12 % 12]
    stuff, other = _STUFF[i * 5 % 12], _STUFF[i * 7 % 12]
    return (
        f"<li><h3>The {color} {thing}</h3><p>A {thing} of {stuff} and {other}, "
        f"finished in {color}. Price: {10 + i * 3 % 97} euros.</p></li>"
    )


def _paged(rid: str):
    name, _, value = rid.partition("?")[2].partition("=")
    try:
        n = int(value)
    except ValueError:
        return 404, "text/html", "<html><body>not found</body></html>"
    if name == "month":
        body = (
            f"<h2>Month {n}</h2><p>No events are planned this month. Check back later, "
            f"or subscribe to the calendar to hear about new events.</p>"
            f'<a href="/cal?month={n - 1}">Previous month</a> '
            f'<a href="/cal?month={n + 1}">Next month</a>'
        )
        return 200, "text/html; charset=utf-8", _page("Calendar", body)
    if name != "page" or not 1 <= n <= SHOP_PAGES:
        return 404, "text/html", "<html><body>not found</body></html>"
    items = "".join(_product((n - 1) * 10 + i) for i in range(10))
    nav = "".join(
        f'<a href="/shop?page={p}">Page {p}</a> ' for p in (n - 1, n + 1) if 1 <= p <= SHOP_PAGES
    )
    body = f"<h2>Page {n} of {SHOP_PAGES}</h2><ul>{items}</ul>{nav}"
    return 200, "text/html; charset=utf-8", _page("Shop", body)


def _sitemap(kind: str, urls: list[str]) -> str:
    tag = "sitemap" if kind == "sitemapindex" else "url"
    entries = "".join(f"<{tag}><loc>{u.replace('&', '&amp;')}</loc></{tag}>" for u in urls)
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>'
        f'<{kind} xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</{kind}>'
    )


# Links of each page, as written in its HTML ({b} is the site's base URL).
PAGES = {
    "/": [
        "/docs/intro?b=2&a=1",
        "/docs/intro?a=1&b=2#top",
        "http://LOCALHOST:{port}/docs/intro?a=1&b=2&utm_source=news",
        "/about",
        "/about/",
        "HTTP://localhost:{port}/about?utm_campaign=z#team",
        "/private/secret",
        "/missing",
        "/redirect-me",
        "/old",
        "/cycle/a",
        "/%7Euser/page",
        "/~user/page",
        "/Case/Page",
        "/case/page",
        "/file.pdf",
        "/deep/1",
        "/ctype",
        "/gen/0",
        "mailto:someone@example.invalid",
        "javascript:void(0)",
        "http://elsewhere.invalid/page",
        "http://127.0.0.2:{port}/outside",
        "#section",
    ],
    "/about": ["/", "./about", "../docs/intro?a=1&b=2"],
    "/docs/intro?a=1&b=2": ["/", "/about#x", "/docs/../about"],
    "/cycle/a": ["/cycle/b"],
    "/cycle/b": ["/cycle/a", "/cycle/b/"],
    "/new": ["/old"],
    "/~user/page": [],
    "/Case/Page": [],
    "/case/page": [],
    "/orphan": [],
    "/sitemap-only": [],
    "/deep/1": ["/deep/2"],
    "/deep/2": ["/deep/3"],
    "/deep/3": ["/deep/4"],
    "/deep/4": [],
    "/traps": ["/cal?month=1", "/shop?page=1"],
}

EXTRA = {
    "/docs/intro?a=1&b=2": """
<h2>Table</h2>
<table><tr><th>Name</th><th>Value</th></tr><tr><td>a</td><td>1</td></tr></table>
<pre><code class="language-python">print("hello")</code></pre>
<ul><li>one</li><li>two</li></ul>
""",
}


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # a crawler opens connections in bursts


class Serving:
    """``handler`` served on a free port of 127.0.0.1 from a background thread, for the
    life of a ``with`` block (on ``port``, or a free one); ``base`` is its URL."""

    def __init__(self, handler, port: int = 0):
        self.httpd = Server(("127.0.0.1", port), handler)
        self.port = self.httpd.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


class SiteServer:
    """The fixture site in a background thread; ``with SiteServer() as site: ...``."""

    def __init__(self, **options):
        self.httpd = Server(("127.0.0.1", 0), None)
        self.site = Site(self.httpd.server_address[1], **options)
        # Links are written with {port}; bake it in once.
        self.httpd.RequestHandlerClass = self.site.handler()
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> Site:
        self.thread.start()
        return self.site

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
