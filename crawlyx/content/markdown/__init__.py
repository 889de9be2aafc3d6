"""HTML -> markdown conversion for LLM consumption, built on markdownify.

The public entry point is :func:`html_to_markdown`, a plain module-level function so it can
be shipped to a ``concurrent.futures.ProcessPoolExecutor`` worker.  The converter is built
lazily, once per process.

Choices (see also the class docstring):

* the converter walks a light tree built straight from lxml (:mod:`crawlyx.content.markdown.tree`)
  instead of a BeautifulSoup tree, which would cost more to build than the conversion;
  dropped subtrees (script, style, svg, head, ...) and comments are left out of it;
* ``process_tag``/``process_text`` are re-implemented with markdownify's semantics on that
  tree, without its per-element ``find_parent('pre')`` walk and with cached parent-tag sets;
* tables are rendered from a cell grid (``_convert_table``) instead of markdownify's row-wise
  string assembly, so colspan/rowspan give rectangular GFM tables;
* text is not backslash-escaped (``snake_case``, ``a*b`` stay readable); only text that would
  read as a raw HTML tag (``<div>`` written as ``&lt;div&gt;``) gets its ``<`` escaped, and
  ``|`` is escaped inside table cells.
"""

from __future__ import annotations

from crawlyx.content import LINK_STYLES
from crawlyx.content.markdown.code import code_language as code_language
from crawlyx.content.markdown.converter import CrawlyxMarkdownConverter
from crawlyx.content.markdown.tags import DROP_TAGS as DROP_TAGS
from crawlyx.content.markdown.tree import parse

__all__ = ["html_to_markdown", "element_to_markdown", "CrawlyxMarkdownConverter"]

_converter: CrawlyxMarkdownConverter | None = None


def _get_converter() -> CrawlyxMarkdownConverter:
    global _converter
    if _converter is None:
        _converter = CrawlyxMarkdownConverter()
    return _converter


def html_to_markdown(html: str | bytes, base_url: str, links: str = "inline") -> str:
    """Convert an HTML document (or fragment) to markdown.

    Relative links are resolved against ``base_url`` (or the document's ``<base href>``).
    ``links``: ``inline`` ``[text](url)``, ``reference`` ``[text][1]`` with the URLs listed
    at the end, or ``none`` (the text alone).
    Returns ``""`` when there is no content, otherwise text ending in exactly one newline.
    """
    _check_links(links)
    if isinstance(html, bytes):
        html = html.decode("utf-8", "replace")
    if not html or html.isspace():
        return ""
    root = parse(html)
    if root is None:
        return ""
    base = root.find(".//base[@href]")
    return element_to_markdown(
        root, base_url, links, base.get("href") if base is not None else None
    )


def element_to_markdown(root, base_url: str, links: str = "inline", base_href=None) -> str:
    """Markdown of an lxml element (a parsed page or part of one), as
    :func:`html_to_markdown`; ``base_href`` is the page's ``<base href>``, if any."""
    _check_links(links)
    return _get_converter().convert_element(root, base_url or "", links, base_href)


def _check_links(links: str) -> None:
    if links not in LINK_STYLES:
        raise ValueError(f"links must be one of {', '.join(LINK_STYLES)}, not {links!r}")
