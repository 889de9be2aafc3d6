"""HTML -> markdown conversion for LLM consumption, built on markdownify.

The public entry point is :func:`html_to_markdown`, a plain module-level function so it can
be shipped to a ``concurrent.futures.ProcessPoolExecutor`` worker.  The converter is built
lazily, once per process.

Choices (see also the class docstring):

* parsing uses BeautifulSoup with a pruning subclass of bs4's lxml tree builder: dropped
  subtrees (script, style, svg, head, ...) and comments are never turned into bs4 objects,
  which is where most of the time goes;
* ``process_tag``/``process_text`` are re-implemented with markdownify's semantics but without
  its per-element ``find_parent('pre')`` walk and with cached parent-tag sets;
* tables are rendered from a cell grid (``_convert_table``) instead of markdownify's row-wise
  string assembly, so colspan/rowspan give rectangular GFM tables;
* text is not backslash-escaped (``snake_case``, ``a*b`` stay readable); only text that would
  read as a raw HTML tag (``<div>`` written as ``&lt;div&gt;``) gets its ``<`` escaped, and
  ``|`` is escaped inside table cells.
"""

from __future__ import annotations

import re
import threading
import warnings
from urllib.parse import urldefrag, urljoin

from bs4 import BeautifulSoup, NavigableString, Tag
from bs4.element import PreformattedString
from markdownify import ATX, STRIP, MarkdownConverter, chomp

try:
    from bs4.builder._lxml import LXMLTreeBuilder
except ImportError:  # pragma: no cover - lxml missing
    LXMLTreeBuilder = None

try:
    from bs4 import MarkupResemblesLocatorWarning, XMLParsedAsHTMLWarning
except ImportError:  # pragma: no cover - older bs4
    pass
else:
    # Both warnings are bs4-specific and spurious for our input (short pages, XHTML).
    warnings.filterwarnings("ignore", category=MarkupResemblesLocatorWarning)
    warnings.filterwarnings("ignore", category=XMLParsedAsHTMLWarning)

__all__ = ["html_to_markdown", "CrawlyxMarkdownConverter"]

# Elements dropped together with their content.  <embed> is void in HTML5 and has no
# content of its own, but libxml2 (2.14) does not know it is void and nests the following
# siblings inside it, so it is left transparent (it produces no text itself) rather than
# dropped with everything after it.
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
    "figcaption": "convert_figcaption",
    # table parts only matter for tables nested in a cell (flattened to text)
    "table": "convert_inline_table_part",
    "tr": "convert_inline_table_part",
    "td": "convert_inline_table_part",
    "th": "convert_inline_table_part",
}

_re_newline_whitespace = re.compile(r"[\t \r\n]*[\r\n][\t \r\n]*")
_re_whitespace = re.compile(r"[\t ]+")
_re_all_whitespace = re.compile(r"\s+")
_re_extract_newlines = re.compile(r"^(\n*)((?:.*[^\n])?)(\n*)$", flags=re.DOTALL)
_re_backtick_runs = re.compile(r"`+")
# "<" that would start a raw HTML tag / comment / declaration in markdown
_re_tag_like = re.compile(r"<(?=[A-Za-z/!?])")
_re_url_ws = re.compile(r"[\t\n\r]")
_re_bad_scheme = re.compile(r"^[\x00-\x20]*(?:javascript|vbscript):", re.IGNORECASE)
_re_lang_prefixed = re.compile(r"^(?:language|lang)-(.+)$")
_re_lang_highlight = re.compile(r"^highlight-(?:source-)?([^-].*)$")
_re_brush = re.compile(r"(?:^|[\s;])brush\s*:\s*([\w#+.-]+)")
_re_lang_value = re.compile(r"^[\w#+.-]+$")
_re_pre_lstrip = re.compile(r"^[ \t\n]*\n")
_LANG_IGNORE = frozenset({"none", "nohighlight", "no-highlight", "default", "notranslate", ""})
_CLASS_IGNORE = frozenset({"hljs", "sourcecode", "highlight", "notranslate", "code", "prettyprint"})
_LINENO_CLASSES = frozenset({"linenos", "gutter", "lineno", "line-numbers", "hljs-ln-numbers"})

