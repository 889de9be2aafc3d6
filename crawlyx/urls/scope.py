"""A crawl's scope: what it may fetch, decided in one place.

The origin the start URL settles on after its redirects (apex -> www works), fixed once
per job by whichever process fetched the start URL and kept in the job's Redis; the
``allow`` / ``deny`` regexes; the trap rules. Built once by the spider and shared
(``spider.scope``) with the redirect middlewares, which hold every hop to it, and the
link graph, which records only the origin's URLs. The URLs it is given are normalized.
"""

from __future__ import annotations

import re

from crawlyx.urls.normalize import normalize_url, url_origin
from crawlyx.urls.traps import TrapRules


class Scope:
    def __init__(
        self,
        traps: TrapRules,
        allow: re.Pattern | None = None,
        deny: re.Pattern | None = None,
        state=None,
    ):
        self.traps = traps
        self.allow = allow
        self.deny = deny
        self._state = state  # () -> the job's State, where the origin is kept
        self._origin: str | None = None

    @property
    def origin(self) -> str | None:
        """The origin the crawl is confined to (None until the start URL is fetched)."""
        if self._origin is None and self._state is not None:
            state = self._state()
            raw = state.client.hget(state.key("meta"), "origin")
            self._origin = raw.decode() if raw else None
        return self._origin

    def fix(self, url: str) -> str:
        """The start URL was answered from ``url``: its origin is the crawl's, unless
        another process of the job fixed one first. Returns the crawl's origin."""
        state = self._state()
        state.client.hsetnx(state.key("meta"), "origin", url_origin(url))
        self._origin = None
        return self.origin

    def contains(self, url: str) -> bool:
        """``url`` (normalized) is on the crawl's origin."""
        origin = self.origin
        return origin is not None and url.startswith(origin + "/")

    def normalized(self, url: str) -> str | None:
        """``url`` normalized, if it is a URL on the crawl's origin; None otherwise."""
        try:
            url = normalize_url(url)
        except ValueError:
            return None
        return url if self.contains(url) else None

    def allowed(self, url: str) -> bool:
        """Allowed by allow/deny (regexes on the normalized URL)."""
        if self.allow is not None and not self.allow.search(url):
            return False
        return self.deny is None or not self.deny.search(url)
