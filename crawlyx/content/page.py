"""One pass over a page's HTML: metadata, in-scope links and markdown.

Runs in a worker process (see :mod:`crawlyx.content.workers`): the page is parsed once, its
links and metadata read from that tree, then its main content extracted from the same
tree and converted. Everything here is a plain function of its arguments, so it
pickles and runs anywhere.
"""

from __future__ import annotations

import re
from base64 import b64encode
from functools import lru_cache
from hashlib import blake2b
from urllib.parse import urljoin

import ada_url

from crawlyx.content.extract import document_markdown, parse_document
from crawlyx.content.extract.elements import attribute_values
from crawlyx.frontier.fingerprint import normalized_fingerprint
from crawlyx.graph.neardup import signature
from crawlyx.urls.normalize import fetch_form, normalize_url, untracked_query
from crawlyx.urls.traps import content_signature, url_pattern

_SKIP_SCHEMES = ("javascript:", "mailto:", "tel:", "data:", "#")


def analyze(
    page: str,
    url: str,
    scope: str | None,
    *,
    main_content: bool = True,
    links: str = "inline",
    neardup: bool = False,
    max_links: int | None = None,
) -> dict:
    """``title``, ``description``, ``lang``, ``canonical``, ``links`` (normalized in-scope
    URL -> (URL to fetch, fingerprint): the first ``max_links``), ``links_capped`` (link
    elements after those), ``anchors`` (normalized in-scope URL -> its anchor
    text, for the links that have one), ``robots`` (name, content of robots meta tags:
    ``robots`` and ``*bot``), ``frames`` (:func:`noscript_frames`: [normalized URL, URL to
    fetch] of each table of contents the page loads in a noscript frame), ``shell`` (see
    :func:`is_shell`), ``markdown`` of a page fetched from ``url``, the markdown's
    ``digest`` (:func:`markdown_keys`) and its ``signature``
    (:func:`crawlyx.urls.traps.content_signature`) if the URL has a pattern
    (:func:`crawlyx.urls.traps.url_pattern`), else None. With
    ``neardup``, ``neardup`` is the markdown's :func:`crawlyx.graph.neardup.signature`,
    base64 (the page stays plain data: it may travel in a request's meta).

    Everything the crawl process would otherwise compute per link is done here: the
    crawl process is the one that cannot spread over cores."""
    doc = parse_document(page)
    data = {"title": None, "description": None, "lang": None, "canonical": None}
    data.update(links={}, anchors={}, links_capped=0, robots=[], frames=[])
    data["shell"] = is_shell(doc, page)  # before pruning
    if doc is not None:
        base = base_url(doc, url)
        data.update(_metadata(doc, url))
        data["links"], data["anchors"], data["links_capped"] = _links(doc, base, scope, max_links)
        data["frames"] = noscript_frames(doc, base, scope)
        data["robots"] = robots_meta(doc)
    data["markdown"] = document_markdown(doc, page, url, main_content=main_content, links=links)
    data.update(markdown_keys(data["markdown"], url, neardup))
    return data


def markdown_keys(markdown: str, url: str, neardup: bool) -> dict:
    """What a read page (HTML or a document) gives of its markdown besides the text:
    ``digest``, the page registry's hash (crawlyx.demand.recrawl: 64 bits, hex, enough to
    tell a page changed), ``signature`` and, with ``neardup``, ``neardup`` (see
    :func:`analyze`)."""
    keys = {
        "digest": blake2b(markdown.encode(), digest_size=8).hexdigest(),
        "signature": content_signature(markdown) if url_pattern(url) else None,
    }
    if neardup:
        keys["neardup"] = b64encode(signature(markdown)).decode()
    return keys


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


def robots_meta(doc) -> list[tuple[str, str]]:
    """(name, content) of the page's robots meta tags: ``robots`` and ``*bot``."""
    return [
        (m.get("name", ""), m.get("content", ""))
        for m in doc.iter("meta")
        if m.get("name")
        and m.get("content")
        and ("robot" in m.get("name").lower() or m.get("name").lower().endswith("bot"))
    ]


# The frames of a page read as link sources, at most (a site that puts a frame of its
# own in every page's noscript gets no more fetched than this from a page).
FRAMES_PER_PAGE = 4


def noscript_frames(doc, base: str, scope: str | None) -> list[list[str]]:
    """[normalized URL, URL to fetch] of each ``<iframe src>`` inside ``<noscript>`` on the
    page's origin, in page order, at most :data:`FRAMES_PER_PAGE`: the table of contents a
    documentation site draws with scripts offers itself there to readers without them
    (mdBook's ``<noscript><iframe src="toc.html">``). An iframe outside noscript is
    content (a video, a map, an ad), not navigation: not read. A page without noscript
    costs nothing here (lxml knows a tag name the page does not use)."""
    found: dict[str, str] = {}
    frames = (f for n in doc.iter("noscript") for f in n.iter("iframe")) if scope else ()
    for frame in frames:
        src = frame.get("src")
        link = _resolve(src, base, scope + "/") if src else None
        if link is not None and link not in found:
            found[link] = fetch_form(link, src.strip())
            if len(found) == FRAMES_PER_PAGE:
                break
    return [[link, raw] for link, raw in found.items()]


