"""Main-content extraction: the part of a page an LLM corpus wants, before conversion.

Policy, in order, one module a step:

1. Drop what is never content (:mod:`.prune`): scripts and styles, forms and controls
   (but a tab's label, and a control left open by broken markup, which holds the page: it
   is unwrapped), hidden elements (but a hidden tab or accordion panel, and a block hidden
   until scripts run that holds most of the page), navigation, sidebars, footers and
   dialogs, the page header unless it is most of the page, and (:mod:`.named`) blocks
   whose class or id names a kind of boilerplate (cookie banners, share bars, comments,
   related lists, ads...) unless the blocks of that name are most of the text and no
   article stands beside them. Text served inside ``<noscript>`` is read there when it
   is most of the page.
2. Find the container from the body down (:mod:`.container`): into the child that holds
   most of the text outside links, until no child does, or a lead above it or a heading
   above a list would be left behind. A grid of linked items above it (product cards,
   results) is the content instead when its items show prices or it holds twice the
   container's words, and so is one below it when it is only a line of introduction.
3. Inside it, drop rails of links (:mod:`.rails`), unless they are most of it, a table
   of contents, or announced by the paragraph before them ("The following plugins are
   included:"), and the cards that tease the site's other pages once an article has
   been read.
4. The page's title is the top heading, exactly once (:mod:`.titles`); a block shown
   twice is said once.

What the page's markup says it is (:mod:`.structured`: documentation, an article, a
product, a discussion) tunes each step. :mod:`.elements` holds the words and tree edits
they share. The chosen subtree is converted by :mod:`crawlyx.content.markdown`. Blocks
that repeat across many pages of one crawl are removed later, by the pipeline, which sees
the whole crawl.
"""

from __future__ import annotations

from crawlyx.content.boilerplate import (
    drop_article_tail,
    drop_credits,
    drop_other_products,
    drop_repeats,
    drop_trailing_headings,
)
from crawlyx.content.extract.container import _container, _listing, _with_lead
from crawlyx.content.extract.elements import _measure
from crawlyx.content.extract.prune import _prune
from crawlyx.content.extract.rails import _drop_link_lists, _drop_teasers
from crawlyx.content.extract.structured import _json_ld, _page_type, _story_data, _whole_story
from crawlyx.content.extract.titles import (
    _ensure_title,
    _heading_text,
    _headline,
    _in_chrome,
    _site_names,
    _title_only,
    _titles,
)
from crawlyx.content.markdown import element_to_markdown, html_to_markdown
from crawlyx.content.markdown.tree import parse


def parse_document(page: str | bytes):
    """The page as an lxml document, or None when it has no body to speak of."""
    doc = parse(page)
    return doc if doc is not None and doc.find("body") is not None else None


def document_markdown(doc, page: str | bytes, url: str, *, main_content=True, links="inline"):
    """Markdown of a parsed page (``doc``, which this changes) or of ``page`` whole."""
    if doc is None or not main_content:
        return html_to_markdown(page, url, links)
    body = doc.find("body")
    base = doc.find(".//base[@href]")
    json_ld = _json_ld(doc)
    page_type = _page_type(doc, json_ld)
    titles = _titles(doc)
    title = _headline(doc, titles, page_type == "documentation")
    story = _story_data(json_ld) if page_type == "article" else None
    stats = _prune(body, page_type) or _measure(body)
    top = None
    if page_type == "documentation":  # the page's own heading, not its site's
        h1s = [h for h in body.iter("h1") if not _in_chrome(h)]
        top = next((h for h in h1s if _heading_text(h) == title), h1s[0] if h1s else None)
    root = _listing(body, stats, _container(body, stats, top))
    _drop_teasers(root, stats, url)
    _drop_link_lists(root, stats, url, page_type)
    root = _ensure_title(_with_lead(body, root, stats), title, _site_names(doc, titles, title))
    # The counts hold a proxy object of every element: freed before the converter builds
    # its own tree of what is left, which reuses their memory (a big page's peak is lower
    # by a sixth).
    del stats
    if page_type != "documentation" and _title_only(root):
        return ""  # a docs page that is its title alone (an empty module) is still a page
    href = base.get("href") if base is not None else None
    markdown = element_to_markdown(root, url, links, href)
    # An API reference repeats itself (two methods, one docstring); a figure's caption
    # says what it shows.
    if page_type == "documentation":
        return markdown
    markdown = drop_credits(drop_repeats(markdown))
    if page_type == "product":
        markdown = drop_other_products(markdown)
    elif page_type == "article":
        markdown = _whole_story(drop_article_tail(markdown), story, title, url, links)
    return drop_trailing_headings(markdown)


def page_markdown(
    page: str | bytes, url: str, *, main_content: bool = True, links: str = "inline"
) -> str:
    """A page's markdown: its main content (or the whole page), links as asked."""
    doc = parse_document(page) if main_content else None
    return document_markdown(doc, page, url, main_content=main_content, links=links)
