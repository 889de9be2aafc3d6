"""Local feed files: each item out at once, and a line cut by a killed crawl dropped."""

from __future__ import annotations

import pytest

from crawlyx.feeds import FileFeedStorage


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (b"", b"new\n"),
        (b'{"url": "a"}\n', b'{"url": "a"}\nnew\n'),  # whole lines stay
        (b'{"url": "a"}\n{"url": "b", "mark', b'{"url": "a"}\nnew\n'),  # the cut line goes
        (b'{"url": "b", "mark', b"new\n"),
        (b"a\n" + b"x" * 200_000, b"a\nnew\n"),  # a long cut line, read back in chunks
    ],
)
def test_appending_drops_a_line_cut_short(tmp_path, before, after):
    path = tmp_path / "pages.jsonl"
    path.write_bytes(before)
    file = FileFeedStorage(str(path)).open(None)
    file.write(b"new\n")
    assert path.read_bytes() == after  # in the file at once, before it is closed
    file.close()


def test_overwriting_starts_afresh(tmp_path):
    path = tmp_path / "pages.jsonl"
    path.write_bytes(b'{"url": "b", "mark')
    file = FileFeedStorage(str(path), feed_options={"overwrite": True}).open(None)
    file.write(b"new\n")
    file.close()
    assert path.read_bytes() == b"new\n"
