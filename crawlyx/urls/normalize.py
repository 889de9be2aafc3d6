"""URL normalization for crawl deduplication.

Every link the crawler discovers goes through :func:`normalize_url` before it is compared
against the frontier, so two spellings of the same resource (``HTTP://Example.com:80/a/./b#x``
and ``http://example.com/a/b``) collapse to one key.

The rules are small pure functions applied in a fixed order. Rule 1 takes the raw strings and
returns a :class:`urllib.parse.SplitResult`; the others take and return a ``SplitResult``, so
the URL is split once and joined once per call.

1. :func:`resolve_relative`        resolve against the page URL, drop dot segments
2. :func:`lowercase_scheme_host`   ``HTTP://Example.COM`` -> ``http://example.com``,
                                   ``http://0x7f000001`` -> ``http://127.0.0.1``
3. :func:`idna_host`               ``bücher.de`` -> ``xn--bcher-kva.de``
4. :func:`remove_default_port`     ``:80`` (http), ``:443`` (https) and an empty ``:``
5. :func:`remove_fragment`         ``#section``
6. :func:`strip_tracking_params`   ``utm_*``, ``gclid``, ``fbclid``, ...
7. :func:`sort_query_params`       ``?b=2&a=1`` -> ``?a=1&b=2``
8. :func:`canonical_percent_encoding`  ``%7e`` -> ``~``, ``%2f`` -> ``%2F``, `` `` -> ``%20``
9. :func:`normalize_trailing_slash`    ``""`` -> ``/``, ``/docs/`` -> ``/docs``

Rule 6 matches percent-decoded parameter names and rule 7 sorts parameters by their canonical
(rule 8) spelling, so the result does not depend on how a parameter happened to be escaped,
and normalizing twice changes nothing.

The trailing-slash form is a *dedup key* policy: the crawler dedups on it, while the fetch
itself may use the URL as it was discovered.
"""

from __future__ import annotations

import functools
import re
import string
from operator import methodcaller
from urllib.parse import SplitResult, quote, unquote, urlsplit

