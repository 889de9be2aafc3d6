"""One document, one item: canonical groups, from real crawls of a small site."""

from __future__ import annotations

import json

from tests.sites.alias_site import AliasSite, page
from tests.sites.pdfs import text_pdf
from tests.sites.site import QuietHandler, Serving


def errors_of(path) -> dict[str, dict]:
    return {line["url"]: line for line in map(json.loads, path.read_text().splitlines())}


def test_a_canonical_group_is_written_once_under_its_canonical(crawl, tmp_path):
    errors = tmp_path / "errors.jsonl"
    with AliasSite(docs=3) as site:
        base = site.base
        result = crawl(f"start={base}/", f"errors={errors}")
        requests = dict(site.requests)
    assert result.returncode == 0, result.log[-3000:]
    urls = result.urls
    assert len(urls) == len(set(urls)), "a page was written twice"
    written = {url.removeprefix(base) for url in urls}
    recorded = errors_of(errors)
    # A sort order: the document once, under its canonical.
    assert "/list" in written and "/list?sort=price" not in written
    alias = recorded[f"{base}/list?sort=price"]
    assert alias["class"] == "alias" and alias["detail"] == f"canonical {base}/list"
    # A chain is followed to the page that names itself, which is crawled and written.
    assert "/final" in written and "/old" not in written and "/mid" not in written
    assert recorded[f"{base}/old"]["detail"] == f"canonical {base}/final"
    # A hint not taken: the page is written under its own URL.
    assert {"/broken", "/elsewhere", "/hint"} <= written
    for kept in ("/broken", "/elsewhere", "/hint"):
        assert f"{base}{kept}" not in recorded
    # A canonical off the crawl's scope is never fetched.
    assert "/offscope-target" not in requests
    assert requests["/missing"] == 1  # checked once, and not crawled as a page
    # No page fetched twice: a canonical's check is the crawl's fetch of it.
    assert {path for path, count in requests.items() if count > 1} == set()
    assert int(result.stat("crawlyx/canonical/replayed")) >= 1
    assert result.stat("crawlyx/canonical/aliases") == "2"
    assert result.stat("crawlyx/error/alias") == "2"


def test_without_canonicals_and_copies_every_address_is_written(crawl, tmp_path):
    settings = {"CRAWLYX_CANONICAL_ENABLED": "false", "CRAWLYX_COPIES_ENABLED": "false"}
    with AliasSite(docs=3) as site:
        result = crawl(f"start={site.base}/", settings=settings)
        copies = site.copies()
        base = site.base
    assert result.returncode == 0, result.log[-3000:]
    written = {url.removeprefix(base) for url in result.urls}
    assert {"/list", "/list?sort=price", "/old", *copies} <= written
    assert "/final" not in written  # linked by no page: only a canonical names it


class _LinkHeaderSite(Serving):
    """A PDF and a print view naming their canonical in a Link header, as search engines
    read it; the canonicals confirm themselves, one in its <head>, one in its header."""

    def __init__(self):
        report = text_pdf([[(72, 700, 11, "The yearly report, in full, as a PDF.")]])
        home = page("Home", '<a href="/report.pdf">r</a> <a href="/print">p</a>')
        article = page("Article", "<p>The article.</p>")
        pages = {
            "/": ("text/html", home, {}),
            "/report.pdf": ("application/pdf", report, {"Link": '</report>; rel="canonical"'}),
            "/report": ("text/html", page("Report", "<p>The yearly report.</p>", "/report"), {}),
            "/print": ("text/html", article, {"Link": "</article>; rel=canonical"}),
            "/article": ("text/html", article, {"Link": '<{base}/article>; rel="canonical"'}),
        }
        site = self

        class Handler(QuietHandler):
            def do_GET(self):  # noqa: N802
                if self.path not in pages:
                    return self.reply(404, "not here")
                ctype, body, headers = pages[self.path]
                headers = {k: v.format(base=site.base) for k, v in headers.items()}
                return self.reply(200, body, ctype, headers)

        super().__init__(Handler)


def test_a_canonical_named_in_a_link_header_holds_the_document(crawl, tmp_path):
    errors = tmp_path / "errors.jsonl"
    with _LinkHeaderSite() as site:
        base = site.base
        result = crawl(f"start={base}/", f"errors={errors}")
    assert result.returncode == 0, result.log[-3000:]
    assert sorted(url.removeprefix(base) for url in result.urls) == ["/", "/article", "/report"]
    recorded = errors_of(errors)
    assert recorded[f"{base}/report.pdf"]["detail"] == f"canonical {base}/report"
    assert recorded[f"{base}/print"]["detail"] == f"canonical {base}/article"
    assert result.stat("crawlyx/error/alias") == "2"
