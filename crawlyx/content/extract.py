"""Main-content extraction: the part of a page an LLM corpus wants, before conversion.

Policy, in order:

1. Drop what is never content: scripts and styles, forms and controls (but a tab's
   label, and a control left open by broken markup, which holds the page: it is
   unwrapped), hidden elements (but a hidden tab or accordion panel, and a block hidden
   until scripts run that holds most of the page), navigation, sidebars, footers and
   dialogs, the page header unless it is most of the page, and blocks whose class or id
   names a kind of boilerplate (cookie banners, share bars, comments, related lists,
   ads...) unless the blocks of that name are most of the text and no article stands
   beside them. Text served inside ``<noscript>`` is read there when it is most of the page.
2. Find the container from the body down: into the child that holds most of the text
   outside links, until no child does, or a lead above it or a heading above a list
   would be left behind. A grid of linked items above it (product cards, results) is the
   content instead when its items show prices or it holds twice the container's words,
   and so is one below it when it is only a line of introduction.
3. Inside it, drop rails of links, unless they are most of it, a table of contents, or
   announced by the paragraph before them ("The following plugins are included:"), and
   the cards that tease the site's other pages once an article has been read.
4. The page's title is the top heading, exactly once; a block shown twice is said once.

The chosen subtree is converted by :mod:`crawlyx.content.markdown`. Blocks that repeat across
many pages of one crawl are removed later, by the pipeline, which sees the whole crawl.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from functools import lru_cache
from itertools import islice
from urllib.parse import urljoin, urlsplit

from lxml import etree

from crawlyx.content.boilerplate import (
    drop_article_tail,
    drop_credits,
    drop_other_products,
    drop_repeats,
    drop_trailing_headings,
)
from crawlyx.content.markdown import DROP_TAGS, element_to_markdown, html_to_markdown
from crawlyx.content.markdown.tags import MATH_IMAGE
from crawlyx.content.markdown.tree import parse

# What the converter never reads (scripts, styles, a ruby's reading aid, a video's
# fallback...), and forms and controls.
NEVER_CONTENT = (
    *DROP_TAGS, "button", "select", "textarea", "input", "dialog", "menu", "label",
)  # fmt: skip
CHROME_TAGS = ("nav", "aside", "footer")
CHROME_ROLES = {
    "navigation", "banner", "contentinfo", "complementary", "search", "dialog",
    "alertdialog", "menu", "menubar", "toolbar",
}  # fmt: skip

# Class or id words that name boilerplate, and words that name content (which win).
_BOILERPLATE = re.compile(
    r"(?<![a-z])(?:cookie|consent|gdpr|share|sharing|social|comment|disqus|related|similar|"
    r"recommend|newsletter|subscribe|signup|sign-up|sidebar|breadcrumb|navbar|menu|masthead|"
    r"advert|\bads?\b|ad-slot|adslot|sponsor|promo|popup|modal|pagination|pager|"
    r"toolbar|skip-link|site-header|site-footer|global-header|global-footer|"
    r"most-read|trending|popular|outbrain|taboola|author-bio|about-author|\btags?\b|"
    r"rating|reviews?-widget|teaser|toc\b|table-of-contents|on-this-page|"
    r"byline|reading-time|read-time|post-?meta|entry-meta|entry-utility|article-meta|"
    r"author-card|author-box|author-info|author-description|\bbio\b|feedback|helpful|"
    r"\bvotes?\b|noprint|editsection|"
    r"user-?(?:info|card|details|extras|stats)|usercard|postprofile|poster-?info|"
    r"signature|avatar|reflist|mw-references|wp-caption-text|copyright|"
    r"\bnav\b|footer|(?<![\w-])header\b)",  # "header-top", not "category-header"
    re.IGNORECASE,
)
# Customer reviews, boilerplate on a product page; comments, the posts of a thread; and
# how a page says it is either.
_REVIEWS = re.compile(r"(?<![a-z])reviews?(?![a-rt-z])", re.IGNORECASE)
_COMMENTS = re.compile(r"comment", re.IGNORECASE)
# On a product page its reviews, and the carousels of other products ("you may also
# like"); elsewhere a carousel holds the page's own slides (features, testimonials).
_PRODUCT_EXTRAS = re.compile(rf"{_REVIEWS.pattern}|carousel", re.IGNORECASE)


def _ld_type(names: str) -> re.Pattern:
    """A JSON-LD "@type" (alone or in a list) that is one of ``names``."""
    return re.compile(rf'"@type"\s*:\s*(?:\[[^\]]*)?"(?:https?://schema\.org/)?(?:{names})"')


_PRODUCT_LD = _ld_type("Product")
_ARTICLE_LD = _ld_type(r"\w*Article|BlogPosting")
_ARTICLE_TYPE = re.compile(r"schema\.org/(?:\w*Article|BlogPosting)\b")  # a microdata itemtype
_DISCUSSION_LD = _ld_type("DiscussionForumPosting|QAPage")
_PRODUCT_TYPES = frozenset({"product", "og:product", "product.item"})
_OG_TYPE = ("property", "og:type")  # of a <meta>
_GENERATOR = ("name", "generator")
_SPHINX_SCRIPT = "_static/documentation_options.js"
# mdBook names itself in no meta tag either; every book loads its book.js (hashed in newer
# versions: book-a0b12cfe.js).
_MDBOOK_SCRIPT = re.compile(r"(?:^|/)book(?:-[0-9a-f]{8})?\.js$")
_DOCS_GENERATOR = re.compile(
    r"\s*(?:mkdocs|sphinx|docusaurus|vitepress|vuepress|gitbook|mdbook|starlight|docfx|antora|"
    r"javadoc|rustdoc|doxygen|typedoc|pdoc)",
    re.IGNORECASE,
)
_JSON_LD = "application/ld+json"  # a <script>'s type
# Hidden blocks that a reader opens.
_PANEL = re.compile(r"tab|panel|accordion|collaps|expand|toggle|answer", re.IGNORECASE)
_ACCORDION = re.compile(r"accordion", re.IGNORECASE)
# A lead, a standfirst, a subtitle: the summary a story opens with, however marked up.
_LEAD = re.compile(
    r"(?<![a-z])(?:lead|subtitle|sub-?headline|summary|intro|standfirst|vorspann|excerpt|"
    r"abstract|deck|dek)(?![a-z])",
    re.IGNORECASE,
)
# A documentation generator's table of contents (Sphinx's toctree, a local contents).
_TABLE_OF_CONTENTS = re.compile(r"toctree|\bcontents\b")
# Asides that belong to the text: footnotes, admonitions, callouts.
_CONTENT_ASIDE = re.compile(r"footnote|admonition|callout|\bnote\b|\btip\b|warning", re.I)
# A class or id token that names a content container ("entry-content", "post-body",
# "markdown-body"), judged per token so "article-votes" is not content.
_CONTENT = re.compile(
    r"(?:[a-z]+[-_])?(?:content|article|main|body|prose|markdown|entry|story|post|text)"
    r"(?:[-_](?:body|content|text|inner|wrapper|container))?",
    re.IGNORECASE,
)
# Controls whose own text is a few words; one holding more was left open by the markup.
_CONTROLS = frozenset({"button", "label"})
CONTROL_WORDS = 50
# A link's class, drawn as a button (or a "back to top" link, furo's, a theme's arrow).
_BUTTON = re.compile(r"button|\bbtn\b|back-to-top|scroll-to-top", re.IGNORECASE)
BUTTON_WORDS = 3
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
# Text only for screen readers repeats what the page shows.
_SCREEN_READER = re.compile(
    r"\b(?:sr-only|visually-hidden|visuallyhidden|screen-reader-text|a11y-hidden)\b"
)
# Boilerplate is judged by name on containers (and custom elements) only: a heading or a
# paragraph is content whatever its class says ("anchorWithStickyNavbar" on a docs heading),
# and so is a table, which is data ("sortable sticky-header", "ingredients table-header").
_CONTAINERS = frozenset(
    {"div", "section", "span", "ul", "ol", "dl", "figure", "form", "header", "p"}
)
# Permalink anchors beside headings: "¶", "#", "§", a link icon (Font Awesome's U+F0C1 in
# the Read the Docs theme), or nothing.
_PERMALINK_TEXT = frozenset({"", "¶", "#", "§", "🔗", "⚓", "\u200b", "\uf0c1", "link"})
# A footnote's way back to where it is cited ("↩", markdown-it's "↩︎", Wikipedia's "^").
_BACKLINK_TEXT = frozenset({"↩", "↩\ufe0e", "↩\ufe0f", "↑", "^"})
_PERMALINK_MARKS = (
    "¶#§🔗⚓\u200b\uf0c1 "  # what a heading's text ends with when its permalink is in it
)
_SKIP_LINK = re.compile(r"skip\b", re.IGNORECASE)
_FOOTNOTE_MARK = re.compile(r"\[?(?:\d{1,3}|[a-z]|note \d+)\]?")
_BLOCKS = ("div", "section", "ul", "ol", "table", "dl", "p")
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_LEAVES = _HEADINGS | {"p", "pre"}
_CODE = frozenset({"pre", "code"})
_LISTS = frozenset({"ul", "ol", "dl"})
_TABLE_PARTS = frozenset({"thead", "tbody", "tfoot", "tr"})
# Shares of the text that decide: the child the container search descends into, the
# containers of one boilerplate name that are content after all, the link lists that are.
CONTENT_SHARE = 0.75
NAMED_SHARE = 0.5
NAMED_LEFT_WORDS = 60  # a page left with fewer words lost its content to a name
LINK_LISTS_SHARE = 0.5
HIDDEN_PROSE_WORDS = 15
HIDDEN_PAGE_SHARE = 0.5
ARTICLE_WORDS = 150
PROSE_WORDS = 10  # a paragraph of prose, not a label
LEAD_WORDS = 30
LEAD_SHARE = 0.1
# A grid of items: this many of one kind at least, holding this share of the page's words.
GRID_ITEMS = 8
GRID_SHARE = 0.3
# Teaser cards: this many of one kind at least, each a linked title and a line or two.
TEASER_CARDS = 3
TEASER_WORDS = 100
_PRICE = re.compile(r"[$£€¥]\s?\d|\d\s?(?:[$£€]|EUR\b|USD\b)")


def _text(el) -> str:
    return el.xpath("string()")


def attribute_values(doc, tag: str, attr: str, key: str = "", value: str = "") -> list[str]:
    """``//tag[@key="value"]/@attr``: one walk over the page's elements of that tag, where
    an XPath query goes through every node of the page (a tenth of a second at 16 MiB)."""
    return [
        found
        for el in doc.iter(tag)
        if (not key or el.get(key) == value) and (found := el.get(attr)) is not None
    ]


def _text_len(el) -> int:
    """Words of text in ``el``."""
    return _words(_text(el)) if el is not None else 0


# Chinese and Japanese put no space between words: each of their characters counts as one
# (a word is one or two of them), else a paragraph of them weighs what a one-word link
# does, and a sidebar of headlines passes for the article.
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


# The first byte of those characters in UTF-8: a text without any has none of them, which
# a few byte searches tell sooner than the pattern does (a fifth of the time on a page).
_UNSPACED_LEADS = tuple(bytes([b]) for b in (*range(0xE3, 0xEA), 0xEF))


def _words(text: str) -> int:
    """Words of ``text``: separated by spaces, or written without them."""
    words = len(text.split())
    if text.isascii():
        return words
    encoded = text.encode("utf-8", "surrogatepass")
    if not any(lead in encoded for lead in _UNSPACED_LEADS):
        return words
    return words + len(_UNSPACED.findall(text))


def _link_text_len(el) -> int:
    return sum(_text_len(a) for a in el.iter("a"))


def _text_before(el, text: str) -> None:
    """Add ``text`` where it reads just before ``el``: its previous sibling's tail, or its
    parent's text."""
    prev = el.getprevious()
    if prev is not None:
        prev.tail = (prev.tail or "") + text
    else:
        parent = el.getparent()
        parent.text = (parent.text or "") + text


