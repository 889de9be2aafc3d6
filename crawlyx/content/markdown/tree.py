"""The tree the converter walks, built straight from lxml.

markdownify is written against BeautifulSoup trees, but building one (bs4 re-parses the
HTML and creates an object per node with its navigation bookkeeping) costs more than the
whole conversion. The converter needs far less: an element's name, attributes, parent
and children, where a child is an :class:`Element` or a plain ``str``. That tree is built
from an lxml element in one pass, with what is never rendered left out on the way:

* elements in :data:`DROP_TAGS` (scripts, styles, svg, head...) with their content,
  comments and processing instructions;
* the text on either side of something left out is one string, as in the source.
"""

from __future__ import annotations

import re

from lxml import etree

from crawlyx.content.markdown.tags import DROP_TAGS

MAX_DEPTH = 150  # deeper subtrees are flattened to their text when recursion runs out

# Plain lxml elements (lxml.html's classes cost a lookup per element touched). huge_tree
# lifts libxml2's nesting limit from 256 to 2048 levels: past the limit it drops the rest
# of the page, and badly broken pages (thousands of unclosed tags) do get that deep.
_PARSER = etree.HTMLParser(remove_comments=True, remove_pis=True, huge_tree=True)

# "</body>" or "</html>" with elements after it: a template closed the page early and
# went on. Browsers put what follows in the body; libxml2 puts it beside the body, or
# drops it after "</html>". Without those end tags it lands where a browser shows it.
_EARLY_END = r"</(?:body|html)\s*>(?=.*?<[a-z])"
_EARLY_END_TEXT = re.compile(_EARLY_END, re.IGNORECASE | re.DOTALL)
_EARLY_END_BYTES = re.compile(_EARLY_END.encode(), re.IGNORECASE | re.DOTALL)


class Element:
    """An HTML element: ``name``, ``attrs``, ``contents`` (Elements and strs), ``parent``."""

    __slots__ = ("name", "attrs", "contents", "parent")

    def __init__(self, name: str, attrs: dict, parent: Element | None):
        self.name = name
        self.attrs = attrs
        self.contents: list[Element | str] = []
        self.parent = parent

    def get(self, key: str, default=None):
        return self.attrs.get(key, default)

    def elements(self, *names: str) -> list[Element]:
        """Child elements, those named ``names`` if any are given."""
        return [c for c in self.contents if type(c) is Element and (not names or c.name in names)]

    def __repr__(self) -> str:
        return f"<{self.name} {len(self.contents)} children>"


def parse(html: str | bytes):
    """An HTML document or fragment as an lxml element, or None when there is none."""
    if isinstance(html, str) and not html.isascii():
        try:
            html.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates, where lxml would stop: U+FFFD each
            html = html.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(html, str):
        html = _EARLY_END_TEXT.sub("", html)
    else:
        html = _EARLY_END_BYTES.sub(b"", html)
    try:
        return etree.fromstring(html, _PARSER) if html else None
    except ValueError:
        if isinstance(html, bytes):
            return None
        # A str with an XML encoding declaration: lxml wants bytes for that.
        return parse(html.encode("utf-8"))
    except etree.ParserError:
        return None


def build(root, max_depth: int | None = None) -> Element:
    """The tree of lxml element ``root`` under a ``[document]`` element. Elements nested
    deeper than ``max_depth`` become their text (see :data:`MAX_DEPTH`)."""
    document = Element("[document]", {}, None)
    if not isinstance(root.tag, str) or root.tag in DROP_TAGS:
        return document
    top = Element(root.tag, dict(root.attrib), document)
    document.contents.append(top)
    # Iterative, so a pathologically deep page cannot exhaust the stack here.
    stack = [(root, top, 1)]
    while stack:
        el, node, depth = stack.pop()
        contents = node.contents
        text = el.text or ""
        for child in el:
            tag = child.tag
            if isinstance(tag, str) and tag not in DROP_TAGS:
                if max_depth is not None and depth >= max_depth:
                    text += " ".join(_texts(child))
                else:
                    if text:
                        contents.append(text)
                        text = ""
                    sub = Element(tag, dict(child.attrib), node)
                    contents.append(sub)
                    stack.append((child, sub, depth + 1))
            if child.tail:
                text += child.tail
        if text:
            contents.append(text)
    return document


def _texts(root):
    """The text pieces under ``root``, in document order, without what :func:`build`
    leaves out (iterative, like it)."""
    stack = [root]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item.tag, str) and item.tag not in DROP_TAGS:
            if item.text:
                yield item.text
            for child in reversed(item):
                if child.tail:
                    stack.append(child.tail)
                stack.append(child)
