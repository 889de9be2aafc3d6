import pickle
import re
from concurrent.futures import ProcessPoolExecutor

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crawlyx.content.markdown import html_to_markdown

BASE = "https://example.com/docs/guide/page.html"
# an HTML tag, comment or declaration left in the output (a backslash-escaped "\<" is text);
# <sup> and <sub> are the only tags the converter writes
TAG_RE = re.compile(
    r"(?<!\\)(?:<(?!/?su[bp]>)/?[A-Za-z][A-Za-z0-9-]*(?:\s[^>]*)?/?>|<!--|<!\[CDATA\[|<!DOCTYPE)",
    re.I,
)


def md(html: str, base_url: str = BASE) -> str:
    return html_to_markdown(html, base_url)


def assert_clean(out: str) -> None:
    """The output invariants every conversion must satisfy."""
    assert "\n\n\n" not in out, "run of more than one blank line"
    assert not re.search(r"[ \t]$", out, re.M), "trailing whitespace"
    assert out == "" or (out.endswith("\n") and not out.endswith("\n\n"))
    assert not out.startswith("\n")


def fence_block(out: str) -> tuple[str, str]:
    """(info string, body) of the only fenced code block in out."""
    m = re.search(r"^(`{3,})([^\n`]*)\n(.*?)\n\1$", out, re.M | re.S)
    assert m, f"no fenced code block in {out!r}"
    return m.group(2), m.group(3)


# ---------------------------------------------------------------- headings


def test_headings_are_atx_with_levels_preserved():
    html = "".join(f"<h{n}>Title {n}</h{n}>" for n in range(1, 7))
    expected = "\n\n".join(f"{'#' * n} Title {n}" for n in range(1, 7)) + "\n"
    assert md(html) == expected


def test_heading_inner_markup_and_whitespace_flattened():
    assert md("<h2>\n  Hello\n  <em>big</em><br>world\n</h2>") == "## Hello *big* world\n"


def test_empty_heading_emits_nothing():
    assert md("<h1> </h1><h3></h3><p>text</p>") == "text\n"


# ---------------------------------------------------------------- lists


def test_nested_lists_indentation_and_numbering():
    html = (
        "<ul><li>alpha<ul><li>beta<ol><li>one</li><li>two</li></ol></li></ul></li>"
        "<li>gamma</li></ul><p>after</p>"
    )
    assert md(html) == ("- alpha\n  - beta\n    1. one\n    2. two\n- gamma\n\nafter\n")


def test_ordered_list_start_and_wide_numbers_indent_children():
    html = "<ol start='9'><li>nine</li><li>ten<ul><li>child</li></ul></li></ol>"
    assert md(html) == "9. nine\n10. ten\n    - child\n"


def test_list_item_with_paragraphs_and_code():
    html = (
        "<ul><li><p>first para</p><p>second para</p></li>"
        "<li>code:<pre><code class='language-sh'>echo 1\necho 2</code></pre></li></ul>"
    )
    assert md(html) == (
        "- first para\n\n  second para\n- code:\n\n  ```sh\n  echo 1\n  echo 2\n  ```\n"
    )


# ---------------------------------------------------------------- tables


def test_table_without_thead_uses_first_row_as_header_escapes_pipes_and_pads_colspan():
    html = (
        "<table>"
        "<tr><td>Name</td><td>Value</td><td>Note</td></tr>"
        "<tr><td>a|b</td><td colspan='2'>wide</td></tr>"
        "<tr><td>multi\nline</td><td>x<br>y</td><td><b>bold</b></td></tr>"
        "</table>"
    )
    assert md(html).splitlines() == [
        "| Name | Value | Note |",
        "| --- | --- | --- |",
        "| a\\|b | wide |  |",
        "| multi line | x y | **bold** |",
    ]