def _drop(el) -> None:
    parent = el.getparent()
    if parent is None:
        return
    # Keep the text that follows the element (lxml stores it on the element).
    if el.tail and el.tail.strip():
        _text_before(el, el.tail)
    parent.remove(el)


# Elements are dropped in batches: a loop judges them one by one (marking those it drops,
# renamed, where judging the next ones must see them gone) and drops them together at its
# end. Moving each one's tail onto the text before it, one at a time, copies that text
# again for every element of a run (thousands of buttons in a row): quadratic in the
# page. A batch moves the tails of a run onto the text before it at once.
_DROPPED = "crawlyx-dropped"


def _mark(el) -> None:
    el.tag = _DROPPED


def _drop_all(elements) -> None:
    """:func:`_drop` each of ``elements``, in document order, in one pass."""
    moved: dict = {}  # (element, "text" | "tail") -> the tails that go there
    for el in elements:
        parent = el.getparent()
        if parent is None:
            continue
        if el.tail and el.tail.strip():
            prev = el.getprevious()  # those dropped before it are gone already
            key = (prev, "tail") if prev is not None else (parent, "text")
            moved.setdefault(key, []).append(el.tail)
        parent.remove(el)
    for (target, side), tails in moved.items():
        setattr(target, side, (getattr(target, side) or "") + "".join(tails))


def _unwrap(el) -> None:
    """Replace ``el`` by its content: the emptied element is left to be dropped."""
    if el.text:
        _text_before(el, el.text)
        el.text = None
    for child in list(el):
        el.addprevious(child)


def _names(el) -> str:
    return f"{el.get('class', '')} {el.get('id', '')}"


def _story_text(el) -> bool:
    """Microdata marks ``el`` as a story's text or its summary ("articleBody", or the
    "description" of an Article, not of its author), whatever its class says."""
    prop = el.get("itemprop")
    if prop == "articleBody":
        return True
    if prop != "description":
        return False
    scope = next((a for a in el.iterancestors() if a.get("itemscope") is not None), None)
    return scope is not None and _ARTICLE_TYPE.search(scope.get("itemtype", "")) is not None


def _judged_names(el) -> str:
    """The class and id of a container; a section's id is the slug of its heading
    ("cookies", "migrating-to-2-x"): it names the section's subject, not its role. An
    article's own ``<header>`` ("entry-header": its title and lead) and a teaser
    paragraph (a CMS's name for the lead) are not judged."""
    if el.tag == "header" and _inside(el, ("article", "main")) is not None:
        return ""
    if _story_text(el):
        return ""
    if el.tag == "section" or "section" in el.get("class", "").split():
        return el.get("class", "")
    if el.tag == "p" and "teaser" in _names(el).lower():
        return ""  # a paragraph that is a story's teaser is its lead, not a teaser box
    if "-" in el.tag:  # a custom element's name says what it is: "site-nav", "pp-header"
        return f"{el.tag} {_names(el)}"
    return _names(el)


