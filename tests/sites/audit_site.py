"""A fixture site with every finding of the site audit, each in a known place, on 127.0.0.1.

Served from ``/``: broken links (a 404 and a 500), a two-hop redirect chain, a redirect
loop, links to redirects, a sitemap orphan, a noindex page, a linked page robots.txt
disallows, canonicals to a 404, to a redirect and to a page with a canonical of its own,
exact and near-duplicate pages, duplicate and missing titles and descriptions, and a
page deeper than 4 links. :data:`LINKS` is what each page links to (path -> [(href,
anchor)]); the expected audit is written out in tests/graph/test_audit_crawl.py.
"""

from __future__ import annotations

import random
import string
import threading
import time
import zlib

from tests.sites.site import QuietHandler, Serving, _sitemap

LINKS = {
    "/": [
        ("/about", "About"), ("/missing", "Missing page"), ("/error", "Server error"),
        ("/old", "Old page"), ("/r1", "Chain"), ("/loop-a", "Loop"),
        ("/private/page", "Private"), ("/noindex", "Hidden"), ("/dup-a", "Dup A"),
        ("/dup-b", "Dup B"), ("/near-a", "Near A"), ("/near-b", "Near B"),
        ("/deep/1", "Deep"), ("/canon-404", "Canon 404"), ("/canon-redirect", "Canon redirect"),
        ("/canon-chain", "Canon chain"), ("/same-a", "Same A"), ("/same-b", "Same B"),
        ("/untitled", "Untitled"),
    ],
    "/about": [("/", "Home"), ("/missing", "Gone"), ("/gone", "Moved")],
    "/noindex": [("/behind-noindex", "Behind")],
    "/deep/1": [("/deep/2", "2")],
    "/deep/2": [("/deep/3", "3")],
    "/deep/3": [("/deep/4", "4")],
    "/deep/4": [("/deep/5", "5")],
}  # fmt: skip

# path -> (status, Location)
REDIRECTS = {
    "/old": (301, "/new"),
    "/r1": (301, "/r2"),
    "/r2": (302, "/r3"),
    "/gone": (301, "/missing"),
    "/loop-a": (302, "/loop-b"),
    "/loop-b": (302, "/loop-a"),
}

# path -> (title, description, canonical, robots); "" leaves the tag out.
HEADS = {
    "/": ("Home", "The audited site", "", ""),
    "/noindex": ("Hidden", "A page kept out of indexes", "", "noindex"),
    "/canon-404": ("Canon 404", "Canonical to a 404", "/missing", ""),
    "/canon-redirect": ("Canon redirect", "Canonical to a redirect", "/old", ""),
    "/canon-chain": ("Canon chain", "Canonical to a page with its own", "/canon-redirect", ""),
    "/same-a": ("Same title", "First of two titled alike", "", ""),
    "/same-b": ("Same title", "Second of two titled alike", "", ""),
    "/untitled": ("", "", "", ""),
}

HEAD = """<!doctype html>
<html lang="en"><head>{title}{description}{canonical}{robots}</head><body>
<main><h1>{h1}</h1>
{body}
{links}
</main></body></html>
"""


def _words(seed: int, n: int = 300) -> list[str]:
    rng = random.Random(seed)
    vocabulary = ["".join(rng.choices(string.ascii_lowercase, k=7)) for _ in range(1500)]
    return [rng.choice(vocabulary) for _ in range(n)]


def _prose(words: list[str]) -> str:
    return "\n".join(f"<p>{' '.join(words[i : i + 30])}.</p>" for i in range(0, len(words), 30))


_NEAR = _words(2)
_NEAR_EDITED = _NEAR[:150] + ["altered"] + _NEAR[151:]
# path -> (h1, body): the duplicates share both (their titles differ).
BODIES = {
    "/dup-a": ("Duplicated", _prose(_words(1))),
    "/dup-b": ("Duplicated", _prose(_words(1))),
    "/near-a": ("Nearly the same", _prose(_NEAR)),
    "/near-b": ("Nearly the same", _prose(_NEAR_EDITED)),
}

PAGES = {"/about", "/new", "/r3", "/orphan", "/behind-noindex", "/private/page"}
PAGES.update(f"/deep/{i}" for i in range(1, 6))
PAGES.update(LINKS, HEADS, BODIES)


def page(path: str, base: str) -> str:
    title, description, canonical, robots = HEADS.get(
        path, (f"Page {path}", f"About {path}", "", "")
    )
    h1, body = BODIES.get(path, (title or path, _prose(_words(zlib.crc32(path.encode()), 60))))
    links = "\n".join(f'<p><a href="{href}">{text}</a></p>' for href, text in LINKS.get(path, ()))
    return HEAD.format(
        title=f"<title>{title}</title>" if title else "",
        description=f'<meta name="description" content="{description}">' if description else "",
        canonical=f'<link rel="canonical" href="{base}{canonical}">' if canonical else "",
        robots=f'<meta name="robots" content="{robots}">' if robots else "",
        h1=h1,
        body=body,
        links=links,
    )


class AuditSite(Serving):
    """The audit fixture site; ``with AuditSite() as site: site.base``. ``agents`` holds
    the paths each User-Agent asked for. Pages (not robots.txt, not the sitemap) answer
    after ``latency`` seconds, and wait between :meth:`hold` and :meth:`release` (at most
    ``HOLD`` seconds): several crawl processes can all be up before the crawl gets going."""

    HOLD = 60.0

    def __init__(self, latency: float = 0.0):
        served = self
        self.latency = latency
        self.agents: dict[str, set[str]] = {}
        self.open = threading.Event()
        self.open.set()
        lock = threading.Lock()

        class Handler(QuietHandler):
            def do_GET(self):  # noqa: N802
                path = self.path.split("?", 1)[0]
                base = served.base
                agent = self.headers.get("User-Agent", "")
                with lock:
                    served.agents.setdefault(agent, set()).add(path)
                if path not in ("/robots.txt", "/sitemap.xml"):
                    served.open.wait(served.HOLD)
                    time.sleep(served.latency)
                if path == "/robots.txt":
                    body = f"User-agent: *\nDisallow: /private/\nSitemap: {base}/sitemap.xml\n"
                    return self.reply(200, body, "text/plain")
                if path == "/sitemap.xml":
                    urls = [f"{base}/", f"{base}/orphan", f"{base}/new"]
                    return self.reply(200, _sitemap("urlset", urls), "application/xml")
                if path in REDIRECTS:
                    status, location = REDIRECTS[path]
                    return self.reply(status, "", headers={"Location": location})
                if path == "/error":
                    return self.reply(500, "<html><body>error</body></html>")
                if path not in PAGES:
                    return self.reply(404, "<html><body>not found</body></html>")
                return self.reply(200, page(path, base))

        super().__init__(Handler)

    def hold(self) -> None:
        self.open.clear()

    def release(self) -> None:
        self.open.set()