def test_table_with_thead_and_rowspan():
    html = (
        "<table><thead><tr><th>H1</th><th>H2</th><th>H3</th></tr></thead><tbody>"
        "<tr><td rowspan='2'>r</td><td>a</td><td>b</td></tr>"
        "<tr><td>c</td><td>d</td></tr>"
        "</tbody></table>"
    )
    assert md(html).splitlines() == [
        "| H1 | H2 | H3 |",
        "| --- | --- | --- |",
        "| r | a | b |",
        "|  | c | d |",
    ]


def test_short_rows_are_padded_to_the_widest_row():
    html = "<table><tr><th>a</th></tr><tr><td>1</td><td>2</td><td>3</td></tr></table>"
    assert md(html).splitlines() == ["| a |  |  |", "| --- | --- | --- |", "| 1 | 2 | 3 |"]


def test_every_table_row_has_the_same_number_of_columns():
    html = (
        "<table><tr><th colspan=3>Quarter</th></tr>"
        "<tr><td rowspan=3>x</td><td colspan=2 rowspan=2>y</td></tr>"
        "<tr><td>z</td></tr><tr><td>1</td><td>2</td></tr></table>"
    )
    lines = md(html).splitlines()
    counts = {line.count("|") for line in lines}
    assert counts == {5}, lines
    assert lines[0] == "| Quarter |  |  |  |"


def test_nested_table_is_flattened_into_the_cell():
    html = (
        "<table><tr><th>outer</th><th>x</th></tr>"
        "<tr><td>in:<table><tr><td>n1</td><td>n2</td></tr></table></td><td>y</td></tr></table>"
    )
    assert md(html).splitlines() == ["| outer | x |", "| --- | --- |", "| in: n1 n2 | y |"]


def test_table_cell_link_and_code_with_pipe():
    html = (
        "<table><tr><th>k</th><th>v</th></tr>"
        "<tr><td><a href='/x'>X</a></td><td><code>a|b</code></td></tr></table>"
    )
    assert md(html).splitlines()[2] == "| [X](https://example.com/x) | `a\\|b` |"


def test_code_block_in_a_data_table_cell_becomes_inline_code():
    html = (
        "<table><tr><th>call</th><th>example</th></tr>"
        "<tr><td>f</td><td><pre>f(a_b)\n  | x</pre></td></tr></table>"
    )
    assert md(html).splitlines()[2] == "| f | `f(a_b) \\| x` |"


def test_single_cell_layout_table_keeps_block_structure():
    html = "<table><tr><td><h2>Title</h2><p>one</p><p>two</p></td></tr></table>"
    assert md(html) == "## Title\n\none\n\ntwo\n"


def test_pygments_line_number_table_becomes_one_code_block():
    html = (
        "<table class='highlighttable'><tr><td class='linenos'><div class='linenodiv'>"
        "<pre>1\n2</pre></div></td><td class='code'><div class='highlight'>"
        "<pre>a = 1\nb = 2</pre></div></td></tr></table>"
    )
    assert md(html) == "```\na = 1\nb = 2\n```\n"


def test_chromas_line_numbers_are_no_code():
    """Hugo's highlighter: a gutter cell named as the code's cell ("lntd") beside it, or
    a number span before each line."""
    table = (
        '<div class="highlight"><div class="chroma"><table class="lntable"><tr>'
        '<td class="lntd"><pre class="chroma"><code><span class="lnt">1\n</span>'
        '<span class="lnt"><a class="lnlinks" href="#hl-0-2">2</a>\n</span></code></pre></td>'
        '<td class="lntd"><pre class="chroma"><code class="language-go" data-lang="go">'
        '<span class="line"><span class="cl"><span class="kn">package</span> main\n</span></span>'
        '<span class="line"><span class="cl">func main() {}\n</span></span></code></pre></td>'
        "</tr></table></div></div>"
    )
    assert md(table) == "```go\npackage main\nfunc main() {}\n```\n"
    inline = (
        '<pre class="chroma"><code class="language-python"><span class="line"><span class="ln">1'
        '</span><span class="cl">x = 1\n</span></span><span class="line"><span class="ln">2</span>'
        '<span class="cl">y = 2\n</span></span></code></pre>'
    )
    assert md(inline) == "```python\nx = 1\ny = 2\n```\n"
    # A table whose cells happen to be named so is a table.
    cells = '<table><tr><td class="lntd">not code</td><td class="lntd">cells</td></tr></table>'
    assert md(cells) == "| not code | cells |\n| --- | --- |\n"