def _boilerplate_name(names: str) -> bool:
    """Class/id names that say boilerplate, unless one token says content."""
    if not _BOILERPLATE.search(names):
        return False
    return not any(
        _CONTENT.fullmatch(token) and not _BOILERPLATE.search(token) for token in names.split()
    )


def _is_hidden(el) -> bool:
    """Hidden from the reader. A link hidden from screen readers only is a second link to
    where another goes (a card's excerpt beside its title): the eye sees its text; so it
    sees an image of math (:data:`MATH_IMAGE`)."""
    if el.get("hidden") is not None:
        return True
    if el.get("aria-hidden") == "true" and not (
        el.tag == "a" or (el.tag == "img" and MATH_IMAGE.search(el.get("class", "")))
    ):
        return True
    style = el.get("style")
    if style and _HIDDEN_STYLE.search(style):
        return True
    names = el.get("class")
    return bool(names and _SCREEN_READER.search(names))


def _is_prose(el, opened: set) -> bool:
    """A hidden block the reader opens: a tab, an accordion's panel, a "read more". It
    holds prose (not a menu) and is named so, is what a control on the page opens and
    holds paragraphs (its id is in ``opened``, the ids that ``aria-controls`` names; a
    flyout with a league table is not), or is one of a set (its siblings of the same
    class are the other tabs); a collapsed panel may be aria-hidden as well. A lone
    hidden note, screen-reader text and aria-hidden decoration are not."""
    if _SCREEN_READER.search(el.get("class", "")):
        return False
    words = _text_len(el)
    if not words or _link_text_len(el) > 0.4 * words:
        return False
    if _PANEL.search(f"{_names(el)} {el.get('role', '')}") or (
        el.get("id") in opened and el.find(".//p") is not None
    ):
        return True
    if el.get("aria-hidden") == "true":
        return False
    parent = el.getparent()
    return words >= HIDDEN_PROSE_WORDS and any(
        other is not el and other.tag == el.tag and other.get("class") == el.get("class")
        for other in parent
    )


def _is_button(el) -> bool:
    """A link or a label drawn as a button ("Print recipe", "Pin it", "Save"): a control
    like ``<button>``. One of more words is a call to action with something to say."""
    return (
        el.tag in ("a", "span")
        and (el.get("role") == "button" or _BUTTON.search(el.get("class", "")) is not None)
        and _text_len(el) <= BUTTON_WORDS
    )


def _is_code_label(el) -> bool:
    """A code block's language label beside its <pre>: "ts" in a wrapper named
    ``language-ts`` (VitePress); the fence says the language."""
    text = (el.text or "").strip().lower()
    parent = el.getparent()
    return (
        bool(text)
        and len(el) == 0
        and parent is not None
        and f"language-{text}" in parent.get("class", "").lower().split()
        and parent.find("pre") is not None
    )


def _is_tab_label(el) -> bool:
    """A tab's label ("Windows", "macOS" above a command): it names its panel."""
    parent = el.getparent()
    return parent is not None and bool(_PANEL.search(f"{_names(el)} {_names(parent)}"))


def _is_permalink(el) -> bool:
    """A heading's permalink ("¶"), a footnote marker ("[2]") or its way back ("↩"), or
    a "Skip to content" link, pointing into the page."""
    if el.tag == "a":
        if not el.get("href", "").startswith("#"):
            return False
        text = _text(el).strip()
        return (
            text in _PERMALINK_TEXT or text in _BACKLINK_TEXT or _SKIP_LINK.match(text) is not None
        )
    if el.tag == "sup":
        links = el.findall(".//a")
        return (
            len(links) == 1
            and links[0].get("href", "").startswith("#")
            and bool(_FOOTNOTE_MARK.fullmatch(_text(el).strip()))
        )
    return False


def _unbracket(el) -> None:
    """The brackets written around a link that goes ("[↩]") go with it."""
    tail = (el.tail or "").lstrip()
    prev = el.getprevious()
    before = (prev.tail if prev is not None else el.getparent().text) or ""
    if not tail.startswith("]") or not before.rstrip().endswith("["):
        return
    before = before.rstrip()[:-1]
    if prev is not None:
        prev.tail = before
    else:
        el.getparent().text = before
    el.tail = tail[1:]


def _inside(el, tags):
    for ancestor in el.iterancestors(*tags):
        return ancestor
    return None


def _measure(root) -> dict:
    """(words, words inside links) of every element under ``root``, in one pass."""
    stats: dict = {}
    # Most texts between elements are the markup's indentation: no words, no call.
    for el in reversed(list(root.iter())):
        tag = el.tag
        if not isinstance(tag, str):
            continue
        text = el.text
        words = _words(text) if text and not text.isspace() else 0
        links = 0
        for child in el:
            tail = child.tail
            if tail and not tail.isspace():
                words += _words(tail)
            if isinstance(child.tag, str):
                child_words, child_links = stats[child]
                words += child_words
                links += child_links
        stats[el] = (words, words if tag == "a" else links)
    return stats


def _prune(body, page_type: str | None) -> dict | None:
    """Step 1: remove what is never content. Returns the body's :func:`_measure` when
    the last step had it at hand (else None)."""
    opened = {i for ids in body.xpath("//@aria-controls") for i in ids.split()}  # by buttons
    _noscript(body)
    doomed = []
    for el in list(body.iter(*NEVER_CONTENT, etree.Comment)):
        if el.tag in _CONTROLS and _text_len(el) > CONTROL_WORDS:
            _unwrap(el)  # a control left open swallows the page that follows it
            doomed.append(el)
        elif el.tag == "label" and _is_tab_label(el):
            el.tail = " " + (el.tail or "")  # "Unix Windows", not "UnixWindows"
        else:
            doomed.append(el)
    _drop_all(doomed)
    if page_type != "documentation":  # a photo's caption and credit are not the content
        for caption in list(body.iter("figcaption")):
            figure = caption.getparent()
            if _captions_data(figure):
                continue  # "Listing 4-4: ...", which the text refers to
            _drop(caption)
            if figure.tag == "figure" and not _text(figure).strip():
                _drop(figure)  # else the photo's alt text would stand in for the caption
    total = max(_text_len(body), 1)
    posts = _post_forms(body, total)
    docs = page_type == "documentation"
    hidden = []
    doomed = []
    inside: set = set()  # what is inside those doomed: not judged
    for el in list(body.iterdescendants()):
        if not isinstance(el.tag, str) or (inside and el in inside):
            continue
        if _judge(el, opened, total, posts, hidden, docs):
            _mark(el)
            doomed.append(el)
            inside.update(el.iter())
    _drop_all(doomed)
    # A block hidden until the page's scripts run, holding most of the page or of what is
    # left once the chrome is gone (an article at least), is shown.
    if hidden:
        shown = _text_len(body)
        _drop_all(
            [
                el
                for el in hidden
                if (words := _text_len(el)) < HIDDEN_PAGE_SHARE * shown or words < ARTICLE_WORDS
            ]
        )
    return _prune_by_name(body, page_type)


def _is_toggle_label(summary) -> bool:
    """A ``<summary>`` that is a toggle's label: its text says what the control does."""
    if not _small(summary) or next(summary.iter(*_HEADINGS, "pre", "table", "p"), None):
        return False
    text = " ".join(_text(summary).split())
    return len(text.split()) <= TOGGLE_WORDS and _TOGGLE_LABEL.fullmatch(text) is not None


def _small(el, elements: int = 4) -> bool:
    """``el`` holds at most this many elements: a label, a badge. Counted no further, so
    that judging thousands of nested ones costs no more than the page."""
    return next(islice(el.iterdescendants(), elements, None), None) is None


