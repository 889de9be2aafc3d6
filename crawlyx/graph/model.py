"""The site's graph as the audit, the tree and llms.txt read it: plain data, in memory.

The crawl records the graph in Redis as it goes (:mod:`crawlyx.graph.store`); at the end
it is loaded into a :class:`Graph` and everything derived from it (the audit, the tree,
llms.txt) is a pure function of that value. The same recorded graph always gives the
same outputs, whichever process recorded which part, in whichever order.

URLs are normalized (:func:`crawlyx.urls.normalize.normalize_url`) and internal (on the
crawl's origin): links that leave the site are not part of the graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Node:
    """What the crawl learned of one URL. A URL only linked (never requested: out of
    allow/deny, the crawl stopped first) has nothing but its ``url``."""

    url: str
    status: int | None = None  # HTTP status of this URL's own response (301 for a hop)
    error: str | None = None  # error class (crawlyx.errors.ERROR_CLASSES) if it failed
    redirect: str | None = None  # where this URL redirected to (one hop), if it did
    fetched: bool = False  # read as a page (an item was emitted, or it was opted out)
    canonical: str | None = None  # <link rel=canonical>, normalized
    robots: tuple[str, ...] = ()  # robots directives (meta and X-Robots-Tag): noindex, ...
    content_hash: str | None = None  # sha256 of the page's markdown
    signature: bytes | None = None  # content MinHash for near-duplicates
    title: str | None = None
    description: str | None = None
    depth: int | None = None  # shortest link distance from the start URL found
    in_sitemap: bool = False  # listed in a sitemap of the site
    # The start page's first paragraph, for llms.txt's summary when it has no description.
    summary: str | None = None
    # Tables of contents the page loads in a noscript frame (crawlyx.graph.outline).
    frames: tuple[str, ...] = ()
    # A page whose document is written under another URL (a copy, an alias): not listed.
    written_as: str | None = None


@dataclass
class Graph:
    start: str  # the start URL, normalized (after its own redirects: the tree's root)
    nodes: dict[str, Node] = field(default_factory=dict)
    # source URL -> {target URL: anchor text}: a page's internal out-links, each once
    # (the first anchor text seen for it). Redirect hops are not links: Node.redirect.
    links: dict[str, dict[str, str]] = field(default_factory=dict)
    # More edges were found than CRAWLYX_GRAPH_MAX_EDGES: the links are incomplete, and
    # the checks that need the whole graph (orphans, depth, in-links) are not made.
    truncated: bool = False
    # page URL -> the entry a table of contents nests it under (crawlyx.graph.outline): the
    # tree's first choice of parent.
    outline: dict[str, str] = field(default_factory=dict)
    # page URL -> the links it has only from the tables of contents it embeds, and table
    # URL -> {entry URL: anchor text}: the audit reports a table's link once, at the table.
    framed: dict[str, set[str]] = field(default_factory=dict)
    tables: dict[str, dict[str, str]] = field(default_factory=dict)

    def node(self, url: str) -> Node:
        """The node of ``url``, made empty if the graph has none yet."""
        node = self.nodes.get(url)
        if node is None:
            node = self.nodes[url] = Node(url)
        return node

    def inlinks(self) -> dict[str, dict[str, str]]:
        """target URL -> {source URL: anchor text}."""
        inverse: dict[str, dict[str, str]] = {}
        for source, targets in self.links.items():
            for target, anchor in targets.items():
                inverse.setdefault(target, {})[source] = anchor
        return inverse