# ---------------------------------------------------------------- code


@pytest.mark.parametrize(
    ("html", "lang"),
    [
        ("<pre><code class='language-python'>x = 1</code></pre>", "python"),  # CommonMark/Prism
        ("<pre class='language-rust'><code>x = 1</code></pre>", "rust"),  # Prism on <pre>
        ("<pre class='prettyprint lang-go'>x = 1</pre>", "go"),
        (  # Sphinx / Pygments
            "<div class='highlight-python3 notranslate'><div class='highlight'>"
            "<pre><span></span>x = 1</pre></div></div>",
            "python3",
        ),
        (  # GitHub
            "<div class='highlight highlight-source-js notranslate'><pre>x = 1</pre></div>",
            "js",
        ),
        ("<div class='highlight highlight-text-html-basic'><pre>x = 1</pre></div>", "html"),
        ("<pre class='highlight-ruby'>x = 1</pre>", "ruby"),
        ("<pre class='brush: js; gutter: false'>x = 1</pre>", "js"),  # SyntaxHighlighter
        ("<pre class='brush:php'>x = 1</pre>", "php"),
        ("<pre><code class='hljs bash'>x = 1</code></pre>", "bash"),  # highlight.js
        ("<pre><code class='java hljs'>x = 1</code></pre>", "java"),
        ("<pre><code class='hljs language-kotlin'>x = 1</code></pre>", "kotlin"),
        (  # Jekyll / Rouge
            "<div class='language-ruby highlighter-rouge'><div class='highlight'>"
            "<pre class='highlight'><code>x = 1</code></pre></div></div>",
            "ruby",
        ),
        ("<pre class='sourceCode haskell'><code>x = 1</code></pre>", "haskell"),  # pandoc
        ("<pre data-lang='go'>x = 1</pre>", "go"),
        ("<pre><code>x = 1</code></pre>", ""),
        ("<pre><code class='language-none'>x = 1</code></pre>", ""),
        ("<div class='language-switcher'><pre>x = 1</pre></div>", ""),
    ],
)
def test_fenced_code_language_from_class_conventions(html, lang):
    assert md(html) == f"```{lang}\nx = 1\n```\n"


@pytest.mark.parametrize(
    ("html", "lang"),
    [
        (  # rustdoc's examples and item declarations
            "<div class='example-wrap'><pre class='rust rust-example-rendered'><code>"
            "x = 1</code></pre></div>",
            "rust",
        ),
        ("<pre class='rust item-decl'><code>x = 1</code></pre>", "rust"),
        ("<div class='example-wrap ignore'><pre class='rust ignore'>x = 1</pre></div>", "rust"),
        ("<pre><code class='Python'>x = 1</code></pre>", "python"),
        ("<pre class='toml'><code class='language-ini'>x = 1</code></pre>", "ini"),
        # classes that are no language, or not surely one
        ("<pre class='example code wrap'><code class='block'>x = 1</code></pre>", ""),
        ("<pre class='c'>x = 1</pre>", ""),
        ("<pre class='rust-example-rendered'>x = 1</pre>", ""),
    ],
)
def test_fenced_code_language_from_a_bare_language_class(html, lang):
    assert md(html) == f"```{lang}\nx = 1\n```\n"


