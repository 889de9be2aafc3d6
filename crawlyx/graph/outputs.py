"""The files made from a finished crawl's graph: the audit (JSON or markdown), the site
tree, llms.txt and llms-full.txt. Shared by the crawl's extension
(:mod:`crawlyx.graph.extension`) and ``scrapy audit JOB`` (:mod:`crawlyx.commands.audit`).

Pages' markdown for llms-full.txt is kept in the job's Redis only when asked for
(``-a llms_full=``): :class:`PageMarkdown`, one hash field per page, zlib-compressed
(about a third of the markdown's size), so any process of the job, or ``scrapy audit``
later, can write the file.
"""

from __future__ import annotations

import json
import os
import zlib
from dataclasses import dataclass

from crawlyx.frontier.state import State
from crawlyx.graph.audit import audit, audit_markdown
from crawlyx.graph.model import Graph
from crawlyx.graph.store import GraphStore
from crawlyx.graph.tree import build_tree, llms_txt, tree_markdown, write_llms_full


def load_graph(state: State, settings) -> Graph:
    """The job's recorded graph (its edge budget matters only when recording)."""
    return GraphStore(state, settings.getint("CRAWLYX_GRAPH_MAX_EDGES")).load()


class PageMarkdown:
    """Pages' markdown in the job's Redis: ``crawlyx:{job}:graph:md``, URL -> zlib(markdown)."""

    def __init__(self, state: State):
        self.client = state.client
        self.key = state.key("graph:md")

    def save(self, url: str, markdown: str) -> None:
        self.client.hset(self.key, url, zlib.compress(markdown.encode(), 6))

    def get(self, url: str) -> str | None:
        data = self.client.hget(self.key, url)
        return None if data is None else zlib.decompress(data).decode()

    def kept(self) -> bool:
        """Whether the job kept any page's markdown (a crawl without -a llms_full= keeps none)."""
        return bool(self.client.exists(self.key))


@dataclass(frozen=True)
class Outputs:
    """Where each file goes (None: not written). ``audit`` ending in ``.md`` is the
    markdown summary, any other name the JSON report."""

    audit: str | None = None
    tree: str | None = None
    llms_txt: str | None = None
    llms_full: str | None = None

    def paths(self) -> list[str]:
        return [p for p in (self.audit, self.tree, self.llms_txt, self.llms_full) if p]

    def __bool__(self) -> bool:
        return bool(self.paths())


def _write(path: str, text_or_writer) -> None:
    """Write ``path`` whole or not at all (a ``.partial`` file renamed)."""
    partial = f"{path}.partial"
    with open(partial, "w", encoding="utf-8") as out:
        if callable(text_or_writer):
            text_or_writer(out)
        else:
            out.write(text_or_writer)
    os.replace(partial, path)


def write_outputs(graph: Graph, outputs: Outputs, max_depth: int, markdown_of=None) -> dict:
    """Write the files asked for; the audit report (computed whenever one is asked
    for, for the summary line) or an empty dict."""
    report = {}
    if outputs.audit:
        report = audit(graph, max_depth)
        if outputs.audit.lower().endswith(".md"):
            _write(outputs.audit, audit_markdown(report))
        else:
            _write(outputs.audit, json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    if outputs.tree or outputs.llms_txt or outputs.llms_full:
        tree = build_tree(graph)
        if outputs.tree:
            _write(outputs.tree, tree_markdown(tree, graph))
        if outputs.llms_txt:
            _write(outputs.llms_txt, llms_txt(tree, graph))
        if outputs.llms_full:
            _write(outputs.llms_full, lambda out: write_llms_full(tree, graph, markdown_of, out))
    return report
