"""Documentation sites crawled as their reader sees them, one per generator (mdBook,
Sphinx, MkDocs Material, Docusaurus, rustdoc: tests/sites/docs_sites.py): each page headed by
its own title and never by the site's name, none of the generator's chrome, code as the
page shows it, and the tree and llms.txt in the navigation's order, not the URLs'."""

from __future__ import annotations

import re

import pytest

from tests.sites.docs_sites import GENERATORS, PAGES, SITE, DocsSite, heading


@pytest.mark.parametrize("generator", sorted(GENERATORS))
def test_a_docs_site_as_its_reader_sees_it(generator, crawl, tmp_path):
    tree, llms = tmp_path / "tree.md", tmp_path / "llms.txt"
    with DocsSite(generator) as site:
        start = f"{site.base}/book/index.html"
        result = crawl(f"start={start}", f"tree={tree}", f"llms_txt={llms}")
        assert result.returncode == 0, result.log[-3000:]
        items = {item["url"].removeprefix(f"{site.base}/book/"): item for item in result.items}
        # The book, not the other one beside it.
        assert sorted(items) == sorted(path for path, _, _ in PAGES)
        for path, title, _ in PAGES:
            md = items[path]["markdown"]
            assert md.startswith(f"# {heading(generator, title)}\n\n"), (path, md[:300])
            headings = re.findall(r"^#+ (.*)$", md, re.M)
            assert not any(SITE in h for h in headings), (path, headings)
            assert f"{title}: This page of the toolkit explains" in md
            for chrome in ("Keyboard shortcuts", "Copy item path", "Theme", "Next", "¶"):
                assert chrome not in md, (path, chrome, md)
            if generator == "mdbook":  # the hidden lines around the example
                assert "```rust\nlet genome = load();\n```" in md
        # The tree and llms.txt in the navigation's order: Zeta before Alpha.
        order = [
            re.search(r"\]\(([^)]+)\)", line).group(1).removeprefix(f"{site.base}/book/")
            for line in tree.read_text().splitlines()
            if line.lstrip().startswith("- [")
        ]
        assert order == [path for path, _, _ in PAGES], tree.read_text()
        listed = [path for path, _, _ in PAGES if f"{site.base}/book/{path})" in llms.read_text()]
        positions = [llms.read_text().index(f"{site.base}/book/{path})") for path in listed]
        assert listed == [path for path, _, _ in PAGES] and positions == sorted(positions)


def test_a_folder_and_its_index_file_are_one_page(crawl):
    # Started at the book's folder, whose pages link its index.html: one page, one fetch.
    with DocsSite("mdbook") as site:
        result = crawl(f"start={site.base}/book/")
        assert result.returncode == 0, result.log[-3000:]
        urls = [item["url"].removeprefix(f"{site.base}/book") for item in result.items]
        assert sorted(urls) == ["", "/alpha.html", "/alpha/depth.html", "/zeta.html"]
        assert site.counts["/book/index.html"] == 1