def test_code_block_content_is_verbatim():
    code = (
        "def f(a_b, *args):\n"
        "    return a_b*c  # [not](a link) <b>not bold</b> &amp;\n"
        "\n"
        "\tif x < 3 and y > 2: pass\n"
        "- not a list\n"
        "# not a heading"
    )
    html = (
        "<pre><code class='language-python'>"
        + code.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        + "</code></pre>"
    )
    info, body = fence_block(md(html))
    assert info == "python"
    assert body == code


def test_code_block_with_highlighting_spans_and_line_breaks():
    html = (
        "<pre><span class='k'>if</span> <span class='n'>a_b</span>:<br>"
        "    <a href='/x'>pass</a></pre>"
    )
    assert md(html) == "```\nif a_b:\n    pass\n```\n"


def test_code_block_with_line_divs():
    html = "<pre><div class='line'>l1</div>\n<div class='line'>  l2</div></pre>"
    assert md(html) == "```\nl1\n  l2\n```\n"


def test_code_containing_backtick_fence_gets_longer_fence():
    out = md("<pre>before\n```\ninner\n```\nafter</pre>")
    assert out == "````\nbefore\n```\ninner\n```\nafter\n````\n"


def test_code_block_keeps_leading_indentation_and_drops_outer_blank_lines():
    assert md("<pre>\n\n    indented\n  less\n\n</pre>") == "```\n    indented\n  less\n```\n"


def test_inline_code_backticks():
    out = md("<p>Call <code>a_b*c()</code>, <code>x`y</code> or <kbd>Ctrl</kbd></p>")
    assert out == "Call `a_b*c()`, `` x`y `` or `Ctrl`\n"


# ---------------------------------------------------------------- links


def test_relative_links_become_absolute():
    html = (
        "<p><a href='other.html'>sibling</a> <a href='../up/'>up</a> "
        "<a href='/root?q=1'>root</a> <a href='//cdn.example.net/x'>proto</a> "
        "<a href='https://else.org/a'>abs</a></p>"
    )
    assert md(html) == (
        "[sibling](https://example.com/docs/guide/other.html) "
        "[up](https://example.com/docs/up/) "
        "[root](https://example.com/root?q=1) "
        "[proto](https://cdn.example.net/x) "
        "[abs](https://else.org/a)\n"
    )


def test_links_that_become_plain_text():
    html = (
        "<p><a href='javascript:void(0)'>js</a> <a href=' JavaScript:alert(1)'>js2</a> "
        "<a>nohref</a> <a href=''>empty</a> <a href='#top'>anchor</a> "
        "<a href='page.html#sec'>same page</a> <a href='http://[::1'>bad url</a></p>"
    )
    assert md(html) == "js js2 nohref empty anchor same page bad url\n"


def test_link_to_other_page_with_fragment_is_kept():
    assert md("<a href='other.html#sec'>x</a>") == (
        "[x](https://example.com/docs/guide/other.html#sec)\n"
    )


def test_link_text_equal_to_url_is_written_once():
    assert md("<a href='https://example.com/'>https://example.com/</a>") == (
        "https://example.com/\n"
    )


def test_link_with_block_content_is_one_line():
    html = "<a href='/card'><h3>Card title</h3><p>Card text</p></a>"
    assert md(html) == "[Card title Card text](https://example.com/card)\n"


def test_link_url_with_spaces_is_encoded():
    assert md("<a href='/a b'>x</a>") == "[x](https://example.com/a%20b)\n"


def test_base_href_is_honoured():
    html = (
        "<html><head><base href='https://cdn.example.org/b/'></head>"
        "<body><a href='x'>x</a></body></html>"
    )
    assert md(html) == "[x](https://cdn.example.org/b/x)\n"


# ---------------------------------------------------------------- dropped content


