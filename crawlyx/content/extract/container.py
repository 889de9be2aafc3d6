"""Step 2: choose the element that holds the main content, and bring the page's
heading and lead along when they sit apart from it.

Policy: from the body down, into the child that holds most of the text outside links,
until no child does, or a lead above it or a heading above a list would be left behind.
A grid of linked items above it (product cards, results) is the content instead when its
items show prices or it holds twice the container's words, and so is one below it when it
is only a line of introduction. The h1 and the paragraphs of lead between it and the
content come first.
"""

from __future__ import annotations

import re
from collections import Counter

from lxml import etree

from crawlyx.content.extract.elements import (
    _HEADINGS,
    LEAD_WORDS,
    _is_section,
    _only_code,
    _prose,
    _text,
)

# A lead, a standfirst, a subtitle: the summary a story opens with, however marked up.
_LEAD = re.compile(
    r"(?<![a-z])(?:lead|subtitle|sub-?headline|summary|intro|standfirst|vorspann|excerpt|"
    r"abstract|deck|dek)(?![a-z])",
    re.IGNORECASE,
)
_LEAVES = _HEADINGS | {"p", "pre"}
_LISTS = frozenset({"ul", "ol", "dl"})
_TABLE_PARTS = frozenset({"thead", "tbody", "tfoot", "tr"})
# The share of the text outside links that the child the container search descends into
# holds.
CONTENT_SHARE = 0.75
LEAD_SHARE = 0.1
# A grid of items: this many of one kind at least, holding this share of the page's words.
GRID_ITEMS = 8
GRID_SHARE = 0.3
_PRICE = re.compile(r"[$£€¥]\s?\d|\d\s?(?:[$£€]|EUR\b|USD\b)")


def _container(body, stats, top=None):
    """Step 2: the element that holds the main content: from the body down, into the
    child that holds most of the text outside links (:data:`CONTENT_SHARE`), until no
    child does. That is where the content's parts meet: an article's paragraphs, a
    thread's posts, a listing's items, a reference page's sections. ``stats`` is
    :func:`_measure` of ``body``. Never below ``top`` (a docs page's own heading: an API
    page's item and its signature stand above its long description)."""

    def text(el):
        words, links = stats[el]
        return words - links

    above = set(top.iterancestors()) if top is not None else None
    el = body
    while text(el) > 0:
        children = [c for c in el if isinstance(c.tag, str)]
        if not children:
            break
        child = max(children, key=text)
        if above is not None and (child not in above or text(child) <= text(top)):
            break  # beside the heading, or into its wrapper (an article's <header>)
        if (
            text(child) < CONTENT_SHARE * text(el)
            or child.tag in _LEAVES
            or _only_code(child, stats)
        ):
            break  # a heading, a paragraph or a code block (in its wrapper: an API page's
            # example) is never the content, only part of it
        if _prose_before(el, child, stats) >= max(LEAD_WORDS, LEAD_SHARE * text(child)) or (
            sum(_prose(p, stats) for p in child.itersiblings("p", preceding=True)) >= LEAD_WORDS
        ):
            break  # a lead or an intro above the body belongs with it, right beside it or not
        if child.tag in _LISTS and _heading_before(child):
            break  # a list under its heading is that section's content, not the page's
        if _is_section(child) and sum(map(_is_section, children)) > 1:
            break  # a long section is one of the page's parts ("Tests", "Installation"...)
        el = child
    while el.tag in _TABLE_PARTS and el.getparent() is not None:
        el = el.getparent()  # a table's rows are the table's content, rendered as one
    return el


def _listing(body, stats, container):
    """A listing's content is its items. The container search weighs text outside links,
    so it passes over a grid whose cards are links and settles on the shop's blurb below
    it, or on a disclaimer. The largest grid of linked items (:func:`_grid`) above the
    container is the content instead when its items show prices or it holds twice the
    container's words; so is a grid below a container shorter than a lead (a listing's
    line of introduction, which comes with the grid as its lead)."""
    found = _grid(body, stats)
    if found is None:
        return container
    grid, items, words = found
    if container in grid.iterancestors() or grid in container.iterancestors():
        return container  # one holds the other
    first = next(el for el in body.iter() if el is grid or el is container)
    if first is container and stats[container][0] >= LEAD_WORDS:
        return container  # the content comes first, the grid is a rail below it
    priced = sum(_PRICE.search(_text(item)) is not None for item in items)
    return grid if priced >= len(items) / 2 or words >= 2 * stats[container][0] else container


def _grid(body, stats):
    """(grid, items, words) of the largest grid in ``body``: at least :data:`GRID_ITEMS`
    children of one tag and class, most of them links or holding one, with a few words
    each and :data:`GRID_SHARE` of the page's words in all."""
    best = None
    minimum = GRID_SHARE * stats[body][0]
    for el in body.iter():
        if len(el) < GRID_ITEMS or not isinstance(el.tag, str):
            continue
        kinds = Counter((c.tag, c.get("class")) for c in el if isinstance(c.tag, str))
        (tag, names), count = kinds.most_common(1)[0]
        if count < GRID_ITEMS:
            continue
        items = [c for c in el if c.tag == tag and c.get("class") == names]
        words = sum(stats[c][0] for c in items)
        if words < max(minimum, 2 * count) or (best is not None and words <= best[2]):
            continue  # not the largest grid: whether its items are linked does not matter
        if _linked(items, 0.8 * count):
            best = (el, items, words)
    return best


def _linked(items: list, enough: float) -> bool:
    """At least ``enough`` of ``items`` are links or hold one (counted until that is
    settled)."""
    linked = 0
    for seen, item in enumerate(items):
        if linked >= enough or linked + len(items) - seen < enough:
            break
        linked += item.tag == "a" or item.find(".//a") is not None
    return linked >= enough


def _heading_before(el) -> bool:
    """A heading comes before ``el`` among its siblings."""
    return any(sibling.tag in _HEADINGS for sibling in el.itersiblings(preceding=True))


def _prose_before(el, child, stats) -> int:
    """Words of the paragraphs of prose in ``el`` that come before ``child``."""
    words = 0
    for p in el.iter("p", child.tag):
        if p is child:
            break
        if p.tag == "p":
            words += _prose(p, stats)
    return words


def _with_lead(body, root, stats):
    """The content with the page's heading and lead when they sit apart from it: a page
    header with the h1 and a summary, the body in a column of its own. The paragraphs of
    prose between the first h1 and the content, and the blocks above it named as a lead
    ("subtitle", "standfirst", "Vorspann"), shorter than the content together, come
    first, under that h1."""
    h1 = None
    leads: list = []
    taken: set = set(root.iterancestors())  # the content's own wrappers, and the leads'
    for el in body.iter():
        if el is root:
            break
        if not isinstance(el.tag, str) or el in taken:
            continue
        if h1 is None and el.tag == "h1":
            h1 = el
        elif _prose(el, stats) and (
            (el.tag == "p" and h1 is not None)
            or (_LEAD.search(el.get("class", "")) and el.find(".//h1") is None)
        ):
            leads.append(el)
            taken.update(el.iter())
    if not leads or sum(stats[p][0] for p in leads) > stats[root][0]:
        return root
    wrapper = etree.Element("div")
    if h1 is not None:
        wrapper.append(h1)
    wrapper.extend([*leads, root])
    return wrapper
