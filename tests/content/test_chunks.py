"""Chunks (``-a chunks=N``): the pure chunker on real-looking markdown, and a real crawl.

The chunks are checked by ``bench/chunks.py``'s :func:`violations`, rules of its own that
do not share the chunker's parser (words once and in order, no fence, table row, list
item or line cut, headings, sizes, ids); the bench runs them over real pages.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawlyx.arguments import ArgumentError, CrawlArgs
from crawlyx.content.chunks import chunk
from crawlyx.content.tokens import count

ROOT = Path(__file__).resolve().parents[2]
URL = "https://docs.example.com/api/client.html"


def _bench():
    name = "crawlyx_bench_chunks"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / "chunks.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def violations(markdown: str, chunks: list[dict], max_tokens: int) -> list[str]:
    return _bench().violations(markdown, chunks, max_tokens, count)


ROWS = "\n".join(
    f"| `option_{i}` | {i * 7} | what option {i} does to the client |" for i in range(40)
)
CODE = "\n".join(f"    result_{i} = client.get('/items/{i}')  # call {i}" for i in range(80))
PAGE = (
    f"""# Client

The client sends requests and reads their answers. It keeps one connection a host.

## Install

```sh
pip install client

# a comment, not a heading
client --version
```

## Options

Each option, its default and what it does:

| option | default | meaning |
| --- | ---: | --- |
{ROWS}

## Usage

- Make a client:

  ```python
  from client import Client

  c = Client()
  ```

- Send a request. A long item, with a paragraph of its own after a blank line:

  The answer is read whole before it is returned; a body larger than the limit is
  refused, with an error naming the limit.

  - nested: the body's limit
  - nested: the time limit
- Close it.

> A quoted note about closing clients,
> over two lines.

### A long example

```python
def main():
{CODE}
```