def test_dropped_elements_and_their_content_are_absent():
    html = (
        "<html><head><title>TITLE</title><style>p{color:red}</style>"
        "<script>var headScript = 1;</script></head><body>"
        "<p>keep1</p><script>alert('SCRIPT')</script><style>.STYLE{}</style>"
        "<noscript>NOSCRIPT</noscript><template><p>TEMPLATE</p></template>"
        "<iframe src='x'>IFRAME</iframe><svg><text>SVG</text><title>SVGTITLE</title></svg>"
        "<canvas>CANVAS</canvas><object>OBJECT</object><embed src='x'>"
        "<video src='v.mp4'><source src='v.webm'>VIDEO fallback</video><audio>AUDIO</audio>"
        "<!-- COMMENT --><p>keep2</p></body></html>"
    )
    assert md(html) == "keep1\n\nkeep2\n"


def test_a_ruby_s_reading_aid_is_not_text():
    # Furigana over kanji: the text reads 虐待を禁止, not 虐待ぎゃくたいを禁止きんし.
    html = (
        "<p><ruby>虐待<rp>(</rp><rt>ぎゃくたい</rt><rp>)</rp></ruby>を"
        "<ruby>禁止<rt>きんし</rt></ruby></p>"
    )
    assert md(html) == "虐待を禁止\n"


def test_unknown_custom_elements_keep_their_text():
    html = "<my-card><p>inside custom</p></my-card><x-label>label</x-label><soup>s</soup>"
    assert md(html) == "inside custom\n\nlabels\n"


# ---------------------------------------------------------------- images


def test_images_are_alt_text_only_as_uncaptioned_figures():
    html = (
        "<p>Logo: <img src='/logo.png' alt='ACME logo'> and <img src='/spacer.gif'>.</p>"
        "<a href='/home'><span><img src='/h.png' alt='Home'></span></a>"
        "<a href='/empty'><img src='/e.png'></a>"
        "<a href='/p/1'><img src='/p1.jpg' alt='Red kettle, front view'> Red kettle</a>"
        "<figure><img src='/chart.png' alt='Sales by month'></figure>"
        "<figure><img src='/cat.jpg' alt='A cat'><figcaption>Our cat</figcaption></figure>"
    )
    out = md(html)
    assert out.startswith("Logo:  and .\n\n")
    assert "[Red kettle](https://example.com/p/1)\n\nSales by month\n\nOur cat\n" in out
    for alt in ("ACME logo", "Home", "front view", "A cat"):
        assert alt not in out
    assert "![" not in out and ".png" not in out


# ---------------------------------------------------------------- other blocks


def test_blockquote_emphasis_rule_and_line_breaks():
    html = (
        "<blockquote><p>quoted</p><blockquote><p>deeper</p></blockquote></blockquote>"
        "<p><em>em</em> <i>i</i> <strong>strong</strong> <b>b</b> <del>del</del></p>"
        "<hr><p>line one<br>line two<br/>line three</p>"
    )
    assert md(html) == (
        "> quoted\n>\n> > deeper\n\n*em* *i* **strong** **b** ~~del~~\n\n---\n\n"
        "line one\nline two\nline three\n"
    )


def test_text_is_not_backslash_escaped():
    assert md("<p>snake_case and 2*3*4 and __init__</p>") == ("snake_case and 2*3*4 and __init__\n")


def test_whitespace_and_nbsp_collapsed():
    assert md("<p>a  \n\t b&nbsp;&nbsp;c</p>") == "a\nb c\n"


def test_soft_hyphens_do_not_split_words():
    assert md("<h2>Wei&shy;ne</h2><p>Ita&shy;li&shy;ens Baro\u00adlo</p>") == (
        "## Weine\n\nItaliens Barolo\n"
    )


# ---------------------------------------------------------------- output invariants


def test_no_blank_line_runs_and_no_trailing_spaces():
    html = (
        "<p>x</p><br><br><br><br><div><div></div><p> </p></div><p>y  <br>  </p>"
        "<div>\n\n\n</div><ul><li></li></ul><p>z&nbsp;</p><pre>code   \n\n\n\nmore</pre>"
    )
    out = md(html)
    assert_clean(out)
    assert out == "x\n\ny\n\nz\n\n```\ncode\n\nmore\n```\n"


