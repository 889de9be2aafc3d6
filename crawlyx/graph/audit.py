"""The site audit: what is wrong with a site, read from the crawl's graph, no refetch.

:func:`audit` is a pure function of a :class:`~crawlyx.graph.model.Graph`: the same graph
gives the same report, rows sorted, whichever process recorded what. The schema is
documented in docs/audit.md; :data:`SCHEMA` is its version.

Policies:

* A *broken link* is a link to a URL that answered 4xx/5xx or failed to fetch (a fetch
  error class of the crawl report). A link to a redirect whose chain ends at such a URL
  is a broken link too: its source is listed with ``via``, the URL it linked. A link of a
  table of contents that pages load in a frame (mdBook's) is one link to fix, written in
  the table: its source is the table, with ``shown_on``, how many pages show it; the
  pages' sources are the links they write themselves.
* A redirect *chain* is listed when it takes more than one hop from a URL nothing
  redirects to (a link target, the start, a sitemap entry); a *loop* once, rotated to
  start at its smallest URL; a chain that runs into a loop is reported as the loop.
* *Orphans*: sitemap URLs that no page links to, directly or through redirects; the
  start page is never one.
* *canonical*: a page whose canonical names another URL the crawl knows that answered
  non-2xx (``non_200``), redirects (``redirect``), or names yet another canonical
  (``chained``). A canonical the crawl never requested is not judged.
* Titles, descriptions and content duplicates are about pages (fetched, 2xx, no
  redirect; opted-out pages included): see :func:`crawlyx.graph.walk.is_page`.
* When the graph is truncated the link lists are incomplete: orphans and depth are not
  computed (null, named in ``skipped``) and sources of broken or blocked links may be
  missing (``sources_complete`` is false).
"""

from __future__ import annotations

from collections import Counter, defaultdict

from crawlyx.errors import FETCH_FAILURES
from crawlyx.graph.duplicates import duplicates, texts
from crawlyx.graph.model import Graph
from crawlyx.graph.walk import chain, distances, is_page, url_key

SCHEMA = 1
NOINDEX = ("noindex", "none")


def audit(graph: Graph, max_depth: int = 4) -> dict:
    inlinks = graph.inlinks()
    pages = sorted((u for u, n in graph.nodes.items() if is_page(n)), key=url_key)
    chains, loops, to_redirects = redirects(graph)
    exact, near = duplicates(graph, pages)
    titles, descriptions = texts(graph, pages, "title"), texts(graph, pages, "description")
    orphan_rows = None if graph.truncated else orphans(graph, inlinks)
    depth_rows = None if graph.truncated else depth(graph, pages, max_depth)
    report = {
        "schema": SCHEMA,
        "start": graph.start,
        "graph_truncated": graph.truncated,
        "skipped": ["orphans", "depth"] if graph.truncated else [],
        "sources_complete": not graph.truncated,
        "summary": {},
        "broken_links": broken_links(graph, inlinks),
        "redirects": {"chains": chains, "loops": loops, "links_to_redirects": to_redirects},
        "orphans": orphan_rows,
        "noindex": [
            {"url": u, "robots": sorted(graph.nodes[u].robots)}
            for u in sorted(graph.nodes)
            if graph.nodes[u].fetched and set(graph.nodes[u].robots) & set(NOINDEX)
        ],
        "robots_blocked": [
            {"url": u, "sources": _sources(inlinks.get(u, {}))}
            for u in sorted(inlinks)
            if u in graph.nodes and graph.nodes[u].error == "robots_disallowed"
        ],
        "canonical": canonicals(graph, pages),
        "duplicates": {
            "exact": exact,
            "near": near,
            "titles": titles,
            "descriptions": descriptions,
        },
        "depth": depth_rows,
    }
    report["summary"] = summary(graph, report, len(pages))
    return report


def summary(graph: Graph, report: dict, pages: int) -> dict:
    def count(rows):
        return None if rows is None else len(rows)

    dup = report["duplicates"]
    return {
        "urls": len(graph.nodes),
        "pages": pages,
        "links": sum(len(targets) for targets in graph.links.values()),
        "broken_links": len(report["broken_links"]),
        "redirect_chains": len(report["redirects"]["chains"]),
        "redirect_loops": len(report["redirects"]["loops"]),
        "links_to_redirects": len(report["redirects"]["links_to_redirects"]),
        "orphans": count(report["orphans"]),
        "noindex": len(report["noindex"]),
        "robots_blocked": len(report["robots_blocked"]),
        "canonical": len(report["canonical"]),
        "exact_duplicate_groups": len(dup["exact"]),
        "near_duplicate_groups": len(dup["near"]),
        "duplicate_titles": len(dup["titles"]["duplicate"]),
        "missing_titles": len(dup["titles"]["missing"]),
        "duplicate_descriptions": len(dup["descriptions"]["duplicate"]),
        "missing_descriptions": len(dup["descriptions"]["missing"]),
        "too_deep": None if report["depth"] is None else len(report["depth"]["too_deep"]),
    }


