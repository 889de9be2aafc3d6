"""Code blocks: language detection from highlighter class conventions, code noise
(prompts, line numbers) and inline code spans."""

from __future__ import annotations

import re

_re_backtick_runs = re.compile(r"`+")
_re_lang_prefixed = re.compile(r"^(?:language|lang)-(.+)$")
_re_lang_highlight = re.compile(r"^highlight-(?:source-)?([^-].*)$")
_re_brush = re.compile(r"(?:^|[\s;])brush\s*:\s*([\w#+.-]+)")
_re_lang_value = re.compile(r"^[\w#+.-]+$")
_re_pre_lstrip = re.compile(r"^[ \t\n]*\n")
# Languages a bare class names (rustdoc's ``<pre class="rust rust-example-rendered">``,
# Prism's and many themes' ``<code class="python">``): a class is a language only when it
# is one of these, so "example", "wrap", "line" or "c" (a utility class as often as C) are
# never taken for one.
_BARE_LANGUAGES = frozenset(
    """
    rust python py javascript js typescript ts jsx tsx java kotlin scala swift go golang
    ruby rb php perl lua haskell elixir erlang clojure ocaml fsharp csharp cpp objectivec
    dart julia zig nim crystal groovy fortran cobol pascal matlab
    bash sh shell zsh fish powershell ps1 console shellsession bat batch
    sql plsql graphql html xml xhtml svg css scss sass less json jsonc json5 yaml yml toml
    ini dockerfile makefile cmake nginx apache diff patch markdown md latex tex rst
    protobuf proto solidity wasm asm nasm llvm vim elm purescript racket scheme commonlisp
    lisp prolog vb vbnet hcl terraform
    """.split()
)
_LANG_IGNORE = frozenset({"none", "nohighlight", "no-highlight", "default", "notranslate", ""})
_CLASS_IGNORE = frozenset({"hljs", "sourcecode", "highlight", "notranslate", "code", "prettyprint"})
# A line-number gutter: Pygments, Rouge, highlight.js's plugin, GitHub's and Gitea's file
# views (a table row per line, its number in a cell of its own).
_LINENO_CLASSES = frozenset(
    {"linenos", "gutter", "lineno", "line-numbers", "hljs-ln-numbers", "blob-num", "lines-num"}
)

# Chroma's (Hugo's) line numbers: "ln" spans before each line, or "lnt" spans in a gutter
# cell ("lntd", as is the code's cell beside it).
_CHROMA_LINENOS = frozenset({"ln", "lnt"})

# Inside code, what the reader does not see as code: shell and REPL prompts (Pygments
# ``gp``, Prism's command-line ``prompt``), line numbers written into the text, and the
# lines mdBook hides around an example (``<span class="boring">``: ``fn main() {`` and its
# ``}``, ``#![allow(unused)]``; shown only on a click), which would make every snippet
# look like a whole program.
_CODE_NOISE = (
    frozenset(
        {"gp", "prompt", "line-number", "line-numbers-rows", "linenumber", "rouge-gutter", "boring"}
    )
    | _LINENO_CLASSES
    | _CHROMA_LINENOS
)


def _is_code_noise(el) -> bool:
    return bool(el.get("class")) and not _CODE_NOISE.isdisjoint(_classes(el))


def _classes(el) -> list[str]:
    value = el.get("class")
    if value is None:
        return []
    if isinstance(value, str):
        return value.split()
    return list(value)


def _language_from(el) -> str:
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
    for cls in lowered:  # rustdoc: "rust rust-example-rendered"
        if cls in _BARE_LANGUAGES:
            return cls
    return ""


def _wrapper_language(cls: str) -> bool:
    m = _re_lang_prefixed.match(cls)
    return m is not None and m.group(1).lower() in _BARE_LANGUAGES


def code_language(pre) -> str:
    """Language of a <pre> block from the class conventions of common highlighters.

    Looks at the <code> child, the <pre> itself and up to two wrapping <div>s (Sphinx puts
    ``highlight-python``, GitHub ``highlight-source-python``, Rouge ``language-ruby`` there).
    """
    candidates = pre.elements("code")[:1]
    candidates.append(pre)
    parent = pre.parent
    for _ in range(2):
        if parent is None or parent.name != "div":
            break
        # only highlighter wrappers (VitePress's "language-ts" too, of a language known),
        # not any <div class="language-switcher"> around a <pre>
        if any("highlight" in cls.lower() or _wrapper_language(cls) for cls in _classes(parent)):
            candidates.append(parent)
        parent = parent.parent
    for el in candidates:
        lang = _language_from(el)
        if lang:
            return lang
    return ""


def fenced(text: str, language: str = "") -> str:
    """``text`` as a fenced code block, its fence longer than any run of backticks in it."""
    longest = max((len(run) for run in _re_backtick_runs.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"\n\n{fence}{language}\n{text}\n{fence}\n\n"


def _inline_code(text: str) -> str:
    longest = max((len(run) for run in _re_backtick_runs.findall(text)), default=0)
    delimiter = "`" * (longest + 1)
    if longest:
        text = " " + text + " "
    return delimiter + text + delimiter