def test_no_html_tags_left():
    html = (
        "<div class='wrap'><span style='x'>a</span> <font color=red>b</font> "
        "<abbr title='t'>c</abbr> <u>d</u> <mark>e</mark> <small>f</small> <sup>g</sup> "
        "<button>h</button> <label>i</label><input value='v'> <select><option>j</option>"
        "</select> <cite>k</cite> <picture><source srcset='x'>"
        "<img alt='x'></picture> <figure><img alt='l'></figure> "
        "<details><summary>m</summary>n</details> "
        "<dl><dt>o</dt><dd>p</dd></dl> <![CDATA[q]]> <?php echo 1 ?>"
        "<p>literal &lt;div&gt; text and a &lt; b</p></div>"
    )
    out = md(html)
    assert not TAG_RE.search(out), out
    for word in "abcdefghijklmnop":
        assert re.search(rf"\b{word}\b", out), word
    assert "\\<div>" in out  # literal tag text is escaped, not emitted as a tag


@pytest.mark.parametrize(
    "html",
    ["", "   \n\t ", "<html></html>", "<body></body>", "<!DOCTYPE html>", "<!-- only -->"],
)
def test_no_content_gives_empty_string(html):
    assert md(html) == ""


def test_body_only_and_fragments():
    assert md("<body>just text</body>") == "just text\n"
    assert md("plain text, no tags") == "plain text, no tags\n"


@pytest.mark.parametrize(
    "html",
    [
        "<div><p>unclosed <b>bold <i>both</div> tail",
        "</p></div></span>stray closers",
        "<table><tr><td>a<td>b<tr><td>c</table>",
        "<ul><li>a<li>b</ul><p>a<p>b",
        "<a href=x><a href=y>nested</a></a>",
        "<<<>>>& &amp; &#0; &#xD800; &bogus;",
        "<p>\x00nul \x01\x1b[31m ctrl \ufeff bom \u2028 sep \x0c ff</p>",
        "<p>lone surrogate \udcff here</p>",
        "<td>orphan cell</td><li>orphan item</li><tr><th>x</th></tr>",
        "<pre>unclosed code",
        "<table><tr><td colspan='x' rowspan='-1'>bad spans</td><td colspan=0>z</td></tr></table>",
        "<div>" * 3000 + "deep" + "</div>" * 3000,
        "<script>never closed <p>x</p>",
    ],
)
def test_broken_input_does_not_raise_and_output_is_clean(html):
    out = md(html)
    assert isinstance(out, str)
    assert_clean(out)
    assert not TAG_RE.search(out)


@pytest.mark.parametrize("end", ["</body>", "</body></html>", "</BODY>\n</HTML>\n"])
def test_text_after_an_early_end_of_the_page_is_kept(end):
    # A template that closes the page after its header and goes on: browsers show the
    # rest in the body, and so does the markdown.
    page = f"<html><body><header>Site</header>{end}<main><p>The article.</p></main>"
    assert "The article." in md(page + "</body></html>")
    assert "The article." in md((page + "</body></html>").encode())


def test_deeply_nested_document_keeps_text():
    assert md("<div>" * 1500 + "deep text" + "</div>" * 1500) == "deep text\n"


def test_odd_characters_are_kept_or_replaced_and_line_separators_normalised():
    out = md("<p>caf\u00e9 \u4e2d\u6587 \U0001f642 \udcff a\u2028b</p>")
    assert out == "caf\u00e9 \u4e2d\u6587 \U0001f642 \ufffd a\nb\n"


def test_bytes_input_is_decoded():
    assert md(b"<p>caf\xc3\xa9 \xff</p>") == "caf\u00e9 \ufffd\n"


