"""A small site whose documents have several addresses: canonical groups (a sort order,
a chain, a broken canonical, one off the crawl's scope) and exact copies (a search's
query strings on every document, no canonical)."""

from __future__ import annotations

import threading
import time
from collections import Counter

from tests.sites.site import QuietHandler, Serving

PAGE = (
    "<html><head><title>{title}</title>{canonical}</head><body><h1>{title}</h1>{body}</body></html>"
)


def page(title: str, body: str, canonical: str | None = None) -> str:
    link = f'<link rel="canonical" href="{canonical}">' if canonical else ""
    return PAGE.format(title=title, body=body, canonical=link)


class AliasSite(Serving):
    """``docs`` documents at ``/docs/N``, each also linked as ``/docs/N?search=a`` and
    ``?search=b`` (the same page: the query is the browser's business), and the
    canonical groups of :meth:`canonical_pages`."""

    def __init__(self, docs: int = 20, latency: float = 0.0):
        self.docs = docs
        self.latency = latency
        self.requests: Counter[str] = Counter()
        self.lock = threading.Lock()
        site = self

        class Handler(QuietHandler):
            def do_GET(self):
                with site.lock:
                    site.requests[self.path] += 1
                time.sleep(site.latency)
                body = site.answer(self.path)
                if body is None:
                    return self.reply(404, "not here")
                return self.reply(200, body)

        super().__init__(Handler)
        self.other = f"http://localhost:{self.port}"  # the same server, off the scope

    def copies(self) -> list[str]:
        return [f"/docs/{i}?search={q}" for i in range(self.docs) for q in ("a", "b")]

    def home(self) -> str:
        links = ["/list", "/list?sort=price", "/old", "/broken", "/elsewhere", "/hint"]
        links += [f"/docs/{i}" for i in range(self.docs)] + self.copies()
        anchors = "".join(f'<li><a href="{link}">{link}</a></li>' for link in links)
        return page("Home", f"<ul>{anchors}</ul>", canonical="/")

    def answer(self, raw: str) -> str | None:
        path, _, query = raw.partition("?")
        if raw == "/":
            return self.home()
        if path.startswith("/docs/"):
            n = path.removeprefix("/docs/")
            text = f"<p>Document {n} explains one thing, at length, in its own words.</p>"
            return page(f"Document {n}", text + f"<p>Its number is {n}.</p>")
        items = ["apples 3", "pears 2", "figs 1"]
        if raw == "/list":
            return page("List", _list(items), canonical="/list")
        if raw == "/list?sort=price":
            return page("List", _list(sorted(items, key=lambda i: i[-1])), canonical="/list")
        # A chain: /old names /mid, which names /final, which names itself.
        if raw == "/old":
            return page("Old", "<p>The old address of the final page.</p>", canonical="/mid")
        if raw == "/mid":
            return page("Mid", "<p>The middle address.</p>", canonical="/final")
        if raw == "/final":
            return page("Final", "<p>The final page, under its own name.</p>", "/final")
        if raw == "/broken":  # its canonical answers 404
            return page("Broken", "<p>A page whose canonical is gone.</p>", "/missing")
        if raw == "/elsewhere":  # its canonical is on another host
            text = "<p>A page that names another host.</p>"
            return page("Elsewhere", text, f"{self.other}/offscope-target")
        if raw == "/hint":  # its canonical does not name itself
            return page("Hint", "<p>A page naming a plain one.</p>", "/plain")
        if raw == "/plain":
            return page("Plain", "<p>A page with no canonical.</p>")
        return None


def _list(items) -> str:
    return "<ul>" + "".join(f"<li>{item}</li>" for item in items) + "</ul>"