Paragraph after the example. """
    + " ".join(f"word{i}" for i in range(300))
    + "\n"
)


def test_a_page_keeps_its_structure():
    chunks = chunk(PAGE, 200, URL)
    assert violations(PAGE, chunks, 200) == []
    texts = [c["markdown"] for c in chunks]
    # A heading starts a chunk; the title and the first paragraph go together.
    assert texts[0].startswith("# Client\n\nThe client sends")
    assert chunks[0]["headings"] == ["Client"]
    install = next(c for c in chunks if c["markdown"].startswith("## Install"))
    assert install["headings"] == ["Client", "Install"]
    assert "# a comment, not a heading\nclient --version\n```" in install["markdown"]
    # The table is cut between rows; each piece after the first has its header again.
    tables = [c for c in chunks if "| option | default | meaning |" in c["markdown"]]
    assert len(tables) > 1
    for piece in tables:
        assert piece["headings"] == ["Client", "Options"]
        header = "| option | default | meaning |\n| --- | ---: | --- |\n"
        assert header + "| `option_" in piece["markdown"]
        assert all(c["tokens"] <= 200 for c in tables)
    rows = [line for c in tables for line in c["markdown"].splitlines() if "`option_" in line]
    assert rows == ROWS.splitlines()
    # A code block bigger than the limit is one chunk, with the heading that opens it.
    example = next(c for c in chunks if "def main():" in c["markdown"])
    assert example["tokens"] > 200
    assert example["markdown"] == f"### A long example\n\n```python\ndef main():\n{CODE}\n```\n"
    assert example["headings"] == ["Client", "Usage", "A long example"]
    # List items are whole: the long one with its nested list.
    item = next(c for c in chunks if "- Send a request." in c["markdown"])
    assert "  - nested: the time limit" in item["markdown"]


def test_every_chunk_fits_but_single_blocks():
    for size in (50, 120, 400, 5000):
        chunks = chunk(PAGE, size, URL)
        assert violations(PAGE, chunks, size) == []
        for piece in chunks:
            assert piece["tokens"] == count(piece["markdown"])
    assert len(chunk(PAGE, 5000, URL)) == 5  # one a section: the headings cut it


def test_ids_are_stable_and_local():
    first = chunk(PAGE, 200, URL)
    assert [c["id"] for c in chunk(PAGE, 200, URL)] == [c["id"] for c in first]
    assert len({c["id"] for c in first}) == len(first)
    # Another page, same markdown: other ids.
    assert not {c["id"] for c in chunk(PAGE, 200, URL + "?v=2")} & {c["id"] for c in first}
    # An edit keeps the ids of the chunks it does not touch.
    edited = PAGE.replace("It keeps one connection a host.", "It keeps two connections a host.")
    again = chunk(edited, 200, URL)
    assert again[0]["id"] != first[0]["id"]
    assert [c["id"] for c in again[1:]] == [c["id"] for c in first[1:]]
    # The same chunk twice in one section: two ids.
    same = "Same words." * 60
    chunks = chunk(f"# T\n\n{same}\n\n{same}\n\n{same}\n", 50, URL)
    assert chunks[1]["markdown"] == chunks[2]["markdown"]
    assert len({c["id"] for c in chunks}) == 3


def test_edges():
    assert chunk("", 100, URL) == []
    only = chunk("# Title\n", 100, URL)
    assert only == [{"id": only[0]["id"], "headings": ["Title"], "markdown": "# Title\n",
                     "tokens": count("# Title\n")}]  # fmt: skip
    # A fence never closed runs to the end of the page, whole.
    open_fence = "# A\n\ntext\n\n```\ncode\n\nmore code\n" + "x = 1\n" * 200
    chunks = chunk(open_fence, 60, URL)
    assert chunks[-1]["markdown"].startswith("```\ncode\n\nmore code\n")
    assert violations(open_fence, chunks, 60) == []
    # Longer fences hold shorter ones; ~~~ and ``` do not close each other.
    nested = "# A\n\n````md\n```\ninside\n```\n\n~~~\n````\n\nafter\n"
    assert "````md\n```\ninside\n```\n\n~~~\n````" in chunk(nested, 50, URL)[0]["markdown"]
    # The line breaks between blocks are the page's: a tight list stays tight.
    tight = "# A\ntext\n- one\n- two\n\n\n\nafter\n"
    assert [c["markdown"] for c in chunk(tight, 50, URL)] == ["# A\ntext\n- one\n- two\n\nafter\n"]
    # Headings' closing #s and levels that skip.
    path = chunk("# One #\n\n### Three ###\n\ntext\n\n## Two\n\nmore\n", 50, URL)
    assert [c["headings"] for c in path] == [["One", "Three"], ["One", "Two"]]


def test_a_long_definition_is_cut_between_its_blocks():
    # An API page as the converter writes Sphinx's: a class, a definition whose methods
    # are definitions of their own, each with its parameters as a list.
    methods = "\n\n".join(
        f"    method_{i}(*url*, *timeout=None*)\n    :   Send a request number {i}. "
        + " ".join(["More about it."] * 12)
        + "\n\n        Parameters:\n        :   - **url** (*str*) – where to.\n"
        + "            - **timeout** (*float*) – how long, at most, to wait:\n\n"
        + "              a float in seconds, or None to wait as long as it takes."
        for i in range(12)
    )
    page = f"# Client\n\n*class* Client(*pool*)\n:   A client of a pool.\n\n{methods}\n\nAfter.\n"
    chunks = chunk(page, 150, URL)
    assert violations(page, chunks, 150) == []
    assert len(chunks) > 4 and all(c["tokens"] <= 150 for c in chunks)
    assert chunks[0]["markdown"].startswith("# Client\n\n*class* Client(*pool*)\n:   A client")
    # A method's parameters stay with it, and the list item with its second paragraph.
    for c in chunks:
        if "- **timeout**" in c["markdown"]:
            assert (
                "(*float*) – how long, at most, to wait:\n\n              a float" in c["markdown"]
            )
    # Small, the same definition is one block.
    small = "term\n:   its definition\n\n    its second paragraph\n\nnext\n"
    assert [c["markdown"] for c in chunk(small, 50, URL)] == [small]


def test_a_run_of_headings_is_cut():
    # rustdoc lists a trait's implementations as headings with nothing between them.
    page = "# Trait\n\n" + "\n\n".join(f"### impl Trait for Type{i}" for i in range(200)) + "\n"
    chunks = chunk(page, 100, URL)
    assert violations(page, chunks, 100) == []
    assert len(chunks) > 10 and all(c["tokens"] <= 100 for c in chunks)
    assert chunks[1]["headings"][0] == "Trait"


def test_tokens_are_cl100k():
    # cl100k_base: "hello world" is 2 tokens ([15339, 1917]), "tiktoken is great!" 6.
    assert count("hello world") == 2
    assert count("tiktoken is great!") == 6
    assert count("") == 0


BLOCKS = st.sampled_from([
    "# Title", "## Section", "### Sub", "Some words in a paragraph.\nAnd a second line.",
    "```py\nx = 1\n\ny = 2\n```", "~~~\n```\nnot closing\n~~~",
    "| a | b |\n| - | - |\n| 1 | 2 |\n| 3 | 4 |",
    "- item one\n\n  its second paragraph\n- item two\n  - nested", "1. first\n2. second",
    "> quoted\n> text", "term\n:   definition\n\n    more of it", " ".join(["long"] * 120),
])  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(st.lists(BLOCKS, max_size=25), st.integers(50, 300))
def test_any_page_of_blocks(blocks, size):
    markdown = "\n\n".join(blocks) + "\n"
    chunks = chunk(markdown, size, URL)
    assert violations(markdown, chunks, size) == []
    if len(chunks) == 1:  # the page as it is
        assert chunks[0]["markdown"] == markdown


def test_argument():
    assert CrawlArgs.parse(start="https://example.com/").chunks is None
    assert CrawlArgs.parse(start="https://example.com/", chunks="512").chunks == 512
    with pytest.raises(ArgumentError, match="chunks: 10 is out of range; use 50 or more"):
        CrawlArgs.parse(start="https://example.com/", chunks="10")
    with pytest.raises(ArgumentError, match="chunks: 'many' is not a whole number"):
        CrawlArgs.parse(start="https://example.com/", chunks="many")


def test_crawl_with_chunks(site, crawl):
    start = f"http://127.0.0.1:{site.port}/start"
    first = crawl(f"start={start}", "chunks=50")
    assert first.returncode == 0, first.log[-3000:]
    pages = [item for item in first.items if item.get("markdown")]
    assert pages
    for item in pages:
        assert list(item)[-1] == "chunks"
        assert violations(item["markdown"], item["chunks"], 50) == []
    docs = next(item for item in pages if "/docs/intro" in item["url"])
    assert any(c["headings"][-1:] == ["Table"] and "| Name | Value |" in c["markdown"]
               for c in docs["chunks"])  # fmt: skip
    assert first.stat("crawlyx/chunks/pages") == str(len(first.items))
    # The unchanged site crawled again: the same chunks, under the same ids.
    second = crawl(f"start={start}", "chunks=50")
    ids = {item["url"]: [c["id"] for c in item["chunks"]] for item in first.items}
    assert {item["url"]: [c["id"] for c in item["chunks"]] for item in second.items} == ids
    # Without the argument, no chunks field.
    plain = crawl(f"start={start}", "max_pages=2")
    assert plain.items and not any("chunks" in item for item in plain.items)
