"""Tables of contents a site loads in a noscript frame, as links of its pages.

mdBook and similar generators draw a book's table of contents with scripts, and offer it
to readers without them as ``<noscript><iframe src="toc.html"></iframe></noscript>`` on
every page (:mod:`crawlyx.content.outline` reads it). The pages themselves link only to
the previous and the next chapter. The crawl reads the table once and records it once, as
the outline it is (``crawlyx:{job}:graph:frames``: each entry's URL, the entry it is
nested under, its anchor text), and each page records the tables it embeds (node field
``frames``). Loading the graph turns them into links (:func:`apply_outlines`):

* a top-level entry is a link of every page that embeds the table, before the page's own
  links (the table is the site's navigation, in the site's reading order);
* a nested entry is a link of its parent entry's page (the page that entry leads to,
  through its redirects; if that is no page, the nearest ancestor entry's page that is,
  else it counts as top-level);

and the tree puts a nested entry's page under its parent entry's page
(:func:`crawlyx.graph.tree.build_tree`), even where a prev/next link reaches it sooner.

Why not every entry a link of every page, as a reader sees the sidebar: the whole book
would then be one link from any page, a flat tree; and the prev/next links alone make a
chain as deep as the book. The table's own nesting is the site's shape, and depth in the
audit is then how far down the table a chapter is.

The table's document is not a page: it gets no node of its own (unless the site links
to it too), and its links count only as the pages'. Derived links are not stored, so
they do not count against ``CRAWLYX_GRAPH_MAX_EDGES``.
"""

from __future__ import annotations

from collections import defaultdict

from crawlyx.graph.model import Graph
from crawlyx.graph.walk import is_page, resolve


def apply_outlines(graph: Graph, outlines: dict[str, list]) -> None:
    """Add the links the tables of contents ``outlines`` (frame URL -> its entries:
    [URL, URL fetched, fingerprint, parent entry or None, anchor text]) give the pages
    that embed them to ``graph.links``, and each nested entry's page to
    ``graph.outline``. A page's own anchor text for a link is kept."""
    embedders: dict[str, list[str]] = defaultdict(list)
    for url, node in graph.nodes.items():
        if node.frames and is_page(node):
            for frame in node.frames:
                if frame in outlines:
                    embedders[frame].append(url)
    derived: dict[str, dict[str, str]] = defaultdict(dict)  # page -> its table's links
    for frame in sorted(embedders):
        written: dict[str, str | None] = {}  # entry -> its parent entry, as the table has it
        for link, _fetched, _fingerprint, parent, anchor in outlines[frame]:
            written[link] = parent
            graph.tables.setdefault(frame, {}).setdefault(link, anchor)
            graph.node(link)
            source = _page_above(graph, parent, written)
            for page in [source] if source is not None else embedders[frame]:
                if page != link:
                    derived[page].setdefault(link, anchor)
            if source is not None:
                graph.outline.setdefault(link, source)
    # The table is the site's navigation: its links come first, in its order (the
    # reading order, crawlyx.graph.tree), each with the page's own anchor text if any.
    for page, links in derived.items():
        own = graph.links.get(page, {})
        graph.framed[page] = set(links) - set(own)
        graph.links[page] = {link: own.get(link, anchor) for link, anchor in links.items()}
        graph.links[page].update(own)


def _page_above(graph: Graph, entry: str | None, written: dict) -> str | None:
    """The page of ``entry`` or of its nearest ancestor entry that leads to one."""
    seen = set()
    while entry is not None and entry not in seen:
        seen.add(entry)
        page = resolve(graph, entry)
        if page is not None and is_page(graph.nodes.get(page)):
            return page
        entry = written.get(entry)
    return None
