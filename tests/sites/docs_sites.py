"""Small documentation sites in the shape each generator writes its pages (mdBook, Sphinx
with furo, MkDocs Material, Docusaurus, rustdoc), served on 127.0.0.1.

Each is the same book of four pages: an introduction (the start page), then "Zeta",
"Alpha" and "Alpha, in depth" (nested under Alpha) in its navigation's order, which is
not the order of their URLs (``alpha.html`` sorts before ``zeta.html``). Every page
carries the generator's chrome: the site's name in its header or menu bar, its
navigation, permalinks, buttons, help popups.
"""

from __future__ import annotations

from collections import Counter

from tests.sites.site import QuietHandler, Serving

SITE = "Genome Toolkit"
# path, title, the path of the page it is nested under (None: top level)
PAGES = [
    ("index.html", "Introduction", None),
    ("zeta.html", "Zeta", None),
    ("alpha.html", "Alpha", None),
    ("alpha/depth.html", "Alpha, in depth", "alpha.html"),
]
WORDS = (
    "This page of the toolkit explains one part of it in plain words, with an example "
    "a reader can follow from start to end."
)


def _root(path: str) -> str:
    return "../" * path.count("/")


def _body(title: str) -> str:
    return f"<p>{title}: {WORDS}</p><p>Read the pages in the order the menu gives them.</p>"


def _list(path: str, item: str, link: str = "") -> str:
    """The navigation as nested lists, one item (of class ``item``, its link of class
    ``link``) per page."""
    out, open_sub = ["<ul>"], False
    for target, title, parent in PAGES:
        if parent and not open_sub:
            out.append("<ul>")
            open_sub = True
        elif not parent and open_sub:
            out.append("</ul>")
            open_sub = False
        href = _root(path) + target
        out.append(f'<li class="{item}"><a class="{link}" href="{href}">{title}</a></li>')
    out.append("</ul></ul>" if open_sub else "</ul>")
    return "".join(out)


def mdbook(path: str, title: str) -> str:
    return f"""<!doctype html><html lang="en"><head><meta charset="UTF-8">
<title>{title} - {SITE}</title><meta property="og:title" content="{SITE}">
<script src="{_root(path)}toc-0a1b2c3d.js"></script></head><body>
<div id="mdbook-help-container"><div id="mdbook-help-popup">
<h2 class="mdbook-help-title">Keyboard shortcuts</h2><div>
<p>Press <kbd>←</kbd> or <kbd>→</kbd> to navigate between chapters</p>
<p>Press <kbd>S</kbd> or <kbd>/</kbd> to search in the book</p></div></div></div>
<div id="mdbook-body-container"><nav id="mdbook-sidebar" class="sidebar">
<mdbook-sidebar-scrollbox class="sidebar-scrollbox"></mdbook-sidebar-scrollbox>
<noscript><iframe class="sidebar-iframe-outer" src="{_root(path)}toc.html"></iframe></noscript>
</nav><div id="mdbook-page-wrapper" class="page-wrapper"><div class="page">
<div id="mdbook-menu-bar" class="menu-bar sticky"><div class="left-buttons">
<button id="mdbook-theme-toggle" class="icon-button" type="button">Theme</button></div>
<h1 class="menu-title">{SITE}</h1></div>
<div id="mdbook-content" class="content"><main>
<h1 id="t"><a class="header" href="#t">{title}</a></h1>{_body(title)}
<pre><code class="language-rust"><span class="boring">fn main() {{
</span>let genome = load();
<span class="boring">}}</span></code></pre></main></div></div></div></div>
<script src="{_root(path)}book-0a1b2c3d.js"></script></body></html>"""


def mdbook_toc() -> str:
    return (
        '<!doctype html><html><head><base target="_parent"></head><body><ol class="chapter">'
        + _list("toc.html", "chapter-item").replace("<ul>", "<ol>").replace("</ul>", "</ol>")
        + "</ol></body></html>"
    )


def sphinx(path: str, title: str) -> str:
    toc = _list(path, "toctree-l1", "reference internal")
    return f"""<!doctype html><html lang="en"><head>
<title>{title} - {SITE} 2.1 documentation</title>
<script src="{_root(path)}_static/documentation_options.js"></script></head><body>
<div class="page"><aside class="sidebar-drawer"><div class="sidebar-container">
<a class="sidebar-brand" href="{_root(path)}index.html"><span class="sidebar-brand-text">{SITE} 2.1
documentation</span></a><div class="sidebar-tree">{toc}</div></div></aside>
<div class="main"><div class="content"><article role="main" id="furo-main-content">
<section id="s"><h1>{title}<a class="headerlink" href="#s" title="Link to this heading">¶</a></h1>
{_body(title)}</section></article></div><footer><div class="related-pages">
<a class="next-page" href="#">Next</a></div></footer></div></div></body></html>"""


