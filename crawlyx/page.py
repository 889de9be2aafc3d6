"""One pass over a page's HTML: metadata, in-scope links and markdown.

Runs in a worker process (see :mod:`crawlyx.workers`): the page is parsed once, its
links and metadata read from that tree, then its main content extracted from the same
tree and converted. Everything here is a plain function of its arguments, so it
pickles and runs anywhere.
"""

from __future__ import annotations

from urllib.parse import urljoin

from crawlyx.extract import document_markdown, parse_document
from crawlyx.normalize import fetch_form, normalize_url

_SKIP_SCHEMES = ("javascript:", "mailto:", "tel:", "data:", "#")


def analyze(
    page: str, url: str, scope: str | None, *, main_content: bool = True, links: str = "inline"
) -> dict:
    """``title``, ``description``, ``lang``, ``canonical``, ``links`` (normalized in-scope
    URL -> URL to fetch), ``robots`` (name, content of robots meta tags: ``robots`` and
    ``*bot``) and ``markdown`` of a page fetched from ``url``."""
    doc = parse_document(page)
    data = {"title": None, "description": None, "lang": None, "canonical": None}
    data.update(links={}, robots=[])
    if doc is not None:
        base = url
        for href in doc.xpath("//base/@href")[:1]:
            base = _join(url, href) or url
        data.update(_metadata(doc, url))
        data["links"] = _links(doc, base, scope)
        data["robots"] = [
            (m.get("name", ""), m.get("content", ""))
            for m in doc.iter("meta")
            if m.get("name")
            and m.get("content")
            and ("robot" in m.get("name").lower() or m.get("name").lower().endswith("bot"))
        ]
    data["markdown"] = document_markdown(doc, page, url, main_content=main_content, links=links)
    return data


def _metadata(doc, url: str) -> dict:
    canonical = _first(doc.xpath("//link[@rel='canonical']/@href"))
    return {
        "title": _first(" ".join(t.itertext()) for t in doc.iter("title")),
        "description": _first(doc.xpath("//meta[@name='description']/@content")),
        "lang": _first(doc.xpath("/html/@lang")),
        "canonical": _join(url, canonical) if canonical else None,
    }


def _links(doc, base: str, scope: str | None) -> dict[str, str]:
    """Links on the page's origin: normalized URL -> the URL to fetch for it."""
    found: dict[str, str] = {}
    if scope is None:
        return found
    prefix = scope + "/"
    for href in dict.fromkeys(doc.xpath("//a/@href | //area/@href")):
        href = href.strip()
        if not href or href.lower().startswith(_SKIP_SCHEMES):
            continue
        try:
            link = normalize_url(href, base)
        except ValueError:
            continue
        if link not in found and link.startswith(prefix):
            found[link] = fetch_form(link, href)
    return found


def _join(base: str, href: str) -> str | None:
    try:
        return urljoin(base, href.strip())
    except ValueError:
        return None


def _first(values) -> str | None:
    for value in values:
        text = " ".join(str(value).split())
        if text:
            return text
    return None
