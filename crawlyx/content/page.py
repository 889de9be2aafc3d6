"""One pass over a page's HTML: metadata, in-scope links and markdown.

Runs in a worker process (see :mod:`crawlyx.content.workers`): the page is parsed once, its
links and metadata read from that tree, then its main content extracted from the same
tree and converted. Everything here is a plain function of its arguments, so it
pickles and runs anywhere.
"""

from __future__ import annotations

import re
from urllib.parse import urljoin

from crawlyx.content.boilerplate import block_keys
from crawlyx.content.extract import document_markdown, parse_document
from crawlyx.frontier.fingerprint import normalized_fingerprint
from crawlyx.urls.normalize import fetch_form, normalize_url
from crawlyx.urls.traps import content_signature, url_pattern

_SKIP_SCHEMES = ("javascript:", "mailto:", "tel:", "data:", "#")


def analyze(
    page: str, url: str, scope: str | None, *, main_content: bool = True, links: str = "inline"
) -> dict:
    """``title``, ``description``, ``lang``, ``canonical``, ``links`` (normalized in-scope
    URL -> (URL to fetch, fingerprint)), ``robots`` (name, content of robots meta tags:
    ``robots`` and ``*bot``), ``shell`` (see :func:`is_shell`), ``markdown`` and its
    ``blocks`` (:func:`crawlyx.content.boilerplate.block_keys`) of a page fetched from ``url``,
    and the markdown's ``signature`` (:func:`crawlyx.urls.traps.content_signature`) if the
    URL has a pattern (:func:`crawlyx.urls.traps.url_pattern`), else None.

    Everything the crawl process would otherwise compute per link or per block is done
    here: the crawl process is the one that cannot spread over cores."""
    doc = parse_document(page)
    data = {"title": None, "description": None, "lang": None, "canonical": None}
    data.update(links={}, robots=[], shell=is_shell(doc, page))  # before markdown prunes doc
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
    data["blocks"] = block_keys(data["markdown"])
    data["signature"] = content_signature(data["markdown"]) if url_pattern(url) else None
    return data


# An empty JavaScript shell: the HTML is a mount point and scripts that draw the page.
SHELL_MAX_TEXT = 200  # characters of visible body text below which a page may be a shell
_APP_ROOT_IDS = frozenset({"root", "app", "__next", "__nuxt", "___gatsby", "svelte", "q-app"})
_APP_ROOT_TAGS = frozenset({"app-root"})
_APP_ROOT_MAX_TEXT = 40  # an app root with at most this much text ("Loading...") is empty
_DATA_SCRIPTS = frozenset({"application/json", "application/ld+json", "text/template"})
_INVISIBLE = frozenset({"script", "style", "noscript", "template"})
_SCRIPT_TAG = re.compile(r"<script\b", re.IGNORECASE)


def is_shell(doc, page: str | bytes) -> bool:
    """The page is an empty JavaScript shell: its content is drawn by scripts.

    Its visible body text (without script, style, noscript and template) is under
    :data:`SHELL_MAX_TEXT` characters, and either an app root (``<div id="root">``,
    ``#app``, ``#__next``, ``<app-root>``...) is empty, or the page runs scripts and has
    no heading or paragraph with text. A short but real page (a heading and a paragraph,
    with or without an analytics script) is not a shell.
    """
    if doc is None:  # no body at all: a shell if scripts are to build it
        if isinstance(page, bytes):
            return re.search(rb"<script\b", page, re.IGNORECASE) is not None
        return bool(page) and _SCRIPT_TAG.search(page) is not None
    body = doc.find("body")
    if _visible_chars(body, SHELL_MAX_TEXT) >= SHELL_MAX_TEXT:
        return False
    for el in body.iter():
        if not isinstance(el.tag, str):
            continue
        if el.tag in _APP_ROOT_TAGS or (el.get("id") or "").strip() in _APP_ROOT_IDS:
            if _visible_chars(el, _APP_ROOT_MAX_TEXT + 1) <= _APP_ROOT_MAX_TEXT:
                return True
    scripts = any(
        (s.get("type") or "").strip().lower() not in _DATA_SCRIPTS
        and (s.get("src") or (s.text or "").strip())
        for s in doc.iter("script")
    )
    if not scripts:
        return False
    content = body.xpath(
        ".//*[self::h1 or self::h2 or self::h3 or self::h4 or self::h5 or self::h6"
        " or self::p][not(ancestor::noscript or ancestor::template)]"
    )
    return not any(_visible_chars(el, 1) for el in content)


def _visible_chars(root, limit: int) -> int:
    """Characters of text under ``root`` outside script, style, noscript and template,
    whitespace collapsed; counting stops at ``limit`` (a long page costs little)."""
    total, stack = 0, [root]
    while stack and total < limit:
        el = stack.pop()
        if el is not root and el.tail:
            total += len(" ".join(el.tail[:4096].split()))
        if not isinstance(el.tag, str) or el.tag in _INVISIBLE:
            continue
        if el.text:
            total += len(" ".join(el.text[:4096].split()))  # limits are far smaller
        stack.extend(el)
    return total


def _metadata(doc, url: str) -> dict:
    canonical = _first(doc.xpath("//link[@rel='canonical']/@href"))
    return {
        "title": _first(" ".join(t.itertext()) for t in doc.iter("title")),
        "description": _first(doc.xpath("//meta[@name='description']/@content")),
        "lang": _first(doc.xpath("/html/@lang")),
        "canonical": _join(url, canonical) if canonical else None,
    }


def _links(doc, base: str, scope: str | None) -> dict[str, tuple[str, str]]:
    """Links on the page's origin: normalized URL -> (the URL to fetch, its fingerprint)."""
    found: dict[str, tuple[str, str]] = {}
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
            found[link] = (fetch_form(link, href), normalized_fingerprint(link))
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
