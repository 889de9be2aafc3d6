"""Main-content extraction: the part of a page an LLM corpus wants, before conversion.

Policy, in order:

1. Drop what is never content: scripts and styles, forms and controls, hidden elements
   (``hidden``, ``aria-hidden``, ``display:none``), page chrome by element or ARIA role
   (nav, aside, footer, the page header, menus, dialogs), and blocks whose class or id
   names a kind of boilerplate (cookie/consent banners, share bars, comments, related or
   recommended lists, newsletter boxes, breadcrumbs, ads). A block that holds most of the
   page's text is never dropped on its name alone.
2. Pick the container: a ``<main>`` / ``role=main`` or the largest ``<article>`` when it
   holds most of the text; otherwise the block that scores best on text density (long
   paragraphs, few links), in the manner of readability.
3. Inside it, drop link lists (blocks that are mostly links and several of them).
4. The page's title is the top heading, exactly once.

The chosen subtree is converted by :mod:`crawlyx.markdown`. Blocks that repeat across
many pages of one crawl are removed later, by the pipeline, which sees the whole crawl.
"""

from __future__ import annotations

import re

from lxml import etree

from crawlyx.markdown import element_to_markdown, html_to_markdown
from crawlyx.markdown.tree import parse

NEVER_CONTENT = (
    "script", "style", "noscript", "template", "iframe", "svg", "canvas", "object",
    "button", "select", "textarea", "input", "dialog", "menu", "label",
)  # fmt: skip
CHROME_TAGS = ("nav", "aside", "footer")
CHROME_ROLES = {
    "navigation", "banner", "contentinfo", "complementary", "search", "dialog",
    "alertdialog", "menu", "menubar", "toolbar",
}  # fmt: skip

# Class or id words that name boilerplate, and words that name content (which win).
_BOILERPLATE = re.compile(
    r"cookie|consent|gdpr|share|sharing|social|comment|disqus|related|recommend|"
    r"newsletter|subscribe|signup|sign-up|sidebar|breadcrumb|navbar|menu|masthead|"
    r"advert|\bads?\b|ad-slot|adslot|sponsor|promo|popup|modal|pagination|pager|"
    r"toolbar|skip-link|site-header|site-footer|global-header|global-footer|"
    r"most-read|trending|popular|outbrain|taboola|author-bio|about-author|\btags?\b|"
    r"rating|reviews?-widget|carousel|toc\b|table-of-contents|on-this-page|"
    r"byline|reading-time|read-time|post-meta|entry-meta|article-meta|author-card|"
    r"author-box|author-info|\bbio\b|feedback|helpful|\bvotes?\b|noprint|editsection|"
    r"user-info|user-card|usercard|signature|avatar|reflist|mw-references|"
    r"\bnav\b|footer|\bheader\b",
    re.IGNORECASE,
)
# A class or id token that names a content container ("entry-content", "post-body",
# "markdown-body"), judged per token so "article-votes" is not content.
_CONTENT = re.compile(
    r"(?:[a-z]+[-_])?(?:content|article|main|body|prose|markdown|entry|story|post|text)"
    r"(?:[-_](?:body|content|text|inner|wrapper|container))?",
    re.IGNORECASE,
)
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
# Text only for screen readers repeats what the page shows.
_SCREEN_READER = re.compile(
    r"\b(?:sr-only|visually-hidden|visuallyhidden|screen-reader-text|a11y-hidden)\b"
)
# Boilerplate is judged by name on containers only: a heading or a paragraph is content
# whatever its class says ("anchorWithStickyNavbar" on a docs heading).
_CONTAINERS = frozenset(
    {"div", "section", "span", "ul", "ol", "dl", "table", "figure", "form", "header", "p"}
)
# Permalink anchors beside headings: "¶", "#", "§", a link icon, or nothing.
_PERMALINK_TEXT = frozenset({"", "¶", "#", "§", "🔗", "⚓", "\u200b", "link"})
_FOOTNOTE_MARK = re.compile(r"\[?(?:\d{1,3}|[a-z]|note \d+)\]?")
_BLOCKS = ("div", "section", "ul", "ol", "table", "dl", "p")


