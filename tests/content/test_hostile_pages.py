"""Page shapes that cost the reader more than their size, and the read budget.

The reader's costs per shape and size are in bench/hostile_pages.py; these tests read
small pages of each shape and check what comes out.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter

from crawlyx.content.markdown import html_to_markdown
from crawlyx.content.page import analyze
from crawlyx.content.workers import PageWorkers, ReadTimeout
from tests.sites.site import QuietHandler, Serving

URL = "http://127.0.0.1:9/page"
SCOPE = "http://127.0.0.1:9"


def read(html: str) -> str:
    return analyze(html, URL, SCOPE)["markdown"]


def page(body: str, title: str = "A page") -> str:
    return f"<html><head><title>{title}</title></head><body><h1>{title}</h1>{body}</body></html>"


def test_end_tags_over_and_over_leave_the_text():
    assert read("<html><body><p>The page's only words.</p>" + "</body>" * 20_000) == (
        "The page's only words.\n"
    )
    # Those before the last start tag are early ends: what follows them is kept.
    early = "<p>Before the end tags.</p>" + "</body></html>" * 2_000 + "<p>After them.</p>"
    assert html_to_markdown(early, URL) == "Before the end tags.\n\nAfter them.\n"


def test_nesting_past_the_parsers_limit_keeps_the_text_and_what_follows():
    divs = "<div>" * 20_000 + "needle" + "</div>" * 20_000
    assert read(page(divs + "<p>The paragraph after them.</p>")) == (
        "# A page\n\nneedle\n\nThe paragraph after them.\n"
    )
    inline = "<p>" + "<b><i><span>" * 3_000 + "needle" + "</span></i></b>" * 3_000 + "</p>"
    assert read(page(inline)) == "# A page\n\n***needle***\n"  # bold and italic, once each
    # libxml2 nests what follows each <wbr> inside it: thousands of them in one paragraph.
    words = "<p>" + "very<wbr>long " * 3_000 + "</p><p>The paragraph after it.</p>"
    assert read(page(words)).endswith("verylong\n\nThe paragraph after it.\n")


def test_a_source_view_keeps_its_code_fenced():
    # A line anchor per line, highlighted spans, blank and plain lines (Pygments' linespans).
    lines = []
    for i in range(3_000):
        anchor = f'<a id="L{i}" href="#L{i}"></a>'
        if i % 3 == 0:
            lines.append(f'<span id="LC{i}">{anchor}<span class="k">def</span> f{i}():</span>\n')
        elif i % 3 == 1:
            lines.append(f'<span id="LC{i}">{anchor}    return {i}  # plain</span>\n')
        else:
            lines.append(f'<span id="LC{i}">{anchor}\n</span>')
    view = f'<div class="highlight"><pre>{"".join(lines)}</pre></div>'
    markdown = read(page(view, "module.py"))
    expected = "".join(
        (f"def f{i}():", f"    return {i}  # plain", "")[i % 3] + "\n" for i in range(3_000)
    )
    assert markdown == f"# module.py\n\n```\n{expected.rstrip()}\n```\n"


def test_a_code_hosts_file_view_is_one_code_block():
    rows = "".join(
        f'<tr><td id="L{i}" class="blob-num js-line-number" data-line-number="{i}"></td>'
        f'<td id="LC{i}" class="blob-code blob-code-inner">'
        f'<span class="pl-k">def</span> <span class="pl-en">step_{i}</span>():</td></tr>'
        for i in range(1, 500)
    )
    markdown = read(page(f'<table class="highlight"><tbody>{rows}</tbody></table>', "a.py"))
    code = "\n".join(f"def step_{i}():" for i in range(1, 500))
    assert markdown == f"# a.py\n\n```\n{code}\n```\n"


def test_a_table_that_spans_a_thousand_columns_a_row_stays_small():
    rows = "".join(f'<tr><td colspan="1000">Row {i}</td></tr>' for i in range(300))
    markdown = read(page(f"<table>{rows}</table>"))
    assert markdown.splitlines()[2:5] == ["| Row 0 |", "| --- |", "| Row 1 |"]
    assert len(markdown) < 20 * 300  # the spans are left out, not 300,000 empty cells


def test_long_lists_number_and_bullet_their_items():
    items = "".join(f"<li>Item {i}</li>" for i in range(5_000))
    markdown = read(page(f'<ol start="3">{items}</ol>'))
    assert markdown.splitlines()[2] == "3. Item 0"
    assert markdown.splitlines()[-1] == "5002. Item 4999"
    lists = "".join(f"<ul><li>Item {i}</li></ul>" for i in range(5_000))
    assert read(page(lists)).count("\n- Item ") == 5_000


def test_odd_markup_that_broke_the_reader():
    # An attribute named like "{count}" (lxml reads it as a namespace): the whole page.
    assert html_to_markdown('<p>Shared <a {count}="3" href="/s">3 times</a>.</p>', URL) == (
        "Shared [3 times](http://127.0.0.1:9/s).\n"
    )
    # A title and a one-word paragraph, or table cells written without a space between
    # them, are more than the title.
    assert read(page("<p>Hello</p>", "Title")) == "# Title\n\nHello\n"
    table = "<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>"
    assert read(page(table, "t")) == "# t\n\n| a | b |\n| --- | --- |\n| 1 | 2 |\n"


# -- the read budget -------------------------------------------------------------------


# The read budget of these tests: tiny pages must be read within it while slow pages
# burn the other core of a busy machine, and a slow page must not.
BUDGET = 2.0


def slow_page() -> str:
    """A page slow to read by construction: half a million paragraphs, some 10 s on a
    busy 2-core machine, several times the budget on a fast one."""
    return page("".join(f"<p>w{i}</p>" for i in range(500_000)))


def test_a_read_past_its_budget_fails_alone():
    workers = PageWorkers(2, main_content=True, links="inline", timeout=BUDGET)
    pages = [page(f"<p>Page {i} has a few words.</p>") for i in range(40)]
    pages[3] = pages[25] = slow_page()

    async def read_all():
        return await asyncio.gather(
            *(workers.read(p, f"{SCOPE}/{i}", SCOPE) for i, p in enumerate(pages)),
            return_exceptions=True,
        )

    try:
        results = asyncio.run(read_all())
        again = asyncio.run(workers.read(pages[0], URL, SCOPE))  # a new pool reads on
    finally:
        workers.close()
    failed = {i for i, result in enumerate(results) if not isinstance(result, dict)}
    assert failed == {3, 25}
    assert all(isinstance(results[i], ReadTimeout) for i in failed)
    assert [results[i]["markdown"] for i in (0, 39)] == [
        "# A page\n\nPage 0 has a few words.\n",
        "# A page\n\nPage 39 has a few words.\n",
    ]
    assert again["markdown"] == results[0]["markdown"]


class SlowSite(Serving):
    """A home page linking two plain pages and one slow to read."""

    def __init__(self):
        self.counts: Counter[str] = Counter()
        self.slow = slow_page().encode()
        self.lock = threading.Lock()
        site = self

        class Handler(QuietHandler):
            def do_GET(self):  # noqa: N802
                with site.lock:
                    site.counts[self.path] += 1
                if self.path == "/":
                    links = '<a href="/a">A</a> <a href="/slow">Slow</a> <a href="/b">B</a>'
                    return self.reply(200, page(f"<p>The home page. {links}</p>", "Home"))
                if self.path == "/slow":
                    return self.reply(200, self.server.site.slow)
                if self.path in ("/a", "/b"):
                    return self.reply(200, page(f"<p>Page {self.path} has words.</p>"))
                return self.reply(404, b"not found")

        super().__init__(Handler)
        self.httpd.site = self


def test_a_page_past_the_read_budget_is_recorded_once_and_the_crawl_goes_on(crawl, tmp_path):
    errors = tmp_path / "errors.jsonl"
    with SlowSite() as site:
        result = crawl(
            f"start={site.base}/",
            f"errors={errors}",
            "sitemap=0",
            settings={"CRAWLYX_READ_TIMEOUT": BUDGET, "CRAWLYX_MARKDOWN_WORKERS": 2},
        )
    assert result.returncode == 0, result.log[-3000:]
    assert sorted(result.urls) == [f"{site.base}/", f"{site.base}/a", f"{site.base}/b"]
    lines = [json.loads(line) for line in errors.read_text().splitlines()]
    assert [(line["url"], line["class"]) for line in lines] == [
        (f"{site.base}/slow", "read_timeout")
    ]
    assert site.counts["/slow"] == 1  # done, not fetched again
    assert result.stat("crawlyx/error/read_timeout") == "1"
    assert int(result.stat("crawlyx/workers/restarts")) >= 1


def test_a_bad_read_budget_stops_the_crawl_with_one_line(crawl):
    with SlowSite() as site:
        result = crawl(f"start={site.base}/", settings={"CRAWLYX_READ_TIMEOUT": "soon"})
    assert result.returncode == 2
    assert "CRAWLYX_READ_TIMEOUT (soon) must be a number" in result.log
    assert "Traceback" not in result.log
    assert not site.counts


def test_a_page_of_many_links_is_read_up_to_the_cap_and_the_rest_counted():
    hrefs = ["/a", "/b", "/a", "/c", "https://elsewhere.example/", "/d"]
    body = "".join(f'<p><a href="{href}">link {n}</a></p>' for n, href in enumerate(hrefs))
    page = f"<html><body>{body}<a>no href</a></body></html>"
    read = analyze(page, "http://127.0.0.1:9/", "http://127.0.0.1:9", max_links=2)
    assert list(read["links"]) == ["http://127.0.0.1:9/a", "http://127.0.0.1:9/b"]
    assert read["links_capped"] == 4  # the link elements after the second link, unresolved
    whole = analyze(page, "http://127.0.0.1:9/", "http://127.0.0.1:9")
    assert len(whole["links"]) == 4 and whole["links_capped"] == 0
    assert "link 5" in read["markdown"]  # the page's text is whole either way
