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

# The converter's tree is at most this deep: deeper subtrees are their text. Real pages
# nest fewer than 50 levels (a thousand of them measured); the converter's recursion, and
# its work (each level joins what is below it), stay bounded on a page nested as deep as
# the parser lets it.
MAX_DEPTH = 100

# Plain lxml elements (lxml.html's classes cost a lookup per element touched). huge_tree
# lifts libxml2's nesting limit from 256 to 2048 levels: past the limit it drops the rest
# of the page, and badly broken pages (thousands of unclosed tags) do get that deep.
_PARSER = etree.HTMLParser(remove_comments=True, remove_pis=True, huge_tree=True)

# "</body>" or "</html>" with elements after it: a template closed the page early and
# went on. Browsers put what follows in the body; libxml2 puts it beside the body, or
# drops it after "</html>". Without those end tags it lands where a browser shows it.
# Those before the page's last start tag are the early ones: one pass over the page
# however many there are (looking ahead from each for a start tag was one pass per tag).
_END = r"</(?:body|html)\s*>"
_LAST_START = r".*<[a-z]"
_END_TEXT = re.compile(_END, re.IGNORECASE)
_END_BYTES = re.compile(_END.encode(), re.IGNORECASE)
_LAST_START_TEXT = re.compile(_LAST_START, re.IGNORECASE | re.DOTALL)
_LAST_START_BYTES = re.compile(_LAST_START.encode(), re.IGNORECASE | re.DOTALL)

# Elements nested deeper than libxml2's limit (2048 open elements with huge_tree) make it
# stop and drop the rest of the page: 20,000 nested <div>s around a word, <b><i><span>
# thousands deep, thousands of <wbr> (libxml2 does not know it is void and nests what
# follows each inside it). Such a page is parsed again with what nests past
# MAX_NESTING left out (see _flatten), as browsers do past 512 open elements: the
# text stays, the nesting past the limit goes.
MAX_NESTING = 512
_TAG = re.compile(
    r"<!--.*?(?:-->|\Z)"  # a comment, copied
    r"|<(script|style|textarea|title|xmp|plaintext)(?=[\s/>]).*?(?:</\1\s*>|\Z)"  # raw text, copied
    r"|<(/?)([a-z][^\s/>]*)(?:\"[^\"]*\"|'[^']*'|[^'\">])*>",  # a start or end tag
    re.IGNORECASE | re.DOTALL,
)
# Void elements open nothing. Those libxml2 takes for containers although they have no
# content (it nests what follows each inside it) are left out.
_VOID = frozenset("area base basefont br col frame hr img input isindex link meta param".split())
_CONTENTLESS = frozenset("wbr source track embed keygen command menuitem".split())
# Elements that a start tag of their own name closes (a new <p>, <li>, <td>...).
_SIBLINGS = frozenset("p li dt dd option tr td th".split())
# Phrasing elements: one left out leaves nothing in its place (a block leaves a space).
_INLINE = frozenset(
    "a abbr b bdi bdo big cite code data del dfn em font i ins kbd mark nobr q s samp "
    "small span strike strong sub sup time tt u var".split()
)


class Element:
    """An HTML element: ``name``, ``attrs``, ``contents`` (Elements and strs), ``parent``,
    and ``index``, its place in its parent's contents."""

    __slots__ = ("name", "attrs", "contents", "parent", "index")

    def __init__(self, name: str, attrs: dict, parent: Element | None, index: int = 0):
        self.name = name
        self.attrs = attrs
        self.contents: list[Element | str] = []
        self.parent = parent
        self.index = index

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
    html = _without_early_ends(html)
    root = _parse(html)
    if root is not None and _too_deep():
        root = _parse(_flatten(html, MAX_NESTING))
        if _too_deep():  # nested in ways _flatten does not follow: the text alone
            root = _parse(_flatten(html, 0))
    return root


def _parse(html: str | bytes):
    try:
        return etree.fromstring(html, _PARSER) if html else None
    except ValueError:
        if isinstance(html, bytes):
            return None
        # A str with an XML encoding declaration: lxml wants bytes for that.
        return _parse(html.encode("utf-8"))
    except etree.ParserError:
        return None


def _too_deep() -> bool:
    """The last parse stopped at libxml2's nesting limit (its error is the last one)."""
    error = _PARSER.error_log.last_error
    return error is not None and error.type == etree.ErrorTypes.ERR_RESOURCE_LIMIT


def _without_early_ends(html: str | bytes) -> str | bytes:
    if isinstance(html, str):
        end, last_start = _END_TEXT, _LAST_START_TEXT
    else:
        end, last_start = _END_BYTES, _LAST_START_BYTES
    found = last_start.match(html)
    if found is None:
        return html
    cut = found.end() - 2  # the last start tag's "<"
    head, removed = end.subn(html[:0], html[:cut])
    return head + html[cut:] if removed else html


def _flatten(html: str | bytes, limit: int) -> str | bytes:
    """``html`` with the start and end tags of elements nested past ``limit`` left out,
    nesting followed as libxml2 does for the usual cases (void elements, a new <p> or
    <li> closing the open one, an end tag closing what is open inside its element)."""
    if isinstance(html, bytes):  # one char per byte: the markup is ASCII
        return _flatten(html.decode("latin-1"), limit).encode("latin-1")
    stack: list[str] = []  # the open elements' names
    open_names: dict[str, int] = {}  # how many of each name are open
    past: dict[str, int] = {}  # elements left out past the limit, still open

    def tag(match) -> str:
        name = match.group(3)
        if name is None:  # a comment or raw text
            return match.group(0)
        name = name.lower()
        if name in _CONTENTLESS:
            return ""
        gap = "" if name in _INLINE else " "
        if match.group(2):  # an end tag
            if past.get(name):
                past[name] -= 1
                return gap
            if open_names.get(name):  # closes it and what is open inside it
                past.clear()
                while True:
                    top = stack.pop()
                    open_names[top] -= 1
                    if top == name:
                        break
            return match.group(0)
        if name in _VOID:
            return match.group(0)
        if stack and stack[-1] == name and name in _SIBLINGS:
            return match.group(0)  # closes the open one and takes its place
        if len(stack) >= limit:
            past[name] = past.get(name, 0) + 1
            return gap
        stack.append(name)
        open_names[name] = open_names.get(name, 0) + 1
        return match.group(0)

    return _TAG.sub(tag, html)


def build(root, max_depth: int | None = None) -> Element:
    """The tree of lxml element ``root`` under a ``[document]`` element. Elements nested
    deeper than ``max_depth`` become their text (see :data:`MAX_DEPTH`)."""
    document = Element("[document]", {}, None)
    if not isinstance(root.tag, str) or root.tag in DROP_TAGS:
        return document
    top = Element(root.tag, dict(root.items()), document)
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
                    sub = Element(tag, dict(child.items()), node, len(contents))
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