def _text(el) -> str:
    return el.xpath("string()")


def _text_len(el) -> int:
    """Words of text in ``el``."""
    return len(_text(el).split()) if el is not None else 0


def _link_text_len(el) -> int:
    return sum(_text_len(a) for a in el.iter("a"))


def _drop(el) -> None:
    parent = el.getparent()
    if parent is None:
        return
    # Keep the text that follows the element (lxml stores it on the element).
    if el.tail and el.tail.strip():
        prev = el.getprevious()
        if prev is not None:
            prev.tail = (prev.tail or "") + el.tail
        else:
            parent.text = (parent.text or "") + el.tail
    parent.remove(el)


def _names(el) -> str:
    return f"{el.get('class', '')} {el.get('id', '')}"


def _boilerplate_name(names: str) -> bool:
    """Class/id names that say boilerplate, unless one token says content."""
    if not _BOILERPLATE.search(names):
        return False
    return not any(
        _CONTENT.fullmatch(token) and not _BOILERPLATE.search(token) for token in names.split()
    )


def _is_hidden(el) -> bool:
    if el.get("hidden") is not None or el.get("aria-hidden") == "true":
        return True
    style = el.get("style")
    if style and _HIDDEN_STYLE.search(style):
        return True
    names = el.get("class")
    return bool(names and _SCREEN_READER.search(names))


def _is_permalink(el) -> bool:
    """A heading's permalink ("¶") or a footnote marker ("[2]") pointing into the page."""
    if el.tag == "a":
        return el.get("href", "").startswith("#") and _text(el).strip() in _PERMALINK_TEXT
    if el.tag == "sup":
        links = el.findall(".//a")
        return (
            len(links) == 1
            and links[0].get("href", "").startswith("#")
            and bool(_FOOTNOTE_MARK.fullmatch(_text(el).strip()))
        )
    return False


def _prune(body) -> None:
    """Step 1: remove what is never content."""
    for el in list(body.iter(*NEVER_CONTENT, etree.Comment)):
        _drop(el)
    total = max(_text_len(body), 1)
    for el in list(body.iter()):
        if el.getparent() is None or not isinstance(el.tag, str):
            continue  # already removed with an ancestor
        tag = el.tag
        if _is_hidden(el) or _is_permalink(el):
            _drop(el)
            continue
        if tag == "form" and _text_len(el) < 0.5 * total:
            _drop(el)
            continue
        chrome = tag in CHROME_TAGS or el.get("role", "").lower() in CHROME_ROLES
        if tag == "header" and _inside(el, ("article", "main")) is None:
            chrome = True
        if not chrome and tag in _CONTAINERS:
            chrome = _boilerplate_name(_names(el))
        if chrome and _text_len(el) < 0.5 * total:
            _drop(el)


def _inside(el, tags):
    for ancestor in el.iterancestors(*tags):
        return ancestor
    return None


def _container(body):
    """Step 2: the element that holds the main content."""
    total = max(_text_len(body), 1)
    for el in body.iter("main"):
        if _text_len(el) >= 0.4 * total:
            return el
    for el in body.iter():
        if isinstance(el.tag, str) and el.get("role", "").lower() == "main":
            if _text_len(el) >= 0.4 * total:
                return el
    articles = [a for a in body.iter("article") if _inside(a, ("article",)) is None]
    if articles:
        best = max(articles, key=_text_len)
        if _text_len(best) >= 0.4 * total:
            return best
    return _best_scored(body, total)


