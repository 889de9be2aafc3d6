"""URL normalization for crawl deduplication.

Every link the crawler discovers goes through :func:`normalize_url` before it is compared
against the frontier, so two spellings of the same resource (``HTTP://Example.com:80/a/./b#x``
and ``http://example.com/a/b``) collapse to one key.

A URL is first parsed and resolved as a browser does, by the WHATWG URL Standard
(https://url.spec.whatwg.org/), with ada-url, the parser Node.js uses: ``\\`` reads as ``/``,
``https:example.com`` is followed, scheme and host are lowercased, a host is mapped by UTS 46
(``faß.example`` -> ``xn--fa-hia.example``), an IPv4 host in any spelling becomes a dotted
quad (``0x7f000001`` -> ``127.0.0.1``) and an IPv6 one is compressed, the default port, empty
userinfo and dot segments go, and what must be escaped is. What a browser rejects (a bad
port, ``1.2.3.4.5``, a space in the host) is rejected. On that parse crawlyx applies its own
dedup policy: small pure functions that take and return a
:class:`urllib.parse.SplitResult`, in a fixed order, so the URL is split once and joined once.

1. :func:`resolve_relative`            the WHATWG parse of the link against the page URL
2. :func:`remove_fragment`             ``#section``
3. :func:`strip_tracking_params`       ``utm_*``, ``gclid``, ``fbclid``, ...
4. :func:`strip_session_ids`           ``;jsessionid=...``, ``PHPSESSID``, ...
5. :func:`sort_query_params`           ``?b=2&a=1`` -> ``?a=1&b=2``
6. :func:`canonical_percent_encoding`  ``%7e`` -> ``~``, ``%2f`` -> ``%2F``, ``|`` -> ``%7C``
7. :func:`normalize_trailing_slash`    ``/docs/`` -> ``/docs``

Rules 3 and 4 match percent-decoded parameter names and rule 5 sorts parameters by their
canonical (rule 6) spelling, so the result does not depend on how a parameter happened to be
escaped, and normalizing twice changes nothing.

The trailing-slash form is a *dedup key* policy: the crawler dedups on it, while the fetch
itself may use the URL as it was discovered.
"""

from __future__ import annotations

import functools
import re
import string
from operator import methodcaller
from urllib.parse import SplitResult, quote, unquote, urlsplit, urlunsplit

import ada_url

__all__ = [
    "SESSION_PARAMS",
    "TRACKING_PARAMS",
    "TRACKING_PREFIXES",
    "canonical_percent_encoding",
    "fetch_form",
    "ipv4_host",
    "normalize_trailing_slash",
    "normalize_url",
    "remove_fragment",
    "resolve_relative",
    "sort_query_params",
    "strip_session_ids",
    "strip_tracking_params",
    "url_origin",
    "without_session",
]

#: Query parameter names that only carry click/campaign tracking. Matched against the
#: percent-decoded name, ASCII case-insensitively.
TRACKING_PARAMS: frozenset[str] = frozenset(
    {
        # Google Ads / Analytics / Merchant
        "gclid",
        "gclsrc",
        "dclid",
        "gbraid",
        "wbraid",
        "gad_source",
        "_ga",
        "_gl",
        "srsltid",
        # Meta / Instagram
        "fbclid",
        "igshid",
        "igsh",
        # Microsoft, Yandex
        "msclkid",
        "yclid",
        "ysclid",
        # Mailchimp
        "mc_cid",
        "mc_eid",
        # Twitter/X, TikTok, LinkedIn, Snapchat, Reddit, Pinterest, Nextdoor
        "ref_src",
        "twclid",
        "ttclid",
        "li_fat_id",
        "sccid",
        "rdt_cid",
        "epik",
        "ndclid",
        # HubSpot, Marketo, Adobe, Klaviyo, Impact, Openstat, Vero, Olytics, Bronto
        "_hsenc",
        "_hsmi",
        "__hssc",
        "__hstc",
        "__hsfp",
        "hsctatracking",
        "mkt_tok",
        "s_kwcid",
        "ef_id",
        "_kx",
        "irclickid",
        "_openstat",
        "vero_id",
        "vero_conv",
        "oly_anon_id",
        "oly_enc_id",
        "_bta_tid",
        "_bta_c",
        "wickedid",
        "rb_clickid",
    }
)

