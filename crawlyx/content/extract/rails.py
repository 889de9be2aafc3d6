"""Step 3: inside the chosen content, drop the rails of links and the cards that tease
the site's other pages.

Policy: a block that is mostly links goes (related, tags, more-from, badge rows, "Read
more:" and one link), unless the link blocks are most of the content (an index, a product
grid), it is a table of contents, or the paragraph before announces it ("The following
plugins are included:"); on an article, those after an article's worth of prose go
however long. A row of short cards that each open with a link to another page of the
site goes once an article has been read, with its heading.
"""

from __future__ import annotations

from collections import Counter
from urllib.parse import urljoin, urlsplit

from crawlyx.content.extract.elements import (
    _BLOCKS,
    _DROPPED,
    _HEADINGS,
    ARTICLE_WORDS,
    _drop_all,
    _inside,
    _mark,
    _prose,
    _text,
)
from crawlyx.content.extract.named import _TABLE_OF_CONTENTS

# The share of the content that its link lists hold when they are the content (an index,
# a table of contents, a product grid).
LINK_LISTS_SHARE = 0.5
# Teaser cards: this many of one kind at least, each a linked title and a line or two.
TEASER_CARDS = 3
TEASER_WORDS = 100


def _titled(el) -> bool:
    """``el`` comes right after a heading: it is that section's body."""
    previous = el.getprevious()
    while previous is not None and not isinstance(previous.tag, str):
        previous = previous.getprevious()  # a comment
    return previous is not None and previous.tag in _HEADINGS


def _drop_link_lists(root, stats, url: str, page_type: str | None) -> None:
    """Step 3: blocks that are mostly links (related, tags, more-from, file listings,
    badge rows, a paragraph or a box that is one link behind a label, but on
    documentation). Lists and tables of links go at half link text; other blocks at 70%.
    When such blocks are most of the container, they are the content (an index, a
    table of contents, a product grid) and stay; but on an article, those that follow
    an article's worth of prose are the rails below the story ("Most read", "On the same
    topic") however long they are. ``stats`` is :func:`_measure` of a tree that holds
    ``root``."""
    docs = page_type == "documentation"
    contents = set()
    for el in root.iter():
        names = el.get("class") if isinstance(el.tag, str) else None
        if names and _TABLE_OF_CONTENTS.search(names):
            contents.update(el.iter(), el.iterancestors())
    site = _site(url)
    found = []
    inside: set = set()  # the blocks inside those found: judged with them
    prose = 0
    story_end = None  # how many were found when an article's worth of prose was read
    for el in root.iter(*_BLOCKS):
        if el is root or (inside and el in inside):
            continue
        if story_end is None and el.tag == "p":
            prose += _prose(el, stats)
            if prose >= ARTICLE_WORDS:
                story_end = len(found)
        links = sum(1 for _ in el.iter("a"))
        words, link_words = stats[el]
        if links == 1 and el.tag in ("p", "div"):
            item = _inside(el, ("li",))
            if (
                not docs  # where "See also" and one link is the text's own
                and link_words >= 3
                and words - link_words <= 5
                and link_words >= 0.6 * words
                and (item is None or stats[item][0] <= words)
                and (el.tag == "p" or (el not in contents and _link_box(el, url, site)))
            ):
                found.append(el)  # "Read more: <a>another story</a>"
                inside.update(el.iter(*_BLOCKS))
            continue
        if links < 3:
            continue
        if el.tag in ("ul", "ol") and _inside(el, ("li",)) is not None:
            continue  # a nested list of a larger list: judged with it
        if el in contents or (
            el.tag != "table"
            and (el.find(".//li/ul") is not None or el.find(".//li/ol") is not None)
        ):
            # A table of contents (a tree of links) is not a rail of links; a table of
            # such trees is a site's navigation box (Wikipedia's sidebars).
            continue
        if _introduced(el):
            continue  # "The following extensions are supported:" and the list of them
        if docs and _titled(el):
            continue  # a docs section that is a listing: rustdoc's "Modules", an API index
        tabular = el.tag in ("ul", "ol", "table", "dl") and links >= 5
        limit = 0.5 if tabular else 0.7
        if not words or link_words / words > limit:
            found.append(el)
            inside.update(el.iter(*_BLOCKS))
    if sum(stats[el][0] for el in found) > LINK_LISTS_SHARE * stats[root][0]:
        if page_type != "article" or story_end is None:
            return
        found = found[story_end:]
    _drop_all(found)


