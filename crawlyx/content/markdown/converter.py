"""The markdownify converter subclass: traversal, inline and block elements."""

from __future__ import annotations

import re
import threading
from urllib.parse import urldefrag, urljoin, urlsplit

from markdownify import ATX, STRIP, MarkdownConverter, chomp

from crawlyx.content.markdown.code import (
    _inline_code,
    _is_code_noise,
    _re_pre_lstrip,
    code_language,
    fenced,
)
from crawlyx.content.markdown.tables import TableMixin
from crawlyx.content.markdown.tags import (
    _BLOCK,
    _DIV_LIKE,
    _HEADINGS,
    _INLINE_CONTEXT,
    _NOFORMAT,
    MATH_IMAGE,
    _is_block_outside,
)
from crawlyx.content.markdown.text import (
    _finish,
    _join_blocks,
    _re_all_whitespace,
    _re_newline_whitespace,
    _re_whitespace,
)
from crawlyx.content.markdown.tree import MAX_DEPTH, Element, build
from crawlyx.urls.normalize import without_session

# Tag name -> converter method name.  An explicit table instead of markdownify's
# getattr("convert_" + tag) so that a tag like <soup> or <list> cannot hit a helper method.
_CONVERTERS = {
    **{name: "convert_div" for name in _DIV_LIKE},
    **{name: "convert_heading" for name in _HEADINGS},
    "[document]": "convert__document_",
    "a": "convert_a",
    "b": "convert_b",
    "strong": "convert_b",
    "em": "convert_em",
    "i": "convert_em",
    "cite": "convert_em",
    "del": "convert_del",
    "s": "convert_del",
    "strike": "convert_del",
    "code": "convert_code",
    "kbd": "convert_code",
    "samp": "convert_code",
    "tt": "convert_code",
    "blockquote": "convert_blockquote",
    "br": "convert_br",
    "hr": "convert_hr",
    "p": "convert_p",
    "pre": "convert_pre",
    "ul": "convert_list",
    "ol": "convert_list",
    "li": "convert_li",
    "dl": "convert_div",
    "dt": "convert_dt",
    "dd": "convert_dd",
    "img": "convert_img",
    "q": "convert_q",
    "sup": "convert_sup",
    "sub": "convert_sub",
    "math": "convert_math",
    "figcaption": "convert_div",
    # table parts only matter for tables nested in a cell (flattened to text)
    "table": "convert_inline_table_part",
    "tr": "convert_inline_table_part",
    "td": "convert_inline_table_part",
    "th": "convert_inline_table_part",
}


def _is_block(text: str) -> bool:
    """``text`` is ``"\\n\\n" + text.strip() + "\\n\\n"`` and not blank."""
    return (
        len(text) > 4
        and text.startswith("\n\n")
        and text.endswith("\n\n")
        and not text[2].isspace()
        and not text[-3].isspace()
    )


def _origin(base_url: str) -> str | None:
    """``scheme://netloc`` of an http(s) URL, as urljoin reads it, else None."""
    try:
        parts = urlsplit(base_url)
    except ValueError:
        return None
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme in ("http", "https") else None


def _join(origin: str | None, href: str) -> str | None:
    """urljoin of the usual link, a path from the site's root ("/docs/a?b#c"), on a page
    of ``origin``, without its general machinery (a fifth of a link list's read); None
    for any other link. The path is kept as it is when urljoin would keep it: no empty
    or dot segments, no parameters."""
    if origin is None or href[:1] != "/" or href[1:2] == "/" or ";" in href:
        return None
    path, _, fragment = href.partition("#")
    path, _, query = path.partition("?")
    if "//" in path or "/." in path:
        return None
    return origin + path + ("?" + query if query else "") + ("#" + fragment if fragment else "")


_BOLD = frozenset({"b", "strong"})
_ITALIC = frozenset({"em", "i", "cite"})
_SCRIPTS = frozenset({"sup", "sub"})
SCRIPT_WORDS = 4  # a superscript or subscript is an exponent, an index, a note's number

# Math a page renders for the eye (KaTeX, MediaWiki, a LaTeX plugin's images) keeps its
# TeX beside it: in a MathML <annotation>, the <math alttext>, an image's alt. Written as
# $...$ (or $$...$$ on a line of its own), the TeX is what LLMs read and GFM renders;
# MathML's own text flattens "a<msup>" to "a2". MediaWiki wraps its TeX in a
# "{\displaystyle ...}" that says how to set it, not what it says.
_TEX_ENCODINGS = frozenset({"application/x-tex", "application/x-latex", "text/x-tex"})
_re_tex_style = re.compile(r"^\{\\(?:display|text)style\s*(.*)\}$", re.DOTALL)