#: Query parameter name prefixes that only carry tracking (matched like TRACKING_PARAMS).
TRACKING_PREFIXES: tuple[str, ...] = ("utm_",)

#: Query parameter names that carry a visitor's session (matched like TRACKING_PARAMS). A
#: site that keeps sessions in its URLs for clients that take no cookies (crawlyx takes
#: none) puts a new one in every link of every page it serves: each page would be met
#: under as many URLs as there are pages linking to it, for ever. Besides these, a ``sid``
#: whose value is a hex token (phpBB's) and a ``;jsessionid=`` path parameter (Java
#: servlets) are sessions.
SESSION_PARAMS: frozenset[str] = frozenset(
    {"phpsessid", "jsessionid", "sessionid", "session_id", "sessid", "cfid", "cftoken",
     "oscsid", "zenid"}
)  # fmt: skip
_SESSION_TOKEN = re.compile(r"[0-9A-Fa-f]{16,}")
_PATH_SESSION = re.compile(r";jsessionid=[^/]*", re.IGNORECASE)
_SESSION_HINTS = ("sess", "sid", "cf", "zenid")  # in every session name: a cheap screen


_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_HTTP_SCHEMES = frozenset({"http", "https"})

# RFC 3986 character classes. Everything outside *_SAFE (plus "%") is percent-encoded.
_UNRESERVED = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
_SUB_DELIMS = "!$&'()*+,;="
_PATH_SAFE = _SUB_DELIMS + ":@/"  # "/" separates segments; quote() adds the unreserved set
# A browser escapes "'" in the query of an http(s) URL (WHATWG special-query set), not in the path.
_QUERY_SAFE = _PATH_SAFE.replace("'", "") + "?"
_PATH_UNSAFE_RE = re.compile("[^" + re.escape(_UNRESERVED + _PATH_SAFE) + "]")
_QUERY_UNSAFE_RE = re.compile("[^" + re.escape(_UNRESERVED + _QUERY_SAFE) + "]")


def _build_escape_table() -> dict[str, str]:
    """Map every 2-hex-digit spelling to its canonical form (decoded if unreserved)."""
    hexdigits = "0123456789abcdefABCDEF"
    table = {}
    for hi in hexdigits:
        for lo in hexdigits:
            char = chr(int(hi + lo, 16))
            table[hi + lo] = char if char in _UNRESERVED else "%" + (hi + lo).upper()
    return table


_ESCAPES = _build_escape_table()


def _canonical_component(text: str, unsafe_re: re.Pattern[str], safe: str) -> str:
    """Decode unreserved escapes, uppercase other escapes, encode characters not allowed raw.

    A "%" that does not start a valid escape is itself encoded as "%25".
    """
    if "%" not in text:
        return text if unsafe_re.search(text) is None else quote(text, safe=safe)
    chunks = text.split("%")
    head = chunks[0]
    out = [head if unsafe_re.search(head) is None else quote(head, safe=safe)]
    for chunk in chunks[1:]:
        escape = _ESCAPES.get(chunk[:2])
        if escape is None:
            out.append("%25")
        else:
            out.append(escape)
            chunk = chunk[2:]
        if chunk:
            out.append(chunk if unsafe_re.search(chunk) is None else quote(chunk, safe=safe))
    return "".join(out)


def _canonical_param_key(param: str) -> tuple[str, str, str]:
    """(name, "=" or "", value) of the canonical spelling of a query parameter."""
    return _canonical_component(param, _QUERY_UNSAFE_RE, _QUERY_SAFE).partition("=")


# Sort key for parameters already in canonical spelling. Ordering the partition tuples
# (name, "=" or "", value) equals ordering by (name, value) with "a" before "a=", since a
# parameter without "=" has an empty value: a total order, so permutations sort identically.
_raw_param_key = methodcaller("partition", "=")

# SplitResult(...) goes through a Python-level __new__; this is the same, twice as fast.
_new = tuple.__new__


