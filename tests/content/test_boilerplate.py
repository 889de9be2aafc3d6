"""Blocks of a page's markdown that are not content, judged on the page alone."""

from crawlyx.content.boilerplate import (
    drop_article_tail,
    drop_credits,
    drop_other_products,
    drop_repeats,
    drop_trailing_headings,
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


def test_headings_a_page_ends_with_go():
    page = "# Muffins\n\nMix, then bake.\n\n### Gallery\n\n## Leave a comment\n"
    assert drop_trailing_headings(page) == "# Muffins\n\nMix, then bake.\n"
    assert drop_trailing_headings("# Muffins\n") == "# Muffins\n"  # the title stays
    kept = "# Muffins\n\n## Baking\n\nMix, then bake.\n"
    assert drop_trailing_headings(kept) == kept
