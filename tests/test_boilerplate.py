"""Site-level boilerplate: blocks repeated across the pages of one crawl."""

import subprocess
import sys

from crawlyx.content.boilerplate import (
    RepeatedBlocks,
    block_keys,
    drop_article_tail,
    drop_credits,
    drop_other_products,
    drop_repeats,
    split_blocks,
)


def test_split_blocks_keeps_fenced_code_whole():
    md = "# Title\n\nPara one\nstill one\n\n```python\na = 1\n\n\nb = 2\n```\n\n- x\n- y\n"
    assert split_blocks(md) == [
        "# Title",
        "Para one\nstill one",
        "```python\na = 1\n\n\nb = 2\n```",
        "- x\n- y",
    ]


def page(n: int) -> str:
    return (
        f"# Page {n}\n\nText only page {n} has.\n\nSubscribe to our newsletter!\n\n"
        "## Parameters\n\n```sh\npip install thing\n```\n\n| a | b |\n| --- | --- |\n| 1 | 2 |\n"
    )


def test_repeated_paragraphs_go_structure_stays():
    repeated = RepeatedBlocks(min_pages=3, share=0.2)
    outputs = [repeated.filter(page(n)) for n in range(6)]
    assert [dropped for _, dropped in outputs] == [0, 0, 1, 1, 1, 1]
    last, _ = outputs[-1]
    assert "Subscribe to our newsletter!" not in last
    # Title, unique text, headings, code and tables always stay.
    for kept in (
        "# Page 5",
        "Text only page 5 has.",
        "## Parameters",
        "pip install thing",
        "| 1 | 2 |",
    ):
        assert kept in last


def test_share_of_pages_is_required_too():
    repeated = RepeatedBlocks(min_pages=2, share=0.5)
    for n in range(10):
        repeated.filter(f"# P{n}\n\nUnique {n}.\n")
    # Seen on 3 of 13 pages: under half, so it stays.
    results = [repeated.filter(f"# Q{n}\n\nOccasional promo.\n")[1] for n in range(3)]
    assert results == [0, 0, 0]


def test_counts_are_bounded():
    repeated = RepeatedBlocks(capacity=100)
    for n in range(1000):
        repeated.filter(f"# T\n\nunique paragraph {n}\n")
    assert len(repeated.counts) <= 101


def test_block_keys_judge_prose_only_and_are_the_same_in_every_process():
    markdown = "# Title\n\nA paragraph.\n\n## Heading\n\n```\ncode\n```\n\n| a |\n\n- item\n"
    keys = block_keys(markdown)
    assert [k is None for k in keys] == [True, False, True, True, True, False]
    assert keys[1] == block_keys("# Other\n\nA paragraph.\n")[1]
    script = f"from crawlyx.content.boilerplate import block_keys; print(block_keys({markdown!r}))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == repr(keys)  # not Python's per-process str hash


def test_a_passage_shown_twice_on_a_page_is_said_once():
    slide = "## Smooth display\n\nA bright screen that is easy on the eyes, day and night."
    note = "And from the command line, with the same options as before:"
    code = "```\nprint('hello world, again and again')\n```"
    markdown = f"# Tablet\n\n{slide}\n\n{note}\n\n{code}\n\n{slide}\n\n{note}\n\n{code}\n\n{note}\n"
    assert (
        drop_repeats(markdown) == f"# Tablet\n\n{slide}\n\n{note}\n\n{code}\n\n{code}\n\n{note}\n"
    )
    assert drop_repeats("") == ""


def test_short_lines_after_an_article_s_last_paragraph_go():
    story = "\n\n".join(
        f"Paragraph {i} of the story says what happened in the town last night, who was "
        "there, when they came and what they saw."
        for i in range(6)
    )
    table = "| Team | Points |\n| --- | --- |\n| Lions | 32 |"
    tail = f"Photo: Jane Doe\n\n{table}\n\n## More on this\n\nShare this article\n\nTags: town"
    out = drop_article_tail(f"# Story\n\n{story}\n\n{tail}\n")
    assert out == f"# Story\n\n{story}\n\n{table}\n"
    # A heading with something under it, and lines that are much of the page, stay.
    kept = f"# Story\n\n{story}\n\n## Contact\n\nWrite to the newsroom at the town hall.\n"
    assert drop_article_tail(kept) == kept
    winners = "\n\n".join(f"Studio {i}, Honoree" for i in range(40))
    listing = f"# Winners\n\n{story}\n\n{winners}\n"
    assert drop_article_tail(listing) == listing
    # A story's closing sentences stay however short; a question is as often a teaser.
    closing = f"# Story\n\n{story}\n\nThanks. See you tomorrow.\n\nBe there!\n"
    assert drop_article_tail(closing) == closing
    teaser = f"# Story\n\n{story}\n\nRead this too?\n"
    assert drop_article_tail(teaser) == f"# Story\n\n{story}\n"
    assert drop_article_tail("# Title only\n") == "# Title only\n"
    assert drop_article_tail("") == ""


