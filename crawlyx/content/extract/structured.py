"""What a page's markup says it is, and what its structured data holds: its generator
(a documentation site's), schema.org markup (JSON-LD, microdata) and Open Graph.

Policy: a page is "documentation" when a docs generator made it (its generator meta tag,
Sphinx's or mdBook's script); else "discussion", "article" or "product" when its
schema.org markup or Open Graph says so; else it has no type. The type tunes every step
(:mod:`crawlyx.content.extract`). An article's ``articleBody`` in its JSON-LD is its whole
text: it replaces the page's markdown when it holds an article and twice the words (the
rest of the story was behind a paywall, or drawn by scripts).
"""

from __future__ import annotations

import json
import re

from crawlyx.content.extract.elements import ARTICLE_WORDS, _words, attribute_values
from crawlyx.content.markdown import html_to_markdown


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
