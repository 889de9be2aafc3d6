"""HTML -> markdown conversion for LLM consumption, built on markdownify.

The public entry point is :func:`html_to_markdown`, a plain module-level function so it can
be shipped to a ``concurrent.futures.ProcessPoolExecutor`` worker.  The converter is built
lazily, once per process.

Choices (see also the class docstring):

* parsing uses BeautifulSoup with a pruning subclass of bs4's lxml tree builder: dropped
  subtrees (script, style, svg, head, ...) and comments are never turned into bs4 objects,
  which is where most of the time goes;
* ``process_tag``/``process_text`` are re-implemented with markdownify's semantics but without
  its per-element ``find_parent('pre')`` walk and with cached parent-tag sets;
* tables are rendered from a cell grid (``_convert_table``) instead of markdownify's row-wise
  string assembly, so colspan/rowspan give rectangular GFM tables;
* text is not backslash-escaped (``snake_case``, ``a*b`` stay readable); only text that would
  read as a raw HTML tag (``<div>`` written as ``&lt;div&gt;``) gets its ``<`` escaped, and
  ``|`` is escaped inside table cells.
"""

from __future__ import annotations

from crawlyx.markdown.code import code_language as code_language
from crawlyx.markdown.converter import CrawlyxMarkdownConverter
from crawlyx.markdown.tags import DROP_TAGS as DROP_TAGS

__all__ = ["html_to_markdown", "CrawlyxMarkdownConverter"]

_converter: CrawlyxMarkdownConverter | None = None


def _get_converter() -> CrawlyxMarkdownConverter:
    global _converter
    if _converter is None:
        _converter = CrawlyxMarkdownConverter()
    return _converter


LINK_STYLES = ("inline", "reference", "none")


def html_to_markdown(html: str, base_url: str, links: str = "inline") -> str:
    """Convert an HTML document (or fragment) to markdown.

    Relative links are resolved against ``base_url`` (or the document's ``<base href>``).
    ``links``: ``inline`` ``[text](url)``, ``reference`` ``[text][1]`` with the URLs listed
    at the end, or ``none`` (the text alone).
    Returns ``""`` when there is no content, otherwise text ending in exactly one newline.
    """
    if links not in LINK_STYLES:
        raise ValueError(f"links must be one of {', '.join(LINK_STYLES)}, not {links!r}")
    if isinstance(html, bytes):
        html = html.decode("utf-8", "replace")
    if not html or html.isspace():
        return ""
    return _get_converter().convert_document(html, base_url or "", links)