# The WHATWG parse writes numeric IPv4 hosts as dotted quads itself; ipv4_host() serves the
# SSRF guard, which reads hosts of URLs that did not come through normalize_url.
# An IPv4 address part as inet_aton(3) reads it: hex (0x..), octal (leading 0) or decimal.
_IPV4_PART_RE = re.compile(r"0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*")
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_DOTTED_QUAD_RE = re.compile(rf"{_OCTET}(?:\.{_OCTET}){{3}}")


def ipv4_host(host: str) -> str | None:
    """The dotted quad of a host that is a numeric IPv4 address in any spelling inet_aton
    accepts (``0x7f000001``, ``2130706433``, ``127.1``, ``0177.0.0.1``), also with a trailing
    dot as browsers allow (``127.0.0.1.``); None for anything else (a name, ``256.0.0.1``)."""
    if not host[:1].isdigit():
        return None
    if _DOTTED_QUAD_RE.fullmatch(host) is not None:
        return host  # already canonical: the common case
    parts = host.split(".")
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()
    if len(parts) > 4:
        return None
    values = []
    for part in parts:
        if not part.isascii() or _IPV4_PART_RE.fullmatch(part) is None:
            return None
        if part[:2] in ("0x", "0X"):
            values.append(int(part[2:], 16))
        else:
            values.append(int(part, 8) if part[0] == "0" else int(part))
    *head, last = values
    # a.b.c.d: 8 bits each; a.b.c: 8.8.16; a.b: 8.24; a: 32 bits.
    if any(value > 255 for value in head) or last >= 1 << (8 * (4 - len(head))):
        return None
    address = last
    for i, value in enumerate(head):
        address |= value << (24 - 8 * i)
    return f"{address >> 24}.{(address >> 16) & 255}.{(address >> 8) & 255}.{address & 255}"


# --------------------------------------------------------------------------------------------
# The rules, in the order normalize_url applies them
# --------------------------------------------------------------------------------------------


def resolve_relative(url: str, base: str | None = None) -> SplitResult:
    """The URL a browser makes of link ``url`` on page ``base`` (WHATWG URL parsing), split.

    ValueError if a browser would reject it (a relative URL without a base included).
    """
    if base:
        href = ada_url.join_url(base, url)
    else:
        href = ada_url.URL(url).href  # UnicodeEncodeError (a ValueError) for lone surrogates
    scheme, _, rest = href.partition("://")
    if scheme not in _HTTP_SCHEMES:
        return urlsplit(href)
    # The serialization of an http(s) URL escapes "/" in userinfo, "?" in the path and "#"
    # before the fragment, and its path starts with "/": splitting it takes three finds
    # (urlsplit would take longer than the parse).
    rest, _, fragment = rest.partition("#")
    slash = rest.find("/")
    path, _, query = rest[slash:].partition("?")
    return _new(SplitResult, (scheme, rest[:slash], path, query, fragment))


def remove_fragment(parts: SplitResult) -> SplitResult:
    """Drop the fragment: it is never sent to the server, so it names the same resource."""
    scheme, netloc, path, query, fragment = parts
    if not fragment:
        return parts
    return _new(SplitResult, (scheme, netloc, path, query, ""))


def strip_tracking_params(parts: SplitResult) -> SplitResult:
    """Remove tracking parameters (TRACKING_PARAMS, TRACKING_PREFIXES; names case-insensitive)."""
    scheme, netloc, path, query, fragment = parts
    if not query:
        return parts
    kept = untracked_query(query)
    if kept is query:
        return parts
    return _new(SplitResult, (scheme, netloc, path, kept, fragment))


def untracked_query(query: str) -> str:
    """``query`` without its tracking parameters (see :func:`strip_tracking_params`):
    ``query`` itself when it has none."""
    if "%" not in query:
        # Cheap screen (false positives only): no tracking name among the lowercased pieces.
        lowered = query.lower()
        for prefix in TRACKING_PREFIXES:
            if prefix in lowered:
                break
        else:
            if TRACKING_PARAMS.isdisjoint(lowered.replace("=", "&").split("&")):
                return query
    params = query.split("&")
    kept = []
    for param in params:
        name = param.partition("=")[0]
        if "%" in name:
            name = unquote(name)
        # ASCII-only case folding: str.lower() would also map e.g. KELVIN SIGN to "k".
        name = name.lower() if name.isascii() else name.translate(_ASCII_LOWER)
        if name not in TRACKING_PARAMS and not name.startswith(TRACKING_PREFIXES):
            kept.append(param)
    if len(kept) == len(params):
        return query
    return "&".join(kept)