def test_blocks_that_credit_a_photo_go():
    text = (
        "The mayor opened the new bridge on Sunday. Photo: the bridge seen from the river, "
        "where the old ferry used to land, on a long paragraph that the story goes on with."
    )
    page = (
        "# Bridge opens\n\nFoto: dpa\n\nThe mayor at the opening.\n© Getty Images\n\n"
        f"{text}\n\nPhotograph by Jane Doe\n\n## Image: the old ferry\n\n"
        "| Photo: | Place |\n| --- | --- |\n| 1 | pier |\n"
    )
    assert drop_credits(page) == (
        f"# Bridge opens\n\n{text}\n\n## Image: the old ferry\n\n"
        "| Photo: | Place |\n| --- | --- |\n| 1 | pier |\n"
    )
    # The title stays whatever it says; a page without credits comes back as it was.
    assert drop_credits("# Photo: a week in pictures\n") == "# Photo: a week in pictures\n"
    assert drop_credits(f"# Bridge\n\n{text}\n") == f"# Bridge\n\n{text}\n"


def test_a_product_page_s_sections_about_other_products_go():
    page = (
        "## People who viewed this item also viewed\n\n### Brass desk lamp\n\n$40\n\n"
        "# Walnut desk lamp\n\nA lamp turned from one piece of walnut.\n\n"
        "## Specifications\n\n- Height: 42 cm\n\n"
        "## Similar items\n\n- [Oak lamp](/oak) $55\n\n### Pine lamp\n\n$30\n\n"
        "## Shipping\n\nShips in two days.\n"
    )
    out = drop_other_products(page)
    assert out == (
        "# Walnut desk lamp\n\nA lamp turned from one piece of walnut.\n\n"
        "## Specifications\n\n- Height: 42 cm\n\n## Shipping\n\nShips in two days.\n"
    )
    # The title is the product's whatever it says.
    title = "# Related Designs walnut lamp\n\nA lamp turned from walnut.\n"
    assert drop_other_products(title) == title


def chapter(n: int, listings: int) -> str:
    """A book's chapter: every listing labelled with its file and captioned."""
    parts = [f"# Chapter {n}", f"Chapter {n} opens with a paragraph of its own."]
    for m in range(listings):
        parts += [
            f"Listing {n}-{m} does the work of step {m}, as the text explains at length here.",
            "Filename: src/main.rs",
            f'```rust\nfn main() {{ println!("{n}-{m}"); }}\n```',
            f"Listing {n}-{m}: Printing a number",
            "Output:",
            f"```console\n{n}-{m}\n```",
            f"The program prints {n}-{m}, which is what step {m} wanted, and nothing more.",
        ]
    parts.append("Found a typo? Edit this page on the book's repository.")
    return "\n\n".join(parts) + "\n"


def test_a_block_s_fate_does_not_depend_on_the_pages_read_before():
    """ "Filename: src/main.rs" above a listing is on every page, as often as the site's
    note: it stays on every page whatever the crawl's order, the note at the end goes."""
    pages = [chapter(n, listings=1 + n % 4) for n in range(30)]
    for order in (pages, pages[::-1]):
        repeated = RepeatedBlocks()
        outputs = [repeated.filter(markdown)[0] for markdown in order]
        for markdown, out in zip(order, outputs, strict=True):
            for label in ("Filename: src/main.rs", "Output:", ": Printing a number", "does the"):
                assert out.count(label) == markdown.count(label), label
        assert sum("Edit this page" in out for out in outputs) == 4  # the first pages only


def test_block_keys_judge_the_ends_of_a_page_and_not_labels_of_code():
    middle = "\n\n".join(f"Paragraph {n} of the page's own text." for n in range(8))
    markdown = f"# T\n\nPromo.\n\n{middle}\n\nLabel:\n\n```\ncode\n```\n\n- a list\n\nNote.\n"
    judged = [k is not None for k in block_keys(markdown)]
    # the title, three blocks after it, the middle, a label, the code, the last three
    assert judged == [False] + [True] * 3 + [False] * 6 + [False, False, True, True]
    judged = [k is not None for k in block_keys("# T\n\nA.\n\nLabel:\n\n| a |\n")]
    assert judged == [False, True, False, False]
