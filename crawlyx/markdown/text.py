"""Whitespace handling, joining of converted child blocks and final markdown cleanup."""

from __future__ import annotations

import re

_re_newline_whitespace = re.compile(r"[\t \r\n]*[\r\n][\t \r\n]*")
_re_whitespace = re.compile(r"[\t ]+")
_re_all_whitespace = re.compile(r"\s+")
_re_extract_newlines = re.compile(r"^(\n*)((?:.*[^\n])?)(\n*)$", flags=re.DOTALL)

# Final cleanup: odd line separators, trailing whitespace, blank-line runs.
_re_linebreaks = re.compile("\r\n?|[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_re_trailing_ws = re.compile(r"[^\S\n]+$", flags=re.MULTILINE)
_re_blank_runs = re.compile(r"\n{3,}")


def _join_blocks(strings: list[str]) -> str:
    """Concatenate child outputs, merging newline runs at the seams (max. one blank line);
    the same algorithm as markdownify's process_tag, with a fast path for plain strings."""
    if not strings:
        return ""
    out = [""]
    for s in strings:
        if s[0] != "\n" and s[-1] != "\n":
            out.append("")
            out.append(s)
            out.append("")
            continue
        leading, content, trailing = _re_extract_newlines.match(s).groups()
        if out[-1] and leading:
            previous = out.pop()
            leading = "\n" * min(2, max(len(previous), len(leading)))
        out.append(leading)
        out.append(content)
        out.append(trailing)
    return "".join(out)


def _finish(text: str) -> str:
    text = _re_linebreaks.sub("\n", text)
    text = _re_trailing_ws.sub("", text)
    text = _re_blank_runs.sub("\n\n", text).strip()
    return text + "\n" if text else ""
