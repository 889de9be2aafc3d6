"""Rendering pages in a browser: Debian's Chromium, driven through scrapy-playwright.

``-a render=`` (``CRAWLYX_RENDER`` without it) says when a page goes through the browser:

- ``never``: plain HTTP only; no browser, no driver, no download handler.
- ``auto`` (default): plain HTTP first; a page whose HTML is an empty JavaScript shell
  (:func:`crawlyx.content.page.is_shell`) is fetched again through the browser. Without a
  browser at ``CRAWLYX_CHROMIUM_PATH``: one warning, then as ``never``.
- ``always``: every page request goes through the browser (sitemaps and robots.txt
  stay plain HTTP). Without a browser the crawl does not start.

The browser's download handler (:mod:`crawlyx.render.handler`) is installed for http and
https only when a crawl may render: Scrapy's own HTTP handler, which hands requests with
``meta["playwright"]`` to scrapy-playwright's, imported with the first of them, so plain
requests are unchanged. In the browser, only the page's own
origin is fetched, and never an image, a font or media (:func:`abort_request`). That
check sees neither the redirects the browser follows nor the address a name resolves
to: the SSRF guard is enforced below it, on every connection the browser makes, by the
proxy its pages connect through (:mod:`crawlyx.render.proxy`, :mod:`crawlyx.render.browser`).

A render that fails (a browser error, a timeout, a crash, a navigation off the
crawl's origin) is recorded as ``render`` and the page's HTTP version is emitted
instead, fetched again over plain HTTP (a page is not kept in the request: requests go
through Redis, where anyone who can write could plant one).
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
from urllib.parse import urlsplit

from crawlyx.arguments import RENDER_MODES, CrawlArgs

logger = logging.getLogger(__name__)

HANDLER = "crawlyx.render.handler.RenderHandler"  # Scrapy's HTTP, the browser's on demand

# request.meta keys. RENDER_META: "browser" on a request for the browser, "fallback" on
# the plain re-fetch after a failed render; either way the page is not rendered again.
RENDER_META = "crawlyx_render"
# Why the browser failed on a page fetched again over plain HTTP: recorded with the outcome.
RENDER_FAILED_META = "crawlyx_render_failed"
# True on a page sent to the browser after its HTTP version was read fine (auto): an
# HTTP error in the browser is then a failed render, and the page is fetched again.
HTTP_PAGE_META = "crawlyx_http_page"

WAIT_UNTIL = ("load", "domcontentloaded", "networkidle")
HOST_NAME = re.compile(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*")  # CRAWLYX_RENDER_ALLOWED_HOSTS

# Nothing leaves for anything but the page: no background services, updates or sync.
# No --disable-features or --enable-features here: Chromium keeps only the last of each
# switch, so ours would replace Playwright's lists (which turn off network time queries,
# optimization hints, HTTPS upgrades of the crawl's http:// pages...). What Chromium still
# fetches for itself goes to a proxy that serves nothing (crawlyx.render.browser).
CHROMIUM_ARGS = (
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-gpu",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--no-default-browser-check",
    "--no-pings",
    "--mute-audio",
)

BLOCKED_RESOURCES = frozenset({"image", "font", "media"})


class RenderUnavailable(ValueError):
    """render=always without a browser, or a rendering setting with a bad value."""


def chromium_path(settings) -> str:
    return settings.get("CRAWLYX_CHROMIUM_PATH") or ""


def browser_available(path: str) -> bool:
    return bool(path) and os.path.isfile(path) and os.access(path, os.X_OK)


def _missing(path: str) -> str:
    return (
        f"no Chromium executable at {path!r} (setting CRAWLYX_CHROMIUM_PATH); "
        "install it (apt-get install chromium) or point CRAWLYX_CHROMIUM_PATH at one"
    )


def check_settings(settings) -> None:
    """Raise :class:`RenderUnavailable` naming the first rendering setting with a bad
    value, whether or not the crawl renders."""
    requested({}, settings)  # CRAWLYX_RENDER
    wait = settings.get("CRAWLYX_RENDER_WAIT_UNTIL")
    if wait not in WAIT_UNTIL:
        raise RenderUnavailable(
            f"CRAWLYX_RENDER_WAIT_UNTIL must be one of {', '.join(WAIT_UNTIL)}, not {wait!r}"
        )
    if settings.getint("CRAWLYX_RENDER_MAX_PAGES") < 1:
        raise RenderUnavailable("CRAWLYX_RENDER_MAX_PAGES must be 1 or more")
    if settings.getfloat("CRAWLYX_RENDER_TIMEOUT") <= 0:
        raise RenderUnavailable("CRAWLYX_RENDER_TIMEOUT must be more than 0 seconds")
    for host in settings.getlist("CRAWLYX_RENDER_ALLOWED_HOSTS"):
        if not _host(host):
            raise RenderUnavailable(
                f"CRAWLYX_RENDER_ALLOWED_HOSTS: {host!r} is not a host name or address"
                " (example.com, 127.0.0.1; no scheme, port or path)"
            )


def _host(text: str) -> bool:
    """Whether ``text`` is a host as the browser's proxy compares it (its hostname)."""
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return HOST_NAME.fullmatch(text) is not None
    return True


def check(mode: str, settings) -> None:
    """Raise :class:`RenderUnavailable` when ``mode`` cannot work with ``settings``."""
    if mode == "never":
        return
    check_settings(settings)
    path = chromium_path(settings)
    if mode == "always" and not browser_available(path):
        raise RenderUnavailable(f"render=always: {_missing(path)}")