def strip_session_ids(parts: SplitResult) -> SplitResult:
    """Remove session ids: a ``;jsessionid=`` path parameter, SESSION_PARAMS, and a ``sid``
    whose value is a hex token of 16 digits or more."""
    scheme, netloc, path, query, fragment = parts
    new_path = _PATH_SESSION.sub("", path) if ";" in path else path
    new_query = query
    if query and any(hint in query.lower() for hint in _SESSION_HINTS):
        new_query = "&".join(param for param in query.split("&") if not _session(param))
    if new_path == path and new_query == query:
        return parts
    return _new(SplitResult, (scheme, netloc, new_path, new_query, fragment))


def without_session(url: str) -> str:
    """``url`` as it is written, but for its session ids (:func:`strip_session_ids`): a
    link kept in a page's markdown (the page reads the same to every visitor)."""
    if ";" not in url and "?" not in url:  # most links: nothing to look for
        return url
    lowered = url.lower()
    if ";jsessionid=" not in lowered and not any(hint in lowered for hint in _SESSION_HINTS):
        return url
    try:
        return urlunsplit(strip_session_ids(urlsplit(url)))
    except ValueError:
        return url


def _session(param: str) -> bool:
    name, _, value = param.partition("=")
    if "%" in name:
        name = unquote(name)
    name = name.lower() if name.isascii() else name.translate(_ASCII_LOWER)
    return name in SESSION_PARAMS or (name == "sid" and bool(_SESSION_TOKEN.fullmatch(value)))


def sort_query_params(parts: SplitResult) -> SplitResult:
    """Stable-sort params by (name, value), keeping blank values and repeats; drop empty ones."""
    scheme, netloc, path, query, fragment = parts
    if "&" not in query:
        return parts  # zero or one parameter; an empty query is never written back as "?"
    params = query.split("&")
    if "" in params:
        params = [p for p in params if p]
    # Compare canonical (rule 6) spellings so "%7e" and "~" sort alike: keeps the result
    # idempotent and independent of how the page happened to escape its links.
    if "%" in query or _QUERY_UNSAFE_RE.search(query) is not None:
        params.sort(key=_canonical_param_key)
    else:
        params.sort(key=_raw_param_key)
    sorted_query = "&".join(params)
    if sorted_query == query:
        return parts
    return _new(SplitResult, (scheme, netloc, path, sorted_query, fragment))


def canonical_percent_encoding(parts: SplitResult) -> SplitResult:
    """Decode unreserved escapes, uppercase the rest (%2F stays), encode chars not allowed raw."""
    scheme, netloc, path, query, fragment = parts
    new_path = _canonical_component(path, _PATH_UNSAFE_RE, _PATH_SAFE)
    new_query = _canonical_component(query, _QUERY_UNSAFE_RE, _QUERY_SAFE) if query else query
    if new_path is path and new_query is query:
        return parts
    return _new(SplitResult, (scheme, netloc, new_path, new_query, fragment))


def normalize_trailing_slash(parts: SplitResult) -> SplitResult:
    """Empty path becomes "/"; a non-root path loses its trailing slash(es) (dedup-key policy)."""
    path = parts.path
    if path == "/" or (path and path[-1] != "/"):
        return parts
    scheme, netloc, path, query, fragment = parts
    return _new(SplitResult, (scheme, netloc, path.rstrip("/") or "/", query, fragment))


# --------------------------------------------------------------------------------------------
# Public entry points
# --------------------------------------------------------------------------------------------


def normalize_url(url: str, base: str | None = None) -> str:
    """Return the canonical http(s) form of url (resolved against base), used as dedup key.

    Raises ValueError naming the URL when a browser would not resolve it to an http/https URL
    (mailto:, javascript:, data:, ftp:, ``http://``, a bad port, ``1.2.3.4.5``, ...).
    """
    if base is not None:
        simple = _normalize_simple(url, base)
        if simple is not None:
            return simple
        return _normalize_full(url, base)
    return _normalize_absolute(url)