# "<" that would start a raw HTML tag / comment / declaration in markdown
_re_tag_like = re.compile(r"<(?=[A-Za-z/!?])")
_re_url_ws = re.compile(r"[\t\n\r]")
_re_bad_scheme = re.compile(r"^[\x00-\x20]*(?:javascript|vbscript):", re.IGNORECASE)


class _State(threading.local):
    base_url = ""
    page_url = ""
    links = "inline"  # inline | reference | none
    refs: dict[str, int]
    numbers: dict  # an ordered list -> its items' numbers, once one is converted
    targets: dict[str, str]  # an href -> its link target: a page repeats its links
    origin: str | None = None  # scheme://host of an http(s) base_url


class CrawlyxMarkdownConverter(TableMixin, MarkdownConverter):
    """markdownify converter tuned for clean, LLM-friendly markdown.

    ATX headings, ``-`` bullets, GFM tables built from a cell grid (colspan/rowspan
    expanded, first row as header), fenced code with the highlighter's language, links made
    absolute, images reduced to their alt text, scripts/styles/embeds dropped.
    """

    class Options(MarkdownConverter.DefaultOptions):
        heading_style = ATX
        bullets = "-"
        escape_asterisks = False
        escape_underscores = False
        escape_misc = False
        strip_document = STRIP

    def __init__(self, **options):
        super().__init__(**options)
        self._state = _State()
        self._child_tags_cache: dict[tuple[frozenset, str], frozenset] = {}

    # ------------------------------------------------------------------ driving
    def convert_element(self, root, base_url: str, links: str = "inline", base_href=None) -> str:
        """Markdown of lxml element ``root``; links resolve against ``base_href`` (the
        document's ``<base href>``, itself relative to ``base_url``) or ``base_url``."""
        state = self._state
        state.links = links
        state.refs = {}
        state.numbers = {}
        state.targets = {}
        state.page_url = urldefrag(base_url)[0] if base_url else ""
        state.base_url = base_url
        if isinstance(base_href, str):
            try:
                state.base_url = urljoin(base_url, _re_url_ws.sub("", base_href).strip())
            except ValueError:
                pass
        state.origin = _origin(state.base_url)
        try:
            text = self.process_tag(build(root, MAX_DEPTH), frozenset())
        finally:
            state.numbers = {}  # it holds the tree
            state.targets = {}
        if state.refs:
            text += "\n\n" + "\n".join(f"[{n}]: {url}" for url, n in state.refs.items())
        return _finish(text)

    def get_conv_fn(self, tag_name):
        name = _CONVERTERS.get(tag_name.lower())
        return getattr(self, name) if name else None

    def _child_tags(self, parent_tags: frozenset, name: str) -> frozenset:
        key = (parent_tags, name)
        tags = self._child_tags_cache.get(key)
        if tags is None:
            extra = {name}
            if name in _INLINE_CONTEXT:
                extra.add("_inline")
            if name in _NOFORMAT:
                extra.add("_noformat")
            tags = parent_tags | extra
            if len(self._child_tags_cache) > 4096:
                self._child_tags_cache.clear()
            self._child_tags_cache[key] = tags
        return tags

    # ------------------------------------------------------------------ traversal
    def process_tag(self, node: Element, parent_tags: frozenset, as_name=None) -> str:
        """markdownify's process_tag on a :mod:`~crawlyx.content.markdown.tree` element, with the
        ancestors' names passed down (no ``find_parent('pre')`` walk per node).

        ``as_name`` renders the node as if it were that tag (used for layout tables).
        """
        name = as_name or node.name
        in_pre = "pre" in parent_tags

        if name == "table" and not in_pre and "_inline" not in parent_tags:
            return self._convert_table(node, parent_tags)

        remove_inside = name in _BLOCK
        parent_block = node.name in _BLOCK
        code = in_pre or name == "pre"
        child_tags = self._child_tags(parent_tags, name)
        contents = node.contents
        last = len(contents) - 1
        strings = []
        for i, el in enumerate(contents):
            if type(el) is Element:
                if code and _is_code_noise(el):
                    continue
                s = self.process_tag(el, child_tags)
            else:
                prev = contents[i - 1] if i else None
                nxt = contents[i + 1] if i < last else None
                if not el.strip() and (
                    (remove_inside and (prev is None or nxt is None))
                    or _is_block_outside(prev)
                    or _is_block_outside(nxt)
                ):
                    continue
                s = self.process_text(el, child_tags, prev, nxt, parent_block)
            if s:
                strings.append(s)

        if in_pre or name == "pre":
            text = "".join(strings)
        else:
            text = _join_blocks(strings)

        if in_pre:
            # verbatim code: only line structure matters
            if name == "br":
                return "\n"
            if name == "img":
                return self.convert_img(node, text, parent_tags)
            if name in _BLOCK and text and not text.endswith("\n"):
                return text + "\n"
            return text

        convert_fn = self.get_conv_fn_cached(name)
        if convert_fn is not None:
            text = convert_fn(node, text, parent_tags=parent_tags)
        return text

    def process_text(self, text, parent_tags, prev=None, nxt=None, parent_block=False):
        """A text node between ``prev`` and ``nxt`` (siblings, None at either end) in an
        element that is a block or not."""
        if "pre" in parent_tags:
            return text
        if "\xa0" in text:
            text = text.replace("\xa0", " ")
        if "\n" in text or "\r" in text:
            text = _re_newline_whitespace.sub("\n", text)
        if "\t" in text or "  " in text:
            text = _re_whitespace.sub(" ", text)
        if "_noformat" not in parent_tags:
            text = self.escape(text, parent_tags)
        if (
            _is_block_outside(prev)
            or (parent_block and prev is None)
            or (type(prev) is Element and prev.name == "br")
        ):
            text = text.lstrip(" \t\r\n")
        if _is_block_outside(nxt) or (parent_block and nxt is None):
            text = text.rstrip()
        return text

    def escape(self, text, parent_tags):
        text = super().escape(text, parent_tags)
        if "<" in text:
            text = _re_tag_like.sub(r"\\<", text)
        return text

    # ------------------------------------------------------------------ inline
    def convert_a(self, el, text, parent_tags):
        if "_noformat" in parent_tags:
            return text
        prefix = " " if text[:1].isspace() else ""
        suffix = " " if text[-1:].isspace() else ""
        text = _re_all_whitespace.sub(" ", text).strip()
        if not text:
            return prefix or suffix
        mode = self._state.links
        url = self._link_target(el.get("href")) if mode != "none" else ""
        if not url:
            return prefix + text + suffix
        if text == url:
            return prefix + url + suffix  # GFM autolink, no need to repeat the URL
        if mode == "reference":
            refs = self._state.refs
            n = refs.setdefault(url, len(refs) + 1)
            return f"{prefix}[{text}][{n}]{suffix}"
        return f"{prefix}[{text}]({url}){suffix}"

    def _link_target(self, href) -> str:
        """Absolute URL for an href, or '' when the link should become plain text."""
        if not isinstance(href, str):
            return ""
        targets = self._state.targets
        target = targets.get(href)
        if target is None:
            target = targets[href] = self._resolve(href)
        return target

    def _resolve(self, href: str) -> str:
        href = _re_url_ws.sub("", href).strip()
        if not href or href.startswith("#") or _re_bad_scheme.match(href):
            return ""
        state = self._state
        try:
            url = _join(state.origin, href) or urljoin(state.base_url, href)
        except ValueError:  # e.g. malformed IPv6 host
            return ""
        if "#" in url and state.page_url:
            page, _fragment = urldefrag(url)
            if page == state.page_url:
                return ""  # in-page anchor
        url = without_session(url).replace(" ", "%20").replace("<", "%3C").replace(">", "%3E")
        if url.count("(") != url.count(")"):
            url = url.replace("(", "%28").replace(")", "%29")
        return url

    def convert_img(self, el, text, parent_tags):
        # An image is its alt text only where it is a figure's content and no caption
        # says what it shows. Elsewhere it is a product shot, a logo, an icon or
        # decoration: a reader never sees its alt, and the text beside it says it.
        alt = el.get("alt")
        if isinstance(alt, str) and alt.strip() and MATH_IMAGE.search(el.get("class", "")):
            display = "display" in el.get("class", "")  # MediaWiki's "...-image-display"
            return _math(alt, display, parent_tags)
        if "figure" not in parent_tags:
            return ""
        figure = el.parent
        while figure.name != "figure":
            figure = figure.parent
        if figure.elements("figcaption"):
            return ""
        alt = el.get("alt")
        if not isinstance(alt, str):
            return ""
        alt = _re_all_whitespace.sub(" ", alt).strip()
        if alt and "_noformat" not in parent_tags:
            alt = self.escape(alt, parent_tags)
        return alt

    def convert_math(self, el, text, parent_tags):
        tex = el.get("alttext") or _annotation(el)
        return _math(tex, el.get("display") == "block", parent_tags) if tex else text

    def convert_b(self, el, text, parent_tags):
        if not _BOLD.isdisjoint(parent_tags):
            return text  # bold inside bold is marked once (thousands of <b> deep: once)
        return super().convert_b(el, text, parent_tags)

    def convert_em(self, el, text, parent_tags):
        if not _ITALIC.isdisjoint(parent_tags):
            return text
        return super().convert_em(el, text, parent_tags)

    def convert_br(self, el, text, parent_tags):
        if "_inline" in parent_tags:
            return " "
        return "\n"

    def convert_code(self, el, text, parent_tags):
        if "_noformat" in parent_tags:
            return text
        prefix, suffix, text = chomp(text)
        if not text:
            return ""
        return prefix + _inline_code(text) + suffix

    def convert_q(self, el, text, parent_tags):
        return '"' + text + '"' if text else ""

    # Superscripts and subscripts stay as the inline HTML tags: flattened, "2<sup>7</sup>"
    # reads "27". GFM has no syntax of its own for them, and the carets and tildes some
    # renderers accept (2^7^, H~2~O) are literal text or strikethrough in GFM, while
    # <sup> and <sub> are inline HTML every GFM renderer shows (and a reader of the raw
    # text cannot misread). In code they are the code's text.
    def convert_sup(self, el, text, parent_tags):
        return self._script(text, parent_tags, "sup")

    def convert_sub(self, el, text, parent_tags):
        return self._script(text, parent_tags, "sub")

    def _script(self, text, parent_tags, tag):
        if "_noformat" in parent_tags or not _SCRIPTS.isdisjoint(parent_tags):
            return text  # a superscript's superscript is marked once
        prefix, suffix, text = chomp(_re_all_whitespace.sub(" ", text))
        if not text:
            return prefix or suffix
        if text.count(" ") >= SCRIPT_WORDS:
            return prefix + text + suffix  # a caption set small, not a superscript
        return f"{prefix}<{tag}>{text}</{tag}>{suffix}"

    # ------------------------------------------------------------------ blocks
    def convert_div(self, el, text, parent_tags):
        if "_inline" in parent_tags:
            return " " + text.strip() + " "
        if _is_block(text):
            return text  # a wrapper around one block: the same string, not a copy
        text = text.strip()
        return "\n\n" + text + "\n\n" if text else ""

    def convert_heading(self, el, text, parent_tags):
        text = _re_all_whitespace.sub(" ", text).strip()
        if not text:
            return ""
        if "_inline" in parent_tags:
            return " " + text + " "
        level = int(el.name[1])
        return "\n\n" + "#" * level + " " + text + "\n\n"

    def convert_hr(self, el, text, parent_tags):
        if "_inline" in parent_tags:
            return " "
        return "\n\n---\n\n"

    def convert_list(self, el, text, parent_tags):
        if "li" in parent_tags:
            return "\n" + text.rstrip()  # nested: no trailing newline
        # A list followed by a paragraph (or bare text) ends with a blank line.
        siblings = el.parent.contents
        for i in range(el.index + 1, len(siblings)):
            sibling = siblings[i]
            if type(sibling) is Element:
                return "\n\n" + text + ("" if sibling.name in ("ul", "ol") else "\n")
            if sibling.strip():
                return "\n\n" + text + "\n"
        return "\n\n" + text

    def convert_li(self, el, text, parent_tags):
        text = (text or "").strip()
        if not text:
            return "\n"
        parent = el.parent
        if parent is not None and parent.name == "ol":
            bullet = f"{self._item_number(parent, el)}. "
        else:
            bullet = self.options["bullets"][0] + " "
        if "\n" not in text:
            return bullet + text + "\n"  # what follows makes of one line
        indent = " " * len(bullet)
        first, *rest = text.split("\n")
        return bullet + "\n".join([first] + [indent + ln if ln else "" for ln in rest]) + "\n"

    def _item_number(self, ol: Element, li: Element) -> int:
        """The number of item ``li`` of list ``ol``: its start, plus the items before it.
        Counted once for all the list's items (item by item, a long list costs its square)."""
        numbers = self._state.numbers.get(ol)
        if numbers is None:
            start = ol.get("start")
            try:
                number = int(start.strip()) if isinstance(start, str) else 1
            except ValueError:
                number = 1
            numbers = self._state.numbers[ol] = {}
            for item in ol.elements("li"):
                numbers[item] = number
                number += 1
        return numbers[li]

    def convert_pre(self, el, text, parent_tags):
        if "_inline" in parent_tags:
            text = _re_all_whitespace.sub(" ", text).strip()
            return " " + _inline_code(text) + " " if text else ""
        text = _re_pre_lstrip.sub("", text).rstrip()
        return fenced(text, code_language(el)) if text else ""


def _annotation(el) -> str:
    """The TeX of a MathML element's ``<annotation>``, or ''."""
    for child in el.elements():
        if child.name == "annotation" and child.get("encoding", "").lower() in _TEX_ENCODINGS:
            return "".join(c for c in child.contents if type(c) is str)
        found = _annotation(child)
        if found:
            return found
    return ""


def _math(tex: str, display: bool, parent_tags) -> str:
    """TeX as markdown math: ``$tex$``, or ``$$tex$$`` as a block of its own."""
    tex = _re_all_whitespace.sub(" ", tex).strip()
    tex = _re_tex_style.sub(r"\1", tex).strip()
    if "_noformat" in parent_tags:
        return tex
    return f"\n\n$${tex}$$\n\n" if display and "_inline" not in parent_tags else f"${tex}$"
