"""Main-content extraction: what goes, what stays, the options."""

import pytest

from crawlyx.content.extract import page_markdown, page_title
from crawlyx.content.markdown import html_to_markdown

PAGE = """<html><head><title>Launch notes | Acme Blog</title></head><body>
<header class="site-header"><a href="/">Acme</a><nav><a href="/pricing">Pricing</a></nav></header>
<div id="cookie-banner" class="cookie-consent">We use cookies to improve things.</div>
<div class="layout"><div class="content-area"><div class="post-body">
<h2 class="anchor">Launch notes<a class="hash-link" href="#launch">#</a></h2>
<p>The new release ships a faster parser, a smaller binary and fewer surprises, says the team.</p>
<p style="display:none">Invisible promo text.</p>
<p>Read the <a href="/docs/parser">parser docs</a> to learn how the new parser handles
edge cases.</p>
<ul class="share-bar"><li><a href="/s/x">Share on X</a></li>
<li><a href="/s/m">Mastodon</a></li></ul>
<section class="related-posts"><h3>Related</h3><ul>
<li><a href="/a">Older post one</a></li><li><a href="/b">Older post two</a></li>
<li><a href="/c">Older post three</a></li></ul></section>
</div></div>
<aside class="sidebar"><h3>Archive</h3>
<p>Browse every post since 2009 in the archive.</p></aside></div>
<footer>© 2026 Acme Inc.</footer>
</body></html>"""

URL = "https://acme.example/blog/launch"


def test_main_content_only():
    md = page_markdown(PAGE, URL)
    assert md.startswith("# Launch notes\n")
    assert md.count("Launch notes") == 1
    assert "faster parser, a smaller binary" in md
    assert "[parser docs](https://acme.example/docs/parser)" in md
    for gone in (
        "cookies", "Pricing", "Invisible promo", "Share on X", "Older post", "Archive",
        "© 2026", "notes#", "#launch",
    ):  # fmt: skip
        assert gone not in md, gone


def test_whole_page_when_asked():
    md = page_markdown(PAGE, URL, main_content=False)
    assert "Pricing" in md and "© 2026 Acme Inc." in md and "Older post one" in md


@pytest.mark.parametrize(
    ("links", "expected"),
    [
        ("inline", "Read the [parser docs](https://acme.example/docs/parser) to learn how"),
        ("reference", "Read the [parser docs][1] to learn"),
        ("none", "Read the parser docs to learn"),
    ],
)
def test_link_styles(links, expected):
    md = page_markdown(PAGE, URL, links=links)
    assert expected in md
    if links == "reference":
        assert md.rstrip().endswith("[1]: https://acme.example/docs/parser")


def test_unknown_link_style_is_refused():
    with pytest.raises(ValueError, match="inline, reference, none"):
        html_to_markdown("<p>x</p>", URL, links="footnote")


def test_title_from_the_page_not_the_site():
    from lxml import html

    assert page_title(html.document_fromstring(PAGE)) == "Launch notes"
    doc = html.document_fromstring("<title>Site name - A long article headline</title><p>x")
    assert page_title(doc) == "A long article headline"


def test_title_added_once_when_the_content_has_no_h1():
    page = (
        "<title>Recipe: bread</title><body><header><h1>Recipe: bread</h1></header>"
        "<main><p>Mix flour, water, salt and yeast; knead well and let it rise overnight.</p>"
        "</main></body>"
    )
    md = page_markdown(page, URL)
    assert md.startswith("# Recipe: bread\n\nMix flour")
    assert md.count("Recipe: bread") == 1


@pytest.mark.parametrize("page", ["", "   ", "<html></html>", "\x00\x01garbage", b"\xff\xfe<p>x"])
def test_malformed_input_never_raises(page):
    assert isinstance(page_markdown(page, URL), str)


def test_a_page_that_is_a_heading_and_links_keeps_its_links():
    # A short docs page made of a list of links: its sidebar (a longer blurb) goes, and
    # the content is the list, not the heading, which holds the only text outside links.
    links = "".join(f"<li><a href='/m/{i}.html'>module {i}</a></li>" for i in range(8))
    page = (
        "<html><body><div class='body' role='main'><h1>All modules</h1>"
        f"<ul>{links}</ul></div><div class='sphinxsidebar' role='navigation'>"
        "<p>Requests is an elegant and simple HTTP library for Python, built for humans "
        "and maintained by volunteers around the world.</p></div></body></html>"
    )
    out = page_markdown(page, "https://docs.example/modules.html")
    assert out.startswith("# All modules\n")
    assert "- [module 7](https://docs.example/m/7.html)" in out
    assert "elegant" not in out


def test_a_lead_above_the_body_stays_with_it():
    # News sites put the lead (standfirst) above the body's container: the container
    # search stops above both. The teasers after the article still go.
    body = "".join(
        f"<p>Paragraph {i} of the story tells, at some length and in plain words, what the "
        f"council decided on the new tram line and why it matters to the town.</p>"
        for i in range(12)
    )
    page = (
        "<html><body><article><h1>Tram line approved</h1>"
        "<p class='intro'>The council has approved a tram line through the old town, ending "
        "a decade of debate about how people should cross the river each day, and the first "
        "trams are due to run in three years.</p>"
        f"<div class='longText'>{body}</div></article>"
        "<div class='teasers'><a href='/a'>Bus fares rise</a> <a href='/b'>Bridge closes</a> "
        "<a href='/c'>Mayor resigns</a></div></body></html>"
    )
    out = page_markdown(page, "https://news.example/tram")
    assert "ending a decade of debate" in out
    assert "Paragraph 11 of the story" in out
    assert "Mayor resigns" not in out
