"""Whitespace handling, joining of converted child blocks and final markdown cleanup."""

from __future__ import annotations

import re

_re_newline_whitespace = re.compile(r"[\t \r\n]*[\r\n][\t \r\n]*")
_re_whitespace = re.compile(r"[\t ]+")
_re_all_whitespace = re.compile(r"\s+")

# Final cleanup: what str.splitlines() also breaks at becomes a newline, character by
# character when there (str.translate is eight times slower over a page's markdown).
_LINEBREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
# Soft hyphens mark where a browser may break a word ("Ita&shy;li&shy;ens"), unseen
# unless it does: in the text they would split every word they are in.
_SOFT_HYPHEN = "\xad"


def _join_blocks(strings: list[str]) -> str:
    """Concatenate child outputs, merging newline runs at the seams (max. one blank line);
    the same algorithm as markdownify's process_tag, with a fast path for plain strings."""
    if len(strings) < 2:
        return strings[0] if strings else ""  # what the loop makes of one: itself
    out = [""]
    for s in strings:
        if s[0] != "\n" and s[-1] != "\n":
            out.append("")
            out.append(s)
            out.append("")
            continue
        content = s.lstrip("\n")  # s is leading newlines, content, trailing newlines
        leading = s[: len(s) - len(content)]
        trailing = content[len(content.rstrip("\n")) :]
        content = content[: len(content) - len(trailing)]
        if out[-1] and leading:
            previous = out.pop()
            leading = "\n" * min(2, max(len(previous), len(leading)))
        out.append(leading)
        out.append(content)
        out.append(trailing)
    return "".join(out)


def _finish(text: str) -> str:
    """Line separators as newlines, no trailing whitespace, at most one blank line in a
    row, nothing blank at either end (line by line: regexes are far slower here)."""
    lines = []
    blank = False
    text = text.replace("\r\n", "\n")
    if _SOFT_HYPHEN in text:
        text = text.replace(_SOFT_HYPHEN, "")
    for char in _LINEBREAKS:
        if char in text:
            text = text.replace(char, "\n")
    for line in text.split("\n"):
        line = line.rstrip()
        if not line and blank:
            continue
        blank = not line
        lines.append(line)
    text = "\n".join(lines).strip()
    return text + "\n" if text else ""