def mkdocs(path: str, title: str) -> str:
    nav = _list(path, "md-nav__item", "md-nav__link")
    return f"""<!doctype html><html lang="en"><head>
<meta name="generator" content="mkdocs-1.6.1, mkdocs-material-9.6.15">
<title>{title} - {SITE}</title></head><body><header class="md-header"><nav class="md-header__inner">
<div class="md-header__title"><span class="md-ellipsis">{SITE}</span></div></nav></header>
<div class="md-container"><main class="md-main"><div class="md-main__inner md-grid">
<div class="md-sidebar md-sidebar--primary"><nav class="md-nav md-nav--primary">
<label class="md-nav__title">{SITE}</label>{nav}</nav></div>
<div class="md-content"><article class="md-content__inner md-typeset">
<h1 id="t">{title}<a class="headerlink" href="#t" title="Permanent link">¶</a></h1>
{_body(title)}</article></div></div></main></div></body></html>"""


def docusaurus(path: str, title: str) -> str:
    menu = _list(path, "menu__list-item", "menu__link")
    return f"""<!doctype html><html lang="en"><head>
<meta name="generator" content="Docusaurus v3.10.2">
<title>{title} | {SITE}</title><meta property="og:title" content="{title} | {SITE}"></head><body>
<nav class="navbar navbar--fixed-top"><div class="navbar__inner"><a class="navbar__brand" href="/">
<b class="navbar__title text--truncate">{SITE}</b></a></div></nav><div class="main-wrapper">
<div class="docsWrapper"><aside class="theme-doc-sidebar-container">
<nav class="menu thin-scrollbar">
{menu}</nav></aside><main class="docMainContainer"><div class="row"><div class="col">
<article><nav class="theme-doc-breadcrumbs" aria-label="Breadcrumbs"><ul class="breadcrumbs">
<li class="breadcrumbs__item"><a class="breadcrumbs__link" href="/">Home</a></li></ul></nav>
<div class="theme-doc-markdown markdown"><header><h1>{title}</h1></header>{_body(title)}</div>
</article><nav class="pagination-nav" aria-label="Docs pages"><a class="pagination-nav__link"
href="#">Next</a></nav></div></div></main></div></div></body></html>"""


def rustdoc(path: str, title: str) -> str:
    kind = "Crate" if path == "index.html" else "Module"
    listing = ""
    if path == "index.html":  # the crate's module listing, in its order
        listing = (
            '<h2 id="modules" class="section-header">Modules<a href="#modules" class="anchor">'
            '§</a></h2><dl class="item-table">'
            + "".join(
                f'<dt><a class="mod" href="{p}">{t}</a></dt><dd>{t} of the toolkit.</dd>'
                for p, t, _ in PAGES[1:]
            )
            + "</dl>"
        )
    return f"""<!doctype html><html lang="en"><head><meta name="generator" content="rustdoc">
<title>{title} - Rust</title></head><body class="rustdoc mod">
<nav class="sidebar"><div class="sidebar-crate"><h2><a href="{_root(path)}index.html">{SITE}</a>
<span class="version">2.1.0</span></h2></div></nav><main><div class="width-limiter">
<section id="main-content" class="content"><div class="main-heading">
<h1>{kind} <span>{title}</span>&nbsp;<button id="copy-path"
title="Copy item path to clipboard">Copy item path</button></h1>
<rustdoc-toolbar></rustdoc-toolbar><span class="sub-heading"><a class="src" href="#">Source</a>
</span></div><details class="toggle top-doc" open><summary class="hideme"><span>Expand
description</span></summary><div class="docblock">{_body(title)}</div></details>{listing}
</section></div></main></body></html>"""


GENERATORS = {
    "mdbook": mdbook,
    "sphinx": sphinx,
    "mkdocs": mkdocs,
    "docusaurus": docusaurus,
    "rustdoc": rustdoc,
}


def heading(generator: str, title: str) -> str:
    """The page's first heading as its reader sees it."""
    if generator == "rustdoc":
        return f"{'Crate' if title == 'Introduction' else 'Module'} {title}"
    return title


class DocsSite(Serving):
    """``generator``'s book on 127.0.0.1, under ``/book/`` (beside another book)."""

    def __init__(self, generator: str):
        render = GENERATORS[generator]
        pages = {f"/book/{path}": render(path, title) for path, title, _ in PAGES}
        if generator == "mdbook":
            pages["/book/toc.html"] = mdbook_toc()
        pages["/other/index.html"] = render("index.html", "Another book")
        self.counts: Counter[str] = Counter()  # requests per page, "/book/" as its index
        counts = self.counts

        class Handler(QuietHandler):
            def do_GET(self):  # noqa: N802
                path = self.path.split("?")[0]
                path = path + "index.html" if path.endswith("/") else path
                counts[path] += 1
                body = pages.get(path)
                if body is None:
                    self.reply(404, "<html><body><h1>Not found</h1></body></html>")
                else:
                    self.reply(200, body)

        super().__init__(Handler)
