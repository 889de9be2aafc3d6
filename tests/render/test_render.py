"""Rendering through Debian's Chromium (``-a render=never|auto|always``), end to end.

The fixture site here serves one origin under two names: pages on ``localhost``, and
``127.0.0.1`` as "another origin" that the browser must never be sent to. The crawls'
browser may connect to these loopback hosts only (``CRAWLYX_RENDER_ALLOWED_HOSTS``): any
other name is refused before it is looked up, so no DNS query leaves the machine. Under CI
(``CI`` set) a missing Chromium fails these tests; elsewhere it skips them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from crawlyx import render
from crawlyx.content.page import analyze
from tests.policy.test_ssrf import Server
from tests.test_settings import ROOT

JS_TEXT = "JS-WRITTEN-TEXT: this paragraph exists only after the script has run."
JS_PAGE = """<!doctype html>
<html lang="en"><head><title>App</title>
<script src="http://127.0.0.1:{port}/other-origin.js"></script>
</head><body>
<div id="root"></div>
<img src="/picture.png" alt="a picture">
<script src="/app.js"></script>
</body></html>
"""
APP_JS = """
document.getElementById("root").innerHTML =
  "<h1>Rendered heading</h1><p>{text}</p><p>A second paragraph, also written by the" +
  " script, so the page has real content once it runs.</p>" +
  "<a href='/linked-from-js'>a link the script wrote</a>";
