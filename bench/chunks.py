"""Chunks (``-a chunks=N``) on real pages: their invariants, and what they cost a page.

Each page's markdown is made as a crawl makes it (``page_markdown``), then cut by
``crawlyx.content.chunks.chunk``; :func:`violations` checks the chunks against the
markdown with rules of its own (not the chunker's parser):

- words: the page's words (``\\S+``), in order, are the chunks' words, once each (a table
  header a chunk repeats to go on with a table aside);
- lines: every line of a chunk is a whole line of the page (no table row, no line cut);
- fences: no chunk ends inside a code fence (unless the page itself never closes one);
- tables: a chunk that goes on with a table starts with its header and separator;
- list items: no chunk starts with an indented line (a list item's continuation);
- headings: a chunk's headings come before its content; its ``headings`` are the ATX
  headings in force at its end, read from the chunks in order;
- size: ``tokens`` is the chunk's cl100k_base count; over the limit only for one block
  (with the headings that open it, a table's repeated header);
- ids: unique in the page, and the same when the page is chunked again.

The pages are read from where they are, never committed:

    python bench/chunks.py --wcxb /work/data/wcxb/wcxb-dev --docs /work/data/docs/manifest.json
    python bench/chunks.py --docs /work/data/docs/manifest.json --tokens 256 --tokens 1024
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_MARKER = re.compile(r"\s*(?:[-*+]|\d{1,9}[.)]|:)(?:\s|$)")  # a list item's, a definition's
_FENCE = re.compile(r"\s*(`{3,}|~{3,})(.*)$")
_RULE = re.compile(r"\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")


def _fence_states(lines: list[str]) -> list[bool]:
    """For each line, whether it is inside a fenced code block (its fences included)."""
    inside, opened, states = False, "", []
    for line in lines:
        match = _FENCE.match(line)
        if not inside and match and not (match.group(1)[0] == "`" and "`" in match.group(2)):
            inside, opened = True, match.group(1)
            states.append(True)
            continue
        if inside and match and not match.group(2).strip():
            fence = match.group(1)
            if fence[0] == opened[0] and len(fence) >= len(opened):
                inside = False
                states.append(True)
                continue
        states.append(inside)
    return states


def _ends_open(lines: list[str]) -> bool:
    """Whether ``lines`` end inside a fence they opened."""
    inside, opened = False, ""
    for line in lines:
        match = _FENCE.match(line)
        if not inside and match and not (match.group(1)[0] == "`" and "`" in match.group(2)):
            inside, opened = True, match.group(1)
        elif inside and match and not match.group(2).strip():
            if match.group(1)[0] == opened[0] and len(match.group(1)) >= len(opened):
                inside = False
    return inside


def _is_header(lines: list[str], i: int) -> bool:
    return (
        "|" in lines[i] and i + 1 < len(lines) and "|" in lines[i + 1]
        and bool(_RULE.match(lines[i + 1])) and "-" in lines[i + 1]
    )  # fmt: skip


def violations(markdown: str, chunks: list[dict], max_tokens: int, count) -> list[str]:
    """What is wrong with ``chunks`` of ``markdown`` (nothing: an empty list)."""
    found: list[str] = []
    page = markdown.splitlines()
    page_lines = set(page)
    page_index = _Index(page)
    row = 0  # where the last chunk started in the page's lines
    page_words = markdown.split()
    at = 0  # the page's words the chunks so far hold
    last_header: tuple[str, str] | None = None
    ended_in_table = False
    stack: list[tuple[int, str]] = []
    for n, piece in enumerate(chunks):
        lines = piece["markdown"].splitlines()
        where = f"chunk {n}"
        # A table taken up again: its header, written again, is not the page's words (the
        # page goes on with a row there, not with a table of the same header).
        own = lines
        if ended_in_table and last_header and len(lines) > 2 and tuple(lines[:2]) == last_header:
            header = " ".join(last_header).split()
            if page_words[at : at + len(header)] != header:
                own = lines[2:]
        if own is lines and ended_in_table and lines and lines[0].lstrip().startswith("|"):
            if not _is_header(lines, 0):
                found.append(f"{where}: goes on with a table without its header")
        words = [w for line in own for w in line.split()]
        if page_words[at : at + len(words)] != words:
            found.append(f"{where}: its words are not the page's next {len(words)}")
        at += len(words)
        for line in lines:
            if line.strip() and line not in page_lines:
                found.append(f"{where}: a line not in the page: {line[:60]!r}")
                break
        else:
            first = next((line for line in own if line.strip()), None)
            if first is not None:
                row = page_index.index(first, row)
                if _owner(page, row).lstrip()[:1] not in ("", ":"):
                    found.append(f"{where}: starts inside a list item: {first[:60]!r}")
        states = _fence_states(lines)
        if _ends_open(lines) and not _ends_open(markdown.splitlines()):
            found.append(f"{where}: ends inside a code fence")
        content = False
        for i, (line, in_fence) in enumerate(zip(lines, states, strict=True)):
            match = None if in_fence or _owner(lines, i) else _ATX.match(line)
            if match:
                if content:
                    found.append(f"{where}: a heading after content: {line[:60]!r}")
                level = len(match.group(1))
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, (match.group(2) or "").strip()))
            elif line.strip():
                content = True
        if piece["headings"] != [title for _, title in stack]:
            found.append(f"{where}: headings {piece['headings']} not {[t for _, t in stack]}")
        if piece["tokens"] != count(piece["markdown"]):
            found.append(f"{where}: tokens {piece['tokens']} is not its count")
        if piece["tokens"] > max_tokens and _blocks(lines, states) > 1:
            found.append(f"{where}: {piece['tokens']} tokens, over {max_tokens}, of several blocks")
        # What the next chunk may take up: the last table of this one.
        for i in range(len(lines)):
            if _is_header(lines, i) and not states[i]:
                last_header = (lines[i], lines[i + 1])
        ended_in_table = bool(lines) and lines[-1].lstrip().startswith("|") and not states[-1]
    if at != len(page_words):
        found.append(f"words: {at} in the chunks, {len(page_words)} in the page")
    ids = [piece["id"] for piece in chunks]
    if len(set(ids)) != len(ids):
        found.append("ids: not unique")
    return found


class _Index:
    """Each line's places in the page, to find a chunk's start after the last one's."""

    def __init__(self, lines: list[str]):
        self.places: dict[str, list[int]] = {}
        for i, line in enumerate(lines):
            self.places.setdefault(line, []).append(i)

    def index(self, line: str, after: int) -> int:
        return next((i for i in self.places.get(line, ()) if i >= after), after)