def _is_version_badge(el) -> bool:
    """A badge that gives the version an item came in: named so and nothing but that."""
    names = el.get("class")
    if not names or not _BADGE_NAME.search(names) or not _small(el):
        return False
    text = _text(el).strip()
    return len(text) <= 60 and _VERSION.fullmatch(text) is not None


def _is_source_link(el) -> bool:
    """A link to where an item is defined, drawn beside it: "Source", "[src]"."""
    return (
        el.tag == "a"
        and _SOURCE_LINK_NAME.search(el.get("class", "")) is not None
        and " ".join(_text(el).split()).lower() in _SOURCE_LINK_TEXT
    )


def _captions_data(figure) -> bool:
    """A figure of code or of a table, not a photo: its caption names it ("Listing 4-4",
    "Table 2") and the text says what it shows by that name."""
    return figure is not None and next(figure.iter("pre", "code", "table"), None) is not None


def _judge(el, opened: set, total: int, posts: set, hidden: list, docs: bool) -> bool:
    """Step 1 for one element: it is never content (a permalink, a button, a form, the
    site's chrome). A hidden one is added to ``hidden``, to be judged once the rest is.
    ``docs``: the page is documentation."""
    tag = el.tag
    if tag not in _JUDGED_BARE and not el.keys():
        return False  # most elements: nothing in their markup says chrome
    if _is_permalink(el):
        if _inside(el, _CODE) is not None:
            return False  # a code listing's line anchors are its own
        _unbracket(el)
        return True
    if tag == "summary":
        if _is_toggle_label(el):
            return True
    elif _is_version_badge(el) or _is_source_link(el):
        if el.tail:  # "1.0.0 · Source": the separator goes with what it separated
            el.tail = _SEPARATOR.sub(" ", el.tail, count=1)
        return True
    if _is_hidden(el) and not _is_prose(el, opened):
        if _text_len(el) < HIDDEN_PAGE_SHARE * total:
            hidden.append(el)  # judged again once the chrome is gone
        return False
    if _is_button(el) or _is_code_label(el) or (docs and _POPUP.search(_names(el))):
        return True
    if tag == "form":
        return el not in posts
    role = el.get("role", "").lower()
    header = role == "banner" or (tag == "header" and _inside(el, ("article", "main")) is None)
    if not (header or tag in CHROME_TAGS or role in CHROME_ROLES):
        return False
    if _CONTENT_ASIDE.search(_names(el)) or _is_local_contents(el) or _in_accordion(el):
        return False
    if docs and tag != "footer" and _in_document_section(el):
        return False  # a docs page's sidebar, topic or table of contents, set in its text
    # Navigation, sidebars and footers go however long they are (a short page's
    # sidebar outweighs it) unless the page's heading or main part is inside; a page
    # header may hold a landing page's pitch. Those stay when they are most of the text.
    return not (
        (header or el.find(".//h1") is not None or el.find(".//main") is not None)
        and _text_len(el) >= 0.5 * total
    )


# A docs generator's popups and dialogs (mdBook's keyboard help, a theme's search modal):
# shown on a key or a click, never the page's text, however short the page.
_POPUP = re.compile(r"(?<![a-z])(?:popup|popover|modal|dialog)(?![a-z])", re.IGNORECASE)

# Elements judged in step 1 by their name alone; others only by their attributes.
_JUDGED_BARE = frozenset({"sup", "form", "header", "summary", *CHROME_TAGS})

# The label of a <details> toggle that is the page's UI, not its words: "Expand
# description", "Show 12 methods", "Click to expand", "Details". A summary that says
# something ("What does it cost?", an item's signature) is the fold's title and stays.
_TOGGLE_LABEL = re.compile(
    r"(?:click (?:here )?to |tap to )?"
    r"(?:expand|collapse|show|hide|toggle|view|see|open|close|read)"
    r"(?: (?:all|the|full|more|less|hidden|\d+))*"
    r"(?: (?:description|details?|more|less|all|code|source|examples?|contents?|items?|"
    r"fields?|methods?|variants?|implementations?|implementors?|(?:trait |associated |"
    r"undocumented )?items?|sections?|answers?|text|output|everything|info(?:rmation)?))?"
    r"|details|more|less|[+−▶▼►▸▾-]|\[[+−-]\]",
    re.IGNORECASE,
)
TOGGLE_WORDS = 5
# A stability or version badge: rustdoc's <span class="since">1.0.0</span> beside each
# item, a docs theme's <span class="version">v2.3</span>, "Since 3.2". Named so, and
# holding a version and nothing else: a "version" block that says more is content.
_BADGE_NAME = re.compile(
    r"(?<![a-z])(?:since|version|stable-since|added-in|release|badge)(?![a-z])", re.IGNORECASE
)
_VERSION = re.compile(
    r"(?:v|version|since|stable since|added in|new in)?\s*\d+(?:\.\d+){1,3}[\w.+-]*"
    r"(?:\s*\((?:const|unstable)?:?\s*[^()]{0,40}\))?",
    re.IGNORECASE,
)
# A link to the item's source beside its version (rustdoc's "Source", "[src]").
_SOURCE_LINK_TEXT = frozenset({"source", "src", "[src]", "[source]", "view source"})
_SOURCE_LINK_NAME = re.compile(r"(?<![\w-])(?:src|srclink)(?![\w-])")
_SEPARATOR = re.compile(r"^\s*[·|•–—-]\s*")


@lru_cache(maxsize=4096)  # a page's containers repeat a few names, a site's pages too
def _judged(names: str, page_type: str | None) -> bool:
    """A container of these names is judged as boilerplate on a page of this type."""
    if page_type == "discussion" and _COMMENTS.search(names):
        return False
    return _boilerplate_name(names) or (
        page_type == "product" and _PRODUCT_EXTRAS.search(names) is not None
    )


def _post_forms(body, total: int) -> set:
    """The forms that hold a thread's posts, not a search box or a comment form: forum
    software wraps the posts in a moderation form (``<article>`` elements and an
    article's worth of prose), or each comment in a form of its own (the forms of one
    class hold half the page)."""
    found = set()
    shapes: dict = {}
    for form in body.iter("form"):
        shapes.setdefault(form.get("class"), []).append(form)
        words = _text_len(form) - _link_text_len(form)
        if words >= ARTICLE_WORDS and form.find(".//article") is not None:
            found.add(form)
    for forms in shapes.values():
        if sum(_text_len(form) for form in forms) >= 0.5 * total:
            found.update(forms)
    return found


def _in_document_section(el) -> bool:
    """Right inside a section of a document (:func:`_is_section`), its parent or the
    parent's parent: where docutils sets a ``.. sidebar::``, a ``.. topic::`` or a
    ``.. contents::`` (as ``<aside>`` and ``<nav>``), inside the text. A site's sidebar
    and navigation sit beside the sections. Two levels: a page of asides, each in a
    thousand ``<div>``, is not a thousand steps an aside."""
    return any(_is_section(ancestor) for ancestor in islice(el.iterancestors(), 2))


def _in_accordion(el) -> bool:
    """Inside an accordion: a fold the reader opens, drawn as an aside or a dialog (a
    product's description in a side sheet), is the page's, not the site's."""
    return any(_ACCORDION.search(_names(ancestor)) for ancestor in el.iterancestors())


def _is_local_contents(el) -> bool:
    """A table of contents the author put in the document (Sphinx's ``contents``
    directive): part of the article, not the site's navigation."""
    return (
        _TABLE_OF_CONTENTS.search(el.get("class", "")) is not None
        and _inside(el, ("article", "main")) is not None
    )