def _metadata(doc, url: str) -> dict:
    canonical = _first(attribute_values(doc, "link", "href", "rel", "canonical"))
    return {
        "title": _first(" ".join(t.itertext()) for t in doc.iter("title")),
        "description": _first(attribute_values(doc, "meta", "content", "name", "description")),
        "lang": _first(doc.xpath("/html/@lang")),
        "canonical": _join(url, canonical) if canonical else None,
    }


def _links(
    doc, base: str, scope: str | None, most: int | None = None
) -> tuple[dict, dict[str, str], int]:
    """Links on the page's origin: normalized URL -> (the URL to fetch, its fingerprint),
    and normalized URL -> anchor text, the first a link to it has (see :func:`anchor_text`);
    the first ``most`` links, and how many link elements follow the last of them (not
    resolved: a page of 400,000 links would spend seconds on links never followed)."""
    found: dict[str, tuple[str, str]] = {}
    anchors: dict[str, str] = {}
    if scope is None:
        return found, anchors, 0
    prefix = scope + "/"
    folder = _folder(base) or base
    elements = doc.iter("a", "area")
    for element in elements:
        href = element.get("href")
        if href is None:
            continue
        if most is not None and len(found) >= most:
            return found, anchors, 1 + sum(e.get("href") is not None for e in elements)
        target = _cached((href, base if _BARE_QUERY.match(href) else folder, prefix), base)
        if target is None:
            continue
        link = target[0]
        if link not in found:
            found[link] = target[1:]
        if link not in anchors:
            text = anchor_text(element)
            if text:
                anchors[link] = text
    return found, anchors, 0


# Navigation repeats its links on every page of a site, and an href resolves against the
# page's folder alone (but a bare query, "?page=2", which resolves against the page): a
# worker resolves each once for all the pages of a folder, the last LINKS_REMEMBERED of
# them (a Javadoc page reads its links in 0.5 ms instead of 0.7 to 1). Keyed by (href,
# the folder or the page, the scope's prefix).
LINKS_REMEMBERED = 4096
_TARGETS: dict[tuple[str, str, str], tuple[str, str, str] | None] = {}
_UNSEEN = object()
_BARE_QUERY = re.compile(r"[\x00-\x20\s]*\?")  # after what the URL parser strips


def _cached(key: tuple[str, str, str], base: str) -> tuple[str, str, str] | None:
    """:func:`_target` of ``key``, remembered."""
    target = _TARGETS.get(key, _UNSEEN)
    if target is _UNSEEN:
        target = _TARGETS[key] = _target(key, base)
    return target


def _target(key: tuple[str, str, str], base: str) -> tuple[str, str, str] | None:
    """(normalized link, URL to fetch, fingerprint) of the href of ``key`` (see
    :func:`_resolve`). Links that differ by their tracking parameters alone (navigation
    tagged with the page it is on: "?utm_medium=page7") are one link: resolved once, as
    the href without them."""
    if len(_TARGETS) >= LINKS_REMEMBERED:
        _TARGETS.clear()
    href, _, prefix = key
    untracked = _untracked(href)
    if untracked is not href:
        return _cached((untracked, *key[1:]), base)
    link = _resolve(href, base, prefix)
    if link is None:
        return None
    return link, fetch_form(link, href.strip()), normalized_fingerprint(link)


def _untracked(href: str) -> str:
    """``href`` without the tracking parameters of its query (those normalize_url strips;
    the parameters kept, the path and the fragment as written, so every href it stands
    for resolves to one link); ``href`` itself if it has none."""
    rest, mark, fragment = href.partition("#")
    path, question, query = rest.partition("?")
    if not question:
        return href
    kept = untracked_query(query)
    return href if kept is query else f"{path}?{kept}{mark}{fragment}"


@lru_cache(maxsize=64)
def _folder(base: str) -> str | None:
    """``base`` without its last path segment, query and fragment (None if not a URL)."""
    try:
        return ada_url.join_url(base, ".")
    except ValueError:
        return None


def _resolve(href: str, base: str, prefix: str) -> str | None:
    """``href`` normalized against ``base``, if it is a link under ``prefix``."""
    href = href.strip()
    if not href or href.lower().startswith(_SKIP_SCHEMES):
        return None
    try:
        link = normalize_url(href, base)
    except ValueError:
        return None
    return link if link.startswith(prefix) else None


ANCHOR_MAX_CHARS = 200  # a link's text past this is cut: a whole card made a link


def anchor_text(element) -> str:
    """A link's text, whitespace collapsed and cut at :data:`ANCHOR_MAX_CHARS`: its own
    text, or for a link with none (an image link, an image map's area) the image's alt."""
    text = " ".join("".join(element.itertext()).split())
    if not text:
        alts = [element.get("alt")] if element.tag == "area" else element.xpath(".//img/@alt")
        text = next((" ".join(alt.split()) for alt in alts if alt and alt.strip()), "")
    return text.replace("\0", "")[:ANCHOR_MAX_CHARS]


def base_url(doc, url: str) -> str:
    """Where the relative links of a page fetched from ``url`` lead from: its first
    ``<base href>``, else ``url``."""
    for href in attribute_values(doc, "base", "href")[:1]:
        return _join(url, href) or url
    return url


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