def _sources(sources: dict[str, str], via: str | None = None) -> list[dict]:
    return [{"url": s, "anchor": a, "via": via} for s, a in sorted(sources.items())]


def _broken(node) -> bool:
    if node is None:
        return False
    return node.error in FETCH_FAILURES or (node.status is not None and node.status >= 400)


def _tried(node) -> bool:
    """The crawl requested it (it has an answer or an error), or read it."""
    return node.fetched or node.status is not None or node.error is not None


def broken_links(graph: Graph, inlinks: dict) -> list[dict]:
    found: dict[str, list[dict]] = defaultdict(list)
    shown_on = Counter(
        frame for url, node in graph.nodes.items() if is_page(node) for frame in node.frames
    )
    for target, sources in inlinks.items():
        hops, loops = chain(graph, target)
        end = hops[-1]
        if loops or not _broken(graph.nodes.get(end)):
            continue
        via = None if end == target else target
        own = {s: a for s, a in sources.items() if target not in graph.framed.get(s, ())}
        found[end] += _sources(own, via)
        for table, entries in graph.tables.items():
            if target in entries and len(own) < len(sources):
                row = {"url": table, "anchor": entries[target], "via": via}
                found[end].append({**row, "shown_on": shown_on[table]})
    rows = []
    for url in sorted(found):
        node = graph.nodes[url]
        sources = sorted(found[url], key=lambda s: (s["url"], s["via"] or ""))
        rows.append({"url": url, "status": node.status, "error": node.error, "sources": sources})
    return rows


def redirects(graph: Graph) -> tuple[list, list, list]:
    """(chains of more than one hop, loops, links to a redirect)."""
    targets = {n.redirect for n in graph.nodes.values() if n.redirect is not None}
    chains, loops = [], set()
    for url in sorted(graph.nodes):
        if graph.nodes[url].redirect is None:
            continue
        hops, looped = chain(graph, url)
        if looped:
            cycle = hops[hops.index(hops[-1]) : -1]
            first = cycle.index(min(cycle))
            loops.add(tuple(cycle[first:] + cycle[:first]))
        elif url not in targets and len(hops) > 2:
            end = graph.nodes.get(hops[-1])
            chains.append(
                {
                    "url": url,
                    "hops": [{"url": u, "status": graph.nodes[u].status} for u in hops[:-1]],
                    "final": hops[-1],
                    "final_status": end.status if end else None,
                }
            )
    to_redirects = []
    for source in sorted(graph.links):
        for target, anchor in sorted(graph.links[source].items()):
            node = graph.nodes.get(target)
            if node is not None and node.redirect is not None:
                hops, looped = chain(graph, target)
                final = None if looped else hops[-1]
                to_redirects.append(
                    {"source": source, "target": target, "anchor": anchor, "final": final}
                )
    return chains, [{"loop": list(c) + [c[0]]} for c in sorted(loops)], to_redirects


def orphans(graph: Graph, inlinks: dict) -> list[dict]:
    """Sitemap URLs no page links to (a link to a redirect counts for where it leads)."""
    linked = set()
    for target, sources in inlinks.items():
        if set(sources) - {target}:  # a page's link to itself does not count
            linked.update(chain(graph, target)[0])
    return [
        {"url": u, "status": n.status}
        for u, n in sorted(graph.nodes.items())
        if n.in_sitemap and u not in linked and u != graph.start
    ]


def canonicals(graph: Graph, pages: list[str]) -> list[dict]:
    rows = []
    for url in sorted(pages):
        canonical = graph.nodes[url].canonical
        target = graph.nodes.get(canonical) if canonical else None
        if target is None or canonical == url or not _tried(target):
            continue
        if target.redirect is not None:
            problem = "redirect"
        elif _broken(target) or not is_page(target):
            problem = "non_200"
        elif target.canonical and target.canonical != canonical:
            problem = "chained"
        else:
            continue
        rows.append(
            {
                "url": url,
                "canonical": canonical,
                "problem": problem,
                "canonical_status": target.status,
                "canonical_error": target.error,
                "canonical_redirect": target.redirect,
                "canonical_canonical": target.canonical,
            }
        )
    return rows


def depth(graph: Graph, pages: list[str], max_depth: int) -> dict:
    """Pages by their distance from the start (:func:`crawlyx.graph.walk.distances`)."""
    dist = distances(graph)
    reached = {url: dist[url] for url in pages if url in dist}
    histogram = Counter(reached.values())
    return {
        "max_depth": max_depth,
        "distribution": {str(d): histogram[d] for d in sorted(histogram)},
        "unreachable": sorted(url for url in pages if url not in dist),
        "too_deep": [
            {"url": url, "depth": d}
            for url, d in sorted(reached.items(), key=lambda item: (item[1], item[0]))
            if d > max_depth
        ],
    }