def _noscript(body) -> None:
    """A page whose text, scripts aside, is mostly inside ``<noscript>`` serves its
    content there (forum software does for clients without JavaScript; a blog platform
    whose scripts draw the post does): keep it. Otherwise it is a fallback ("enable
    JavaScript", tracking pixels) and goes with the scripts."""
    fallbacks = [el for el in body.iter("noscript") if _inside(el, ("noscript",)) is None]
    inside = sum(_text_len(el) for el in fallbacks)
    if inside < LEAD_WORDS:
        return  # most pages: no fallback with text, and no need to count the rest
    code = sum(_text_len(el) for el in body.iter("script", "style", "template"))
    if inside > _text_len(body) - code - inside:
        for el in fallbacks:
            el.tag = "div"


# Containers named like boilerplate nest a few levels deep (ten at most in a thousand real
# pages); a hostile page nests them hundreds deep, and each level is a round over the
# whole page. Rounds stop after measuring this many elements (about half a second): a
# page of a few thousand elements gets a hundred rounds, one of 16 MiB two or three.
NAMED_WORK = 500_000


def _prune_by_name(body, page_type: str | None) -> dict | None:
    """Containers whose class or id names boilerplate, judged against what is left once
    chrome by element is gone. A container is kept when it, or the containers of the
    same name together, hold most of that text or an article's worth of its prose outside
    links: a thread's posts may be "comments", a shop's product grid "related", a news
    story a "teaser" among menus. On a product page, customer reviews are its comments
    however many there are (elsewhere a "review" is as likely the article); on a page
    marked as a discussion, the comments are its posts, not judged at all.
    What a kept container holds is judged in turn: a layout named after its sidebar, or a
    page that broken markup put inside its "header", holds the site's menus as well. Not
    inside a thread's comments (their parts are the posts) nor on a product page, whose
    tabs and panels hold its details and its buyers' words.
    Each round measures the whole body again: rounds stop once they have measured
    :data:`NAMED_WORK` elements (see there).
    Returns the body's :func:`_measure` if the last round dropped nothing, else None."""
    kept: set = set()
    work = 0
    while True:
        stats, dropped, more = _prune_named(body, page_type, kept)
        work += len(stats)
        if not more or page_type == "product" or work >= NAMED_WORK:
            return None if dropped else stats


def _only_code(el, stats) -> bool:
    """All of ``el``'s words are code: a box around a listing is code, whatever its name
    (mkdocstrings' "doc-signature", a highlighter's "comment-block")."""
    return 0 < stats[el][0] <= sum(stats[pre][0] for pre in el.iter("pre"))


def _prune_named(body, page_type: str | None, kept: set) -> tuple[dict, bool, bool]:
    """One round of :func:`_prune_by_name`, below the containers in ``kept``: the body's
    :func:`_measure` before the round, whether it dropped any container, and whether it
    kept any (added to ``kept``, to be looked into by another round)."""
    stats = _measure(body)
    total = max(stats[body][0], 1)
    groups: dict[str, list] = {}
    # Words of prose outside the named containers judged now (a kept one's prose is the
    # page's): an article, which comments follow.
    article = 0
    prose_tags = ("p", "li") if page_type == "article" else ("p",)  # a how-to's steps too
    docs = page_type == "documentation"
    walk = [iter(body)]  # document order, not below a named container
    while walk:
        el = next(walk[-1], None)
        if el is None:
            walk.pop()
            continue
        tag = el.tag
        if not isinstance(tag, str) or tag in _CODE:
            continue  # a highlighter's "hljs-comment" is the code's own
        if tag in prose_tags and _prose(el, stats) >= PROSE_WORDS:
            article += stats[el][0]
        if (
            (tag in _CONTAINERS or "-" in tag)
            and (el.get("class") or el.get("id") or "-" in tag)  # else it has no name
            and el not in kept
            and _judged(_judged_names(el), page_type)
            and not _only_code(el, stats)
            # On a docs page a span inside a sentence is words of it (":menuselection:").
            and not (docs and tag == "span" and _inside(el, ("p",)) is not None)
        ):
            groups.setdefault(el.get("class") or el.get("id") or tag, []).append(el)
            continue  # judged with its container
        if len(el):
            walk.append(iter(el))
    text = total - stats[body][1]

    def content(group) -> bool:
        words = sum(stats[el][0] for el in group)
        prose = sum(stats[p][0] for el in group for p in el.iter("p") if stats[p][0] >= PROSE_WORDS)
        return words >= NAMED_SHARE * total or prose >= max(ARTICLE_WORDS, NAMED_SHARE * text)

    doomed = [
        group
        for name, group in groups.items()
        if article >= ARTICLE_WORDS
        or not content(group)
        or (page_type == "product" and _REVIEWS.search(name))
    ]
    # A page left with next to nothing had its content named like boilerplate (a
    # "sidebar" layout, an "intro" section "with ads"): the container with the most
    # prose stays.
    left = total - sum(stats[el][0] for group in doomed for el in group)
    if doomed and left < NAMED_LEFT_WORDS:
        prose, best = max(
            (sum(stats[el][0] - stats[el][1] for el in group), index)
            for index, group in enumerate(doomed)
        )
        if prose >= max(LEAD_WORDS, left):
            del doomed[best]
    dropped = {el for group in doomed for el in group}
    if dropped:
        _drop_all([el for el in body.iter() if el in dropped])  # in document order
    wrappers = {
        el
        for name, group in groups.items()
        if group not in doomed and not _COMMENTS.search(name) and not _REVIEWS.search(name)
        for el in group
    }
    kept |= wrappers
    return stats, bool(dropped), bool(wrappers)


def _container(body, stats, top=None):
    """Step 2: the element that holds the main content: from the body down, into the
    child that holds most of the text outside links (:data:`CONTENT_SHARE`), until no
    child does. That is where the content's parts meet: an article's paragraphs, a
    thread's posts, a listing's items, a reference page's sections. ``stats`` is
    :func:`_measure` of ``body``. Never below ``top`` (a docs page's own heading: an API
    page's item and its signature stand above its long description)."""

    def text(el):
        words, links = stats[el]
        return words - links

    above = set(top.iterancestors()) if top is not None else None
    el = body
    while text(el) > 0:
        children = [c for c in el if isinstance(c.tag, str)]
        if not children:
            break
        child = max(children, key=text)
        if above is not None and (child not in above or text(child) <= text(top)):
            break  # beside the heading, or into its wrapper (an article's <header>)
        if (
            text(child) < CONTENT_SHARE * text(el)
            or child.tag in _LEAVES
            or _only_code(child, stats)
        ):
            break  # a heading, a paragraph or a code block (in its wrapper: an API page's
            # example) is never the content, only part of it
        if _prose_before(el, child, stats) >= max(LEAD_WORDS, LEAD_SHARE * text(child)) or (
            sum(_prose(p, stats) for p in child.itersiblings("p", preceding=True)) >= LEAD_WORDS
        ):
            break  # a lead or an intro above the body belongs with it, right beside it or not
        if child.tag in _LISTS and _heading_before(child):
            break  # a list under its heading is that section's content, not the page's
        if _is_section(child) and sum(map(_is_section, children)) > 1:
            break  # a long section is one of the page's parts ("Tests", "Installation"...)
        el = child
    while el.tag in _TABLE_PARTS and el.getparent() is not None:
        el = el.getparent()  # a table's rows are the table's content, rendered as one
    return el