def requested(arguments: dict, settings) -> str:
    """The render mode asked for: ``-a render=`` (checked with the other arguments), or
    ``CRAWLYX_RENDER`` without it."""
    if arguments.get("render"):
        return CrawlArgs.parse(**arguments).render
    mode = settings.get("CRAWLYX_RENDER") or "auto"
    if mode not in RENDER_MODES:
        raise RenderUnavailable(
            f"CRAWLYX_RENDER must be one of {', '.join(RENDER_MODES)}, not {mode!r}"
        )
    return mode


def run_mode(mode: str, settings) -> str:
    """The render mode a crawl asked for ``mode`` runs with: ``never`` for ``auto``
    without a browser. The spider decides it; the add-on (:mod:`crawlyx.addon`) then
    installs the browser's download handlers (:func:`install`) when it is not never."""
    check(mode, settings)
    if mode == "never":
        return mode
    path = chromium_path(settings)
    if not browser_available(path):  # auto: plain HTTP only
        logger.warning("render=auto: %s; pages are not rendered", _missing(path))
        return "never"
    if settings.frozen and not installed(settings):
        # A spider built after the add-ons ran (a test, a tool): no handlers for it.
        if mode == "always":
            raise RenderUnavailable("render=always: settings frozen before the spider existed")
        logger.warning("render=auto: settings frozen before the spider existed; no rendering")
        return "never"
    return mode


def installed(settings) -> bool:
    """The browser's download handlers are the crawl's, for http and https."""
    handlers = settings.getwithbase("DOWNLOAD_HANDLERS")
    return handlers.get("http") == handlers.get("https") == HANDLER


def install(settings, mode: str) -> None:
    """Install the browser's download handlers and scrapy-playwright's settings, at the
    add-on's priority (the project's settings and -s stay above)."""
    handlers = settings["DOWNLOAD_HANDLERS"]
    for scheme in ("http", "https"):
        handlers.set(scheme, HANDLER, priority="addon")
    path = chromium_path(settings)
    playwright = {
        "PLAYWRIGHT_BROWSER_TYPE": "chromium",
        "PLAYWRIGHT_LAUNCH_OPTIONS": launch_options(path),
        "PLAYWRIGHT_MAX_CONTEXTS": 1,
        "PLAYWRIGHT_MAX_PAGES_PER_CONTEXT": settings.getint("CRAWLYX_RENDER_MAX_PAGES"),
        "PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT": settings.getfloat("CRAWLYX_RENDER_TIMEOUT") * 1000,
        "PLAYWRIGHT_ABORT_REQUEST": "crawlyx.render.abort_request",
        "PLAYWRIGHT_RESTART_DISCONNECTED_BROWSER": True,
    }
    for name, value in playwright.items():
        settings.set(name, value, priority="addon")
    logger.info(
        "Rendering: %s, Chromium at %s, %d pages at once",
        mode,
        path,
        settings.getint("CRAWLYX_RENDER_MAX_PAGES"),
    )


def launch_options(path: str, euid: int | None = None) -> dict:
    """``PLAYWRIGHT_LAUNCH_OPTIONS`` for the Chromium at ``path``, run by user ``euid``
    (this process's by default).

    Chromium's sandbox cannot start as root, so root runs it with ``--no-sandbox`` and
    anyone else keeps the sandbox. Playwright adds ``--no-sandbox`` itself unless
    ``chromium_sandbox`` is true, so that option is what decides. The proxies are
    added when the browser is launched (:class:`crawlyx.render.browser.BrowserHandler`).
    """
    root = (os.geteuid() if euid is None else euid) == 0
    return {
        "executable_path": path,
        "headless": True,
        "chromium_sandbox": not root,
        "args": [*CHROMIUM_ARGS, "--no-sandbox"] if root else list(CHROMIUM_ARGS),
    }


def browser_meta(settings) -> dict:
    """The meta that sends a request through the browser (plain data: it is queued)."""
    return {
        "playwright": True,
        RENDER_META: "browser",
        "playwright_page_goto_kwargs": {"wait_until": settings.get("CRAWLYX_RENDER_WAIT_UNTIL")},
    }


def from_browser(response) -> bool:
    """The response was rendered by the browser (scrapy-playwright flags it)."""
    return "playwright" in response.flags


def abort_request(request) -> bool:
    """``PLAYWRIGHT_ABORT_REQUEST``: True for what the browser must not fetch.

    Images, fonts and media, always; and anything not on the page's own origin. The
    page's origin is its main frame's; before the first navigation commits (the main
    frame is still ``about:blank``), the navigation itself is allowed, on its origin.
    """
    try:
        if request.resource_type in BLOCKED_RESOURCES:
            return True
        page_url = request.frame.page.main_frame.url
    except Exception:  # a service worker's request, a closed page: nothing to allow
        return True
    target = _origin(request.url)
    if target is None:
        return True
    if page_url in ("", "about:blank"):
        first = request
        while first.redirected_from is not None:
            first = first.redirected_from
        return target != _origin(first.url)
    return target != _origin(page_url)


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(url: str) -> tuple[str, str, int] | None:
    try:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in _DEFAULT_PORTS or not parts.hostname:
            return None
        return scheme, parts.hostname.lower(), parts.port or _DEFAULT_PORTS[scheme]
    except ValueError:
        return None
