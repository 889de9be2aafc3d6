"""What a document reader raises: the one name the readers (:mod:`.pdf`, :mod:`.docx`,
:mod:`.reader`) and the crawl process (which names the document in the errors file) share.
A module of its own, so that no reader imports the package that names the types."""

from __future__ import annotations


class Unreadable(Exception):
    """A document that cannot be read: encrypted, broken, or without text (scanned)."""
