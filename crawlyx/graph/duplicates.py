"""Duplicate pages: the same content (one hash), near-duplicates (datasketch's MinHash
LSH over the pages' signatures, each candidate pair confirmed), and duplicate or missing
titles and descriptions. Part of the site audit (:mod:`crawlyx.graph.audit`)."""

from __future__ import annotations

from collections import defaultdict

from crawlyx.graph import neardup
from crawlyx.graph.model import Graph

NEAR_DUPLICATE = 0.9  # estimated Jaccard similarity of two pages' shingles


def texts(graph: Graph, pages: list[str], field: str) -> dict:
    """Duplicate (the same text on several pages, stripped) and missing titles or
    descriptions."""
    groups: dict[str, list[str]] = defaultdict(list)
    missing = []
    for url in pages:
        text = (getattr(graph.nodes[url], field) or "").strip()
        if text:
            groups[text].append(url)
        else:
            missing.append({"url": url})
    duplicate = [
        {field: text, "urls": sorted(urls)} for text, urls in groups.items() if len(urls) > 1
    ]
    duplicate.sort(key=lambda row: row["urls"])
    missing.sort(key=lambda row: row["url"])
    return {"duplicate": duplicate, "missing": missing}


def duplicates(graph: Graph, pages: list[str]) -> tuple[list[dict], list[dict]]:
    """(exact duplicate groups: the same content hash; near-duplicate groups).

    Each exact group takes part in the near-duplicate search by its smallest URL only,
    so a near group is never a repeat of an exact one: its URLs differ in content."""
    by_hash: dict[str, list[str]] = defaultdict(list)
    for url in sorted(pages):
        digest = graph.nodes[url].content_hash
        if digest:
            by_hash[digest].append(url)
    exact = [{"content_hash": h, "urls": urls} for h, urls in by_hash.items() if len(urls) > 1]
    exact.sort(key=lambda row: row["urls"])
    members = {urls[0] for urls in by_hash.values()}
    signatures = {
        url: graph.nodes[url].signature
        for url in sorted(pages)
        if graph.nodes[url].signature and (graph.nodes[url].content_hash is None or url in members)
    }
    return exact, near_duplicates(signatures)


LSH_BANDS = (8, 8)  # (bands, rows): 64 = the signature's bins


def near_duplicates(signatures: dict[str, bytes]) -> list[dict]:
    """Groups of URLs whose signatures are alike: LSH candidates, each pair confirmed
    with :func:`neardup.similarity`, then connected components (URLs with one signature
    join at once, and a pair already in one group is not compared again, so a site of
    many alike pages costs about a comparison per page). ``min_similarity`` is the
    lowest estimated similarity of a group's URL to its first."""
    alike: dict[bytes, list[str]] = defaultdict(list)
    for url in sorted(signatures):
        alike[signatures[url]].append(url)
    firsts = {urls[0]: sig for sig, urls in alike.items()}
    parent = {url: url for url in firsts}

    def root(url: str) -> str:
        while parent[url] != url:
            parent[url] = parent[parent[url]]
            url = parent[url]
        return url

    if len(firsts) > 1:
        # datasketch imports scipy (~1.4 s): only when there is something to compare.
        from datasketch import LeanMinHash, MinHashLSH

        def minhash(sig: bytes) -> LeanMinHash:
            # Full-range 64-bit values: datasketch's "affine64" storage (uint64).
            return LeanMinHash(seed=1, hashvalues=neardup.values(sig), scheme="affine64")

        # 8 bands of 8 rows: pages at 0.9 become candidates with odds 0.989 (datasketch's
        # own choice for a 0.9 threshold, 3 bands of 21, gives 0.29: it balances misses
        # against candidates, and here every candidate is checked on its signature).
        lsh = MinHashLSH(num_perm=neardup.BINS, params=LSH_BANDS)
        for url, sig in firsts.items():
            lsh.insert(url, minhash(sig))
        for url in sorted(firsts):
            for other in sorted(lsh.query(minhash(firsts[url]))):
                if other <= url or root(url) == root(other):
                    continue
                if neardup.similarity(firsts[url], firsts[other]) >= NEAR_DUPLICATE:
                    a, b = root(url), root(other)
                    parent[max(a, b)] = min(a, b)
    groups: dict[str, list[str]] = defaultdict(list)
    for url in sorted(firsts):
        groups[root(url)] += alike[firsts[url]]
    rows = []
    for urls in groups.values():
        if len(urls) > 1:
            urls.sort()
            first = signatures[urls[0]]
            lowest = min(neardup.similarity(first, signatures[u]) for u in urls[1:])
            rows.append({"urls": urls, "min_similarity": round(lowest, 4)})
    rows.sort(key=lambda row: row["urls"])
    return rows
