"""The site tree, derived from the crawl's graph at the end; and llms.txt from it.

Rules (the same graph always gives the same tree, whatever order it was recorded in):

* The tree holds the site's pages (:func:`crawlyx.graph.walk.is_page`: read, 2xx, no
  redirect), opted-out (noindex) ones included, so their children keep their place.
* A page's depth is its link distance from the start (:func:`crawlyx.graph.walk.distances`;
  a redirect hop costs nothing: a link to a redirect reaches where it leads).
* Pages come in the site's reading order: the order a reader following links from the
  start meets them, breadth first, each page's links taken as the page writes them (a
  table of contents it loads in a noscript frame first: :mod:`crawlyx.graph.outline`),
  which is the order of its navigation (a docs site's sidebar, an mdBook's table of
  contents, a crate's module listing); pages the walk does not meet, by
  :func:`crawlyx.graph.walk.url_key` (path, then whole URL).
* A page's parent is, among the pages one link closer to the start that link to it (or
  to a redirect leading to it), the first in that order. Every page has one place:
  shared parents and cycles end there.
* Except where the site's own table of contents says otherwise
  (:mod:`crawlyx.graph.outline`): a page it nests under another entry goes under that
  entry's page, if the start reaches both and that page is not under this one (so a
  chapter's last section stays under its chapter, though the next chapter's "previous"
  link reaches it sooner).
* Children are in the same order.
* Pages the start's links never reach (sitemap-only pages, and pages only they link to)
  are not dropped: they form further trees, in :attr:`Tree.unlinked`, each rooted at an
  unreached page that no unreached page links to (by the same key), then at any left.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from crawlyx.graph.model import Graph
from crawlyx.graph.walk import chain, distances, is_page, resolve, url_key

OPT_OUT = ("noindex", "none", "noai")  # pages with these directives stay out of llms.txt


@dataclass
class TreeNode:
    url: str
    children: list[TreeNode] = field(default_factory=list)


@dataclass
class Tree:
    root: TreeNode | None  # the start page; None if it is no page (it failed)
    unlinked: list[TreeNode] = field(default_factory=list)

    def walk(self):
        """(level, node) of every page, depth first, in order: the root's tree, then the
        unlinked ones (their roots at level 0)."""
        stack = [(0, node) for node in reversed(self.unlinked)]
        if self.root is not None:
            stack.append((0, self.root))
        while stack:
            level, node = stack.pop()
            yield level, node
            stack.extend((level + 1, child) for child in reversed(node.children))


def _targets(graph: Graph, url: str) -> list[str]:
    """The pages ``url``'s links reach, through redirects."""
    reached = []
    for target in graph.links.get(url, ()):
        hops, loops = chain(graph, target)
        if not loops and is_page(graph.nodes.get(hops[-1])):
            reached.append(hops[-1])
    return reached


def build_tree(graph: Graph) -> Tree:
    dist = distances(graph)
    met = {url: index for index, url in enumerate(dist)}  # the walk's order of meeting
    unmet = len(met)
    pages = sorted(
        (u for u, n in graph.nodes.items() if is_page(n)),
        key=lambda url: (met.get(url, unmet), url_key(url)),
    )
    parent: dict[str, str] = {}
    for source in pages:  # in order: the first parent found is the one kept
        if source not in dist:
            continue
        for target in _targets(graph, source):
            if dist.get(target) == dist[source] + 1 and target not in parent:
                parent[target] = source
    _outline_parents(graph, dist, parent)
    nodes = {url: TreeNode(url) for url in pages}
    for url in pages:  # in order: children come out in it
        if url in parent:
            nodes[parent[url]].children.append(nodes[url])
    start = chain(graph, graph.start)[0][-1]
    root = nodes.get(start)
    return Tree(root, _unlinked(graph, [u for u in pages if u not in dist], nodes))


def _outline_parents(graph: Graph, dist: dict[str, int], parent: dict[str, str]) -> None:
    """Move each page a table of contents nests under another entry (``graph.outline``)
    under that entry's page, unless that page is in its subtree."""
    for entry, source in sorted(graph.outline.items(), key=lambda item: url_key(item[0])):
        target = resolve(graph, entry)
        if target is None or target not in dist or source not in dist:
            continue
        if not is_page(graph.nodes.get(target)) or parent.get(target) == source:
            continue
        above = source
        while above is not None and above != target:
            above = parent.get(above)
        if above is None:  # the walk up from the entry's page reached the root
            parent[target] = source


def _unlinked(graph: Graph, left: list[str], nodes: dict[str, TreeNode]) -> list[TreeNode]:
    """Trees of the pages the start does not reach (``left``, in key order): a visited
    set grows each tree breadth first over links among them."""
    remaining = set(left)
    linked = {t for url in left for t in _targets(graph, url) if t != url}
    roots = []
    for url in [u for u in left if u not in linked] + left:
        if url not in remaining:
            continue
        remaining.discard(url)
        roots.append(nodes[url])
        level = [url]
        while level:
            found = defaultdict(list)
            for source in level:
                for target in sorted(_targets(graph, source), key=url_key):
                    if target in remaining:
                        remaining.discard(target)
                        found[source].append(target)
            for source, targets in found.items():
                nodes[source].children = [nodes[t] for t in targets]
            level = sorted((t for ts in found.values() for t in ts), key=url_key)
    return roots