# A page's URL is normalized on its way through the crawl process by each component that
# keys on it (the spider, the politeness middlewares, the graph, the breadth sketch), a
# few moments apart: the last few thousand answers are kept. Errors are not cached.
@functools.lru_cache(maxsize=4096)
def _normalize_absolute(url: str) -> str:
    return _normalize_full(url)


# A root-relative reference written in characters that need no escaping and without dot
# segments (most links on a page) resolves against the base's origin alone, the parse
# leaves it as it is, and of the rules only 3, 4, 5 and 7 can change it: the short way gives
# what the full one would (a property test holds them equal) at a fraction of the cost.
_SIMPLE_PATH = "[" + re.escape(_UNRESERVED + _PATH_SAFE) + "]*"
_SIMPLE_QUERY = "[" + re.escape(_UNRESERVED + _QUERY_SAFE) + "]*"
_SIMPLE_REF_RE = re.compile(f"/(?!/){_SIMPLE_PATH}(?:[?]{_SIMPLE_QUERY})?")


@functools.lru_cache(maxsize=64)
def _base_origin(base: str) -> tuple[str, str]:
    """The normalized scheme and authority of ``base`` (ValueError if it has none)."""
    parts = urlsplit(_normalize_full(base))
    return parts.scheme, parts.netloc


def _normalize_simple(url: str, base: str) -> str | None:
    """:func:`normalize_url` of a simple root-relative ``url``, or None if it is not one."""
    if _SIMPLE_REF_RE.fullmatch(url) is None:
        return None
    path, _, query = url.partition("?")
    if "/." in path:
        return None
    try:
        scheme, netloc = _base_origin(base)
    except ValueError:
        return None  # the full way says what is wrong with the base
    parts = _new(SplitResult, (scheme, netloc, path, query, ""))
    parts = strip_session_ids(strip_tracking_params(parts))
    parts = normalize_trailing_slash(sort_query_params(parts))
    return _join(parts)


def _join(parts: SplitResult) -> str:
    # Same as urlunsplit() for this shape (non-empty netloc, absolute path, no fragment).
    if parts.query:
        return f"{parts.scheme}://{parts.netloc}{parts.path}?{parts.query}"
    return f"{parts.scheme}://{parts.netloc}{parts.path}"


def _normalize_full(url: str, base: str | None = None) -> str:
    """:func:`normalize_url`, every rule in turn."""
    try:
        try:
            parts = resolve_relative(url, base)
        except ValueError:
            # What a browser would not resolve to a URL either.
            raise ValueError("not a valid URL" if base else "not a valid absolute URL") from None
        if parts.scheme not in _HTTP_SCHEMES:
            raise ValueError(f"not an http(s) URL (scheme {parts.scheme!r})")
        parts = remove_fragment(parts)
        parts = strip_tracking_params(parts)
        parts = strip_session_ids(parts)
        parts = sort_query_params(parts)
        parts = canonical_percent_encoding(parts)
        parts = normalize_trailing_slash(parts)
    except ValueError as exc:
        where = f"{url!r}" if base is None else f"{url!r} (base {base!r})"
        raise ValueError(f"cannot normalize URL {where}: {exc}") from exc
    return _join(parts)


@functools.lru_cache(maxsize=4096)
def url_origin(url: str) -> str:
    """Return "scheme://host[:port]" of the normalized url (no userinfo; default port omitted)."""
    parts = urlsplit(normalize_url(url))
    host = parts.netloc.rpartition("@")[2]
    return f"{parts.scheme}://{host}"


def fetch_form(normalized: str, written: str) -> str:
    """The URL to fetch for a link: its normalized form, with the trailing slash put back
    when the link was written with one. Servers redirect /docs to /docs/ (or back), so
    fetching the written form saves a hop; every other rule names the same resource."""
    path = written.split("#", 1)[0].split("?", 1)[0]
    if not path.endswith("/"):
        return normalized
    head, sep, query = normalized.partition("?")
    if head.endswith("/"):
        return normalized
    return head + "/" + sep + query
