"""A page's markdown cut into chunks of at most so many tokens, along its structure.

``chunk(markdown, max_tokens, url)`` is a pure function of its arguments. The markdown is
read as a sequence of blocks: ATX headings, fenced code (``` or ~~~, a closing fence of
the same character at least as long), GFM pipe tables, list items (with their indented
continuation lines, nested lists and code), definitions (``term`` then ``:   text``, with
their indented continuation, as the converter writes ``<dl>``), block quotes and
paragraphs (lines up to a blank line). Setext headings are paragraphs. The policy:

* a heading starts a new chunk, unless the chunk so far holds nothing but headings (a
  title and its first section's heading go together) and the heading fits;
* within a section, blocks are packed in order while the chunk stays within
  ``max_tokens``; a chunk ends between two blocks (two paragraphs, two list items, a
  paragraph and a code block...), never inside one;
* a table is cut between its rows, and each piece after the first starts with the
  table's header and separator rows again;
* a definition bigger than ``max_tokens`` (an API reference's class, its methods nested
  definitions) is read as a page of its own, headings aside, and cut between its blocks,
  its term with the first;
* a block bigger than ``max_tokens`` alone (a long code block, a giant paragraph or list
  item, a table row) is a chunk of its own, with the headings that open it, if any: the
  only chunks over the limit.

Every block of the page is in exactly one chunk, in order, its lines as they were, and
so are the line breaks between two blocks of a chunk (several blank lines become one);
only a continued table's header is written twice. So every word of the page is in
exactly one chunk.

Each chunk is ``{"id", "headings", "markdown", "tokens"}``: ``headings`` the titles of
the headings its content is under, outermost first (those it starts with included);
``tokens`` its markdown's count in ``cl100k_base`` tokens (:mod:`crawlyx.content.tokens`);
``id`` 16 hex digits of the SHA-256 of the page's URL, the chunk's headings, its markdown
and how many chunks before it on the page have the same headings and markdown. An
unchanged page gives the same ids on every crawl, and a chunk keeps its id when other
parts of its page change.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections import Counter
from dataclasses import dataclass

from crawlyx.content.tokens import count

_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*))?$")
_CLOSING = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")  # a heading's optional closing #s
_FENCE = re.compile(r"[ \t]*(`{3,}|~{3,})(.*)$")
_CLOSE = re.compile(r"[ \t]*(`{3,}|~{3,})[ \t]*$")
_ITEM = re.compile(r"( {0,3})(?:[-*+]|\d{1,9}[.)])(?:[ \t]+|$)")
_QUOTE = re.compile(r" {0,3}>")
_DEFINITION = re.compile(r" {0,3}:[ \t]")  # a definition list's "term\n:   definition"
_TABLE_RULE = re.compile(r"[ \t]*\|?(?:[ \t]*:?-+:?[ \t]*\|)+(?:[ \t]*:?-+:?[ \t]*)?$")
_TABLE_RULE_OPEN = re.compile(r"[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)+\|?[ \t]*$")
_JOIN = 1  # what the blank line (or a table's newline) between two blocks adds, in tokens


def chunk(markdown: str, max_tokens: int, url: str) -> list[dict]:
    """The chunks of ``markdown`` (a page's, at ``url``); see the module's docstring."""
    pieces = list(_pieces(markdown.splitlines(), max_tokens, itertools.count(1)))
    path: list[tuple[int, str]] = []
    for piece in pieces:  # the headings in force after each piece
        if piece.heading:
            while path and path[-1][0] >= piece.heading[0]:
                path.pop()
            path.append(piece.heading)
        piece.path = tuple(title for _, title in path)
    chunks, seen = [], Counter()
    for headings, text, tokens in _pack(pieces, max_tokens):
        seen[(headings, text)] += 1
        key = "\0".join((url, *headings, text, str(seen[(headings, text)] - 1)))
        chunks.append({
            "id": hashlib.sha256(key.encode()).hexdigest()[:16],
            "headings": list(headings),
            "markdown": text,
            "tokens": tokens,
        })  # fmt: skip
    return chunks


@dataclass
class _Piece:
    """What a chunk may start or end at: a block, a heading, or a table's row."""

    text: str
    tokens: int = 0
    heading: tuple[int, str] | None = None  # (level, title)
    table: int | None = None  # the table a row is of (its first row carries the header)
    header: str | None = None  # that table's header and separator rows, for its other rows
    again: bool = False  # a table's header written again
    path: tuple[str, ...] = ()  # the headings' titles in force after it
    tight: bool = False  # no blank line before it in the page


def _pack(pieces: list[_Piece], limit: int):
    """(headings, markdown, tokens) of each chunk, in order."""
    current: list[_Piece] = []
    size = 0
    headings_only = True  # the chunk so far holds headings alone (or nothing)
    i = 0
    while i < len(pieces) or current:
        piece = pieces[i] if i < len(pieces) else None
        fits = piece is not None and size + _JOIN + piece.tokens <= limit
        if piece is None or (
            current
            # A heading starts a chunk, unless it joins headings alone (and fits); a
            # block follows headings alone whatever its size.
            and (piece.heading and not (headings_only and fits) or not (headings_only or fits))
        ):
            # The chunk ends (a heading, the limit, the page's end). Its size so far is its
            # pieces' counts added up; its own count can differ by a token or so where two
            # pieces meet: checked, and its last pieces put back while it is over.
            back, text, tokens = _over(current, limit)
            i -= back
            yield current[len(current) - back - 1].path, text, tokens
            current, size, headings_only = [], 0, True
            continue
        if not current and piece.header is not None:  # a table goes on: its header again
            again = _Piece(piece.header, count(piece.header), table=piece.table, again=True)
            current, size = [again], again.tokens
        size += piece.tokens + (_JOIN if current else 0)
        current.append(piece)
        headings_only = headings_only and piece.heading is not None
        i += 1


def _over(parts: list[_Piece], limit: int) -> tuple[int, str, int]:
    """How many pieces from the end to put back so that ``parts`` is within ``limit`` by
    its own count, keeping one block at least if it has any (not headings alone, nor a
    repeated table header alone); and the markdown and count of those kept."""
    blocks = any(not p.heading for p in parts)
    back = 0
    while True:
        text = _render(parts[: len(parts) - back])
        tokens = count(text)
        kept = parts[: len(parts) - back - 1]
        if tokens <= limit or not any(not p.heading and not p.again or not blocks for p in kept):
            return back, text, tokens
        back += 1


def _render(parts: list[_Piece]) -> str:
    out: list[str] = []
    previous = None
    for part in parts:
        if previous is not None:
            same_table = part.table is not None and part.table == previous.table
            out.append("\n" if same_table or part.tight else "\n\n")
        out.append(part.text)
        previous = part
    return "".join(out) + "\n"


def _pieces(lines: list[str], limit: int, tables, original: list[str] | None = None):
    """The pieces of ``lines``, their text from ``original`` (the same lines, indented as
    they are in the page, when ``lines`` is a definition's content read as a page)."""
    nested = original is not None
    original = lines if original is None else original
    for kind, start, end, head in _blocks(lines):
        made = list(_block_pieces(lines, original, kind, start, end, head, limit, tables, nested))
        made[0].tight = start > 0 and bool(lines[start - 1].strip())
        yield from made


def _block_pieces(lines, original, kind, start, end, head, limit, tables, nested):
    block = original[start:end]
    if kind == "heading" and not nested:  # a definition's headings are its text
        match = _HEADING.match(block[0])
        title = _CLOSING.sub("", (match.group(2) or "").strip()).strip()
        yield _Piece(block[0], count(block[0]), heading=(len(match.group(1)), title))
        return
    if kind == "table" and len(block) > 2:
        table = next(tables)
        header = "\n".join(block[:2])
        first = "\n".join(block[:3])
        yield _Piece(first, count(first), table=table)
        for row in block[3:]:
            yield _Piece(row, count(row), table=table, header=header)
        return
    text = "\n".join(block)
    tokens = count(text)
    if kind != "definition" or tokens <= limit:
        yield _Piece(text, tokens)
        return
    # A definition bigger than a chunk (an API page's class, its methods nested
    # definitions): what follows its marker is read as a page of its own (headings aside)
    # and cut between its blocks, the term going with the first of them.
    body = lines[head:end]
    column = _DEFINITION.match(body[0]).end()
    column += _indent(body[0][column:])
    depth = min([column] + [_indent(line) for line in body[1:] if line.strip()])
    inner = [" " * (column - depth) + body[0][column:]] + [x[depth:] for x in body[1:]]
    pieces = list(_pieces(inner, limit, tables, original[head:end]))
    if head > start:
        term = "\n".join(original[start:head])
        first = f"{term}\n{pieces[0].text}"
        pieces[0] = _Piece(first, count(first), table=pieces[0].table)
    yield from pieces


def _blocks(lines: list[str]):
    """(kind, start, end, head) of each block, its lines ``lines[start:end]``: kind
    heading, code, table, item, quote, definition or paragraph; ``head``, where a
    definition's marker is (after its term)."""
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        kind, head = "paragraph", 0
        if _HEADING.match(line):
            kind, end = "heading", i + 1
        elif _opens(line) and _indent(line) <= 3:
            kind, end = "code", _fence_end(lines, i)
        elif _table_starts(lines, i):
            kind, end = "table", i + 2
            while end < n and lines[end].strip() and "|" in lines[end]:
                end += 1
        elif _ITEM.match(line):
            kind, end = "item", _item_end(lines, i, _indent(line), _ITEM.match(line).end(), i + 1)
        elif _QUOTE.match(line):
            kind, end = "quote", i + 1
            while end < n and lines[end].strip():
                end += 1
        else:
            end = i + 1
            while end < n and lines[end].strip() and not _interrupts(lines, end):
                end += 1
            marker = next((j for j in range(i, end) if _DEFINITION.match(lines[j])), None)
            if marker is not None:
                # A term and its definition: the definition's indented paragraphs, lists
                # and code after blank lines are its own, as a list item's are.
                kind, head = "definition", marker
                end = _item_end(lines, i, 0, 2, end)
        yield kind, i, end, head
        i = end


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _opens(line: str) -> tuple[str, int] | None:
    """(character, length) of the fence ``line`` opens, if it opens one."""
    match = _FENCE.match(line)
    if not match:
        return None
    fence = match.group(1)
    if fence[0] == "`" and "`" in match.group(2):  # ```inline``` code, no fence
        return None
    return fence[0], len(fence)


def _closes(line: str, fence: tuple[str, int]) -> bool:
    match = _CLOSE.match(line)
    return bool(match) and match.group(1)[0] == fence[0] and len(match.group(1)) >= fence[1]


def _fence_end(lines: list[str], i: int) -> int:
    """The index after the fence opened at ``i`` closes (the end: never closed)."""
    fence = _opens(lines[i])
    for j in range(i + 1, len(lines)):
        if _closes(lines[j], fence):
            return j + 1
    return len(lines)


def _table_starts(lines: list[str], i: int) -> bool:
    return (
        "|" in lines[i]
        and i + 1 < len(lines)
        and "|" in lines[i + 1]
        and bool(_TABLE_RULE.match(lines[i + 1]) or _TABLE_RULE_OPEN.match(lines[i + 1]))
    )


def _interrupts(lines: list[str], i: int) -> bool:
    """Whether line ``i`` starts a block of its own though no blank line comes before it."""
    line = lines[i]
    if _HEADING.match(line) or _QUOTE.match(line) or _ITEM.match(line):
        return True
    return bool(_opens(line) and _indent(line) <= 3) or _table_starts(lines, i)


def _item_end(lines: list[str], i: int, indent: int, content: int, j: int) -> int:
    """The index after the list item (or definition) starting at ``i``, its marker at
    ``indent`` and its text at ``content``, read on from ``j``: its lines, its lazy
    continuation lines, and after blank lines those indented to its text (its other
    paragraphs, nested lists and code); code fences read whole."""
    n = len(lines)
    while j < n:
        line = lines[j]
        if not line.strip():
            k = j
            while k < n and not lines[k].strip():
                k += 1
            if k < n and _indent(lines[k]) >= content:
                j = k
                continue
            break
        if _indent(line) <= indent and (
            _ITEM.match(line) or _HEADING.match(line) or _QUOTE.match(line) or _opens(line)
        ):
            break  # the next item, or a block of its own
        if _opens(line):
            j = _fence_end(lines, j)
            continue
        j += 1
    return j
