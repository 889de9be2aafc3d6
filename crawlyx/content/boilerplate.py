"""Blocks of a page's markdown that are not content: passages the page repeats, the short
lines after an article's end, photo credits and other products.

A page that shows a passage twice (a carousel's cloned slides, the same section laid out
once for phones and once for desktops) says it once in its markdown: :func:`drop_repeats`
drops runs of :data:`REPEAT_RUN` blocks or more, :data:`REPEAT_WORDS` words in all, that
each repeat an earlier block. A sentence said twice stays ("And from the command line:",
a parameter shared by two functions of an API reference), and so does code.

A story's markdown ends with its last paragraph. The short lines after it ("Share this
article", "Mehr zum Thema", a photo credit, "Tags: ...") and the headings left with
nothing under them are the page's furniture: :func:`drop_article_tail` drops them on pages
marked as articles. Code and tables stay; when those lines are a good part of the page
(:data:`TAIL_SHARE`), they are its content (a list of award winners) and stay too.

A photo's caption and credit are not the text either; where the markup does not say
so (no ``<figcaption>``), the credit does: :func:`drop_credits` drops the short blocks
that carry one ("Foto: dpa", "Photograph by ...", "© Getty Images").

A product page shows other products too, under headings that say so ("Similar items",
"Customers who viewed this item also viewed"): :func:`drop_other_products` drops those
sections, each heading with what it heads.

Once the furniture is gone, headings at the very end of a page head nothing:
:func:`drop_trailing_headings` drops them.
"""

from __future__ import annotations

import re

_FENCES = ("```", "~~~")
_DATA = (*_FENCES, "|")  # how a block of code or a table starts


# A run of lines that are not blank.
_BLOCK = re.compile(r"^.*\S.*(?:\n.*\S.*)*", re.MULTILINE)


def split_blocks(markdown: str) -> list[str]:
    """Blank-line separated blocks; a fenced code block is one block."""
    if "```" not in markdown and "~~~" not in markdown:
        return _BLOCK.findall(markdown)  # no fence: what the loop below finds, in C
    blocks: list[str] = []
    current: list[str] = []
    fence = ""
    for line in markdown.split("\n"):
        stripped = line.lstrip()
        if fence:
            current.append(line)
            if stripped.startswith(fence) and not stripped[len(fence) :].strip():
                fence = ""
            continue
        if stripped.startswith(_FENCES):
            marker = stripped[0]
            fence = marker * (len(stripped) - len(stripped.lstrip(marker)))
            current.append(line)
            continue
        if line.strip():
            current.append(line)
        elif current:
            blocks.append("\n".join(current))
            current = []
    if current:
        blocks.append("\n".join(current))
    return blocks


REPEAT_RUN = 3
REPEAT_WORDS = 20


def drop_repeats(markdown: str) -> str:
    """``markdown`` without the runs of blocks that repeat earlier blocks of the page."""
    seen: set[str] = set()
    kept: list[str] = []
    run: list[str] = []  # consecutive blocks, each a repeat

    def end_run():
        if len(run) < REPEAT_RUN or sum(len(b.split()) for b in run) < REPEAT_WORDS:
            kept.extend(run)
        run.clear()

    for block in split_blocks(markdown):
        key = " ".join(block.split())
        if key in seen and not block.lstrip().startswith(_FENCES):
            run.append(block)
            continue
        seen.add(key)
        if run:
            end_run()
        kept.append(block)
    end_run()
    return "\n\n".join(kept) + "\n" if kept else ""


CREDIT_WORDS = 25  # a caption with its credit; a paragraph that names one is text
_CREDIT = re.compile(
    r"\b(?:Fotos?|Bild(?:er)?|Photos?|Image|Credits?|Crédits? photos?)\s*:"
    r"|\bPhotograph by\b|©|\bGetty Images\b|\biStock",
    re.IGNORECASE,
)


# A word each credit has, looked for in lowercased text before the pattern: the pattern
# takes a millisecond over a 50 KB page, the words a twentieth of that.
_CREDIT_WORDS = ("foto", "bild", "photo", "image", "credit", "crédit", "©", "getty", "istock")