""".replace("{text}", JS_TEXT)
# A shell whose script never arrives in time: the browser's navigation times out.
SLOW_PAGE = """<!doctype html>
<html><head><title>Slow</title></head><body><div id="app"></div>
<script src="/slow.js"></script></body></html>
"""
PLAIN_PAGE = """<!doctype html>
<html lang="en"><head><title>{title}</title>
<script>var analytics = 1;</script></head><body>
<h1>{title}</h1>
<p>A short but real page: a heading and a paragraph, no rendering needed.</p>
{links}
</body></html>
"""


class RenderSite:
    """Counts requests per path; ``/slow.js`` waits until the test ends."""

    def __init__(self, links: list[str], slow: float = 30.0, redirects: dict | None = None):
        self.links = links
        self.redirects = {"/moved": "/linked-from-js", **(redirects or {})}
        self.slow = slow
        self.counts: Counter[str] = Counter()
        self.released = threading.Event()
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.base = f"http://localhost:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.released.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def respond(self, path: str):
        if path == "/":
            anchors = "".join(f'<a href="{link}">{link}</a>\n' for link in self.links)
            return 200, "text/html", PLAIN_PAGE.format(title="Home", links=anchors)
        if path in ("/plain", "/linked-from-js"):
            return 200, "text/html", PLAIN_PAGE.format(title=path, links='<a href="/">home</a>')
        if path == "/js":
            return 200, "text/html", JS_PAGE.format(port=self.port)
        if path == "/app.js":
            return 200, "application/javascript", APP_JS
        if path in self.redirects:
            return 301, "text/html", ""
        if path == "/slow":
            return 200, "text/html", SLOW_PAGE
        if path == "/slow.js":
            self.released.wait(self.slow)
            return 200, "application/javascript", "document.title = 'late';"
        return 404, "text/html", "<html><body>not found</body></html>"

    def _handler(self):
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):  # noqa: N802
                path = urlsplit(self.path).path
                host = self.headers.get("Host", "").split(":")[0]
                with site.lock:
                    site.counts[path if host == "localhost" else f"{host}{path}"] += 1
                status, ctype, body = site.respond(path)
                data = body.encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", ctype)
                    if status == 301:
                        self.send_header("Location", site.redirects[path])
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the browser gave up on it

            def log_message(self, *args):
                pass

        return Handler


# Every host a render crawl here may name; the browser is refused any other unresolved.
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "127.0.0.2")
# The browser's navigation timeout for crawls whose pages must render: long enough for a
# cold browser's first page on a loaded machine. /slow's script (30 s) times out past it.
RENDERS = {"CRAWLYX_RENDER_TIMEOUT": 10}


def run(crawl, tmp_path, site, mode, *args, settings=None):
    errors = tmp_path / f"errors-{mode}-{time.monotonic_ns()}.jsonl"
    started = time.monotonic()
    result = crawl(
        f"start={site.base}/",
        f"render={mode}",
        "sitemap=0",
        f"errors={errors}",
        *args,
        settings={
            "CRAWLYX_MARKDOWN_WORKERS": 1,
            "CRAWLYX_RENDER_ALLOWED_HOSTS": ",".join(LOOPBACK_HOSTS),
            **(settings or {}),
        },
    )
    result.seconds = time.monotonic() - started
    result.errors = [json.loads(line) for line in errors.read_text().splitlines()]
    result.by_url = {item["url"]: item for item in result.items}
    return result


# -- end to end, with the browser ---------------------------------------------------------


def test_auto_renders_only_the_shell_and_keeps_http_when_rendering_fails(chromium, crawl, tmp_path):
    with RenderSite(["/js", "/plain", "/slow"]) as site:
        result = run(crawl, tmp_path, site, "auto", settings=RENDERS)
    assert result.returncode == 0, result.log[-3000:]
    items = result.by_url
    base = site.base
    assert set(items) == {f"{base}/", f"{base}/js", f"{base}/plain", f"{base}/slow",
                          f"{base}/linked-from-js"}  # fmt: skip
    # The shell, rendered: the script's text and link are in the page.
    js = items[f"{base}/js"]
    assert js["render"] == "browser"
    assert JS_TEXT in js["markdown"] and "# Rendered heading" in js["markdown"]
    assert f"{base}/linked-from-js" in js["links"]
    assert site.counts["/js"] == 2  # once over HTTP, once in the browser
    assert site.counts["/app.js"] == 1
    # The browser fetched nothing from another origin, and no image.
    assert not any(path.startswith("127.0.0.1") for path in site.counts), site.counts
    assert "/picture.png" not in site.counts
    # Short real pages are not shells: plain HTTP, fetched exactly once.
    for path in ("/", "/plain", "/linked-from-js"):
        assert items[base + path]["render"] == "http"
        assert site.counts[path] == 1, (path, site.counts)
    # The browser timed out on /slow: its HTTP version is emitted, fetched again (no page
    # travels through the queue), and the failure recorded.
    slow = items[f"{base}/slow"]
    assert slow["render"] == "http" and slow["title"] == "Slow" and slow["status"] == 200
    assert site.counts["/slow"] == 3
    assert [(e["url"], e["class"]) for e in result.errors] == [(f"{base}/slow", "render")]
    assert "Timeout" in result.errors[0]["detail"]
    assert result.stat("crawlyx/error/render") == "1"
    assert result.stat("crawlyx/frontier/lost_leases") is None
    assert result.stat("finish_reason") == "'finished'"
    print(f"render=auto crawl: {result.seconds:.1f} s")


def test_never_does_not_render_or_start_a_browser(chromium, crawl, tmp_path):
    with RenderSite(["/js"]) as site:
        result = run(crawl, tmp_path, site, "never")
    assert result.returncode == 0, result.log[-3000:]
    js = result.by_url[f"{site.base}/js"]
    assert js["render"] == "http"
    assert JS_TEXT not in js["markdown"]
    assert site.counts["/js"] == 1 and "/app.js" not in site.counts
    assert f"{site.base}/linked-from-js" not in result.by_url
    assert "scrapy-playwright" not in result.log and "playwright/" not in result.log
    print(f"render=never crawl: {result.seconds:.1f} s")


def test_auto_starts_no_driver_for_a_site_without_shells(chromium, crawl, tmp_path):
    with RenderSite(["/plain"]) as site:
        result = run(crawl, tmp_path, site, "auto")
    assert result.returncode == 0, result.log[-3000:]
    assert {item["render"] for item in result.items} == {"http"} and len(result.items) == 2
    assert site.counts["/"] == site.counts["/plain"] == 1
    assert "Rendering: auto" in result.log  # the handler is installed...
    assert "Starting download handler" not in result.log  # ...but Playwright never started
    print(f"render=auto crawl without shells: {result.seconds:.1f} s")


def test_always_renders_every_page_and_refetches_over_http_on_failure(chromium, crawl, tmp_path):
    with RenderSite(["/plain", "/slow", "/moved"]) as site:
        result = run(crawl, tmp_path, site, "always", settings=RENDERS)
    assert result.returncode == 0, result.log[-3000:]
    items = result.by_url
    base = site.base
    assert set(items) == {f"{base}/", f"{base}/plain", f"{base}/slow", f"{base}/linked-from-js"}
    for path in ("/", "/plain", "/linked-from-js"):
        assert items[base + path]["render"] == "browser"
        assert site.counts[path] == 1  # straight to the browser, never over plain HTTP
    # The browser followed /moved's redirect: the page is the one it ended on.
    assert items[f"{base}/linked-from-js"]["final_url"] == f"{base}/linked-from-js"
    assert site.counts["/moved"] == 1
    assert "# /plain" in items[f"{base}/plain"]["markdown"]
    # The browser timed out on /slow; nothing was fetched over HTTP yet: it is now.
    assert items[f"{base}/slow"]["render"] == "http"
    assert items[f"{base}/slow"]["title"] == "Slow"
    assert site.counts["/slow"] == 2
    assert [(e["url"], e["class"]) for e in result.errors] == [(f"{base}/slow", "render")]
    assert result.stat("crawlyx/frontier/lost_leases") is None
    print(f"render=always crawl: {result.seconds:.1f} s")


def test_the_browser_cannot_follow_a_redirect_to_a_private_address(chromium, crawl, tmp_path):
    # Playwright's request routing (and so the origin check) never sees the redirects the
    # browser follows by itself: only the proxy the browser connects through stops this.
    with Server("127.0.0.2") as internal:
        secret = f"http://127.0.0.2:{internal.port}/secret"
        internal.route("/secret", body="<html><body><h1>Secret</h1></body></html>")
        with RenderSite(["/inside"], redirects={"/inside": secret}) as site:
            result = run(crawl, tmp_path, site, "always", settings=RENDERS)
    assert result.returncode == 0, result.log[-3000:]
    assert internal.paths == []  # nothing connected to 127.0.0.2, not even the browser
    assert site.counts["/inside"] == 2  # in the browser, then over plain HTTP
    assert result.stat("crawlyx/ssrf/browser_blocked") == "1"
    assert "SSRF guard refused the browser a connection to 127.0.0.2:" in result.log
    # The browser failed; the plain re-fetch is refused too, its redirect being off the
    # crawl's origin: one error for the URL, naming both.
    [error] = result.errors
    assert error["url"] == f"{site.base}/inside" and error["class"] == "out_of_scope"
    assert secret in error["detail"] and "after the browser failed" in error["detail"]
    assert set(result.by_url) == {f"{site.base}/"}
    assert result.by_url[f"{site.base}/"]["render"] == "browser"


# -- before anything starts -----------------------------------------------------------------


def test_bad_render_argument_stops_before_any_request(crawl):
    with RenderSite([]) as site:
        result = crawl(f"start={site.base}/", "render=sometimes")
    assert result.returncode == 2
    lines = [line for line in result.log.splitlines() if line.strip()]
    assert lines == ["crawlyx: bad argument render: 'sometimes' is not one of never, auto, always"]
    assert not site.counts


def test_always_without_a_browser_stops_before_any_request(crawl):
    with RenderSite([]) as site:
        result = crawl(
            f"start={site.base}/",
            "render=always",
            settings={"CRAWLYX_CHROMIUM_PATH": "/nonexistent"},
        )
    assert result.returncode == 2
    lines = [line for line in result.log.splitlines() if line.strip()]
    assert len(lines) == 1, result.log
    assert "render=always" in lines[0]
    assert "'/nonexistent'" in lines[0] and "CRAWLYX_CHROMIUM_PATH" in lines[0]
    assert not site.counts


def test_auto_without_a_browser_warns_once_and_crawls_over_http(crawl, tmp_path):
    with RenderSite(["/js"]) as site:
        result = run(crawl, tmp_path, site, "auto", settings={"CRAWLYX_CHROMIUM_PATH": "/nope"})
    assert result.returncode == 0, result.log[-3000:]
    warnings = [line for line in result.log.splitlines() if "render=auto: no Chromium" in line]
    assert len(warnings) == 1 and "WARNING" in warnings[0]
    assert "at '/nope' (setting CRAWLYX_CHROMIUM_PATH)" in warnings[0]
    assert "scrapy-playwright" not in result.log
    assert result.by_url[f"{site.base}/js"]["render"] == "http"
    assert site.counts["/js"] == 1


# -- units ------------------------------------------------------------------------------


def test_shell_detection():
    def shell(html):
        return analyze(html, "http://x.test/", "http://x.test")["shell"]

    assert shell(JS_PAGE.format(port=1))
    assert shell("<html><body><div id='app'>Loading…</div><script src=a.js></script></body>")
    assert shell("<html><body><app-root></app-root></body></html>")
    assert shell("<html><body><div class=c></div><script src=/bundle.js></script></body>")
    assert shell("<html><head><script src=/app.js></script></head></html>")  # no body at all
    assert shell("<html><body><noscript><p>Enable JavaScript.</p></noscript>"
                 "<script>boot()</script></body></html>")  # fmt: skip
    # A short but real page is not a shell, with or without scripts.
    real = "<html><body><h1>Short</h1><p>" + "real text " * 15 + "</p></body></html>"
    assert not shell(real)
    assert not shell(real.replace("<body>", "<body><script src=/ga.js></script>"))
    assert not shell(PLAIN_PAGE.format(title="T", links=""))
    # Plenty of text: not a shell, whatever else is there.
    assert not shell("<html><body><div id=root></div><script></script><div>"
                     + "word " * 60 + "</div></body></html>")  # fmt: skip
    assert not shell("<html><body><div>short</div>"
                     "<script type='application/ld+json'>{}</script></body></html>")  # fmt: skip
    assert not shell("")


class _Frame:
    def __init__(self, url):
        self.url = url
        self.page = self
        self.main_frame = self


class _Request:
    def __init__(self, url, kind="script", page="http://a.test/p", redirected_from=None):
        self.url = url
        self.resource_type = kind
        self.frame = _Frame(page)
        self.redirected_from = redirected_from


def test_abort_request_keeps_the_browser_on_the_page_origin():
    abort = render.abort_request
    assert not abort(_Request("http://a.test/app.js"))
    assert not abort(_Request("http://a.test:80/api", "fetch"))
    assert abort(_Request("http://b.test/app.js"))
    assert abort(_Request("https://a.test/app.js"))  # another scheme is another origin
    assert abort(_Request("http://a.test:8080/app.js"))
    for kind in ("image", "font", "media"):
        assert abort(_Request("http://a.test/x", kind))
    assert abort(_Request("data:text/javascript,1"))
    # Before the first navigation commits, the navigation is what sets the origin.
    first = _Request("http://a.test/p", "document", page="about:blank")
    assert not abort(first)
    assert not abort(_Request("http://a.test/q", "document", "about:blank", first))
    assert abort(_Request("http://evil.test/", "document", "about:blank", first))


def test_the_sandbox_is_off_only_for_root():
    # Playwright passes --no-sandbox unless chromium_sandbox is true.
    as_root = render.launch_options("/chromium", euid=0)
    assert as_root["chromium_sandbox"] is False and "--no-sandbox" in as_root["args"]
    for euid in (1, 1000):
        user = render.launch_options("/chromium", euid=euid)
        assert user["chromium_sandbox"] is True and "--no-sandbox" not in user["args"]
        assert user["executable_path"] == "/chromium" and user["headless"] is True
    assert "--no-sandbox" not in render.CHROMIUM_ARGS
    # This process's own user decides by default, and that is what a crawl launches with.
    here = render.launch_options("/chromium")
    assert here == render.launch_options("/chromium", euid=os.geteuid())


def test_no_feature_switches_replace_playwrights():
    # Chromium keeps only the last --disable-features (and --enable-features): one of ours
    # would replace Playwright's lists, which stop network time queries, optimization
    # hints and HTTPS upgrades of http:// pages, among others.
    for options in (render.launch_options("/chromium", euid=0), render.launch_options("/c")):
        switches = [arg.partition("=")[0] for arg in options["args"]]
        assert "--disable-features" not in switches and "--enable-features" not in switches
        assert len(switches) == len(set(switches))


def test_browser_requests_are_plain_data():
    from scrapy.settings import Settings

    settings = Settings()
    settings.setmodule("crawlyx.settings")
    meta = render.browser_meta(settings)
    assert json.loads(json.dumps(meta)) == meta


def test_playwright_is_imported_with_the_first_page_to_render():
    """A crawl that may render fetches over plain HTTP until a page needs the browser:
    Playwright (a tenth of a second, 15 MB) is not imported before; http and https share
    one handler, and so one browser."""
    code = """
import sys
from scrapy.utils.reactor import install_reactor
install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")
from scrapy.core.downloader.handlers import DownloadHandlers
from scrapy.spiders import Spider
from scrapy.utils.test import get_crawler
from crawlyx import render
from tests.test_settings import crawl_settings
settings = crawl_settings().copy()
render.install(settings, "auto")
handlers = DownloadHandlers(get_crawler(Spider, settings.copy_to_dict()))
http = handlers._get_handler("http")
print(http is handlers._get_handler("https"), "scrapy_playwright" in sys.modules)
print(type(http.browser).__name__, "scrapy_playwright" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.stdout.split("\n")[:2] == ["True False", "BrowserHandler True"], out.stderr