def _listing(body, stats, container):
    """A listing's content is its items. The container search weighs text outside links,
    so it passes over a grid whose cards are links and settles on the shop's blurb below
    it, or on a disclaimer. The largest grid of linked items (:func:`_grid`) above the
    container is the content instead when its items show prices or it holds twice the
    container's words; so is a grid below a container shorter than a lead (a listing's
    line of introduction, which comes with the grid as its lead)."""
    found = _grid(body, stats)
    if found is None:
        return container
    grid, items, words = found
    if container in grid.iterancestors() or grid in container.iterancestors():
        return container  # one holds the other
    first = next(el for el in body.iter() if el is grid or el is container)
    if first is container and stats[container][0] >= LEAD_WORDS:
        return container  # the content comes first, the grid is a rail below it
    priced = sum(_PRICE.search(_text(item)) is not None for item in items)
    return grid if priced >= len(items) / 2 or words >= 2 * stats[container][0] else container


def _grid(body, stats):
    """(grid, items, words) of the largest grid in ``body``: at least :data:`GRID_ITEMS`
    children of one tag and class, most of them links or holding one, with a few words
    each and :data:`GRID_SHARE` of the page's words in all."""
    best = None
    minimum = GRID_SHARE * stats[body][0]
    for el in body.iter():
        if len(el) < GRID_ITEMS or not isinstance(el.tag, str):
            continue
        kinds = Counter((c.tag, c.get("class")) for c in el if isinstance(c.tag, str))
        (tag, names), count = kinds.most_common(1)[0]
        if count < GRID_ITEMS:
            continue
        items = [c for c in el if c.tag == tag and c.get("class") == names]
        words = sum(stats[c][0] for c in items)
        if words < max(minimum, 2 * count) or (best is not None and words <= best[2]):
            continue  # not the largest grid: whether its items are linked does not matter
        if _linked(items, 0.8 * count):
            best = (el, items, words)
    return best


def _linked(items: list, enough: float) -> bool:
    """At least ``enough`` of ``items`` are links or hold one (counted until that is
    settled)."""
    linked = 0
    for seen, item in enumerate(items):
        if linked >= enough or linked + len(items) - seen < enough:
            break
        linked += item.tag == "a" or item.find(".//a") is not None
    return linked >= enough


def _is_section(el) -> bool:
    """A section of a document, opening with its heading: ``<section>``, or docutils'
    ``<div class="section">``."""
    if el.tag != "section" and not (el.tag == "div" and "section" in el.get("class", "").split()):
        return False
    first = next((c for c in el if isinstance(c.tag, str)), None)
    return first is not None and first.tag in _HEADINGS


def _heading_before(el) -> bool:
    """A heading comes before ``el`` among its siblings."""
    return any(sibling.tag in _HEADINGS for sibling in el.itersiblings(preceding=True))


def _titled(el) -> bool:
    """``el`` comes right after a heading: it is that section's body."""
    previous = el.getprevious()
    while previous is not None and not isinstance(previous.tag, str):
        previous = previous.getprevious()  # a comment
    return previous is not None and previous.tag in _HEADINGS


def _prose(p, stats) -> int:
    """Words of a paragraph of prose (not a label, not a link with a caption), else 0."""
    words, links = stats[p]
    return words if words >= 8 and links <= 0.3 * words else 0


def _prose_before(el, child, stats) -> int:
    """Words of the paragraphs of prose in ``el`` that come before ``child``."""
    words = 0
    for p in el.iter("p", child.tag):
        if p is child:
            break
        if p.tag == "p":
            words += _prose(p, stats)
    return words


def _drop_link_lists(root, stats, url: str, page_type: str | None) -> None:
    """Step 3: blocks that are mostly links (related, tags, more-from, file listings,
    badge rows, a paragraph or a box that is one link behind a label, but on
    documentation). Lists and tables of links go at half link text; other blocks at 70%.
    When such blocks are most of the container, they are the content (an index, a
    table of contents, a product grid) and stay; but on an article, those that follow
    an article's worth of prose are the rails below the story ("Most read", "On the same
    topic") however long they are. ``stats`` is :func:`_measure` of a tree that holds
    ``root``."""
    docs = page_type == "documentation"
    contents = set()
    for el in root.iter():
        names = el.get("class") if isinstance(el.tag, str) else None
        if names and _TABLE_OF_CONTENTS.search(names):
            contents.update(el.iter(), el.iterancestors())
    site = _site(url)
    found = []
    inside: set = set()  # the blocks inside those found: judged with them
    prose = 0
    story_end = None  # how many were found when an article's worth of prose was read
    for el in root.iter(*_BLOCKS):
        if el is root or (inside and el in inside):
            continue
        if story_end is None and el.tag == "p":
            prose += _prose(el, stats)
            if prose >= ARTICLE_WORDS:
                story_end = len(found)
        links = sum(1 for _ in el.iter("a"))
        words, link_words = stats[el]
        if links == 1 and el.tag in ("p", "div"):
            item = _inside(el, ("li",))
            if (
                not docs  # where "See also" and one link is the text's own
                and link_words >= 3
                and words - link_words <= 5
                and link_words >= 0.6 * words
                and (item is None or stats[item][0] <= words)
                and (el.tag == "p" or (el not in contents and _link_box(el, url, site)))
            ):
                found.append(el)  # "Read more: <a>another story</a>"
                inside.update(el.iter(*_BLOCKS))
            continue
        if links < 3:
            continue
        if el.tag in ("ul", "ol") and _inside(el, ("li",)) is not None:
            continue  # a nested list of a larger list: judged with it
        if el in contents or (
            el.tag != "table"
            and (el.find(".//li/ul") is not None or el.find(".//li/ol") is not None)
        ):
            # A table of contents (a tree of links) is not a rail of links; a table of
            # such trees is a site's navigation box (Wikipedia's sidebars).
            continue
        if _introduced(el):
            continue  # "The following extensions are supported:" and the list of them
        if docs and _titled(el):
            continue  # a docs section that is a listing: rustdoc's "Modules", an API index
        tabular = el.tag in ("ul", "ol", "table", "dl") and links >= 5
        limit = 0.5 if tabular else 0.7
        if not words or link_words / words > limit:
            found.append(el)
            inside.update(el.iter(*_BLOCKS))
    if sum(stats[el][0] for el in found) > LINK_LISTS_SHARE * stats[root][0]:
        if page_type != "article" or story_end is None:
            return
        found = found[story_end:]
    _drop_all(found)


def _link_box(div, url: str, site: str) -> bool:
    """A ``<div>`` that is one link is a box of its own ("Explore further" and a story)
    when it links to another page of the site and is neither a list nor in a table's
    cell; a row of a recipe's ingredients may link to a shop."""
    return (
        div.find(".//li") is None
        and _inside(div, ("td", "th")) is None
        and _links_within(div, url, site)
    )


def _drop_teasers(root, stats, url: str) -> None:
    """Step 3, continued: the cards that tease the site's other pages once an article's
    worth of prose has been read ("More stories", "From the blog"): a row of at least
    :data:`TEASER_CARDS` blocks of one kind, each opening with a link and short, whose
    links all lead to other pages of the site. Cards that link elsewhere (a roundup of
    products to buy) or into the page (an accordion's questions) are the text's own, and
    cards that are most of the content are the content (a listing)."""
    site = _site(url)
    found: list = []
    inside: set = set()  # what is inside those found
    prose = 0
    for el in root.iter():
        if not isinstance(el.tag, str) or (inside and el in inside):
            continue
        if el.tag == "p":
            prose += _prose(el, stats)
        elif prose >= ARTICLE_WORDS and len(el) >= TEASER_CARDS and _teasers(el, stats, url, site):
            found.append(el)
            inside.update(el.iter())
    if found and sum(stats[el][0] for el in found) < 0.5 * stats[root][0]:
        doomed = []
        for el in found:
            heading = el.getprevious()
            while heading is not None and heading.tag == _DROPPED:
                heading = heading.getprevious()  # as if those before it were gone
            if heading is not None and heading.tag in _HEADINGS:
                _mark(heading)  # "More from the blog"
                doomed.append(heading)
            _mark(el)
            doomed.append(el)
        _drop_all(doomed)