# Final cleanup: odd line separators, trailing whitespace, blank-line runs.
_re_linebreaks = re.compile("\r\n?|[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_re_trailing_ws = re.compile(r"[^\S\n]+$", flags=re.MULTILINE)
_re_blank_runs = re.compile(r"\n{3,}")

_MAX_DEPTH = 150  # deeper subtrees are flattened to text when recursion runs out
_MAX_SPAN = 1000  # HTML caps colspan at 1000


def _is_block_outside(el) -> bool:
    return isinstance(el, Tag) and el.name in _BLOCK_OUTSIDE


def _span(cell: Tag, attr: str, default: int = 1) -> int:
    value = cell.get(attr)
    if isinstance(value, str):
        value = value.strip()
        if value.isdigit():
            return min(int(value), _MAX_SPAN)
    return default


# Inside code, marks that are not code: shell and REPL prompts (Pygments ``gp``, Prism's
# command-line ``prompt``) and line numbers written into the text.
_CODE_NOISE = (
    frozenset({"gp", "prompt", "line-number", "line-numbers-rows", "linenumber", "rouge-gutter"})
    | _LINENO_CLASSES
)


def _is_code_noise(el: Tag) -> bool:
    return bool(el.get("class")) and not _CODE_NOISE.isdisjoint(_classes(el))


def _classes(el: Tag) -> list[str]:
    value = el.get("class")
    if value is None:
        return []
    if isinstance(value, str):
        return value.split()
    return list(value)


def _language_from(el: Tag) -> str:
    """Code language named by one element's class/data attributes, or ''."""
    for attr in ("data-lang", "data-language"):
        value = el.get(attr)
        if isinstance(value, str) and _re_lang_value.match(value.strip()):
            return value.strip().lower()
    classes = _classes(el)
    if not classes:
        return ""
    m = _re_brush.search(" ".join(classes))  # SyntaxHighlighter: class="brush: js; gutter: 0"
    if m:
        return m.group(1).lower()
    for cls in classes:
        m = _re_lang_prefixed.match(cls) or _re_lang_highlight.match(cls)
        if m:
            lang = m.group(1).lower()
            if lang.startswith("text-"):  # GitHub: highlight-text-html-basic
                lang = lang[5:].split("-", 1)[0]
            if lang not in _LANG_IGNORE and _re_lang_value.match(lang):
                return lang
    lowered = [c.lower() for c in classes]
    if "hljs" in lowered or "sourcecode" in lowered:  # highlight.js / pandoc: "hljs python"
        for cls in lowered:
            if (
                cls not in _CLASS_IGNORE
                and cls not in _LANG_IGNORE
                and not cls.startswith("hljs-")
                and _re_lang_value.match(cls)
            ):
                return cls
    return ""


def code_language(pre: Tag) -> str:
    """Language of a <pre> block from the class conventions of common highlighters.

    Looks at the <code> child, the <pre> itself and up to two wrapping <div>s (Sphinx puts
    ``highlight-python``, GitHub ``highlight-source-python``, Rouge ``language-ruby`` there).
    """
    candidates = [c for c in pre.children if isinstance(c, Tag) and c.name == "code"][:1]
    candidates.append(pre)
    parent = pre.parent
    for _ in range(2):
        if parent is None or parent.name != "div":
            break
        # only highlighter wrappers, not any <div class="language-switcher"> around a <pre>
        if any("highlight" in cls.lower() for cls in _classes(parent)):
            candidates.append(parent)
        parent = parent.parent
    for el in candidates:
        lang = _language_from(el)
        if lang:
            return lang
    return ""


if LXMLTreeBuilder is not None:

    class PrunedLXMLTreeBuilder(LXMLTreeBuilder):
        """bs4's lxml tree builder that never builds the subtrees we drop (script, style,
        svg, head, ...) nor comments/doctypes/processing instructions: building bs4 objects
        is the dominant cost of the whole conversion.  Remembers the first <base href>.

        For plain HTML (no XML namespaces in play) it also skips bs4's namespace
        bookkeeping; anything else goes through the stock implementation.
        """

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._skip_depth = 0
            self._fast = False
            self.base_href = None

        def initialize_soup(self, soup):
            super().initialize_soup(soup)
            self._fast = hasattr(self, "nsmaps") and hasattr(self, "active_namespace_prefixes")

        def start(self, tag, attrib, nsmap={}):  # noqa: B006 - lxml's signature
            if tag == "base" and self.base_href is None:
                self.base_href = attrib.get("href")
            if self._skip_depth:
                self._skip_depth += 1
            elif tag in DROP_TAGS:
                self._skip_depth = 1
            elif self._fast and not nsmap and len(self.nsmaps) == 1:
                self.soup.handle_starttag(
                    tag,
                    None,
                    None,
                    self.attribute_dict_class(attrib),
                    namespaces=self.active_namespace_prefixes[-1],
                )
            else:
                super().start(tag, attrib, nsmap)

        def end(self, tag):
            if self._skip_depth:
                self._skip_depth -= 1
            elif self._fast and len(self.nsmaps) == 1:
                self.soup.endData()
                self.soup.handle_endtag(tag, None)
            else:
                super().end(tag)

        def data(self, data):
            if not self._skip_depth:
                self.soup.handle_data(data)

        def comment(self, text):
            pass

        def pi(self, target, data):
            pass

        def doctype(self, name, pubid, system):
            pass

    _BS4_OPTIONS = {"builder": PrunedLXMLTreeBuilder}
else:  # pragma: no cover
    _BS4_OPTIONS = {"features": "html.parser"}


class _State(threading.local):
    base_url = ""
    page_url = ""
    links = "inline"  # inline | reference | none
    refs: dict[str, int]


class CrawlyxMarkdownConverter(MarkdownConverter):
    """markdownify converter tuned for clean, LLM-friendly markdown.

    ATX headings, ``-`` bullets, GFM tables built from a cell grid (colspan/rowspan
    expanded, first row as header), fenced code with the highlighter's language, links made
    absolute, images reduced to their alt text, scripts/styles/embeds dropped.
    """

    class Options(MarkdownConverter.DefaultOptions):
        bs4_options = _BS4_OPTIONS
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
    def convert_document(self, html: str, base_url: str, links: str = "inline") -> str:
        soup = self._parse(html)
        state = self._state
        state.links = links
        state.refs = {}
        state.page_url = urldefrag(base_url)[0] if base_url else ""
        state.base_url = base_url
        base_href = getattr(soup.builder, "base_href", None)
        if base_href is None:
            base = soup.find("base", href=True)
            base_href = base["href"] if base is not None else None
        if isinstance(base_href, str):
            try:
                state.base_url = urljoin(base_url, _re_url_ws.sub("", base_href).strip())
            except ValueError:
                pass
        try:
            text = self.convert_soup(soup)
        except RecursionError:
            _flatten_deep(soup, _MAX_DEPTH)
            text = self.convert_soup(soup)
        if state.refs:
            text += "\n\n" + "\n".join(f"[{n}]: {url}" for url, n in state.refs.items())
        return _finish(text)

    def _parse(self, html: str) -> BeautifulSoup:
        options = self.options["bs4_options"]
        try:
            return BeautifulSoup(html, **options)
        except UnicodeError:
            # lone surrogates (e.g. bytes decoded with surrogateescape) -> U+FFFD
            clean = html.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
            return BeautifulSoup(clean, **options)

    def convert_soup(self, soup):
        return self.process_tag(soup, parent_tags=frozenset())

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
    def process_tag(self, node, parent_tags=None, as_name=None):
        """markdownify's process_tag, minus the per-node ``find_parent('pre')`` walk.

        ``as_name`` renders the node as if it were that tag (used for layout tables).
        """
        if parent_tags is None:
            parent_tags = frozenset()
        elif not isinstance(parent_tags, frozenset):
            parent_tags = frozenset(parent_tags)
        name = as_name or node.name
        in_pre = "pre" in parent_tags

        if name == "table" and not in_pre and "_inline" not in parent_tags:
            return self._convert_table(node, parent_tags)

        remove_inside = name in _BLOCK
        children = []
        code = in_pre or name == "pre"
        for el in node.contents:
            if isinstance(el, Tag):
                if el.name not in DROP_TAGS and not (code and _is_code_noise(el)):
                    children.append(el)
            elif isinstance(el, PreformattedString):
                continue  # comments, doctypes, processing instructions, CDATA
            elif el.strip():
                children.append(el)
            elif remove_inside and (el.previous_sibling is None or el.next_sibling is None):
                continue
            elif _is_block_outside(el.previous_sibling) or _is_block_outside(el.next_sibling):
                continue
            else:
                children.append(el)

        child_tags = self._child_tags(parent_tags, name)
        strings = []
        for el in children:
            if isinstance(el, Tag):
                s = self.process_tag(el, child_tags)
            else:
                s = self.process_text(el, child_tags)
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

    def process_text(self, el, parent_tags=None):
        text = str(el)
        if parent_tags is None:
            parent_tags = frozenset()
        if "pre" in parent_tags:
            return text
        if "\xa0" in text:
            text = text.replace("\xa0", " ")
        text = _re_newline_whitespace.sub("\n", text)
        text = _re_whitespace.sub(" ", text)
        if "_noformat" not in parent_tags:
            text = self.escape(text, parent_tags)
        prev = el.previous_sibling
        nxt = el.next_sibling
        parent_block = el.parent is not None and el.parent.name in _BLOCK
        if (
            _is_block_outside(prev)
            or (parent_block and prev is None)
            or (isinstance(prev, Tag) and prev.name == "br")
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
        href = _re_url_ws.sub("", href).strip()
        if not href or href.startswith("#") or _re_bad_scheme.match(href):
            return ""
        state = self._state
        try:
            url = urljoin(state.base_url, href)
        except ValueError:  # e.g. malformed IPv6 host
            return ""
        if "#" in url and state.page_url:
            page, _fragment = urldefrag(url)
            if page == state.page_url:
                return ""  # in-page anchor
        url = url.replace(" ", "%20").replace("<", "%3C").replace(">", "%3E")
        if url.count("(") != url.count(")"):
            url = url.replace("(", "%28").replace(")", "%29")
        return url

    def convert_img(self, el, text, parent_tags):
        alt = el.get("alt")
        if not isinstance(alt, str):
            return ""
        alt = _re_all_whitespace.sub(" ", alt).strip()
        if alt and "_noformat" not in parent_tags:
            alt = self.escape(alt, parent_tags)
        return alt

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

    # ------------------------------------------------------------------ blocks
    def convert_div(self, el, text, parent_tags):
        if "_inline" in parent_tags:
            return " " + text.strip() + " "
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

    def convert_li(self, el, text, parent_tags):
        text = (text or "").strip()
        if not text:
            return "\n"
        parent = el.parent
        if parent is not None and parent.name == "ol":
            start = parent.get("start")
            try:
                number = int(start.strip()) if isinstance(start, str) else 1
            except ValueError:
                number = 1
            for sibling in el.previous_siblings:
                if isinstance(sibling, Tag) and sibling.name == "li":
                    number += 1
            bullet = f"{number}. "
        else:
            bullet = self.options["bullets"][0] + " "
        indent = " " * len(bullet)
        first, *rest = text.split("\n")
        return bullet + "\n".join([first] + [indent + ln if ln else "" for ln in rest]) + "\n"

    def convert_pre(self, el, text, parent_tags):
        if "_inline" in parent_tags:
            text = _re_all_whitespace.sub(" ", text).strip()
            return " " + _inline_code(text) + " " if text else ""
        text = _re_pre_lstrip.sub("", text).rstrip()
        if not text:
            return ""
        longest = max((len(run) for run in _re_backtick_runs.findall(text)), default=0)
        fence = "`" * max(3, longest + 1)
        return f"\n\n{fence}{code_language(el)}\n{text}\n{fence}\n\n"

    def convert_figcaption(self, el, text, parent_tags):
        if "_inline" in parent_tags:
            return " " + text.strip() + " "
        text = text.strip()
        return "\n\n" + text + "\n\n" if text else ""

    # ------------------------------------------------------------------ tables
    def convert_inline_table_part(self, el, text, parent_tags):
        """Tables nested in a cell (or a link) are flattened to text."""
        return " " + text + " "

    def _convert_table(self, table: Tag, parent_tags: frozenset) -> str:
        rows = _table_rows(table)
        caption = table.find("caption", recursive=False)
        caption_text = ""
        if caption is not None:
            caption_text = self.process_tag(caption, parent_tags, as_name="div").strip()

        cells_per_row = [
            [c for c in tr.children if isinstance(c, Tag) and c.name in ("td", "th")] for tr in rows
        ]
        n_cells = sum(map(len, cells_per_row))
        if n_cells <= 1 or any(
            _LINENO_CLASSES.intersection(_classes(cell))
            for cells in cells_per_row
            for cell in cells
        ):
            return self._convert_layout_table(table, cells_per_row, parent_tags)

        row_tags = self._child_tags(self._child_tags(parent_tags, "table"), "tr")
        grid: list[list[str]] = []
        pending: dict[int, int] = {}  # column -> rows still covered by a rowspan
        for r, cells in enumerate(cells_per_row):
            row: list[str] = []
            col = 0
            for cell in cells:
                while pending.get(col):
                    row.append("")
                    pending[col] -= 1
                    col += 1
                row.append(self._cell_text(cell, row_tags))
                colspan = max(1, _span(cell, "colspan"))
                row.extend([""] * (colspan - 1))
                rowspan = _span(cell, "rowspan")
                if rowspan == 0:  # "until the end of the table section"
                    rowspan = len(rows) - r
                if rowspan > 1:
                    for c in range(col, col + colspan):
                        pending[c] = rowspan - 1
                col += colspan
            last_pending = max((c for c, left in pending.items() if left and c >= col), default=-1)
            while col <= last_pending:
                row.append("")
                if pending.get(col):
                    pending[col] -= 1
                col += 1
            if row:
                grid.append(row)

        if not any(any(row) for row in grid):
            return "\n\n" + caption_text + "\n\n" if caption_text else ""
        width = max(map(len, grid))
        lines = []
        for i, row in enumerate(grid):
            row += [""] * (width - len(row))
            lines.append("| " + " | ".join(row) + " |")
            if i == 0:
                lines.append("| " + " | ".join(["---"] * width) + " |")
        body = "\n".join(lines)
        if caption_text:
            body = caption_text + "\n\n" + body
        return "\n\n" + body + "\n\n"

    def _cell_text(self, cell: Tag, row_tags: frozenset) -> str:
        text = self.process_tag(cell, row_tags)
        text = _re_all_whitespace.sub(" ", text).strip()
        return text.replace("|", "\\|")

    def _convert_layout_table(self, table, cells_per_row, parent_tags) -> str:
        """Tables used for layout (a single cell, or code next to a line-number gutter as
        Pygments/Rouge emit it) are rendered as a sequence of blocks, gutter cells dropped."""
        if not any(cells_per_row):
            return self.process_tag(table, parent_tags, as_name="div")
        parts = []
        for cells in cells_per_row:
            for cell in cells:
                if _LINENO_CLASSES.intersection(_classes(cell)):
                    continue
                parts.append(self.process_tag(cell, parent_tags, as_name="div"))
        text = _join_blocks([p for p in parts if p]).strip()
        return "\n\n" + text + "\n\n" if text else ""


def _table_rows(table: Tag) -> list[Tag]:
    rows = []
    for child in table.children:
        if not isinstance(child, Tag):
            continue
        if child.name == "tr":
            rows.append(child)
        elif child.name in ("thead", "tbody", "tfoot"):
            rows.extend(c for c in child.children if isinstance(c, Tag) and c.name == "tr")
    return rows


def _inline_code(text: str) -> str:
    longest = max((len(run) for run in _re_backtick_runs.findall(text)), default=0)
    delimiter = "`" * (longest + 1)
    if longest:
        text = " " + text + " "
    return delimiter + text + delimiter


def _join_blocks(strings: list[str]) -> str:
    """Concatenate child outputs, merging newline runs at the seams (max. one blank line);
    the same algorithm as markdownify's process_tag, with a fast path for plain strings."""
    if not strings:
        return ""
    out = [""]
    for s in strings:
        if s[0] != "\n" and s[-1] != "\n":
            out.append("")
            out.append(s)
            out.append("")
            continue
        leading, content, trailing = _re_extract_newlines.match(s).groups()
        if out[-1] and leading:
            previous = out.pop()
            leading = "\n" * min(2, max(len(previous), len(leading)))
        out.append(leading)
        out.append(content)
        out.append(trailing)
    return "".join(out)


def _flatten_deep(soup: BeautifulSoup, max_depth: int) -> None:
    """Replace subtrees nested deeper than max_depth by their text (iteratively), so that
    the recursive converter does not run out of stack on pathological documents."""
    stack = [(soup, 0)]
    while stack:
        node, depth = stack.pop()
        for child in list(node.children):
            if not isinstance(child, Tag) or child.name in DROP_TAGS:
                continue
            if depth + 1 >= max_depth:
                for dropped in child.find_all(DROP_TAGS):
                    dropped.decompose()
                child.replace_with(NavigableString(child.get_text(" ")))
            else:
                stack.append((child, depth + 1))


def _finish(text: str) -> str:
    text = _re_linebreaks.sub("\n", text)
    text = _re_trailing_ws.sub("", text)
    text = _re_blank_runs.sub("\n\n", text).strip()
    return text + "\n" if text else ""


_converter: CrawlyxMarkdownConverter | None = None


def _get_converter() -> CrawlyxMarkdownConverter:
    global _converter
    if _converter is None:
        _converter = CrawlyxMarkdownConverter()
    return _converter


LINK_STYLES = ("inline", "reference", "none")


def html_to_markdown(html: str, base_url: str, links: str = "inline") -> str:
    """Convert an HTML document (or fragment) to markdown.

    Relative links are resolved against ``base_url`` (or the document's ``<base href>``).
    ``links``: ``inline`` ``[text](url)``, ``reference`` ``[text][1]`` with the URLs listed
    at the end, or ``none`` (the text alone).
    Returns ``""`` when there is no content, otherwise text ending in exactly one newline.
    """
    if links not in LINK_STYLES:
        raise ValueError(f"links must be one of {', '.join(LINK_STYLES)}, not {links!r}")
    if isinstance(html, bytes):
        html = html.decode("utf-8", "replace")
    if not html or html.isspace():
        return ""
    return _get_converter().convert_document(html, base_url or "", links)
