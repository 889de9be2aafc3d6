import random
import string

from crawlyx.graph.neardup import BINS, signature, similarity


def _text(rng, vocabulary, n):
    return " ".join(rng.choice(vocabulary) for _ in range(n))


def test_similarity_follows_jaccard():
    rng = random.Random(7)
    vocabulary = ["".join(rng.choices(string.ascii_lowercase, k=6)) for _ in range(3000)]
    page = _text(rng, vocabulary, 1000)
    words = page.split()
    words[500] = "changed"
    edited = " ".join(words)
    other = _text(rng, vocabulary, 1000)
    assert similarity(signature(page), signature(edited)) >= 0.9
    assert similarity(signature(page), signature(other)) <= 0.1
    assert similarity(signature(page), signature(page)) == 1.0


def test_short_and_empty_texts_have_full_signatures():
    assert len(signature("")) == len(signature("one two")) == BINS * 8
    assert similarity(signature("one two three"), signature("one two three")) == 1.0
    assert similarity(signature("one two three"), signature("four five six")) == 0.0


def test_words_are_split_on_any_whitespace_as_text_is():
    # Separators and spaces outside ASCII split words as a space does, whichever way the
    # text is split for speed.
    spaced = signature("alpha beta gamma delta")
    assert signature("alpha\x1cbeta\x1fgamma delta") == spaced
    assert signature("alpha\u00a0beta\u2003gamma\u3000delta") == spaced
    assert signature("ALPHA\tbeta\n\ngamma \x0b delta") == spaced
    assert signature("alpha beta gamma delta é") != spaced


def test_case_and_digits_do_not_tell_pages_apart():
    # Pages alike but for a counter or a date are alike, in ASCII text or not.
    assert signature("Page 12 of 3456 Next") == signature("page 90 of 1000 next")
    assert signature("Seite 12 von 34 Über") == signature("seite 00 von 00 über")
    assert signature("Page 12 of 3456 Next") != signature("Page 12 of 3456 Back")


def test_every_near_duplicate_pair_is_found_and_no_other():
    from crawlyx.graph.duplicates import near_duplicates

    rng = random.Random(11)
    vocabulary = ["".join(rng.choices(string.ascii_lowercase, k=6)) for _ in range(3000)]
    signatures = {}
    for n in range(40):
        words = _text(rng, vocabulary, 300).split()
        signatures[f"p{n:02}a"] = signature(" ".join(words))
        words[rng.randrange(300)] = "edited"  # about 0.98 alike
        signatures[f"p{n:02}b"] = signature(" ".join(words))
    rows = near_duplicates(signatures)
    assert [row["urls"] for row in rows] == [[f"p{n:02}a", f"p{n:02}b"] for n in range(40)]