def _teasers(el, stats, url: str, site: str) -> bool:
    """``el`` holds a row of teaser cards (see :func:`_drop_teasers`)."""
    kinds = Counter(_kind(c) for c in el if isinstance(c.tag, str))
    if not kinds:
        return False
    (tag, name), count = kinds.most_common(1)[0]
    if count < TEASER_CARDS or tag not in ("div", "article", "section") or not name:
        return False
    cards = [c for c in el if isinstance(c.tag, str) and _kind(c) == (tag, name)]
    teasers = sum(
        0 < stats[c][0] <= TEASER_WORDS
        and stats[c][1] >= 2
        and _opens_with_link(c)
        and _links_within(c, url, site)
        for c in cards
    )
    return teasers >= 0.8 * len(cards)


def _kind(el) -> tuple:
    """A card's tag and first class: "card card--featured" is one of the "card"s."""
    names = el.get("class", "").split()
    return el.tag, names[0] if names else None


# What a card may show above its linked title: a kicker ("News", "Sponsored") or a date.
KICKER_WORDS = 3


def _opens_with_link(el) -> bool:
    """The first text in ``el`` is a link's, kickers and dates aside (short labels, each
    an element's whole text): a card's title."""
    for node in el.iter():
        if isinstance(node.tag, str) and node.text and node.text.strip():
            if node.tag == "a" or _inside(node, ("a",)) is not None:
                return True
            if len(node) or len(node.text.split()) > KICKER_WORDS:
                return False
    return False


def _site(url: str) -> str:
    host = urlsplit(url).hostname or ""
    return host.removeprefix("www.")


def _links_within(el, url: str, site: str) -> bool:
    """Every link in ``el`` leads to another page of ``site``."""
    links = [a.get("href", "").strip() for a in el.iter("a")]
    for href in links:
        if not href or href.startswith(("#", "javascript:")):
            return False
        try:
            if _site(urljoin(url, href)) != site:
                return False
        except ValueError:
            return False
    return bool(links)


def _with_lead(body, root, stats):
    """The content with the page's heading and lead when they sit apart from it: a page
    header with the h1 and a summary, the body in a column of its own. The paragraphs of
    prose between the first h1 and the content, and the blocks above it named as a lead
    ("subtitle", "standfirst", "Vorspann"), shorter than the content together, come
    first, under that h1."""
    h1 = None
    leads: list = []
    taken: set = set(root.iterancestors())  # the content's own wrappers, and the leads'
    for el in body.iter():
        if el is root:
            break
        if not isinstance(el.tag, str) or el in taken:
            continue
        if h1 is None and el.tag == "h1":
            h1 = el
        elif _prose(el, stats) and (
            (el.tag == "p" and h1 is not None)
            or (_LEAD.search(el.get("class", "")) and el.find(".//h1") is None)
        ):
            leads.append(el)
            taken.update(el.iter())
    if not leads or sum(stats[p][0] for p in leads) > stats[root][0]:
        return root
    wrapper = etree.Element("div")
    if h1 is not None:
        wrapper.append(h1)
    wrapper.extend([*leads, root])
    return wrapper


def _introduced(el) -> bool:
    """``el`` follows a paragraph that announces it (ends with a colon), alone in its
    wrapper or not."""
    while el.getprevious() is None and el.getparent() is not None and len(el.getparent()) == 1:
        el = el.getparent()
    previous = el.getprevious()
    return previous is not None and previous.tag == "p" and _text(previous).rstrip().endswith(":")


_TITLE_SEPARATORS = re.compile(r"\s+[-|–—·:»]\s+")
_SITE_NAME = ("property", "og:site_name")  # of a <meta>
_MAIN = ("main", "article")


def _heading_text(el) -> str:
    """A heading's words as the reader sees them: not its buttons' ("Copy item path")."""
    text = "".join(el.xpath(".//text()[not(ancestor::button)]"))
    return " ".join(text.split()).rstrip(_PERMALINK_MARKS)


def _titles(doc) -> list[str]:
    """The page's og:title and <title> (not an icon's: an SVG has titles too), whitespace
    folded."""
    titles = attribute_values(doc, "meta", "content", "property", "og:title")
    titles += [_text(t) for t in doc.iter("title") if _inside(t, ("svg",)) is None][:1]
    return [t for t in (" ".join(t.split()) for t in titles) if t]


def page_title(doc, docs: bool = False) -> str | None:
    """The page's headline (see :func:`_headline`)."""
    return _headline(doc, _titles(doc), docs)


def _headline(doc, titles: list[str], docs: bool) -> str | None:
    """The page's headline, of its ``titles`` (:func:`_titles`): the h1 that the <title>
    (or og:title) names, one in the page's main part or article first; else the <title>'s
    longest part that is not the site's name (on documentation, ``docs``, its first: every
    generator writes "Page - Site", and a site's name is often the longer); else the first
    h1. A site's name set as an h1 in its menu bar or header (an mdBook's, a logo's) is
    never the headline, though the <title> names it too: "Suffix Array - Bioinformatics
    with Rust"."""
    h1s = {h: text for h in doc.iter("h1") if (text := _heading_text(h))}
    # Named after the headline's place in the <title> (a forum's thread title in its
    # header bar), an h1 is no site name.
    later = {p.lower() for t in titles for p in _TITLE_SEPARATORS.split(t)[1:]}
    later.update(n.lower() for n in attribute_values(doc, "meta", "content", *_SITE_NAME))
    chrome = {h for h, text in h1s.items() if text.lower() in later and _in_chrome(h)}
    candidates = sorted(
        (h for h in h1s if h not in chrome), key=lambda h: _inside(h, _MAIN) is None
    )
    # The one the <title>'s headline part names first ("ORM Quick Start" of "ORM Quick
    # Start — SQLAlchemy 2.0 Documentation", not the site's name in its own h1).
    for names in ([_TITLE_SEPARATORS.split(t)[0].lower() for t in titles], titles):
        for h1 in candidates:
            if any(h1s[h1].lower() in name.lower() for name in names):
                return h1s[h1]
    # "Headline - Site" / "Site | Headline": the longest part that is not the name the
    # header shows is the headline (an og:title that is that name alone tells nothing).
    shown = {h1s[h].lower() for h in chrome}
    for text in titles:
        parts = [part for part in _TITLE_SEPARATORS.split(text) if part.lower() not in shown]
        if parts:
            return parts[0] if docs else max(parts, key=len)
    return next(iter(h1s.values()), titles[0] if titles else None)


def _in_chrome(el) -> bool:
    """``el`` is in the site's header, navigation or a container named so (a menu bar),
    and not in the page's main part or article (whose own header holds its title)."""
    chrome = False
    for above in el.iterancestors():
        if above.tag in _MAIN or above.get("role") == "main":
            return False
        if above.tag in ("header", "nav") or above.get("role") in ("banner", "navigation"):
            chrome = True
        else:
            names = _judged_names(above)  # a section's id is its heading's slug, no role
            chrome = chrome or bool(names.strip() and _boilerplate_name(names))
    return chrome


