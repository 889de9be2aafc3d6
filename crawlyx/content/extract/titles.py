"""Step 4, and the page's title: its headline, the names of its site, exactly one top
heading.

Policy: the headline is the h1 that the <title> (or og:title) names, one in the page's
main part or article first; else the <title>'s longest part that is not the site's name
(on documentation its first); else the first h1. A site's name set as an h1 in its menu
bar or header is never the headline. The content opens with the headline, exactly once,
as its only h1; headings before it that say the site's name go. A content that is its
title alone is no content.
"""

from __future__ import annotations

import re

from lxml import etree

from crawlyx.content.extract.elements import (
    _BLOCKS,
    _HEADINGS,
    _drop,
    _inside,
    _text,
    attribute_values,
)
from crawlyx.content.extract.named import _boilerplate_name, _judged_names

_PERMALINK_MARKS = (
    "¶#§🔗⚓\u200b\uf0c1 "  # what a heading's text ends with when its permalink is in it
)
_TITLE_SEPARATORS = re.compile(r"\s+[-|–—·:»]\s+")
_SITE_NAME = ("property", "og:site_name")  # of a <meta>
_MAIN = ("main", "article")


def _heading_text(el) -> str:
    """A heading's words as the reader sees them: not its buttons' ("Copy item path")."""
    text = "".join(el.xpath(".//text()[not(ancestor::button)]"))
    return " ".join(text.split()).rstrip(_PERMALINK_MARKS)


def _titles(doc) -> list[str]:
    """The page's og:title and <title> (not an icon's: an SVG has titles too), whitespace
    folded."""
    titles = attribute_values(doc, "meta", "content", "property", "og:title")
    titles += [_text(t) for t in doc.iter("title") if _inside(t, ("svg",)) is None][:1]
    return [t for t in (" ".join(t.split()) for t in titles) if t]


def page_title(doc, docs: bool = False) -> str | None:
    """The page's headline (see :func:`_headline`)."""
    return _headline(doc, _titles(doc), docs)


def _headline(doc, titles: list[str], docs: bool) -> str | None:
    """The page's headline, of its ``titles`` (:func:`_titles`): the h1 that the <title>
    (or og:title) names, one in the page's main part or article first; else the <title>'s
    longest part that is not the site's name (on documentation, ``docs``, its first: every
    generator writes "Page - Site", and a site's name is often the longer); else the first
    h1. A site's name set as an h1 in its menu bar or header (an mdBook's, a logo's) is
    never the headline, though the <title> names it too: "Suffix Array - Bioinformatics
    with Rust"."""
    h1s = {h: text for h in doc.iter("h1") if (text := _heading_text(h))}
    # Named after the headline's place in the <title> (a forum's thread title in its
    # header bar), an h1 is no site name.
    later = {p.lower() for t in titles for p in _TITLE_SEPARATORS.split(t)[1:]}
    later.update(n.lower() for n in attribute_values(doc, "meta", "content", *_SITE_NAME))
    chrome = {h for h, text in h1s.items() if text.lower() in later and _in_chrome(h)}
    candidates = sorted(
        (h for h in h1s if h not in chrome), key=lambda h: _inside(h, _MAIN) is None
    )
    # The one the <title>'s headline part names first ("ORM Quick Start" of "ORM Quick
    # Start — SQLAlchemy 2.0 Documentation", not the site's name in its own h1).
    for names in ([_TITLE_SEPARATORS.split(t)[0].lower() for t in titles], titles):
        for h1 in candidates:
            if any(h1s[h1].lower() in name.lower() for name in names):
                return h1s[h1]
    # "Headline - Site" / "Site | Headline": the longest part that is not the name the
    # header shows is the headline (an og:title that is that name alone tells nothing).
    shown = {h1s[h].lower() for h in chrome}
    for text in titles:
        parts = [part for part in _TITLE_SEPARATORS.split(text) if part.lower() not in shown]
        if parts:
            return parts[0] if docs else max(parts, key=len)
    return next(iter(h1s.values()), titles[0] if titles else None)


def _in_chrome(el) -> bool:
    """``el`` is in the site's header, navigation or a container named so (a menu bar),
    and not in the page's main part or article (whose own header holds its title)."""
    chrome = False
    for above in el.iterancestors():
        if above.tag in _MAIN or above.get("role") == "main":
            return False
        if above.tag in ("header", "nav") or above.get("role") in ("banner", "navigation"):
            chrome = True
        else:
            names = _judged_names(above)  # a section's id is its heading's slug, no role
            chrome = chrome or bool(names.strip() and _boilerplate_name(names))
    return chrome


def _site_names(doc, titles: list[str], title: str | None) -> frozenset[str]:
    """What the page names its site by, lowercased: og:site_name, and the parts of its
    ``titles`` (<title> and og:title) other than the headline ``title`` ("Bioinformatics
    with Rust" of "Suffix Array - Bioinformatics with Rust")."""
    headline = (title or "").lower()
    names = {n.lower() for n in attribute_values(doc, "meta", "content", *_SITE_NAME)}
    for text in titles:
        parts = _TITLE_SEPARATORS.split(text)
        if any(part.lower() == headline for part in parts):
            names.update(part.lower() for part in parts)
        elif text.lower() != headline:
            names.add(text.lower())  # a title naming the site alone (a book's og:title)
    names.discard(headline)
    return frozenset(" ".join(n.split()) for n in names if n.strip())


def _ensure_title(root, title: str | None, names: frozenset[str] = frozenset()):
    """Step 4: exactly one top heading, the page's title. Headings that open the page
    saying the site's name (``names``: :func:`_site_names`), a menu bar's or a header's,
    are the site's chrome, on every page, and so is a lesser heading before the page's h1
    that repeats it (a top bar's, rustdoc's): they go."""
    headings = list(root.iter(*_HEADINGS))
    h1_texts = {_heading_text(h).lower() for h in headings if h.tag == "h1"}
    for heading in headings:
        text = _heading_text(heading).lower()
        repeat = heading.tag != "h1" and text in h1_texts
        if text == (title or "").lower() or not (text in names or repeat):
            break
        _drop(heading)
    h1s = list(root.iter("h1"))
    if h1s:
        for extra in h1s[1:]:
            extra.tag = "h2"
        return root
    if not title:
        return root
    first = next(root.iter("h2", "h3", "h4", "h5", "h6"), None)
    if first is not None and " ".join(_text(first).split()) == title:
        first.tag = "h1"  # the content opens with the title at a lower level
        return root
    wrapper = etree.Element("div")
    heading = etree.SubElement(wrapper, "h1")
    heading.text = title
    wrapper.append(root)
    return wrapper


def _title_only(root) -> bool:
    """Nothing but the title is left: the page has no content (its text is drawn by
    scripts, or it is an empty listing). Its markdown is empty, not a lone heading."""
    if next(root.iter("img"), None) is not None:
        return False
    headings = [h1 for h1 in root.iter("h1") if next(h1.iterdescendants(*_BLOCKS), None) is None]
    # Words counted text by text: the title and a one-word paragraph, or table cells
    # written without a space between them, are not one word. An h1 left open holds more.
    title = sum(len(text.split()) for h1 in headings for text in h1.itertext())
    words = 0
    for text in root.itertext():
        words += len(text.split())
        if words > title:
            return False  # counted no further than the first words past the title's
    return True