def _link_box(div, url: str, site: str) -> bool:
    """A ``<div>`` that is one link is a box of its own ("Explore further" and a story)
    when it links to another page of the site and is neither a list nor in a table's
    cell; a row of a recipe's ingredients may link to a shop."""
    return (
        div.find(".//li") is None
        and _inside(div, ("td", "th")) is None
        and _links_within(div, url, site)
    )


def _drop_teasers(root, stats, url: str) -> None:
    """Step 3, continued: the cards that tease the site's other pages once an article's
    worth of prose has been read ("More stories", "From the blog"): a row of at least
    :data:`TEASER_CARDS` blocks of one kind, each opening with a link and short, whose
    links all lead to other pages of the site. Cards that link elsewhere (a roundup of
    products to buy) or into the page (an accordion's questions) are the text's own, and
    cards that are most of the content are the content (a listing)."""
    site = _site(url)
    found: list = []
    inside: set = set()  # what is inside those found
    prose = 0
    for el in root.iter():
        if not isinstance(el.tag, str) or (inside and el in inside):
            continue
        if el.tag == "p":
            prose += _prose(el, stats)
        elif prose >= ARTICLE_WORDS and len(el) >= TEASER_CARDS and _teasers(el, stats, url, site):
            found.append(el)
            inside.update(el.iter())
    if found and sum(stats[el][0] for el in found) < 0.5 * stats[root][0]:
        doomed = []
        for el in found:
            heading = el.getprevious()
            while heading is not None and heading.tag == _DROPPED:
                heading = heading.getprevious()  # as if those before it were gone
            if heading is not None and heading.tag in _HEADINGS:
                _mark(heading)  # "More from the blog"
                doomed.append(heading)
            _mark(el)
            doomed.append(el)
        _drop_all(doomed)


def _teasers(el, stats, url: str, site: str) -> bool:
    """``el`` holds a row of teaser cards (see :func:`_drop_teasers`)."""
    kinds = Counter(_kind(c) for c in el if isinstance(c.tag, str))
    if not kinds:
        return False
    (tag, name), count = kinds.most_common(1)[0]
    if count < TEASER_CARDS or tag not in ("div", "article", "section") or not name:
        return False
    cards = [c for c in el if isinstance(c.tag, str) and _kind(c) == (tag, name)]
    teasers = sum(
        0 < stats[c][0] <= TEASER_WORDS
        and stats[c][1] >= 2
        and _opens_with_link(c)
        and _links_within(c, url, site)
        for c in cards
    )
    return teasers >= 0.8 * len(cards)


def _kind(el) -> tuple:
    """A card's tag and first class: "card card--featured" is one of the "card"s."""
    names = el.get("class", "").split()
    return el.tag, names[0] if names else None


# What a card may show above its linked title: a kicker ("News", "Sponsored") or a date.
KICKER_WORDS = 3


def _opens_with_link(el) -> bool:
    """The first text in ``el`` is a link's, kickers and dates aside (short labels, each
    an element's whole text): a card's title."""
    for node in el.iter():
        if isinstance(node.tag, str) and node.text and node.text.strip():
            if node.tag == "a" or _inside(node, ("a",)) is not None:
                return True
            if len(node) or len(node.text.split()) > KICKER_WORDS:
                return False
    return False


def _site(url: str) -> str:
    host = urlsplit(url).hostname or ""
    return host.removeprefix("www.")


def _links_within(el, url: str, site: str) -> bool:
    """Every link in ``el`` leads to another page of ``site``."""
    links = [a.get("href", "").strip() for a in el.iter("a")]
    for href in links:
        if not href or href.startswith(("#", "javascript:")):
            return False
        try:
            if _site(urljoin(url, href)) != site:
                return False
        except ValueError:
            return False
    return bool(links)


def _introduced(el) -> bool:
    """``el`` follows a paragraph that announces it (ends with a colon), alone in its
    wrapper or not."""
    while el.getprevious() is None and el.getparent() is not None and len(el.getparent()) == 1:
        el = el.getparent()
    previous = el.getprevious()
    return previous is not None and previous.tag == "p" and _text(previous).rstrip().endswith(":")