def _site_names(doc, titles: list[str], title: str | None) -> frozenset[str]:
    """What the page names its site by, lowercased: og:site_name, and the parts of its
    ``titles`` (<title> and og:title) other than the headline ``title`` ("Bioinformatics
    with Rust" of "Suffix Array - Bioinformatics with Rust")."""
    headline = (title or "").lower()
    names = {n.lower() for n in attribute_values(doc, "meta", "content", *_SITE_NAME)}
    for text in titles:
        parts = _TITLE_SEPARATORS.split(text)
        if any(part.lower() == headline for part in parts):
            names.update(part.lower() for part in parts)
        elif text.lower() != headline:
            names.add(text.lower())  # a title naming the site alone (a book's og:title)
    names.discard(headline)
    return frozenset(" ".join(n.split()) for n in names if n.strip())


def _ensure_title(root, title: str | None, names: frozenset[str] = frozenset()):
    """Step 4: exactly one top heading, the page's title. Headings that open the page
    saying the site's name (``names``: :func:`_site_names`), a menu bar's or a header's,
    are the site's chrome, on every page, and so is a lesser heading before the page's h1
    that repeats it (a top bar's, rustdoc's): they go."""
    headings = list(root.iter(*_HEADINGS))
    h1_texts = {_heading_text(h).lower() for h in headings if h.tag == "h1"}
    for heading in headings:
        text = _heading_text(heading).lower()
        repeat = heading.tag != "h1" and text in h1_texts
        if text == (title or "").lower() or not (text in names or repeat):
            break
        _drop(heading)
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


def _json_ld(doc) -> list[str]:
    """The texts of the page's JSON-LD scripts (schema.org markup)."""
    return [s.text for s in doc.iter("script") if s.get("type") == _JSON_LD and s.text]


def _page_type(doc, json_ld: list[str]) -> str | None:
    """What the page's markup says it is: "documentation" (its generator says so),
    or what schema.org markup (``json_ld``, see :func:`_json_ld`) or Open Graph says:
    "discussion" (a forum thread, a question and its answers), "article" (a review of a
    product is one), "product" (one product); else None."""
    if any(_DOCS_GENERATOR.match(g) for g in attribute_values(doc, "meta", "content", *_GENERATOR)):
        return "documentation"
    for src in attribute_values(doc, "script", "src"):
        if _SPHINX_SCRIPT in src or _MDBOOK_SCRIPT.search(src):
            return "documentation"
    og = {t.strip().lower() for t in attribute_values(doc, "meta", "content", *_OG_TYPE)}
    markup = " ".join(json_ld)
    if _DISCUSSION_LD.search(markup):
        return "discussion"
    if "article" in og or _ARTICLE_LD.search(markup):
        return "article"
    if og & _PRODUCT_TYPES or _PRODUCT_LD.search(markup):
        return "product"
    return None


def parse_document(page: str | bytes):
    """The page as an lxml document, or None when it has no body to speak of."""
    doc = parse(page)
    return doc if doc is not None and doc.find("body") is not None else None


def document_markdown(doc, page: str | bytes, url: str, *, main_content=True, links="inline"):
    """Markdown of a parsed page (``doc``, which this changes) or of ``page`` whole."""
    if doc is None or not main_content:
        return html_to_markdown(page, url, links)
    body = doc.find("body")
    base = doc.find(".//base[@href]")
    json_ld = _json_ld(doc)
    page_type = _page_type(doc, json_ld)
    titles = _titles(doc)
    title = _headline(doc, titles, page_type == "documentation")
    story = _story_data(json_ld) if page_type == "article" else None
    stats = _prune(body, page_type) or _measure(body)
    top = None
    if page_type == "documentation":  # the page's own heading, not its site's
        h1s = [h for h in body.iter("h1") if not _in_chrome(h)]
        top = next((h for h in h1s if _heading_text(h) == title), h1s[0] if h1s else None)
    root = _listing(body, stats, _container(body, stats, top))
    _drop_teasers(root, stats, url)
    _drop_link_lists(root, stats, url, page_type)
    root = _ensure_title(_with_lead(body, root, stats), title, _site_names(doc, titles, title))
    # The counts hold a proxy object of every element: freed before the converter builds
    # its own tree of what is left, which reuses their memory (a big page's peak is lower
    # by a sixth).
    del stats
    if page_type != "documentation" and _title_only(root):
        return ""  # a docs page that is its title alone (an empty module) is still a page
    href = base.get("href") if base is not None else None
    markdown = element_to_markdown(root, url, links, href)
    # An API reference repeats itself (two methods, one docstring); a figure's caption
    # says what it shows.
    if page_type == "documentation":
        return markdown
    markdown = drop_credits(drop_repeats(markdown))
    if page_type == "product":
        markdown = drop_other_products(markdown)
    elif page_type == "article":
        markdown = _whole_story(drop_article_tail(markdown), story, title, url, links)
    return drop_trailing_headings(markdown)


def _story_data(json_ld: list[str]) -> str | None:
    """The ``articleBody`` of the page's JSON-LD (see :func:`_json_ld`), a story's text as
    its publisher gives it to search engines; None unless there is one (a page of several
    stories is a listing)."""
    found = set()
    for text in json_ld:
        if '"articleBody"' not in text:
            continue
        try:
            stack = [json.loads(text, strict=False)]
        except ValueError:
            continue
        while stack:
            value = stack.pop()
            if isinstance(value, dict):
                if isinstance(story := value.get("articleBody"), str):
                    found.add(story.strip())
                stack.extend(value.values())
            elif isinstance(value, list):
                stack.extend(value)
    return found.pop() if len(found) == 1 else None


def _whole_story(markdown: str, story: str | None, title: str | None, url: str, links: str) -> str:
    """A story the page shows a part of (the rest behind a paywall, or drawn by its
    scripts), whole from its structured data: when that holds an article and twice the
    words the page's markdown does. Its paragraphs under the page's title."""
    if story is None:
        return markdown
    if "<" in story and _HTML_TAG.search(story):
        story = html_to_markdown(story, url, links).strip()
    words = _words(story)
    if words < ARTICLE_WORDS or words < 2 * _words(markdown):
        return markdown
    paragraphs = [line.strip() for line in story.splitlines() if line.strip()]
    heading = [f"# {title}"] if title else []
    return "\n\n".join(heading + paragraphs) + "\n"


_HTML_TAG = re.compile(r"</?(?:p|br|div|span|a|strong|em|h[1-6])\b", re.IGNORECASE)


def _title_only(root) -> bool:
    """Nothing but the title is left: the page has no content (its text is drawn by
    scripts, or it is an empty listing). Its markdown is empty, not a lone heading."""
    if next(root.iter("img"), None) is not None:
        return False
    headings = [h1 for h1 in root.iter("h1") if next(h1.iterdescendants(*_BLOCKS), None) is None]
    # Words counted text by text: the title and a one-word paragraph, or table cells
    # written without a space between them, are not one word. An h1 left open holds more.
    title = sum(len(text.split()) for h1 in headings for text in h1.itertext())
    words = 0
    for text in root.itertext():
        words += len(text.split())
        if words > title:
            return False  # counted no further than the first words past the title's
    return True


def page_markdown(
    page: str | bytes, url: str, *, main_content: bool = True, links: str = "inline"
) -> str:
    """A page's markdown: its main content (or the whole page), links as asked."""
    doc = parse_document(page) if main_content else None
    return document_markdown(doc, page, url, main_content=main_content, links=links)
