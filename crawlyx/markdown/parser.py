"""Parsing: BeautifulSoup with a pruning lxml tree builder, and flattening of
pathologically deep trees."""

from __future__ import annotations

import warnings

from bs4 import BeautifulSoup, NavigableString, Tag

from crawlyx.markdown.tags import DROP_TAGS

try:
    from bs4.builder._lxml import LXMLTreeBuilder
except ImportError:  # pragma: no cover - lxml missing
    LXMLTreeBuilder = None

try:
    from bs4 import MarkupResemblesLocatorWarning, XMLParsedAsHTMLWarning
except ImportError:  # pragma: no cover - older bs4
    pass
else:
    # Both warnings are bs4-specific and spurious for our input (short pages, XHTML).
    warnings.filterwarnings("ignore", category=MarkupResemblesLocatorWarning)
    warnings.filterwarnings("ignore", category=XMLParsedAsHTMLWarning)

_MAX_DEPTH = 150  # deeper subtrees are flattened to text when recursion runs out


if LXMLTreeBuilder is not None:

    class PrunedLXMLTreeBuilder(LXMLTreeBuilder):
        """bs4's lxml tree builder that never builds the subtrees we drop (script, style,
        svg, head, ...) nor comments/doctypes/processing instructions: building bs4 objects
        is the dominant cost of the whole conversion.  Remembers the first <base href>.

        For plain HTML (no XML namespaces in play) it also skips bs4's namespace
        bookkeeping; anything else goes through the stock implementation.
        """

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._skip_depth = 0
            self._fast = False
            self.base_href = None

        def initialize_soup(self, soup):
            super().initialize_soup(soup)
            self._fast = hasattr(self, "nsmaps") and hasattr(self, "active_namespace_prefixes")

        def start(self, tag, attrib, nsmap={}):  # noqa: B006 - lxml's signature
            if tag == "base" and self.base_href is None:
                self.base_href = attrib.get("href")
            if self._skip_depth:
                self._skip_depth += 1
            elif tag in DROP_TAGS:
                self._skip_depth = 1
            elif self._fast and not nsmap and len(self.nsmaps) == 1:
                self.soup.handle_starttag(
                    tag,
                    None,
                    None,
                    self.attribute_dict_class(attrib),
                    namespaces=self.active_namespace_prefixes[-1],
                )
            else:
                super().start(tag, attrib, nsmap)

        def end(self, tag):
            if self._skip_depth:
                self._skip_depth -= 1
            elif self._fast and len(self.nsmaps) == 1:
                self.soup.endData()
                self.soup.handle_endtag(tag, None)
            else:
                super().end(tag)

        def data(self, data):
            if not self._skip_depth:
                self.soup.handle_data(data)

        def comment(self, text):
            pass

        def pi(self, target, data):
            pass

        def doctype(self, name, pubid, system):
            pass

    _BS4_OPTIONS = {"builder": PrunedLXMLTreeBuilder}
else:  # pragma: no cover
    _BS4_OPTIONS = {"features": "html.parser"}


def _flatten_deep(soup: BeautifulSoup, max_depth: int) -> None:
    """Replace subtrees nested deeper than max_depth by their text (iteratively), so that
    the recursive converter does not run out of stack on pathological documents."""
    stack = [(soup, 0)]
    while stack:
        node, depth = stack.pop()
        for child in list(node.children):
            if not isinstance(child, Tag) or child.name in DROP_TAGS:
                continue
            if depth + 1 >= max_depth:
                for dropped in child.find_all(DROP_TAGS):
                    dropped.decompose()
                child.replace_with(NavigableString(child.get_text(" ")))
            else:
                stack.append((child, depth + 1))
