"""Step 1, continued: containers whose class or id names boilerplate (cookie banners,
share bars, comments, related lists, ads...), and the words of names the other steps read.

Policy: a container (not a heading, a paragraph of prose or a table: those are content
whatever their class says) is boilerplate when its name says so and no token of it names
content ("entry-content"). It is judged against what is left once the chrome by element
is gone (:mod:`crawlyx.content.extract.prune`): the containers of one name stay when they
hold most of that text, or an article's worth of prose and no article stands beside them.
On a product page its reviews go and its carousels are other products; on a discussion
page the comments are the posts. What a kept container holds is judged in turn.
"""

from __future__ import annotations

import re
from functools import lru_cache

from crawlyx.content.extract.elements import (
    _CODE,
    ARTICLE_WORDS,
    LEAD_WORDS,
    _drop_all,
    _inside,
    _measure,
    _names,
    _only_code,
    _prose,
)
from crawlyx.content.extract.structured import _ARTICLE_TYPE

# Class or id words that name boilerplate, and words that name content (which win).
_BOILERPLATE = re.compile(
    r"(?<![a-z])(?:cookie|consent|gdpr|share|sharing|social|comment|disqus|related|similar|"
    r"recommend|newsletter|subscribe|signup|sign-up|sidebar|breadcrumb|navbar|menu|masthead|"
    r"advert|\bads?\b|ad-slot|adslot|sponsor|promo|popup|modal|pagination|pager|"
    r"toolbar|skip-link|site-header|site-footer|global-header|global-footer|"
    r"most-read|trending|popular|outbrain|taboola|author-bio|about-author|\btags?\b|"
    r"rating|reviews?-widget|teaser|toc\b|table-of-contents|on-this-page|"
    r"byline|reading-time|read-time|post-?meta|entry-meta|entry-utility|article-meta|"
    r"author-card|author-box|author-info|author-description|\bbio\b|feedback|helpful|"
    r"\bvotes?\b|noprint|editsection|"
    r"user-?(?:info|card|details|extras|stats)|usercard|postprofile|poster-?info|"
    r"signature|avatar|reflist|mw-references|wp-caption-text|copyright|"
    r"\bnav\b|footer|(?<![\w-])header\b)",  # "header-top", not "category-header"
    re.IGNORECASE,
)
# Customer reviews, boilerplate on a product page; comments, the posts of a thread; and
# how a page says it is either.
_REVIEWS = re.compile(r"(?<![a-z])reviews?(?![a-rt-z])", re.IGNORECASE)
_COMMENTS = re.compile(r"comment", re.IGNORECASE)
# On a product page its reviews, and the carousels of other products ("you may also
# like"); elsewhere a carousel holds the page's own slides (features, testimonials).
_PRODUCT_EXTRAS = re.compile(rf"{_REVIEWS.pattern}|carousel", re.IGNORECASE)
# A documentation generator's table of contents (Sphinx's toctree, a local contents).
_TABLE_OF_CONTENTS = re.compile(r"toctree|\bcontents\b")
# A class or id token that names a content container ("entry-content", "post-body",
# "markdown-body"), judged per token so "article-votes" is not content.
_CONTENT = re.compile(
    r"(?:[a-z]+[-_])?(?:content|article|main|body|prose|markdown|entry|story|post|text)"
    r"(?:[-_](?:body|content|text|inner|wrapper|container))?",
    re.IGNORECASE,
)
# Boilerplate is judged by name on containers (and custom elements) only: a heading or a
# paragraph is content whatever its class says ("anchorWithStickyNavbar" on a docs heading),
# and so is a table, which is data ("sortable sticky-header", "ingredients table-header").
_CONTAINERS = frozenset(
    {"div", "section", "span", "ul", "ol", "dl", "figure", "form", "header", "p"}
)
# The share of the text that the containers of one name hold when they are content after
# all (a thread's "comments", a shop's "related" grid).
NAMED_SHARE = 0.5
NAMED_LEFT_WORDS = 60  # a page left with fewer words lost its content to a name
PROSE_WORDS = 10  # a paragraph of prose, not a label


def _story_text(el) -> bool:
    """Microdata marks ``el`` as a story's text or its summary ("articleBody", or the
    "description" of an Article, not of its author), whatever its class says."""
    prop = el.get("itemprop")
    if prop == "articleBody":
        return True
    if prop != "description":
        return False
    scope = next((a for a in el.iterancestors() if a.get("itemscope") is not None), None)
    return scope is not None and _ARTICLE_TYPE.search(scope.get("itemtype", "")) is not None


def _judged_names(el) -> str:
    """The class and id of a container; a section's id is the slug of its heading
    ("cookies", "migrating-to-2-x"): it names the section's subject, not its role. An
    article's own ``<header>`` ("entry-header": its title and lead) and a teaser
    paragraph (a CMS's name for the lead) are not judged."""
    if el.tag == "header" and _inside(el, ("article", "main")) is not None:
        return ""
    if _story_text(el):
        return ""
    if el.tag == "section" or "section" in el.get("class", "").split():
        return el.get("class", "")
    if el.tag == "p" and "teaser" in _names(el).lower():
        return ""  # a paragraph that is a story's teaser is its lead, not a teaser box
    if "-" in el.tag:  # a custom element's name says what it is: "site-nav", "pp-header"
        return f"{el.tag} {_names(el)}"
    return _names(el)