def _may_credit(text: str) -> bool:
    lowered = text.lower()
    return any(word in lowered for word in _CREDIT_WORDS)


def drop_credits(markdown: str) -> str:
    """``markdown`` without the short blocks that credit a photo (and so are its caption)."""
    if not _may_credit(markdown):
        return markdown
    blocks = split_blocks(markdown)
    kept = [
        block
        for i, block in enumerate(blocks)
        if not i
        or not _judged(block)
        or len(block.split()) > CREDIT_WORDS
        or not (_may_credit(block) and _CREDIT.search(block))
    ]
    if len(kept) == len(blocks):
        return markdown
    return "\n\n".join(kept) + "\n"


TAIL_PARAGRAPH = 20  # words of a block that is the story's text
TAIL_LINE = 6  # a block this short after the story's last paragraph is furniture
TAIL_SHARE = 0.15
_SENTENCE_END = re.compile(r"\w[.!][\"'“”»*_)]*$")  # not "?": "Read this too?" is a teaser


def drop_article_tail(markdown: str) -> str:
    """An article's ``markdown`` without the short lines after its last paragraph."""
    blocks = split_blocks(markdown)
    paragraphs = [
        i
        for i, block in enumerate(blocks)
        if len(block.split()) >= TAIL_PARAGRAPH and not block.startswith(_DATA)
    ]
    if not paragraphs:
        return markdown
    tail = blocks[paragraphs[-1] + 1 :]
    kept = [b for b in tail if not _furniture(b)]
    kept = [  # a heading with nothing left under it
        b
        for b, after in zip(kept, [*kept[1:], None], strict=False)
        if not b.startswith("#") or (after is not None and not after.startswith("#"))
    ]
    dropped = sum(len(b.split()) for b in tail) - sum(len(b.split()) for b in kept)
    if not dropped or dropped > TAIL_SHARE * len(markdown.split()):
        return markdown
    return "\n\n".join(blocks[: paragraphs[-1] + 1] + kept) + "\n"


def _furniture(block: str) -> bool:
    """A short line after an article's text ("Share this article", an author's name, "More
    on this"), not a closing sentence of it ("See you tomorrow.")."""
    words = block.split()
    if len(words) > TAIL_LINE or not _judged(block):
        return False
    return len(words) < 2 or not _SENTENCE_END.search(block)


# A heading over other products than the page's, at its start.
_OTHER_PRODUCTS = re.compile(
    r"#+\s+[*_\[]*(?:similar|related|recommended|more from|"
    r"you (?:may|might|will) (?:also )?(?:like|love|enjoy)|"
    r"(?:people|customers) (?:who|also)|explore related|frequently bought)\b",
    re.IGNORECASE,
)


def drop_other_products(markdown: str) -> str:
    """A product page's ``markdown`` without the sections about other products."""
    kept: list[str] = []
    level = 0  # of the heading over the section being dropped; 0 when none is
    for block in split_blocks(markdown):
        if block.startswith("#"):
            depth = len(block) - len(block.lstrip("#"))
            if level and depth <= level:
                level = 0  # the next section of the page's own
            if not level and depth > 1 and _OTHER_PRODUCTS.match(block):  # not the title
                level = depth
        if not level:
            kept.append(block)
    return "\n\n".join(kept) + "\n" if kept else ""


def drop_trailing_headings(markdown: str) -> str:
    """``markdown`` without the headings it ends with: a heading at the end heads nothing
    ("Related posts", "Leave a comment" over what was dropped as furniture). The first
    block, the page's title, stays."""
    if not markdown.rstrip().rpartition("\n\n")[2].startswith("#"):
        return markdown  # the common case, without splitting the page into blocks
    blocks = split_blocks(markdown)
    while len(blocks) > 1 and blocks[-1].startswith("#"):
        blocks.pop()
    return "\n\n".join(blocks) + "\n"


def _judged(block: str) -> bool:
    """Paragraphs, lists and quotes are judged; headings, code and tables never."""
    return not block.startswith(("#", *_DATA))