# ---------------------------------------------------------------- process pool / realistic page


def _realistic_page() -> str:
    nav = "".join(f"<li><a href='/s/{i}'>Section {i}</a></li>" for i in range(40))
    paras = "".join(
        f"<h2>Part {i}</h2><p>Paragraph {i} with <a href='rel/{i}'>a link</a>, "
        f"<em>emphasis</em> and <code>snake_case()</code>.</p>"
        for i in range(40)
    )
    rows = "".join(f"<tr><td>{i}</td><td>v|{i}</td></tr>" for i in range(20))
    return (
        "<!DOCTYPE html><html><head><title>T</title><script>var s = 1;</script></head>"
        f"<body><nav><ul>{nav}</ul></nav><main><h1>Main</h1>{paras}"
        f"<table><thead><tr><th>k</th><th>v</th></tr></thead><tbody>{rows}</tbody></table>"
        "<pre><code class='language-python'>def f(a_b):\n    return a_b * 2</code></pre>"
        "</main><footer><a href='/'><img src='/l.png' alt='Logo'></a></footer></body></html>"
    )


def test_realistic_page_structure():
    out = md(_realistic_page())
    assert_clean(out)
    assert not TAG_RE.search(out)
    assert out.startswith("- [Section 0](https://example.com/s/0)\n")
    assert "\n# Main\n" in out
    assert out.count("\n## Part ") == 40
    assert "[a link](https://example.com/docs/guide/rel/7)" in out
    assert "\n| k | v |\n| --- | --- |\n| 0 | v\\|0 |\n" in out
    assert "```python\ndef f(a_b):\n    return a_b * 2\n```" in out
    assert out.endswith("```\n")  # the footer's logo link has no text: nothing
    assert "var s" not in out and "\nT\n" not in out


def test_function_is_picklable_and_runs_in_a_process_pool():
    assert pickle.loads(pickle.dumps(html_to_markdown)) is html_to_markdown
    with ProcessPoolExecutor(max_workers=1) as pool:
        results = list(pool.map(html_to_markdown, ["<h1>A</h1>", "<a href='x'>y</a>"], [BASE] * 2))
    assert results == ["# A\n", "[y](https://example.com/docs/guide/x)\n"]


# ---------------------------------------------------------------- property test

_TAGS = (
    "<p> </p> <div> </div> <ul> <ol> <li> </li> </ul> </ol> <table> <tr> <td> <th_colspan=2> "
    "<td_rowspan=2> </td> </table> <pre> </pre> <code> </code> <a_href='x_y'> <a_href='#a'> "
    "</a> <h2> </h2> <blockquote> </blockquote> <br> <hr> <img_alt='i'> <script> </script> "
    "<b> </b> <em> </em> <x-y> </x-y> <embed> <svg/> <!-- --> <sup> </sup> <sub> </sub>"
).split()
_TEXT = ["text", " ", "\n", "  \n  ", "|", "`", "```", "*", "_", "&amp;", "&nbsp;", "\t"]
_ODD = ["\u2028", "\x0c", "\r\n", "\x00", "\udcff", "\xa0"]
_FRAGMENTS = st.sampled_from([t.replace("_", " ") for t in _TAGS] + _TEXT + _ODD)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_FRAGMENTS, max_size=40).map("".join))
def test_property_output_invariants(html):
    out = md(html)
    assert_clean(out)
    assert not TAG_RE.search(out)
    for tag in ("sup", "sub"):
        assert out.count(f"<{tag}>") == out.count(f"</{tag}>"), out