def _boilerplate_name(names: str) -> bool:
    """Class/id names that say boilerplate, unless one token says content."""
    if not _BOILERPLATE.search(names):
        return False
    return not any(
        _CONTENT.fullmatch(token) and not _BOILERPLATE.search(token) for token in names.split()
    )


@lru_cache(maxsize=4096)  # a page's containers repeat a few names, a site's pages too
def _judged(names: str, page_type: str | None) -> bool:
    """A container of these names is judged as boilerplate on a page of this type."""
    if page_type == "discussion" and _COMMENTS.search(names):
        return False
    return _boilerplate_name(names) or (
        page_type == "product" and _PRODUCT_EXTRAS.search(names) is not None
    )


# Containers named like boilerplate nest a few levels deep (ten at most in a thousand real
# pages); a hostile page nests them hundreds deep, and each level is a round over the
# whole page. Rounds stop after measuring this many elements (about half a second): a
# page of a few thousand elements gets a hundred rounds, one of 16 MiB two or three.
NAMED_WORK = 500_000


def _prune_by_name(body, page_type: str | None) -> dict | None:
    """Containers whose class or id names boilerplate, judged against what is left once
    chrome by element is gone. A container is kept when it, or the containers of the
    same name together, hold most of that text or an article's worth of its prose outside
    links: a thread's posts may be "comments", a shop's product grid "related", a news
    story a "teaser" among menus. On a product page, customer reviews are its comments
    however many there are (elsewhere a "review" is as likely the article); on a page
    marked as a discussion, the comments are its posts, not judged at all.
    What a kept container holds is judged in turn: a layout named after its sidebar, or a
    page that broken markup put inside its "header", holds the site's menus as well. Not
    inside a thread's comments (their parts are the posts) nor on a product page, whose
    tabs and panels hold its details and its buyers' words.
    Each round measures the whole body again: rounds stop once they have measured
    :data:`NAMED_WORK` elements (see there).
    Returns the body's :func:`_measure` if the last round dropped nothing, else None."""
    kept: set = set()
    work = 0
    while True:
        stats, dropped, more = _prune_named(body, page_type, kept)
        work += len(stats)
        if not more or page_type == "product" or work >= NAMED_WORK:
            return None if dropped else stats


def _prune_named(body, page_type: str | None, kept: set) -> tuple[dict, bool, bool]:
    """One round of :func:`_prune_by_name`, below the containers in ``kept``: the body's
    :func:`_measure` before the round, whether it dropped any container, and whether it
    kept any (added to ``kept``, to be looked into by another round)."""
    stats = _measure(body)
    total = max(stats[body][0], 1)
    groups: dict[str, list] = {}
    # Words of prose outside the named containers judged now (a kept one's prose is the
    # page's): an article, which comments follow.
    article = 0
    prose_tags = ("p", "li") if page_type == "article" else ("p",)  # a how-to's steps too
    docs = page_type == "documentation"
    walk = [iter(body)]  # document order, not below a named container
    while walk:
        el = next(walk[-1], None)
        if el is None:
            walk.pop()
            continue
        tag = el.tag
        if not isinstance(tag, str) or tag in _CODE:
            continue  # a highlighter's "hljs-comment" is the code's own
        if tag in prose_tags and _prose(el, stats) >= PROSE_WORDS:
            article += stats[el][0]
        if (
            (tag in _CONTAINERS or "-" in tag)
            and (el.get("class") or el.get("id") or "-" in tag)  # else it has no name
            and el not in kept
            and _judged(_judged_names(el), page_type)
            and not _only_code(el, stats)
            # On a docs page a span inside a sentence is words of it (":menuselection:").
            and not (docs and tag == "span" and _inside(el, ("p",)) is not None)
        ):
            groups.setdefault(el.get("class") or el.get("id") or tag, []).append(el)
            continue  # judged with its container
        if len(el):
            walk.append(iter(el))
    text = total - stats[body][1]

    def content(group) -> bool:
        words = sum(stats[el][0] for el in group)
        prose = sum(stats[p][0] for el in group for p in el.iter("p") if stats[p][0] >= PROSE_WORDS)
        return words >= NAMED_SHARE * total or prose >= max(ARTICLE_WORDS, NAMED_SHARE * text)

    doomed = [
        group
        for name, group in groups.items()
        if article >= ARTICLE_WORDS
        or not content(group)
        or (page_type == "product" and _REVIEWS.search(name))
    ]
    # A page left with next to nothing had its content named like boilerplate (a
    # "sidebar" layout, an "intro" section "with ads"): the container with the most
    # prose stays.
    left = total - sum(stats[el][0] for group in doomed for el in group)
    if doomed and left < NAMED_LEFT_WORDS:
        prose, best = max(
            (sum(stats[el][0] - stats[el][1] for el in group), index)
            for index, group in enumerate(doomed)
        )
        if prose >= max(LEAD_WORDS, left):
            del doomed[best]
    dropped = {el for group in doomed for el in group}
    if dropped:
        _drop_all([el for el in body.iter() if el in dropped])  # in document order
    wrappers = {
        el
        for name, group in groups.items()
        if group not in doomed and not _COMMENTS.search(name) and not _REVIEWS.search(name)
        for el in group
    }
    kept |= wrappers
    return stats, bool(dropped), bool(wrappers)
