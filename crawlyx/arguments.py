"""The spider's arguments, checked before anything starts.

Every bad value stops the crawl with one line that names the argument and what it
accepts; so does an unknown argument (a misspelt one would otherwise be ignored, and the
crawl run without it), naming the closest known one. Arguments starting with ``_`` are the
runner's, not the crawl's (scrapyd passes ``_job`` and ``_version``): they are ignored.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, fields
from urllib.parse import unquote, urlsplit

from crawlyx.config import closest
from crawlyx.urls.normalize import normalize_url
from crawlyx.urls.scope import FOLDER, ORIGIN

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}
RENDER_MODES = ("never", "auto", "always")  # -a render=: when pages go through the browser
EMIT_MODES = ("changed", "all")  # -a emit=: which pages a refresh run writes
REFRESH_ALL = "all"
# -a chunks=: the smallest size, in tokens; a smaller one cuts at nearly every line.
MIN_CHUNK_TOKENS = 50  # -a refresh=all: every registered page, not only those due
# -a job=: a job name, also a Redis key segment (crawlyx:{job}:...), so no ':' or '*'.
JOB_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


class ArgumentError(ValueError):
    """A bad spider argument; the message names it and what is accepted."""


@dataclass(frozen=True)
class CrawlArgs:
    start: str
    max_pages: int | None = None
    max_depth: int | None = None
    # What the crawl fetches: the start URL's folder, its origin, or a path on the origin.
    scope: str = FOLDER
    allow: re.Pattern | None = None
    deny: re.Pattern | None = None
    sitemap: bool = True
    job: str | None = None
    errors: str | None = None
    render: str = "auto"
    report: str | None = None
    refresh: str | None = None  # None: a full crawl; "due" (-a refresh=1) or "all"
    emit: str = "changed"
    # Made from the crawl's link graph when it ends (crawlyx/graph/outputs.py).
    audit: str | None = None  # .md: the markdown summary; else the JSON report
    tree: str | None = None
    llms_txt: str | None = None
    llms_full: str | None = None
    # -a chunks=N: each item's markdown also in chunks of N tokens at most (content/chunks.py)
    chunks: int | None = None
    # (user, password) the start URL carried (https://user:pass@host/), taken out of it.
    credentials: tuple[str, str] | None = field(default=None, repr=False)

    @classmethod
    def parse(cls, start=None, scope=None, max_pages=None, max_depth=None, allow=None, deny=None,
              sitemap=None, job=None, errors=None, render=None, report=None,
              refresh=None, emit=None, audit=None, tree=None, llms_txt=None,
              llms_full=None, chunks=None, **others) -> CrawlArgs:  # fmt: skip
        """Validate the spider arguments; those starting with ``_`` (scrapyd's ``_job``)
        are ignored, any other unknown one is refused."""
        for name in others:
            if not name.startswith("_"):
                known = [f.name for f in fields(cls) if f.repr]  # not credentials: no -a
                raise ArgumentError(_unknown(name, known))
        if not start:
            raise ArgumentError("start: required, an absolute http(s) URL (-a start=https://...)")
        parts = urlsplit(start.strip())
        # file:///etc/passwd names its scheme (localhost:8000 does not: it lacks one).
        named = parts.scheme and (parts.netloc or "://" in start)
        if named and parts.scheme.lower() not in ("http", "https"):
            raise ArgumentError(
                f"start: scheme {parts.scheme!r} is not supported; use http or https"
            )
        if named and not parts.netloc:  # "http://", "https:///path"
            raise ArgumentError(f"start: {start!r} names no host")
        if not parts.scheme or not parts.netloc:
            raise ArgumentError(f"start: {start!r} is not an absolute URL; add http:// or https://")
        start, credentials = _without_credentials(start.strip())
        try:
            normalize_url(start)
        except ValueError as exc:
            raise ArgumentError(f"start: {exc}") from None
        if job is not None and not JOB_NAME.fullmatch(job):
            raise ArgumentError(
                f"job: {job!r} is not a valid name; use letters, digits, '.', '_' or '-'"
            )
        return cls(
            start=start,
            credentials=credentials,
            scope=_scope(scope),
            max_pages=_limit("max_pages", max_pages, minimum=1),
            max_depth=_limit("max_depth", max_depth, minimum=0),
            allow=_regex("allow", allow),
            deny=_regex("deny", deny),
            sitemap=_flag("sitemap", sitemap, default=True),
            job=job,
            errors=_writable("errors", errors),
            render=_choice("render", render, RENDER_MODES, default="auto"),
            report=_writable("report", report),
            refresh=_refresh(refresh),
            emit=_choice("emit", emit, EMIT_MODES, default="changed"),
            audit=_writable("audit", audit),
            tree=_writable("tree", tree),
            llms_txt=_writable("llms_txt", llms_txt),
            llms_full=_writable("llms_full", llms_full),
            chunks=_limit("chunks", chunks, minimum=MIN_CHUNK_TOKENS),
        )


def _scope(value) -> str:
    """-a scope=: ``folder`` (the start URL's), ``origin`` (its host), or a path on the
    origin, from its ``/`` (``/docs/``: pages under /docs/)."""
    text = str(value or "").strip()
    if text.lower() in ("", FOLDER, ORIGIN):
        return text.lower() or FOLDER
    if not text.startswith("/") or text.startswith("//") or "?" in text or "#" in text:
        raise ArgumentError(
            f"scope: {value!r} is not folder, origin or a path from / (such as /docs/)"
        )
    return text


def _without_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """``url`` without the user and password it carries (percent-decoded), and those."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    user, password = unquote(parts.username or ""), unquote(parts.password or "")
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl(), (user, password)


def _unknown(name: str, known: list[str]) -> str:
    match = closest(name, known)
    hint = f"did you mean {match}?" if match else f"known: {', '.join(known)}"
    return f"{name}: unknown argument; {hint}"


def _choice(name: str, value, choices: tuple[str, ...], default: str) -> str:
    if value is None or value == "":
        return default
    text = str(value).strip().lower()
    if text not in choices:
        raise ArgumentError(f"{name}: {value!r} is not one of {', '.join(choices)}")
    return text


def _limit(name: str, value, minimum: int) -> int | None:
    if value is None or value == "":
        return None
    try:
        number = int(str(value).strip())
    except ValueError:
        raise ArgumentError(f"{name}: {value!r} is not a whole number") from None
    if number < minimum:
        raise ArgumentError(f"{name}: {number} is out of range; use {minimum} or more")
    return number


def _regex(name: str, value) -> re.Pattern | None:
    if value is None or value == "":
        return None
    try:
        return re.compile(value)
    except re.error as exc:
        raise ArgumentError(
            f"{name}: {value!r} is not a valid regular expression ({exc})"
        ) from None


def _flag(name: str, value, default: bool) -> bool:
    if value is None or value == "":
        return default
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ArgumentError(f"{name}: {value!r} is not a boolean; use 1/0, true/false, yes/no, on/off")


def _refresh(value) -> str | None:
    if str(value).strip().lower() == REFRESH_ALL:
        return REFRESH_ALL
    try:
        return "due" if _flag("refresh", value, default=False) else None
    except ArgumentError:
        raise ArgumentError(
            f"refresh: {value!r} is not 1/0, true/false, yes/no, on/off or all"
        ) from None


def _writable(name: str, value) -> str | None:
    if value is None or value == "":
        return None
    folder = os.path.dirname(os.path.abspath(value)) or "."
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        raise ArgumentError(
            f"{name}: cannot write {value!r}; its folder does not exist or is read-only"
        )
    return value