# The findings the summaries list, in the order a site owner fixes them: what fails a
# reader first (links that lead nowhere), then what search engines and crawlers trip on,
# then the polish; missing descriptions last (documentation pages rarely have one).
FINDINGS = (
    ("broken_links", "broken links"),
    ("redirect_loops", "redirect loops"),
    ("redirect_chains", "redirect chains of more than one hop"),
    ("orphans", "orphans (in the sitemap, linked from no page)"),
    ("canonical", "bad canonicals"),
    ("robots_blocked", "linked pages blocked by robots.txt"),
    ("missing_titles", "missing titles"),
    ("exact_duplicate_groups", "groups of exact duplicates"),
    ("links_to_redirects", "links to a redirect"),
    ("duplicate_titles", "duplicate titles"),
    ("near_duplicate_groups", "groups of near-duplicates"),
    ("noindex", "noindex pages"),
    ("too_deep", "pages deeper than the maximum depth"),
    ("duplicate_descriptions", "duplicate descriptions"),
    ("missing_descriptions", "missing descriptions"),
)


def audit_markdown(report: dict) -> str:
    """The report's summary as markdown: each finding with its count and all its rows."""
    counts = report["summary"]
    lines = [
        f"# Site audit: {report['start']}",
        "",
        f"{counts['pages']} pages, {counts['urls']} URLs, {counts['links']} links.",
    ]
    if report["graph_truncated"]:
        lines.append(
            "The link graph was truncated: not checked: "
            + ", ".join(report["skipped"])
            + "; link sources may be incomplete."
        )
    lines += ["", "| finding | count |", "| --- | ---: |"]
    for key, label in FINDINGS:
        value = counts[key]
        lines.append(f"| {label} | {'not checked' if value is None else value} |")
    for key, label in FINDINGS:
        examples = _examples(report, key)
        if examples:
            lines += ["", f"## {label[0].upper()}{label[1:]}", ""]
            lines += [f"- {text}" for text in examples]
    return "\n".join(lines) + "\n"


def _linked_from(sources: list[dict]) -> str:
    """ "3 pages", "the table of contents T (shown on 110 pages) and 3 pages"."""
    tables = [f"the table of contents {s['url']} (shown on {s['shown_on']} pages)"
              for s in sources if "shown_on" in s]  # fmt: skip
    pages = len(sources) - len(tables)
    return " and ".join([*tables, f"{pages} pages"] if pages or not tables else tables)


def _examples(report: dict, key: str) -> list[str]:
    dup, red = report["duplicates"], report["redirects"]

    def status(row):
        return row.get("error") or row.get("status")

    rows = {
        "broken_links": lambda: [
            f"{r['url']} ({status(r)}), linked from {_linked_from(r['sources'])}"
            for r in report["broken_links"]
        ],
        "redirect_chains": lambda: [
            " -> ".join(h["url"] for h in r["hops"]) + f" -> {r['final']}" for r in red["chains"]
        ],
        "redirect_loops": lambda: [" -> ".join(r["loop"]) for r in red["loops"]],
        "links_to_redirects": lambda: [
            f"{r['source']} -> {r['target']}" for r in red["links_to_redirects"]
        ],
        "orphans": lambda: [r["url"] for r in report["orphans"] or ()],
        "noindex": lambda: [r["url"] for r in report["noindex"]],
        "robots_blocked": lambda: [r["url"] for r in report["robots_blocked"]],
        "canonical": lambda: [
            f"{r['url']} -> {r['canonical']} ({r['problem']})" for r in report["canonical"]
        ],
        "exact_duplicate_groups": lambda: [", ".join(r["urls"]) for r in dup["exact"]],
        "near_duplicate_groups": lambda: [", ".join(r["urls"]) for r in dup["near"]],
        "duplicate_titles": lambda: [
            f"{r['title']!r}: {', '.join(r['urls'])}" for r in dup["titles"]["duplicate"]
        ],
        "missing_titles": lambda: [r["url"] for r in dup["titles"]["missing"]],
        "duplicate_descriptions": lambda: [
            f"{r['description']!r}: {', '.join(r['urls'])}"
            for r in dup["descriptions"]["duplicate"]
        ],
        "missing_descriptions": lambda: [r["url"] for r in dup["descriptions"]["missing"]],
        "too_deep": lambda: [
            f"{r['url']} (depth {r['depth']})" for r in (report["depth"] or {}).get("too_deep", ())
        ],
    }
    return rows[key]()
