"""Walking a :class:`~crawlyx.graph.model.Graph`: which nodes are pages, where a URL's
redirects end, and how far each URL is from the start. Shared by the audit and the tree.

Distance is the number of links followed from the start URL, the shortest found. A
redirect hop is not a link: the URL a redirect leads to is at the same distance as the
redirecting URL (a link to ``/old`` that redirects to ``/new`` puts ``/new`` one link
away). Only pages' links are followed (a page is fetched, answered 2xx, is no redirect,
and did not fail), so the distances are those a reader clicking through the site meets.
"""

from __future__ import annotations

from collections import deque
from urllib.parse import urlsplit

from crawlyx.graph.model import Graph, Node

# Errors that still leave a page: it was read, and only kept out of the output.
PAGE_ERRORS = (None, "opted_out")


def is_page(node: Node | None) -> bool:
    """A page of the site: read, 2xx (or no status recorded), no redirect, no failure."""
    return (
        node is not None
        and node.fetched
        and node.redirect is None
        and node.error in PAGE_ERRORS
        and (node.status is None or 200 <= node.status < 300)
    )


def url_key(url: str) -> tuple[str, str]:
    """The order of URLs wherever one must be chosen: by path, then by the whole URL
    (so ``/a?x`` and ``/a?y`` of one path still differ). A total order."""
    return urlsplit(url).path, url


def chain(graph: Graph, url: str) -> tuple[list[str], bool]:
    """The redirect hops from ``url``: ``[url, next, ..., last]``, and whether they loop
    (then ``last`` is the first URL seen again)."""
    hops, seen = [url], {url}
    node = graph.nodes.get(url)
    while node is not None and node.redirect is not None:
        target = node.redirect
        hops.append(target)
        if target in seen:
            return hops, True
        seen.add(target)
        node = graph.nodes.get(target)
    return hops, False


def resolve(graph: Graph, url: str) -> str | None:
    """Where ``url``'s redirects end; None if they loop."""
    hops, loops = chain(graph, url)
    return None if loops else hops[-1]


def distances(graph: Graph) -> dict[str, int]:
    """URL -> links followed from the start, shortest (a 0-1 BFS: links weigh 1, redirect
    hops 0). Every URL reached is in it, pages or not; URLs not reached are not. In the
    order the walk first meets them: each page's links in the order it writes them."""
    dist = {graph.start: 0}
    queue = deque([graph.start])
    while queue:
        url = queue.popleft()
        d = dist[url]
        node = graph.nodes.get(url)
        if node is None:
            continue
        if node.redirect is not None:
            if dist.get(node.redirect, d + 1) > d:
                dist[node.redirect] = d
                queue.appendleft(node.redirect)
            continue
        if not is_page(node):
            continue
        for target in graph.links.get(url, ()):
            if dist.get(target, d + 2) > d + 1:
                dist[target] = d + 1
                queue.append(target)
    return dist
