"""The web platform's URL conformance data: links resolve the way a browser resolves them.

tests/data/urltestdata-http.json holds the http(s) cases of web-platform-tests'
url/resources/urltestdata.json (source and licence in tests/data/README.md). A case whose
browser result is an http(s) URL must normalize to what crawlyx makes of that result, so
crawlyx's own rules (fragment, tracking parameters, query order, trailing slash) cancel
out; a case a browser rejects must be refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from crawlyx.urls.normalize import normalize_url, resolve_relative

CASES = json.loads(
    (Path(__file__).parent.parent / "data" / "urltestdata-http.json").read_text(encoding="utf-8")
)
RESOLVED = [case for case in CASES if "href" in case]
REJECTED = [case for case in CASES if case.get("failure")]


def test_the_data_covers_both_kinds() -> None:
    assert len(RESOLVED) > 200 and len(REJECTED) > 150
    assert len(RESOLVED) + len(REJECTED) == len(CASES)


def _id(case: dict) -> str:
    return repr(case["input"])[:60]


@pytest.mark.parametrize("case", RESOLVED, ids=_id)
def test_resolves_as_a_browser(case: dict) -> None:
    assert resolve_relative(case["input"], case["base"]) == urlsplit(case["href"])
    assert normalize_url(case["input"], case["base"]) == normalize_url(case["href"])


@pytest.mark.parametrize("case", REJECTED, ids=_id)
def test_refuses_what_a_browser_rejects(case: dict) -> None:
    with pytest.raises(ValueError, match="cannot normalize URL"):
        normalize_url(case["input"], case["base"])
