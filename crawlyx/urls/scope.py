"""A crawl's scope: what it may fetch, decided in one place.

The origin the start URL settles on after its redirects (apex -> www works), fixed once
per job by whichever process fetched the start URL and kept in the job's Redis, and the
folder on it the crawl stays in: by default the one the start URL settled in (its path up
to the last ``/``: started at ``https://docs.example.com/guide/`` the crawl means the
guide, not the whole host), the whole origin with ``-a scope=origin``, or a path the user
names (``-a scope=/docs/``). Then the ``allow`` / ``deny`` regexes and the trap rules.

Links out of the folder but on the origin are the site's all the same: the link graph
records them (a broken link to a sibling book is a broken link of the site), they are
never fetched as pages. Built once by the spider and shared (``spider.scope``) with the
redirect middlewares, which hold every hop to it, and the link graph. The URLs it is
given are normalized.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from crawlyx.urls.normalize import normalize_url, url_origin
from crawlyx.urls.traps import TrapRules

FOLDER, ORIGIN = "folder", "origin"  # -a scope=: the start URL's folder, or its origin


class Scope:
    def __init__(
        self,
        traps: TrapRules,
        allow: re.Pattern | None = None,
        deny: re.Pattern | None = None,
        state=None,
        within: str = FOLDER,
    ):
        self.traps = traps
        self.allow = allow
        self.deny = deny
        self.within = within  # FOLDER, ORIGIN or a path on the origin ("/docs/")
        self._state = state  # () -> the job's State, where the origin is kept
        self._origin: str | None = None
        self._root: str | None = None

    @property
    def origin(self) -> str | None:
        """The origin the crawl is on (None until the start URL is fetched)."""
        if self._origin is None:
            self._load()
        return self._origin

    @property
    def root(self) -> str | None:
        """The URL the crawl's pages are under, ending in ``/`` (the origin's ``/`` when
        it crawls the origin; None until the start URL is fetched)."""
        if self._root is None:
            self._load()
        return self._root

    def _load(self) -> None:
        if self._state is None:
            return
        state = self._state()
        origin, root = state.client.hmget(state.key("meta"), "origin", "root")
        self._origin = origin.decode() if origin else None
        # A job begun before scopes had folders crawls its origin.
        self._root = root.decode() if root else (self._origin and self._origin + "/")

    def fix(self, url: str) -> str:
        """The start URL was answered from ``url`` (as fetched, not normalized: its
        folder ends at its last ``/``): its origin and folder are the crawl's, unless
        another process of the job fixed them first. Returns the crawl's root."""
        state = self._state()
        with state.client.pipeline(transaction=True) as pipe:
            pipe.hsetnx(state.key("meta"), "origin", url_origin(url))
            pipe.hsetnx(state.key("meta"), "root", root_of(url, self.within))
            pipe.execute()
        self._origin = self._root = None
        return self.root

    def contains(self, url: str) -> bool:
        """``url`` (normalized) is on the crawl's origin: the site's, for its link graph
        and audit, whether or not it is in the crawl's folder."""
        origin = self.origin
        return origin is not None and url.startswith(origin + "/")

    def normalized(self, url: str) -> str | None:
        """``url`` normalized, if it is a URL on the crawl's origin; None otherwise."""
        try:
            url = normalize_url(url)
        except ValueError:
            return None
        return url if self.contains(url) else None

    def inside(self, url: str) -> bool:
        """``url`` (normalized, on the origin) is in the crawl's folder: the folder's own
        page (``/guide``, which normalization gives without its slash) or under it."""
        root = self.root
        return root is not None and (url.startswith(root) or url.split("?")[0] == root[:-1])

    def allowed(self, url: str) -> bool:
        """A page the crawl fetches: in its folder, allowed by allow/deny (regexes on the
        normalized URL)."""
        if not self.inside(url):
            return False
        if self.allow is not None and not self.allow.search(url):
            return False
        return self.deny is None or not self.deny.search(url)

    def refusal(self, url: str) -> str:
        """Why :meth:`allowed` refuses ``url``, for the errors file and the log."""
        if not self.inside(url):
            return f"outside the crawl's scope {self.root}"
        return "refused by allow/deny"


def root_of(url: str, within: str) -> str:
    """The root a crawl started at ``url`` (as fetched) stays under, with -a scope=
    ``within``: the URL's folder, its origin, or a path on its origin."""
    if within == ORIGIN:
        path = "/"
    elif within == FOLDER:
        path = urlsplit(url).path.rpartition("/")[0] + "/"
    else:
        path = within
    folder = normalize_url(url_origin(url) + path)
    return folder if folder.endswith("/") else folder + "/"