def test_superscripts_and_subscripts_are_kept_as_inline_html():
    """ "2<sup>7</sup> − 1" is not "27 − 1": the tags stay (GFM renders them)."""
    html = (
        "<p>An <code>i8</code> holds −(2<sup>7</sup>) to 2<sup>7</sup> − 1, "
        "and water is H<sub>2</sub>O.</p>"
        "<table><tr><th>unit</th></tr><tr><td>m<sup>2</sup></td></tr></table>"
        "<h2>E = mc<sup> 2 </sup></h2>"
        "<p>x<sup>a<sub>b</sub></sup>,<sup> </sup>y, <code>2<sup>n</sup></code></p>"
    )
    out = md(html)
    assert_clean(out)
    assert "−(2<sup>7</sup>) to 2<sup>7</sup> − 1" in out
    assert "H<sub>2</sub>O" in out
    assert "| m<sup>2</sup> |" in out
    assert "## E = mc <sup>2</sup>" in out
    assert "x<sup>ab</sup>, y" in out  # nested: marked once; empty: nothing
    assert "`2n`" in out  # in code, the code's text


def test_math_is_written_as_its_tex():
    """KaTeX's MathML carries its TeX in an annotation, MediaWiki's in alttext and its
    image's alt, a LaTeX plugin's image in its alt: $...$, or $$...$$ set apart. MathML
    alone is its text."""
    katex = (
        '<p>So <span class="katex"><span class="katex-mathml"><math><semantics><mrow><msub>'
        "<mi>x</mi><mn>1</mn></msub></mrow>"
        '<annotation encoding="application/x-tex">x_1 * y</annotation></semantics></math>'
        "</span></span> holds.</p>"
        '<div class="katex-display"><math display="block"><semantics><mi>a</mi>'
        '<annotation encoding="application/x-tex">a^2 + b^2</annotation></semantics></math></div>'
    )
    assert md(katex) == "So $x_1 * y$ holds.\n\n$$a^2 + b^2$$\n"
    wiki = (
        '<p>Area <span class="mwe-math-element"><math alttext="{\\displaystyle \\pi r^{2}}">'
        "<mi>π</mi></math></span>, or "
        '<img class="mwe-math-fallback-image-inline" aria-hidden="true" src="a.svg"'
        ' alt="{\\displaystyle \\pi r^{2}}">.'
        '</p><p>Then <img class="latex" alt="e^{i\\pi}" src="latex.php"> and '
        '<math><mi>x</mi><mo>+</mo></math><img class="logo" alt="Our logo" src="logo.png"></p>'
    )
    assert md(wiki) == "Area $\\pi r^{2}$, or $\\pi r^{2}$.\n\nThen $e^{i\\pi}$ and x+\n"


def test_a_long_subscript_is_small_print_not_a_subscript():
    html = "<p><em><sub>Figure 1: an avalanche profile, source SLF</sub></em> 2<sup>n − 1</sup></p>"
    assert md(html) == "*Figure 1: an avalanche profile, source SLF* 2<sup>n − 1</sup>\n"


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        (
            '<div class="highlight-python"><div class="highlight"><pre>'
            '<span class="gp">&gt;&gt;&gt; </span><span class="n">x</span> = 1\n</pre></div></div>',
            "```python\nx = 1\n```\n",
        ),
        (
            '<pre class="language-bash"><code><span class="token prompt">$ </span>'
            "pip install crawlyx</code></pre>",
            "```bash\npip install crawlyx\n```\n",
        ),
        (
            '<pre><code class="language-js"><span class="line-number">1</span>let a;\n'
            '<span class="line-number">2</span>let b;</code></pre>',
            "```js\nlet a;\nlet b;\n```\n",
        ),
        (  # mdBook's hidden lines, as it writes them: each with its line break
            '<pre><code class="language-rust"><span class="boring">#![allow(unused)]\n'
            '</span><span class="boring">fn main() {\n</span>let x = 5;\n'
            'println!("{x}");\n<span class="boring">}</span></code></pre>',
            '```rust\nlet x = 5;\nprintln!("{x}");\n```\n',
        ),
    ],
)
def test_prompts_line_numbers_and_hidden_lines_are_not_code(html, expected):
    assert html_to_markdown(html, "https://example.com/") == expected