def _owner(lines: list[str], i: int) -> str:
    """The list item or definition line ``i`` is inside of ("" for none): the nearest
    line above it, less indented, when that is a marker's; a line of no indent has none."""
    indent = len(lines[i]) - len(lines[i].lstrip())
    if not indent:
        return ""
    for j in range(i - 1, -1, -1):
        line = lines[j]
        if line.strip() and len(line) - len(line.lstrip()) < indent:
            marker = _MARKER.match(line)
            return line if marker and indent >= marker.end() else ""
    return ""


def _blocks(lines: list[str], states: list[bool]) -> int:
    """The blocks of a chunk past its headings: a blank line outside code and list items
    parts two; a table's rows past its first (a repeated header aside) are one each."""
    blocks, started, rows = 0, False, 0
    for i, (line, in_fence) in enumerate(zip(lines, states, strict=True)):
        if not started:
            if not line.strip() or (not in_fence and _ATX.match(line)):
                continue
            started, blocks = True, 1
        if in_fence:
            continue
        if not line.strip():
            following = next((x for x in lines[i + 1 :] if x.strip()), "")
            if following and not following.startswith("  "):
                blocks += 1
        elif line.startswith("|") and not _RULE.match(line):
            rows += 1
    table_rows = rows - 1 if rows else 0  # the header row
    return blocks + max(0, table_rows - 1) if rows and blocks == 1 else blocks


def _pages(args) -> list[tuple[str, str, str]]:
    """(set, url, html) of the pages asked for."""
    pages = []
    if args.wcxb:
        from quality_real import load_wcxb

        pages += [("wcxb-dev", p.url, p.html) for p in load_wcxb(args.wcxb)]
    if args.docs:
        from docs_quality import load_sites

        for site in load_sites(args.docs):
            pages += [(site.name, p.url, p.html) for p in site.pages]
    return pages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wcxb", type=Path, help="a checkout of the WCXB benchmark (dev/)")
    parser.add_argument("--docs", type=Path, help="the docs sites' manifest.json")
    parser.add_argument("--tokens", type=int, action="append", help="chunk size (512)")
    parser.add_argument("--limit", type=int, default=0, help="at most this many pages")
    parser.add_argument("--only", default="", help="the pages whose URL holds this")
    args = parser.parse_args(argv)
    if not (args.wcxb or args.docs):
        parser.error("name at least one set: --wcxb, --docs")
    from crawlyx.content.chunks import chunk
    from crawlyx.content.extract import page_markdown
    from crawlyx.content.tokens import count, encoding

    started = time.perf_counter()
    encoding()
    print(f"tokenizer loaded in {1000 * (time.perf_counter() - started):.0f} ms")
    pages = [page for page in _pages(args) if args.only in page[1]][: args.limit or None]
    sizes = args.tokens or [512]
    made: list[tuple[str, str, str, float]] = []
    for name, url, html in pages:
        started = time.perf_counter()
        markdown = page_markdown(html, url) or ""
        made.append((name, url, markdown, 1000 * (time.perf_counter() - started)))
    bad = 0
    for size in sizes:
        costs, counts, chunked, over, worst = [], [], 0, 0, (0.0, "")
        for _name, url, markdown, _ms in made:
            started = time.perf_counter()
            chunks = chunk(markdown, size, url)
            ms = 1000 * (time.perf_counter() - started)
            costs.append(ms)
            worst = max(worst, (ms, f"{url} ({len(markdown) // 1024} KB)"))
            counts.append(len(chunks))
            chunked += bool(chunks)
            over += sum(c["tokens"] > size for c in chunks)
            problems = violations(markdown, chunks, size, count)
            if chunk(markdown, size, url) != chunks:
                problems.append("not the same chunks a second time")
            for problem in problems[:3]:
                print(f"  {url}: {problem}")
            bad += bool(problems)
        make = [ms for *_, ms in made]
        print(
            f"chunks={size}: {len(made)} pages checked ({chunked} with content), "
            f"{bad} with violations; {sum(counts)} chunks ({over} over {size}: one block each)"
        )
        print(
            f"  ms per page: chunking mean {statistics.mean(costs):.2f}, "
            f"median {statistics.median(costs):.2f}, max {worst[0]:.0f} ({worst[1]}); "
            f"making the markdown mean {statistics.mean(make):.2f}, "
            f"median {statistics.median(make):.2f} "
            f"(chunking {100 * sum(costs) / sum(make):.1f} % of it)"
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
