"""The page's tree as every extraction step reads and changes it: the words of an
element, of its links, of the whole tree in one pass (:func:`_measure`), and elements
dropped or unwrapped with the text around them kept.

Policy: a word is what spaces separate, and each Chinese or Japanese character is one
(they put no space between words); a paragraph is prose at eight words, no more than
three in ten of them in links; a dropped element's trailing text stays where it read, and
elements are dropped in batches (one at a time is quadratic in a long run of them).
"""

from __future__ import annotations

import re

_BLOCKS = ("div", "section", "ul", "ol", "table", "dl", "p")
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_CODE = frozenset({"pre", "code"})
# Sizes the steps share: an article's worth of prose, a lead's.
ARTICLE_WORDS = 150
LEAD_WORDS = 30


def _text(el) -> str:
    return el.xpath("string()")


def attribute_values(doc, tag: str, attr: str, key: str = "", value: str = "") -> list[str]:
    """``//tag[@key="value"]/@attr``: one walk over the page's elements of that tag, where
    an XPath query goes through every node of the page (a tenth of a second at 16 MiB)."""
    return [
        found
        for el in doc.iter(tag)
        if (not key or el.get(key) == value) and (found := el.get(attr)) is not None
    ]


def _text_len(el) -> int:
    """Words of text in ``el``."""
    return _words(_text(el)) if el is not None else 0


# Chinese and Japanese put no space between words: each of their characters counts as one
# (a word is one or two of them), else a paragraph of them weighs what a one-word link
# does, and a sidebar of headlines passes for the article.
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


# The first byte of those characters in UTF-8: a text without any has none of them, which
# a few byte searches tell sooner than the pattern does (a fifth of the time on a page).
_UNSPACED_LEADS = tuple(bytes([b]) for b in (*range(0xE3, 0xEA), 0xEF))


def _words(text: str) -> int:
    """Words of ``text``: separated by spaces, or written without them."""
    words = len(text.split())
    if text.isascii():
        return words
    encoded = text.encode("utf-8", "surrogatepass")
    if not any(lead in encoded for lead in _UNSPACED_LEADS):
        return words
    return words + len(_UNSPACED.findall(text))


def _link_text_len(el) -> int:
    return sum(_text_len(a) for a in el.iter("a"))


def _text_before(el, text: str) -> None:
    """Add ``text`` where it reads just before ``el``: its previous sibling's tail, or its
    parent's text."""
    prev = el.getprevious()
    if prev is not None:
        prev.tail = (prev.tail or "") + text
    else:
        parent = el.getparent()
        parent.text = (parent.text or "") + text


def _drop(el) -> None:
    parent = el.getparent()
    if parent is None:
        return
    # Keep the text that follows the element (lxml stores it on the element).
    if el.tail and el.tail.strip():
        _text_before(el, el.tail)
    parent.remove(el)


# Elements are dropped in batches: a loop judges them one by one (marking those it drops,
# renamed, where judging the next ones must see them gone) and drops them together at its
# end. Moving each one's tail onto the text before it, one at a time, copies that text
# again for every element of a run (thousands of buttons in a row): quadratic in the
# page. A batch moves the tails of a run onto the text before it at once.
_DROPPED = "crawlyx-dropped"


def _mark(el) -> None:
    el.tag = _DROPPED


def _drop_all(elements) -> None:
    """:func:`_drop` each of ``elements``, in document order, in one pass."""
    moved: dict = {}  # (element, "text" | "tail") -> the tails that go there
    for el in elements:
        parent = el.getparent()
        if parent is None:
            continue
        if el.tail and el.tail.strip():
            prev = el.getprevious()  # those dropped before it are gone already
            key = (prev, "tail") if prev is not None else (parent, "text")
            moved.setdefault(key, []).append(el.tail)
        parent.remove(el)
    for (target, side), tails in moved.items():
        setattr(target, side, (getattr(target, side) or "") + "".join(tails))


def _unwrap(el) -> None:
    """Replace ``el`` by its content: the emptied element is left to be dropped."""
    if el.text:
        _text_before(el, el.text)
        el.text = None
    for child in list(el):
        el.addprevious(child)


def _names(el) -> str:
    return f"{el.get('class', '')} {el.get('id', '')}"


def _inside(el, tags):
    for ancestor in el.iterancestors(*tags):
        return ancestor
    return None


def _measure(root) -> dict:
    """(words, words inside links) of every element under ``root``, in one pass."""
    stats: dict = {}
    # Most texts between elements are the markup's indentation: no words, no call.
    for el in reversed(list(root.iter())):
        tag = el.tag
        if not isinstance(tag, str):
            continue
        text = el.text
        words = _words(text) if text and not text.isspace() else 0
        links = 0
        for child in el:
            tail = child.tail
            if tail and not tail.isspace():
                words += _words(tail)
            if isinstance(child.tag, str):
                child_words, child_links = stats[child]
                words += child_words
                links += child_links
        stats[el] = (words, words if tag == "a" else links)
    return stats


def _only_code(el, stats) -> bool:
    """All of ``el``'s words are code: a box around a listing is code, whatever its name
    (mkdocstrings' "doc-signature", a highlighter's "comment-block")."""
    return 0 < stats[el][0] <= sum(stats[pre][0] for pre in el.iter("pre"))


def _is_section(el) -> bool:
    """A section of a document, opening with its heading: ``<section>``, or docutils'
    ``<div class="section">``."""
    if el.tag != "section" and not (el.tag == "div" and "section" in el.get("class", "").split()):
        return False
    first = next((c for c in el if isinstance(c.tag, str)), None)
    return first is not None and first.tag in _HEADINGS


def _prose(p, stats) -> int:
    """Words of a paragraph of prose (not a label, not a link with a caption), else 0."""
    words, links = stats[p]
    return words if words >= 8 and links <= 0.3 * words else 0
