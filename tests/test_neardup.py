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