def _best_scored(body, total):
    """Readability-style scoring: paragraphs vote for their parent and grandparent."""
    scores: dict = {}
    for p in body.iter("p", "pre", "td", "blockquote", "li", "dd"):
        words = _text_len(p)
        if words < 8:
            continue
        score = 1 + _text(p).count(",") + min(words / 20, 3)
        parent = p.getparent()
        if parent is None:
            continue
        scores[parent] = scores.get(parent, 0) + score
        grand = parent.getparent()
        if grand is not None:
            scores[grand] = scores.get(grand, 0) + score / 2
    if not scores:
        return body
    best, best_score = body, 0.0
    for el, score in scores.items():
        words = _text_len(el)
        density = _link_text_len(el) / max(words, 1)
        score *= 1 - min(density, 1)
        if score > best_score:
            best, best_score = el, score
    # A container that is only part of the content: climb while the parent adds
    # substantial non-link text (split articles, text beside the best block).
    while best is not body:
        parent = best.getparent()
        if parent is None:
            break
        gained = _text_len(parent) - _link_text_len(parent)
        if gained > 1.3 * (_text_len(best) - _link_text_len(best)):
            best = parent
        else:
            break
    return best


def _drop_link_lists(root) -> None:
    """Step 3: blocks that are mostly links (related, tags, more-from, file listings,
    badge rows). Lists and tables of links go at half link text; other blocks at 70%."""
    for el in list(root.iter(*_BLOCKS)):
        if el is root or el.getparent() is None:
            continue
        links = sum(1 for _ in el.iter("a"))
        if links < 3:
            continue
        if el.tag in ("ul", "ol") and _inside(el, ("li",)) is not None:
            continue  # a nested list of a larger list: judged with it
        words = _text_len(el)
        tabular = el.tag in ("ul", "ol", "table", "dl") and links >= 5
        limit = 0.5 if tabular else 0.7
        if not words or _link_text_len(el) / words > limit:
            _drop(el)


_TITLE_SEPARATORS = re.compile(r"\s+[-|–—·:»]\s+")


def page_title(doc) -> str | None:
    """The page's headline: the h1 that the <title> (or og:title) names, else the
    <title> without its site-name part, else the first h1."""
    titles = [" ".join(t.split()) for t in doc.xpath('//meta[@property="og:title"]/@content')]
    titles += [" ".join(_text(t).split()) for t in doc.iter("title")]
    titles = [t for t in titles if t]
    h1s = [" ".join(_text(h).split()) for h in doc.iter("h1")]
    h1s = [h for h in h1s if h]
    for h1 in h1s:
        if any(h1.lower() in t.lower() for t in titles):
            return h1
    if titles:
        # "Headline - Site" / "Site | Headline": the longest part is the headline.
        return max(_TITLE_SEPARATORS.split(titles[0]), key=len)
    return h1s[0] if h1s else None


def _ensure_title(root, title: str | None):
    """Step 4: exactly one top heading, the page's title."""
    h1s = list(root.iter("h1"))
    if h1s:
        for extra in h1s[1:]:
            extra.tag = "h2"
        return root
    if not title:
        return root
    first = next(root.iter("h2", "h3", "h4", "h5", "h6"), None)
    if first is not None and " ".join(_text(first).split()) == title:
        first.tag = "h1"  # the content opens with the title at a lower level
        return root
    wrapper = etree.Element("div")
    heading = etree.SubElement(wrapper, "h1")
    heading.text = title
    wrapper.append(root)
    return wrapper


def parse_document(page: str | bytes):
    """The page as an lxml document, or None when it has no body to speak of."""
    doc = parse(page)
    return doc if doc is not None and doc.find("body") is not None else None


def document_markdown(doc, page: str | bytes, url: str, *, main_content=True, links="inline"):
    """Markdown of a parsed page (``doc``, which this changes) or of ``page`` whole."""
    if doc is None or not main_content:
        return html_to_markdown(page, url, links)
    body = doc.find("body")
    title = page_title(doc)
    base = doc.find(".//base[@href]")
    _prune(body)
    root = _container(body)
    _drop_link_lists(root)
    root = _ensure_title(root, title)
    return element_to_markdown(root, url, links, base.get("href") if base is not None else None)


def page_markdown(
    page: str | bytes, url: str, *, main_content: bool = True, links: str = "inline"
) -> str:
    """A page's markdown: its main content (or the whole page), links as asked."""
    doc = parse_document(page) if main_content else None
    return document_markdown(doc, page, url, main_content=main_content, links=links)
