"""Step 1: remove what is never content, element by element, before the container is
looked for.

Policy: drop scripts and styles, forms and controls (but a tab's label, and a control left
open by broken markup, which holds the page: it is unwrapped), hidden elements (but a
hidden tab or accordion panel, and a block hidden until scripts run that holds most of
the page), permalinks, buttons, version badges and toggle labels, navigation, sidebars,
footers and dialogs, and the page header unless it is most of the page. Text served
inside ``<noscript>`` is read there when it is most of the page. Then the containers
named like boilerplate (:mod:`crawlyx.content.extract.named`).
"""

from __future__ import annotations

import re
from itertools import islice

from lxml import etree

from crawlyx.content.extract.elements import (
    _CODE,
    _HEADINGS,
    ARTICLE_WORDS,
    LEAD_WORDS,
    _drop,
    _drop_all,
    _inside,
    _is_section,
    _link_text_len,
    _mark,
    _names,
    _text,
    _text_len,
    _unwrap,
)
from crawlyx.content.extract.named import _TABLE_OF_CONTENTS, _prune_by_name
from crawlyx.content.markdown import DROP_TAGS
from crawlyx.content.markdown.tags import MATH_IMAGE

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
# Hidden blocks that a reader opens.
_PANEL = re.compile(r"tab|panel|accordion|collaps|expand|toggle|answer", re.IGNORECASE)
_ACCORDION = re.compile(r"accordion", re.IGNORECASE)
# Asides that belong to the text: footnotes, admonitions, callouts.
_CONTENT_ASIDE = re.compile(r"footnote|admonition|callout|\bnote\b|\btip\b|warning", re.I)
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
# Permalink anchors beside headings: "¶", "#", "§", a link icon (Font Awesome's U+F0C1 in
# the Read the Docs theme), or nothing.
_PERMALINK_TEXT = frozenset({"", "¶", "#", "§", "🔗", "⚓", "\u200b", "\uf0c1", "link"})
# A footnote's way back to where it is cited ("↩", markdown-it's "↩︎", Wikipedia's "^").
_BACKLINK_TEXT = frozenset({"↩", "↩\ufe0e", "↩\ufe0f", "↑", "^"})
_SKIP_LINK = re.compile(r"skip\b", re.IGNORECASE)
_FOOTNOTE_MARK = re.compile(r"\[?(?:\d{1,3}|[a-z]|note \d+)\]?")
HIDDEN_PROSE_WORDS = 15
HIDDEN_PAGE_SHARE = 0.5


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