# How sites join a page's title and the site's name: "Install — Requests 2.34 documentation".
SEPARATORS = (" — ", " – ", " | ", " - ", " · ", " :: ", " » ")


class Titles:
    """The pages' titles as the tree and llms.txt show them. When at least half the
    site's titles (and two or more) share the site's name as their last or first part
    (after one of :data:`SEPARATORS`), that part is the site's name, the H1, and is
    taken off each title it ends or starts."""

    def __init__(self, graph: Graph, tree: Tree):
        self.graph = graph
        titles = [self._raw(n.url) for _, n in tree.walk()]
        self.affix = _common_affix([t for t in titles if t])
        root_title = tree.root is not None and self._raw(tree.root.url)
        if self.affix is not None:
            self.name = self.affix[2]
        else:
            self.name = root_title or urlsplit(graph.start).netloc

    def _raw(self, url: str) -> str:
        return " ".join((self.graph.nodes[url].title or "").split())

    def of(self, url: str) -> str:
        title = self._raw(url)
        if self.affix is not None:
            side, sep, name = self.affix
            if side == "suffix" and title.endswith(sep + name):
                title = title[: -len(sep + name)]
            elif side == "prefix" and title.startswith(name + sep):
                title = title[len(name + sep) :]
        return title or urlsplit(url).path or url

    def link(self, url: str) -> str:
        text = self.of(url).replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")
        return f"[{text}]({url})"


def _common_affix(titles: list[str]) -> tuple[str, str, str] | None:
    """(``suffix`` or ``prefix``, separator, name) shared by at least half of ``titles``."""
    counts: dict[tuple[str, str, str], int] = defaultdict(int)
    for title in titles:
        seen = set()
        for sep in SEPARATORS:
            if sep in title:
                seen.add(("suffix", sep, title.rpartition(sep)[2]))
                seen.add(("prefix", sep, title.partition(sep)[0]))
        for key in seen:
            counts[key] += 1
    if not counts:
        return None
    best = min(counts, key=lambda k: (-counts[k], k))
    return best if counts[best] >= max(2, len(titles) / 2) and best[2] else None


def tree_markdown(tree: Tree, graph: Graph) -> str:
    """The tree as an indented outline of titles and URLs."""
    titles = Titles(graph, tree)
    lines = [f"# {titles.name}", ""]
    first = tree.unlinked[0] if tree.unlinked else None
    for level, node in tree.walk():
        if node is first:
            lines += ["", "## Not linked from the start page", ""]
        holder = graph.nodes[node.url].written_as
        same = f" (written as {holder})" if holder else ""
        lines.append(f"{'  ' * level}- {titles.link(node.url)}{same}")
    return "\n".join(lines) + "\n"


def listed(graph: Graph, url: str) -> bool:
    """In llms.txt and llms-full.txt: not opted out (noindex, noai), and written under its
    own URL (not a copy of another page, nor an alias of its canonical)."""
    node = graph.nodes[url]
    return not set(node.robots) & set(OPT_OUT) and node.written_as is None


def _line(graph: Graph, titles: Titles, url: str) -> str:
    description = " ".join((graph.nodes[url].description or "").split())
    return f"- {titles.link(url)}" + (f": {description}" if description else "")


def _flatten(node: TreeNode) -> list[str]:
    return [n.url for _, n in Tree(node).walk()]


def llms_txt(tree: Tree, graph: Graph) -> str:
    """llms.txt (llmstxt.org): the site's name as H1, its description as the blockquote,
    then one section per top-level page that has pages under it (that page, then its
    whole subtree, depth first), preceded by an "Overview" of the start page and its
    other top-level pages, and followed by "Other pages" (the unlinked ones).
    Opted-out pages are left out, their subtrees are not."""
    titles = Titles(graph, tree)
    root = tree.root
    node = graph.nodes[root.url] if root is not None else None
    summary = node is not None and (node.description or node.summary)
    summary = " ".join((summary or f"The pages of {urlsplit(graph.start).netloc}.").split())
    sections: list[tuple[str, list[str]]] = []
    if root is not None:
        overview = [root.url] + [c.url for c in root.children if not c.children]
        sections.append(("Overview", overview))
        sections += [(titles.of(c.url), _flatten(c)) for c in root.children if c.children]
    sections.append(("Other pages", [u for n in tree.unlinked for u in _flatten(n)]))
    lines = [f"# {titles.name}", "", f"> {summary}"]
    for title, urls in sections:
        urls = [u for u in urls if listed(graph, u)]
        if urls:
            lines += ["", f"## {title}", ""] + [_line(graph, titles, u) for u in urls]
    return "\n".join(lines) + "\n"


def write_llms_full(tree: Tree, graph: Graph, markdown_of, out) -> int:
    """Each listed page's markdown, in tree order, into the text stream ``out``, each
    headed by its URL; ``markdown_of(url)`` gives it (None: not stored, skipped).
    Returns the number of pages written."""
    written = 0
    for _, node in tree.walk():
        if not listed(graph, node.url):
            continue
        markdown = markdown_of(node.url)
        if markdown is None:
            continue
        if written:
            out.write("\n---\n\n")
        out.write(f"Source: {node.url}\n\n{markdown.strip()}\n")
        written += 1
    return written
