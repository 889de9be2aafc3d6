"""A page that was a copy of another when crawled is written by a later crawl once it is
no copy any more (its twin changed): no output held its document under its URL."""

from __future__ import annotations

from tests.sites.site import QuietHandler, Serving

WORDS = "Every mirror of this page says the same thing about the same subject, word for word."


class MirrorSite(Serving):
    """``/`` links ``/a`` and ``/b``, which serve one document until ``change(path)``."""

    def __init__(self):
        self.bodies = {path: f"<h1>The page</h1><p>{WORDS}</p>" for path in ("/a", "/b")}
        site = self

        class Handler(QuietHandler):
            def do_GET(self):  # noqa: N802
                if self.path == "/":
                    links = '<a href="/a">A</a> <a href="/b">B</a>'
                    return self.reply(200, f"<html><body><p>{WORDS} {links}</p></body></html>")
                body = site.bodies.get(self.path)
                if body is None:
                    return self.reply(404, "not found", "text/plain")
                return self.reply(
                    200, f"<html><head><title>Page</title></head><body>{body}</body></html>"
                )

        super().__init__(Handler)

    def change(self, path: str) -> None:
        self.bodies[path] = f"<h1>The page</h1><p>{WORDS} Changed since, and longer now.</p>"


def test_a_former_copy_is_written_once_its_twin_changed(crawl, tmp_path):
    with MirrorSite() as site:
        first = crawl(f"start={site.base}/", "job=mirrors")
        assert first.returncode == 0, first.log[-3000:]
        written = [item["url"] for item in first.items if item["url"] != f"{site.base}/"]
        assert len(written) == 1  # /a and /b are one document
        holder = written[0].removeprefix(site.base)
        copy = {"/a": "/b", "/b": "/a"}[holder]
        site.change(holder)
        # Every registered page again, conditionally: the copy's document is now its own.
        again = crawl(f"start={site.base}/", "job=mirrors", "refresh=all")
        assert again.returncode == 0, again.log[-3000:]
        items = {item["url"].removeprefix(site.base): item for item in again.items}
        assert {holder, copy} <= set(items), sorted(items)
        assert items[copy]["changed"] is True and "Changed since" not in items[copy]["markdown"]
        assert "Changed since" in items[holder]["markdown"]
