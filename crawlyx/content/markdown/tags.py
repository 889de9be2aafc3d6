"""HTML element categories shared by the parser and the converter."""

from __future__ import annotations

import re

# An image of math (MediaWiki's fallback, a LaTeX plugin's): its alt is the TeX, and the
# eye sees it even where it is hidden from screen readers (the MathML beside it is theirs).
MATH_IMAGE = re.compile(r"(?:^|[\s_-])(?:math|latex|tex)(?:$|[\s_-])", re.IGNORECASE)

# Elements dropped together with their content; a ruby's annotation (<rt>, and the <rp>
# parentheses around it) is a reading aid printed above the text, not words of it, and
# what a <video> or <audio> holds is shown only by browsers that cannot play it ("Your
# browser does not support the video tag").
# <embed> is void in HTML5 and has no content of its own, but libxml2 (2.14) does not know
# it is void and nests the following siblings inside it, so it is left transparent (it
# produces no text itself) rather than dropped with everything after it.
DROP_TAGS = frozenset(
    {
        "script",
        "style",
        "noscript",
        "template",
        "iframe",
        "svg",
        "canvas",
        "object",
        "head",
        "title",
        "applet",
        "rt",
        "rp",
        "video",
        "audio",
    }
)

_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})

# Block containers rendered like <div> (markdownify only knows div/article/section).
_DIV_LIKE = frozenset(
    {
        "div",
        "article",
        "section",
        "header",
        "footer",
        "nav",
        "main",
        "aside",
        "figure",
        "address",
        "details",
        "summary",
        "fieldset",
        "form",
        "hgroup",
        "center",
        "dialog",
        "search",
        "legend",
    }
)

# Whitespace-only text right inside these elements is insignificant (markdownify's
# should_remove_whitespace_inside, extended with the HTML5 block containers above).
_BLOCK = (
    frozenset(
        {
            "p",
            "blockquote",
            "ol",
            "ul",
            "li",
            "dl",
            "dt",
            "dd",
            "table",
            "thead",
            "tbody",
            "tfoot",
            "tr",
            "td",
            "th",
            "caption",
            "figcaption",
        }
    )
    | _HEADINGS
    | _DIV_LIKE
)
# ... and whitespace-only text next to these elements too.
_BLOCK_OUTSIDE = _BLOCK | {"pre", "hr"}

_NOFORMAT = frozenset({"pre", "code", "kbd", "samp", "tt"})
_INLINE_CONTEXT = _HEADINGS | {"td", "th", "a"}


def _is_block_outside(el) -> bool:
    """``el`` (a tree node or None) is an element whitespace next to is insignificant."""
    return el is not None and type(el) is not str and el.name in _BLOCK_OUTSIDE
