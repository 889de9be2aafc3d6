"""A table of contents read as an outline: each link and the entry it is nested under.

mdBook and similar documentation generators draw a book's sidebar with scripts and, for
readers without them, load it from a document of its own:
``<noscript><iframe src="toc.html"></iframe></noscript>`` (found by
:func:`crawlyx.content.page.noscript_frames`). The crawl reads that document once and
its links become links of the pages (the policy is :mod:`crawlyx.graph.outline`'s). Its
nesting is what says where a chapter belongs, so it is read here with the links:

* An entry is a link in a list item (``<li>``); its parent is the link of the item
  whose list holds it: ``<li><a>Guide</a><ol><li><a>Install</a>...`` puts Install under
  Guide.
* mdBook puts a chapter's sections in the next item, which holds nothing but the list
  (``<li><a>Guide</a></li><li><ol>...</ol></li>``): such an item's list hangs under the
  item before it. An item with text of its own and no link (a part title) is a label:
  what it holds stays at the level of the label's own entries.
* Links outside any list, and entries of a list nothing holds, are top-level (parent
  None). A URL listed twice keeps its first place, so every parent comes before its
  children and no chain of parents loops.

Runs in a page worker (:meth:`crawlyx.content.workers.PageWorkers.run`).
"""

from __future__ import annotations

from functools import partial

from crawlyx.frontier.fingerprint import normalized_fingerprint
from crawlyx.urls.normalize import fetch_form

_LISTS = frozenset({"ol", "ul"})


def read_outline(page: str, url: str, scope: str | None) -> dict:
    """The outline of the table of contents ``page`` fetched from ``url``: ``entries``,
    [normalized URL, URL to fetch, fingerprint, parent (normalized URL or None), anchor
    text] of each link on the crawl's origin (``scope``) in document order, and the
    document's ``robots`` meta tags (as :func:`crawlyx.content.page.analyze` gives them)."""
    # Imported here, as the page workers do: the crawl process, which names this function
    # for a worker to run, does without the converter's imports (markdownify, 0.2 s).
    from crawlyx.content.extract import parse_document
    from crawlyx.content.page import _resolve, anchor_text, base_url, robots_meta

    doc = parse_document(page)
    if doc is None or scope is None:
        return {"entries": [], "robots": []}
    base = base_url(doc, url)
    outline = _Outline(partial(_resolve, base=base, prefix=scope + "/"), anchor_text)
    return {"entries": outline.entries(doc), "robots": robots_meta(doc)}


class _Outline:
    def __init__(self, resolve, anchor_text):
        self.resolve = resolve  # href -> normalized link on the origin, or None
        self.anchor_text = anchor_text
        self.resolved: dict[str, str | None] = {}  # href -> link
        self.own: dict = {}  # list item -> its own link (the first not in a nested list)
        self.under: dict = {}  # list item -> the link its entries are nested under

    def link(self, element) -> str | None:
        href = element.get("href")
        if href is None:
            return None
        if href not in self.resolved:
            self.resolved[href] = self.resolve(href)
        return self.resolved[href]

    def entries(self, doc) -> list[list]:
        found: dict[str, list] = {}
        for element in doc.iter("a", "area"):
            link = self.link(element)
            if link is None or link in found:
                continue
            item = _item(element)
            parent = self.parent_of(item) if item is not None else None
            raw = fetch_form(link, element.get("href").strip())
            fingerprint = normalized_fingerprint(link)
            found[link] = [link, raw, fingerprint, parent, self.anchor_text(element)]
        return list(found.values())

    def own_link(self, item) -> str | None:
        if item not in self.own:
            self.own[item] = next(
                (
                    link
                    for element in item.iter("a", "area")
                    if _item(element) is item and (link := self.link(element)) is not None
                ),
                None,
            )
        return self.own[item]

    def parent_of(self, item) -> str | None:
        """The link the entries of list item ``item`` are nested under, or None."""
        if item in self.under:
            return self.under[item]
        parent, child, node = None, item, item.getparent()
        while node is not None:
            if node.tag == "li":
                parent = self.holder(node)
                break
            if node.tag in _LISTS and child.tag in _LISTS:  # a list right in a list
                before = _previous_item(child)
                parent = self.own_link(before) if before is not None else None
                if parent is None and before is not None:
                    parent = self.parent_of(before)
                break
            child, node = node, node.getparent()
        self.under[item] = parent
        return parent

    def holder(self, item) -> str | None:
        """The link what list item ``item`` holds is nested under."""
        own = self.own_link(item)
        if own is not None:
            return own
        if not _label(item):  # mdBook: an item holding only the list of the one before
            before = _previous_item(item)
            if before is not None and self.own_link(before) is not None:
                return self.own_link(before)
        return self.parent_of(item)


def _item(element):
    """The list item ``element`` is in (the nearest), or None."""
    return next(element.iterancestors("li"), None)


def _previous_item(element):
    return next(element.itersiblings("li", preceding=True), None)


def _label(item) -> bool:
    """List item ``item`` has text of its own, outside the lists it holds."""
    if (item.text or "").strip():
        return True
    for child in item:
        if child.tag not in _LISTS and "".join(child.itertext()).strip():
            return True
        if (child.tail or "").strip():
            return True
    return False