__all__ = [
    "TRACKING_PARAMS",
    "TRACKING_PREFIXES",
    "canonical_percent_encoding",
    "idna_host",
    "ipv4_host",
    "lowercase_scheme_host",
    "normalize_trailing_slash",
    "normalize_url",
    "remove_default_port",
    "remove_fragment",
    "resolve_relative",
    "sort_query_params",
    "strip_tracking_params",
    "url_origin",
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


_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_HTTP_SCHEMES = frozenset({"http", "https"})
_DEFAULT_PORTS = {"http": "80", "https": "443"}

# Leading/trailing characters browsers strip (C0 controls and space), and the ones they
# remove anywhere in the URL (tab, LF, CR).
_C0_CONTROL_OR_SPACE = "".join(map(chr, range(0x21)))
_TAB_NEWLINE = str.maketrans("", "", "\t\n\r")

# Dot segments, including their percent-encoded spellings (which rule 8 would decode).
_DOT_SEGMENTS = frozenset({".", "%2e", "%2E"})
_DOUBLE_DOT_SEGMENTS = frozenset(a + b for a in (".", "%2e", "%2E") for b in (".", "%2e", "%2E"))

# RFC 3986 character classes. Everything outside *_SAFE (plus "%") is percent-encoded.
_UNRESERVED = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
_SUB_DELIMS = "!$&'()*+,;="
_PATH_SAFE = _SUB_DELIMS + ":@/"  # "/" separates segments; quote() adds the unreserved set
_QUERY_SAFE = _PATH_SAFE + "?"
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

# A normalized authority: optional userinfo, then an IPv6/IPvFuture literal or a registered
# name / IPv4 without WHATWG "forbidden domain code points", then an optional numeric port.
_NETLOC_RE = re.compile(
    r"(?:.*@)?(?:\[[^\[\]]+\]|[^\x00-\x20\x7f#%/:<>?@\[\\\]^|]+)(?::[0-9]+)?", re.DOTALL
)


def _clean(url: str) -> str:
    """Strip surrounding C0 controls/spaces and drop tab/newline characters anywhere."""
    url = url.strip(_C0_CONTROL_OR_SPACE)
    if "\t" in url or "\n" in url or "\r" in url:
        url = url.translate(_TAB_NEWLINE)
    return url


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4, treating %2E as "."; empty segments ("//") are kept."""
    if "/." not in path and "/%2" not in path:
        return path
    segments = path.split("/")
    output: list[str] = []
    for segment in segments[1:]:
        if segment in _DOT_SEGMENTS:
            continue
        if segment in _DOUBLE_DOT_SEGMENTS:
            if output:
                output.pop()
            continue
        output.append(segment)
    last = segments[-1]
    if last in _DOT_SEGMENTS or last in _DOUBLE_DOT_SEGMENTS:
        output.append("")  # "/a/b/.." names the directory "/a/"
    return "/" + "/".join(output)


def _split_netloc(netloc: str) -> tuple[str, str, str]:
    """Split an authority into ("userinfo@" or "", host, port); port is "" when absent."""
    userinfo, at, hostport = netloc.rpartition("@")
    if hostport[:1] == "[":
        end = hostport.find("]") + 1
        host, port = hostport[:end], hostport[end + 1 :]
        if end == 0 or hostport[end : end + 1] not in ("", ":"):
            raise ValueError(f"invalid IPv6 host {hostport!r}")
    else:
        host, _, port = hostport.partition(":")
    return userinfo + at, host, port


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
    """Resolve url against base like urljoin (RFC 3986) after browser cleanup; drop dot segments."""
    ref = urlsplit(_clean(url))
    if base:
        b = urlsplit(_clean(base))
        if ref.scheme and (ref.scheme != b.scheme or ref.netloc):
            pass  # absolute URL ("http:g" with an http base is relative, as in urljoin)
        elif ref.netloc:  # network-path reference: "//host/path"
            ref = _new(SplitResult, (b.scheme, ref.netloc, ref.path, ref.query, ref.fragment))
        else:
            path, query = ref.path, ref.query
            if not path:
                path = b.path
                if not query and "?" not in url.partition("#")[0]:
                    query = b.query
            elif path[0] != "/":
                # Merge with the base directory. Unlike urljoin, empty segments are kept.
                path = (b.path[: b.path.rfind("/") + 1] or "/") + path
            ref = _new(SplitResult, (b.scheme, b.netloc, path, query, ref.fragment))
    scheme, netloc, path, query, fragment = ref
    if path[:1] == "/":
        new_path = _remove_dot_segments(path)
        if new_path is not path:
            ref = _new(SplitResult, (scheme, netloc, new_path, query, fragment))
    return ref


def lowercase_scheme_host(parts: SplitResult) -> SplitResult:
    """Lowercase scheme and host; userinfo and path keep their case (paths are case-sensitive).

    A numeric IPv4 host in any inet_aton spelling becomes its dotted quad, as browsers do:
    ``http://0x7f000001/``, ``http://127.1/`` and ``http://127.0.0.1./`` are ``http://127.0.0.1/``.
    """
    scheme, netloc, path, query, fragment = parts
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        lowered = userinfo + "@" + hostport.lower()
    else:
        lowered = netloc.lower()
    host_at = lowered.rfind("@") + 1
    if lowered[host_at : host_at + 1].isdigit():
        host, colon, port = lowered[host_at:].partition(":")
        quad = ipv4_host(host)
        if quad is not None and quad is not host:
            lowered = lowered[:host_at] + quad + colon + port
    if lowered == netloc and scheme.islower():
        return parts
    return _new(SplitResult, (scheme.lower(), lowered, path, query, fragment))


def idna_host(parts: SplitResult) -> SplitResult:
    """Encode a non-ASCII host as IDNA punycode (xn--); ValueError if it cannot be encoded."""
    scheme, netloc, path, query, fragment = parts
    if netloc.isascii():
        return parts
    userinfo, host, port = _split_netloc(netloc)
    if host.isascii():  # only the userinfo is non-ASCII: left as is
        return parts
    if host[:1] == "[":
        raise ValueError(f"invalid IPv6 host {host!r}")
    try:
        ascii_host = host.encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise ValueError(f"host {host!r} cannot be IDNA-encoded: {exc}") from None
    # Full-width digits and dots map to ASCII ones: the result may be a numeric IPv4 host.
    ascii_host = ipv4_host(ascii_host) or ascii_host
    netloc = userinfo + ascii_host + (":" + port if port else "")
    return _new(SplitResult, (scheme, netloc, path, query, fragment))


def remove_default_port(parts: SplitResult) -> SplitResult:
    """Drop :80 for http, :443 for https and an empty port; other ports lose leading zeros."""
    scheme, netloc, path, query, fragment = parts
    if ":" not in netloc.rpartition("@")[2]:
        return parts
    userinfo, host, port = _split_netloc(netloc)
    if port:
        if not (port.isascii() and port.isdigit()) or int(port) > 65535:
            raise ValueError(f"invalid port {port!r}")
        port = str(int(port))
        if _DEFAULT_PORTS.get(scheme) == port:
            port = ""
    new_netloc = userinfo + host + (":" + port if port else "")
    if new_netloc == netloc:
        return parts
    return _new(SplitResult, (scheme, new_netloc, path, query, fragment))


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
    if "%" not in query:
        # Cheap screen (false positives only): no tracking name among the lowercased pieces.
        lowered = query.lower()
        for prefix in TRACKING_PREFIXES:
            if prefix in lowered:
                break
        else:
            if TRACKING_PARAMS.isdisjoint(lowered.replace("=", "&").split("&")):
                return parts
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
        return parts
    return _new(SplitResult, (scheme, netloc, path, "&".join(kept), fragment))


def sort_query_params(parts: SplitResult) -> SplitResult:
    """Stable-sort params by (name, value), keeping blank values and repeats; drop empty ones."""
    scheme, netloc, path, query, fragment = parts
    if "&" not in query:
        return parts  # zero or one parameter; an empty query is never written back as "?"
    params = query.split("&")
    if "" in params:
        params = [p for p in params if p]
    # Compare canonical (rule 8) spellings so "%7e" and "~" sort alike: keeps the result
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

    Raises ValueError naming the URL when it is not an http/https URL with a non-empty, valid
    host (mailto:, javascript:, data:, ftp:, ``http:///x``, bad port, un-encodable IDN, ...).
    """
    if base is not None:
        simple = _normalize_simple(url, base)
        if simple is not None:
            return simple
    return _normalize_full(url, base)


# A root-relative reference written in characters that need no escaping and without dot
# segments (most links on a page) resolves against the base's origin alone, and of the
# rules only 6, 7 and 9 can change it: the short way gives what the full one would (a
# property test holds them equal) at a fraction of the cost.
_SIMPLE_REF_RE = re.compile("/(?!/)[" + re.escape(_UNRESERVED + _QUERY_SAFE) + "]*")


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
    parts = normalize_trailing_slash(sort_query_params(strip_tracking_params(parts)))
    return _join(parts)


def _join(parts: SplitResult) -> str:
    # Same as urlunsplit() for this shape (non-empty netloc, absolute path, no fragment).
    if parts.query:
        return f"{parts.scheme}://{parts.netloc}{parts.path}?{parts.query}"
    return f"{parts.scheme}://{parts.netloc}{parts.path}"


def _normalize_full(url: str, base: str | None = None) -> str:
    """:func:`normalize_url`, every rule in turn."""
    try:
        parts = resolve_relative(url, base)
        parts = lowercase_scheme_host(parts)
        if parts.scheme not in _HTTP_SCHEMES:
            if not parts.scheme:
                raise ValueError("relative URL without an http(s) base")
            raise ValueError(f"not an http(s) URL (scheme {parts.scheme!r})")
        if not parts.netloc:
            raise ValueError("empty host")
        parts = idna_host(parts)
        parts = remove_default_port(parts)
        parts = remove_fragment(parts)
        parts = strip_tracking_params(parts)
        parts = sort_query_params(parts)
        parts = canonical_percent_encoding(parts)
        parts = normalize_trailing_slash(parts)
        netloc = parts.netloc
        if _NETLOC_RE.fullmatch(netloc) is None:
            raise ValueError(f"invalid or empty host in {netloc!r}")
    except ValueError as exc:
        where = f"{url!r}" if base is None else f"{url!r} (base {base!r})"
        raise ValueError(f"cannot normalize URL {where}: {exc}") from exc
    return _join(parts)


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
