"""Tests for crawlyx.urls.normalize: one block of examples per rule, then hypothesis properties."""

from __future__ import annotations

import re
from collections import Counter
from urllib.parse import unquote, urlsplit

import idna
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crawlyx.urls.normalize import (
    SESSION_PARAMS,
    TRACKING_PARAMS,
    TRACKING_PREFIXES,
    _normalize_full,
    _normalize_simple,
    canonical_percent_encoding,
    ipv4_host,
    normalize_trailing_slash,
    normalize_url,
    remove_fragment,
    resolve_relative,
    sort_query_params,
    strip_session_ids,
    strip_tracking_params,
    url_origin,
)


def check(cases: list[tuple[str, str]]) -> None:
    for url, expected in cases:
        assert normalize_url(url) == expected, url


# --------------------------------------------------------------------------------------------
# 1. resolve_relative: the WHATWG parse (dot segments, whitespace, case, IDNA, ports)
# --------------------------------------------------------------------------------------------

RFC_BASE = "http://a/b/c/d;p?q"

# RFC 3986 section 5.4 examples, with the trailing-slash rule (9) applied to the expectation.
RFC_EXAMPLES = [
    ("g", "http://a/b/c/g"),
    ("./g", "http://a/b/c/g"),
    ("g/", "http://a/b/c/g"),
    ("/g", "http://a/g"),
    ("//g", "http://g/"),
    ("?y", "http://a/b/c/d;p?y"),
    ("g?y", "http://a/b/c/g?y"),
    ("#s", "http://a/b/c/d;p?q"),
    ("g#s", "http://a/b/c/g"),
    ("g?y#s", "http://a/b/c/g?y"),
    (";x", "http://a/b/c/;x"),
    ("g;x", "http://a/b/c/g;x"),
    ("", "http://a/b/c/d;p?q"),
    (".", "http://a/b/c"),
    ("./", "http://a/b/c"),
    ("..", "http://a/b"),
    ("../", "http://a/b"),
    ("../g", "http://a/b/g"),
    ("../..", "http://a/"),
    ("../../", "http://a/"),
    ("../../g", "http://a/g"),
    ("../../../g", "http://a/g"),
    ("../../../../g", "http://a/g"),
    ("/./g", "http://a/g"),
    ("/../g", "http://a/g"),
    ("g.", "http://a/b/c/g."),
    (".g", "http://a/b/c/.g"),
    ("g..", "http://a/b/c/g.."),
    ("..g", "http://a/b/c/..g"),
    ("./../g", "http://a/b/g"),
    ("./g/.", "http://a/b/c/g"),
    ("g/./h", "http://a/b/c/g/h"),
    ("g/../h", "http://a/b/c/h"),
    ("g;x=1/./y", "http://a/b/c/g;x=1/y"),
    ("g;x=1/../y", "http://a/b/c/y"),
    ("g?y/./x", "http://a/b/c/g?y/./x"),
    ("g#s/../x", "http://a/b/c/g"),
    ("http:g", "http://a/b/c/g"),  # urljoin (and browser) behaviour for a same-scheme base
]


@pytest.mark.parametrize(("ref", "expected"), RFC_EXAMPLES)
def test_resolve_rfc3986_examples(ref: str, expected: str) -> None:
    assert normalize_url(ref, RFC_BASE) == expected


def test_resolve_relative_with_dotdot_and_dot() -> None:
    base = "https://example.com/docs/guide/intro.html"
    assert normalize_url("../api/./index.html", base) == "https://example.com/docs/api/index.html"
    assert normalize_url("./setup", base) == "https://example.com/docs/guide/setup"
    assert normalize_url("/root", base) == "https://example.com/root"
    assert normalize_url("//cdn.example.org/x", base) == "https://cdn.example.org/x"
    assert normalize_url("?page=2", base) == "https://example.com/docs/guide/intro.html?page=2"
    assert normalize_url("https://other.com/p", base) == "https://other.com/p"
    assert normalize_url("other", "http://example.com") == "http://example.com/other"


def test_resolve_relative_returns_split_result() -> None:
    parts = resolve_relative("../c/./d?x#f", "http://a.com/b/e/f")
    assert tuple(parts) == ("http", "a.com", "/b/c/d", "x", "f")


def test_dot_segments_in_absolute_urls() -> None:
    check(
        [
            ("http://a.com/a/./b/../c", "http://a.com/a/c"),
            ("http://a.com/a/b/..", "http://a.com/a"),
            ("http://a.com/../../x", "http://a.com/x"),
            ("http://a.com/a/%2e%2E/b/.%2e/c/%2E", "http://a.com/c"),  # escaped dots are dots
            ("http://a.com/a/..b/c.", "http://a.com/a/..b/c."),
        ]
    )


def test_double_slashes_are_not_collapsed() -> None:
    assert normalize_url("http://a.com/x//y") == "http://a.com/x//y"
    assert normalize_url("http://a.com//") == "http://a.com/"  # trailing slashes only
    # urljoin would give /x/y/g/h here; empty segments are part of the resource name.
    assert normalize_url("g//h", "http://a.com/x//y/") == "http://a.com/x//y/g//h"


def test_backslashes_are_slashes() -> None:
    # Browsers read "\\" as "/" in an http(s) URL: these are the links a browser follows.
    base = "https://example.com/docs/api/page.html"
    assert normalize_url("..\\guide\\install.html", base) == (
        "https://example.com/docs/guide/install.html"
    )
    assert normalize_url("\\\\other.example\\path", base) == "https://other.example/path"
    assert normalize_url("http://a.com\\x\\y") == "http://a.com/x/y"


def test_special_scheme_without_slashes() -> None:
    base = "https://a.com/dir/page"
    assert normalize_url("https:/example.com/x", base) == "https://a.com/example.com/x"
    assert normalize_url("https:example.com/x", base) == "https://a.com/dir/example.com/x"
    assert normalize_url("http:example.com/x", base) == "http://example.com/x"  # other scheme
    assert normalize_url("https:/example.com/x") == "https://example.com/x"
    assert normalize_url("http:///x") == "http://x/"  # as a browser reads it


def test_whitespace_is_stripped() -> None:
    check(
        [
            ("  http://a.com/x  ", "http://a.com/x"),
            ("\n\thttp://a.com/x\r\n", "http://a.com/x"),
            ("http://a.\tcom/x\n/y", "http://a.com/x/y"),
            ("http://a.com/a b", "http://a.com/a%20b"),  # inner spaces are encoded, not removed
        ]
    )
    assert normalize_url(" ../x ", " http://a.com/b/c ") == "http://a.com/x"


# --------------------------------------------------------------------------------------------
# 1. resolve_relative: scheme and host lowercased
# --------------------------------------------------------------------------------------------


def test_lowercase_scheme_and_host_not_path() -> None:
    check(
        [
            ("HTTP://WWW.Example.COM/Path/To/Page", "http://www.example.com/Path/To/Page"),
            ("HtTpS://Example.com/README.md", "https://example.com/README.md"),
            ("http://User:PassWord@Example.COM/X", "http://User:PassWord@example.com/X"),
            ("http://example.com/A?Key=Value", "http://example.com/A?Key=Value"),
        ]
    )


def test_parse_directly() -> None:
    parts = resolve_relative("HTTP://Me@EX.com:8080/P")
    assert (parts.scheme, parts.netloc, parts.path) == ("http", "Me@ex.com:8080", "/P")
    parts = resolve_relative("HTTP://@EX.com:80/a/../P?q#f")
    assert tuple(parts) == ("http", "ex.com", "/P", "q", "f")  # no empty userinfo, no :80


# --------------------------------------------------------------------------------------------
# 1. resolve_relative: hosts mapped by UTS 46, IPv6 compressed
# --------------------------------------------------------------------------------------------


def test_idn_host_to_punycode() -> None:
    check(
        [
            ("http://Bücher.de/Ä", "http://xn--bcher-kva.de/%C3%84"),
            ("https://例え.テスト/", "https://xn--r8jz45g.xn--zckzah/"),
            ("http://пример.рф:8080/", "http://xn--e1afmkfd.xn--p1ai:8080/"),
            ("http://ü@bücher.de/", "http://%C3%BC@xn--bcher-kva.de/"),  # userinfo: escaped
            ("http://münchen.de:81/", "http://xn--mnchen-3ya.de:81/"),
        ]
    )


def test_idna_is_uts46_not_idna2003() -> None:
    # IDNA 2003 maps "ß" to "ss" and final sigma to sigma: another host than browsers reach.
    check(
        [
            ("http://faß.example/", "http://xn--fa-hia.example/"),
            ("http://βόλος.com/", "http://xn--nxasmm1c.com/"),
            ("http://FASS.example/", "http://fass.example/"),
        ]
    )


def test_ipv6_literal_kept_in_brackets() -> None:
    check(
        [
            ("http://[2001:DB8::1]:8080/x", "http://[2001:db8::1]:8080/x"),
            ("http://[::1]:80/", "http://[::1]/"),
            ("https://[FE80::A]/", "https://[fe80::a]/"),
            ("http://[2001:0db8:0:0:0:0:0:1]/", "http://[2001:db8::1]/"),  # compressed
        ]
    )


def test_unencodable_idn_host_raises() -> None:
    with pytest.raises(ValueError, match="bücher"):
        normalize_url("http://bücher\u0000.de/")


# --------------------------------------------------------------------------------------------
# 1. resolve_relative: default ports
# --------------------------------------------------------------------------------------------


def test_default_ports() -> None:
    check(
        [
            ("http://example.com:80/a", "http://example.com/a"),
            ("https://example.com:443/a", "https://example.com/a"),
            ("http://example.com:443/a", "http://example.com:443/a"),
            ("https://example.com:80/a", "https://example.com:80/a"),
            ("http://example.com:8080/a", "http://example.com:8080/a"),
            ("http://example.com:/a", "http://example.com/a"),
            ("http://example.com:0080/a", "http://example.com/a"),
            ("http://u:p@example.com:80/a", "http://u:p@example.com/a"),
        ]
    )


@pytest.mark.parametrize("url", ["http://a.com:x/", "http://a.com:99999/", "http://a.com:8 0/"])
def test_invalid_port_raises(url: str) -> None:
    with pytest.raises(ValueError, match="cannot normalize URL"):
        normalize_url(url)


# --------------------------------------------------------------------------------------------
# 2. remove_fragment
# --------------------------------------------------------------------------------------------


def test_fragments_removed() -> None:
    check(
        [
            ("http://a.com/p#top", "http://a.com/p"),
            ("http://a.com/p#", "http://a.com/p"),
            ("http://a.com/p?x=1#frag?y=2", "http://a.com/p?x=1"),
            ("http://a.com/#/route/x", "http://a.com/"),
        ]
    )
    assert remove_fragment(urlsplit("http://a.com/#x")).fragment == ""


# --------------------------------------------------------------------------------------------
# 3. strip_tracking_params
# --------------------------------------------------------------------------------------------


def test_tracking_params_stripped() -> None:
    check(
        [
            ("http://a.com/p?utm_source=x&utm_medium=y&id=3", "http://a.com/p?id=3"),
            ("http://a.com/p?id=3&utm_anything_new=1", "http://a.com/p?id=3"),
            ("http://a.com/p?gclid=1&fbclid=2&msclkid=3&dclid=4", "http://a.com/p"),
            ("http://a.com/p?gbraid=1&wbraid=2&yclid=3&mc_cid=4&mc_eid=5", "http://a.com/p"),
            ("http://a.com/p?_ga=1&_gl=2&igshid=3&ref_src=4&q=ok", "http://a.com/p?q=ok"),
            ("http://a.com/p?UTM_Source=x&GCLID=y&FbClId=z&k=v", "http://a.com/p?k=v"),
            ("http://a.com/p?utm%5Fsource=x&%67clid=y&k=v", "http://a.com/p?k=v"),  # escaped
            ("http://a.com/p?utm_source&gclid=", "http://a.com/p"),  # no value, blank value
        ]
    )


def test_tracking_lookalikes_kept() -> None:
    check(
        [
            ("http://a.com/?gclidx=1", "http://a.com/?gclidx=1"),
            ("http://a.com/?my_utm_source=1", "http://a.com/?my_utm_source=1"),
            ("http://a.com/?utm=1", "http://a.com/?utm=1"),
            ("http://a.com/?ref=gclid", "http://a.com/?ref=gclid"),  # a value, not a name
            ("http://a.com/?q=utm_source", "http://a.com/?q=utm_source"),
            ("http://a.com/?ref=x", "http://a.com/?ref=x"),
            ("http://a.com/?\u212aX=1", "http://a.com/?%E2%84%AAX=1"),  # KELVIN SIGN is not "k"
        ]
    )


def test_tracking_constants() -> None:
    assert TRACKING_PREFIXES == ("utm_",)
    assert isinstance(TRACKING_PARAMS, frozenset)
    assert {"gclid", "fbclid", "msclkid", "dclid", "gbraid", "wbraid", "yclid"} <= TRACKING_PARAMS
    assert {"mc_cid", "mc_eid", "_ga", "_gl", "igshid", "ref_src"} <= TRACKING_PARAMS
    assert all(name == name.lower() for name in TRACKING_PARAMS)


def test_tracking_rule_directly() -> None:
    parts = strip_tracking_params(urlsplit("http://a/?utm_x=1&b=2&gclid=3&c"))
    assert parts.query == "b=2&c"
    untouched = urlsplit("http://a/?b=2&a=1")
    assert strip_tracking_params(untouched) is untouched


# --------------------------------------------------------------------------------------------
# 4. strip_session_ids
# --------------------------------------------------------------------------------------------


def test_session_ids_stripped() -> None:
    token = "0123456789abcdef0123456789ABCDEF"
    check(
        [
            ("http://a.com/page;jsessionid=ABC123", "http://a.com/page"),
            ("http://a.com/page;JSESSIONID=abc?id=3", "http://a.com/page?id=3"),
            ("http://a.com/dir;jsessionid=x/page", "http://a.com/dir/page"),
            ("http://a.com/;jsessionid=x", "http://a.com/"),
            ("http://a.com/p?PHPSESSID=abc&id=3", "http://a.com/p?id=3"),
            ("http://a.com/p?osCsid=abc&cfid=1&cftoken=2", "http://a.com/p"),
            (
                f"http://a.com/viewtopic.php?f=1&t=2&sid={token}",
                "http://a.com/viewtopic.php?f=1&t=2",
            ),
        ]
    )


def test_session_lookalikes_kept() -> None:
    check(
        [
            ("http://a.com/p?sid=5", "http://a.com/p?sid=5"),  # a station, a story: an id
            ("http://a.com/p?session=2024", "http://a.com/p?session=2024"),
            ("http://a.com/p;version=2", "http://a.com/p;version=2"),
            ("http://a.com/p?q=phpsessid", "http://a.com/p?q=phpsessid"),
        ]
    )


def test_session_rule_directly() -> None:
    assert "phpsessid" in SESSION_PARAMS and "jsessionid" in SESSION_PARAMS
    parts = strip_session_ids(urlsplit("http://a/x;jsessionid=1?a=1&PHPSESSID=2"))
    assert (parts.path, parts.query) == ("/x", "a=1")
    untouched = urlsplit("http://a/x;v=1?sid=5&a=1")
    assert strip_session_ids(untouched) is untouched


# --------------------------------------------------------------------------------------------
# 5. sort_query_params
# --------------------------------------------------------------------------------------------


def test_query_sorted() -> None:
    check(
        [
            ("http://a.com/?b=2&a=1", "http://a.com/?a=1&b=2"),
            ("http://a.com/?c=3&a=1&b=2", "http://a.com/?a=1&b=2&c=3"),
            ("http://a.com/?a=2&a=1&a=2", "http://a.com/?a=1&a=2&a=2"),  # repeats kept
            ("http://a.com/?b&a=", "http://a.com/?a=&b"),  # blank values kept as written
            ("http://a.com/?a=&a", "http://a.com/?a&a="),
            ("http://a.com/?a-b=1&a=2", "http://a.com/?a=2&a-b=1"),  # by name, then value
            ("http://a.com/?x=1&&y=2&", "http://a.com/?x=1&y=2"),  # empty pieces dropped
            ("http://a.com/?", "http://a.com/"),
            ("http://a.com/p?&&", "http://a.com/p"),
            ("http://a.com/?q=a+b&p=c%2Bd", "http://a.com/?p=c%2Bd&q=a+b"),
        ]
    )


def test_permuted_query_strings_are_equal() -> None:
    variants = [
        "http://a.com/list?page=2&sort=asc&q=x",
        "http://a.com/list?sort=asc&q=x&page=2",
        "http://a.com/list?q=x&page=2&sort=asc&utm_source=feed",
        "http://a.com/list?q=%78&sort=asc&page=2#results",
    ]
    assert {normalize_url(v) for v in variants} == {"http://a.com/list?page=2&q=x&sort=asc"}


def test_sort_uses_canonical_spelling() -> None:
    # "%7e" sorts as "~", not as "%": otherwise a second pass would reorder.
    url = normalize_url("http://a.com/?a=%7e&a=b")
    assert url == "http://a.com/?a=b&a=~"
    assert normalize_url(url) == url


def test_sort_rule_directly() -> None:
    assert sort_query_params(urlsplit("http://a/?b=1&a=2&a=1")).query == "a=1&a=2&b=1"


# --------------------------------------------------------------------------------------------
# 6. canonical_percent_encoding
# --------------------------------------------------------------------------------------------


def test_unreserved_escapes_decoded() -> None:
    check(
        [
            ("http://a.com/%7euser", "http://a.com/~user"),
            ("http://a.com/%7Euser", "http://a.com/~user"),
            ("http://a.com/p/%31%32", "http://a.com/p/12"),
            ("http://a.com/%41%2D%2e%5F%7E", "http://a.com/A-._~"),
            ("http://a.com/?q=%61%62", "http://a.com/?q=ab"),
        ]
    )


def test_reserved_escapes_kept_and_uppercased() -> None:
    check(
        [
            ("http://a.com/a%2fb", "http://a.com/a%2Fb"),
            ("http://a.com/a%2Fb", "http://a.com/a%2Fb"),
            ("http://a.com/a%3fb%23c%25d", "http://a.com/a%3Fb%23c%25d"),
            ("http://a.com/?q=a%26b%3dc", "http://a.com/?q=a%26b%3Dc"),
            ("http://a.com/%e9t%c3%a9", "http://a.com/%E9t%C3%A9"),  # non-UTF-8 byte kept
            ("http://a.com/%2b?x=%2b", "http://a.com/%2B?x=%2B"),
        ]
    )


def test_unsafe_characters_encoded() -> None:
    check(
        [
            ("http://a.com/a b?q=c d", "http://a.com/a%20b?q=c%20d"),
            ("http://a.com/café?q=é", "http://a.com/caf%C3%A9?q=%C3%A9"),
            ('http://a.com/<a>"{|}^`[]', "http://a.com/%3Ca%3E%22%7B%7C%7D%5E%60%5B%5D"),
            ("http://a.com/?q='`{|}^\\", "http://a.com/?q=%27%60%7B%7C%7D%5E%5C"),
            ("http://a.com/100%", "http://a.com/100%25"),
            ("http://a.com/%zz?x=%", "http://a.com/%25zz?x=%25"),
        ]
    )


def test_allowed_raw_characters_kept() -> None:
    check(
        [
            ("http://a.com/a:b@c;d=e,f!$'()*+", "http://a.com/a:b@c;d=e,f!$'()*+"),
            ("http://a.com/?q=a+b", "http://a.com/?q=a+b"),  # "+" stays "+"
            ("http://a.com/?next=/x?y", "http://a.com/?next=/x?y"),
        ]
    )


def test_percent_rule_directly() -> None:
    parts = canonical_percent_encoding(urlsplit("http://a/%7e%2f x?k=%7E%3d"))
    assert (parts.path, parts.query) == ("/~%2F%20x", "k=~%3D")


# --------------------------------------------------------------------------------------------
# 7. normalize_trailing_slash, path case
# --------------------------------------------------------------------------------------------


def test_trailing_slash_variants() -> None:
    check(
        [
            ("http://a.com", "http://a.com/"),
            ("http://a.com/", "http://a.com/"),
            ("http://a.com?x=1", "http://a.com/?x=1"),
            ("http://a.com/docs/", "http://a.com/docs"),
            ("http://a.com/docs", "http://a.com/docs"),
            ("http://a.com/docs//", "http://a.com/docs"),
            ("http://a.com/docs/?x=1", "http://a.com/docs?x=1"),
            ("http://a.com/docs%2F", "http://a.com/docs%2F"),
        ]
    )
    assert normalize_trailing_slash(urlsplit("http://a")).path == "/"


def test_path_case_preserved() -> None:
    check(
        [
            ("http://A.com/Docs/README.md", "http://a.com/Docs/README.md"),
            ("http://a.com/%7EUser/CamelCase", "http://a.com/~User/CamelCase"),
        ]
    )
    assert normalize_url("http://a.com/Docs") != normalize_url("http://a.com/docs")


# --------------------------------------------------------------------------------------------
# Composition, rejection, url_origin
# --------------------------------------------------------------------------------------------


def test_everything_at_once() -> None:
    url = " HTTP://User@Bücher.DE:80/A/./b/../C/%7e%2f/?utm_source=x&z=1&a=%41&gclid=y#top "
    assert normalize_url(url) == "http://User@xn--bcher-kva.de/A/C/~%2F?a=A&z=1"


@pytest.mark.parametrize(
    "url",
    [
        "mailto:someone@example.com",
        "javascript:void(0)",
        "data:text/html,<p>x</p>",
        "ftp://example.com/file",
        "tel:+123",
        "http://",
        "https://:443/",
        "http://user@/x",
        "relative/path",
        "/absolute/path",
        "",
        "http://exa mple.com/",
        "http://[::1/",
        "http://a<b.com/",
        "http://1.2.3.4.5/",  # ends in a number but is no IPv4 address
        "http://256.256.256.256/",
        "http://09.0.0.1/",
        "http://a.b.0x100000000/",
    ],
)
def test_rejected(url: str) -> None:
    with pytest.raises(ValueError, match="cannot normalize URL") as info:
        normalize_url(url)
    assert repr(url) in str(info.value)


def test_rejected_with_base() -> None:
    with pytest.raises(ValueError, match="mailto"):
        normalize_url("mailto:x@y.z", "http://a.com/")
    with pytest.raises(ValueError, match="javascript"):
        normalize_url("javascript:alert(1)", "https://a.com/p")


def test_url_origin() -> None:
    assert url_origin("HTTPS://user:pw@Example.com:443/a/b?c#d") == "https://example.com"
    assert url_origin("http://Example.com:8080/x") == "http://example.com:8080"
    assert url_origin("http://bücher.de") == "http://xn--bcher-kva.de"
    assert url_origin("http://[::1]:8000/") == "http://[::1]:8000"
    with pytest.raises(ValueError):
        url_origin("mailto:x@y.z")


# --------------------------------------------------------------------------------------------
# Hypothesis properties
# --------------------------------------------------------------------------------------------

PROPERTY_SETTINGS = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

UNRESERVED = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
NON_ASCII = "éßüÄñø中文日本語пример€😀\u00a0\u212a"
UNSAFE_ASCII = ' "<>\\^`{|}'


@st.composite
def escapes(draw: st.DrawFn) -> str:
    """A percent-escape of any byte, in random hex case."""
    hex_pair = f"{draw(st.integers(0, 255)):02x}"
    return "%" + "".join(c.upper() if draw(st.booleans()) else c for c in hex_pair)


def atoms(extra_reserved: str) -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(UNRESERVED),
        st.sampled_from("!$&'()*+,;=:@" + extra_reserved),
        escapes(),
        st.sampled_from(["%2F", "%2f", "%3F", "%26", "%3D", "%23", "%25", "%2B", "%7e", "%41"]),
        st.sampled_from(NON_ASCII),
        st.sampled_from(UNSAFE_ASCII),
        st.just("%"),  # a stray percent sign
    )


def is_dot_segment(segment: str) -> bool:
    return unquote(segment) in (".", "..")


# A raw "\\" separates segments as "/" does (http(s) URLs, as browsers read them).
path_segment = (
    st.lists(atoms(""), max_size=6)
    .map("".join)
    .filter(lambda s: not any(map(is_dot_segment, s.split("\\"))))
)
query_text = st.lists(atoms("/?").filter(lambda a: a not in "&="), max_size=5).map("".join)
value_text = st.lists(atoms("/?").filter(lambda a: a != "&"), max_size=5).map("".join)

TRACKING_SAMPLE = sorted(TRACKING_PARAMS)


@st.composite
def tracking_names(draw: st.DrawFn) -> str:
    name = draw(
        st.one_of(
            st.sampled_from(TRACKING_SAMPLE),
            st.builds(lambda s: "utm_" + s, st.text(UNRESERVED, max_size=6)),
        )
    )
    name = "".join(c.upper() if draw(st.booleans()) else c for c in name)
    if draw(st.booleans()) and "_" in name:
        name = name.replace("_", "%5F", 1)  # escaped spelling of the same name
    return name


param_names = st.one_of(
    st.sampled_from(["a", "b", "id", "page", "q", "Sort", "x"]),  # small pool: repeated keys
    query_text,
    tracking_names(),
)
params = st.tuples(param_names, st.none() | value_text)

ascii_label = st.text(UNRESERVED[:62], min_size=1, max_size=10)  # mixed-case letters, digits
idn_label = st.sampled_from(["Bücher", "MÜNCHEN", "пример", "例え", "ñandú", "Straße", "ÆØÅ"])
# A name whose last label is a number (decimal, or 0x hex) is read as an IPv4 address
# (WHATWG "ends in a number"): names here do not end in one.
NUMBER_LABEL = re.compile(r"[0-9]+|0[xX][0-9a-fA-F]*")
hosts = st.one_of(
    st.lists(st.one_of(ascii_label, idn_label), min_size=1, max_size=3)
    .map(".".join)
    .filter(lambda host: NUMBER_LABEL.fullmatch(host.rpartition(".")[2]) is None),
    st.sampled_from(["127.0.0.1", "[2001:DB8::1]", "[::1]", "localhost"]),
)


def build_query(pairs: list[tuple[str, str | None]]) -> str:
    return "&".join(name if value is None else f"{name}={value}" for name, value in pairs)


@st.composite
def urls(draw: st.DrawFn) -> str:
    scheme = draw(st.sampled_from(["http", "https", "HTTP", "Https"]))
    userinfo = draw(st.sampled_from(["", "", "", "User:Pw@", "me@"]))
    host = draw(hosts)
    port = draw(st.sampled_from(["", "", "", ":", ":80", ":443", ":8080", ":0081"]))
    segments = draw(st.lists(path_segment, max_size=5))
    path = "".join("/" + s for s in segments) + draw(st.sampled_from(["", "", "/", "//"]))
    pairs = draw(st.lists(params, max_size=6))
    query = ("?" + build_query(pairs)) if pairs or draw(st.booleans()) else ""
    fragment = draw(st.sampled_from(["", "", "#", "#top", "#a?b=c&d", "#/x/../y"]))
    return f"{scheme}://{userinfo}{host}{port}{path}{query}{fragment}"


def is_tracking(name: str) -> bool:
    decoded = unquote(name)
    if not decoded.isascii():
        return decoded[:4].isascii() and decoded[:4].lower().startswith(TRACKING_PREFIXES)
    decoded = decoded.lower()
    return decoded in TRACKING_PARAMS or decoded.startswith(TRACKING_PREFIXES)


def decoded_segments(path: str) -> list[str]:
    """Path segments, percent-decoded, without trailing empty ones (the trailing-slash rule)."""
    segments = [unquote(s) for s in path.split("/")]
    while len(segments) > 1 and segments[-1] == "":
        segments.pop()
    return segments


def decoded_params(query: str) -> Counter[tuple[str, str, str]]:
    """Multiset of non-empty, non-tracking (name, "=" or "", value), percent-decoded."""
    result: Counter[tuple[str, str, str]] = Counter()
    for piece in query.split("&"):
        name, eq, value = piece.partition("=")
        if piece and not is_tracking(name):
            result[unquote(name), eq, unquote(value)] += 1
    return result


CANONICAL_COMPONENT = re.compile(r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9A-F]{2})*")
UNRESERVED_ESCAPE = re.compile(r"%(?:3[0-9]|[46][1-9A-F]|[57][0-9A]|2D|2E|5F|7E)")


@PROPERTY_SETTINGS
@given(urls())
def test_property_idempotent(url: str) -> None:
    once = normalize_url(url)
    assert normalize_url(once) == once
    # The result is in canonical form: only allowed raw characters, uppercase escapes, no
    # escaped unreserved characters, no fragment.
    parts = urlsplit(once)
    assert parts.scheme in ("http", "https") and not parts.fragment and "#" not in once
    for component in (parts.path, parts.query):
        assert CANONICAL_COMPONENT.fullmatch(component), component
        assert not UNRESERVED_ESCAPE.search(component), component


@PROPERTY_SETTINGS
@given(urls())
def test_property_names_the_same_resource(url: str) -> None:
    # The parse strips surrounding C0 controls and spaces (str.strip() would strip U+00A0 too).
    original = urlsplit(url.strip("".join(map(chr, range(0x21)))))
    result = urlsplit(normalize_url(url))
    # Scheme and host: only lowercased / mapped by UTS 46 (the idna package's, not the parse's).
    assert result.scheme == original.scheme.lower()
    assert original.hostname is not None and result.hostname is not None
    if ":" in original.hostname:  # an IPv6 literal (the samples are compressed)
        assert result.hostname == original.hostname
    else:
        assert result.hostname == idna.encode(original.hostname, uts46=True).decode("ascii")
    assert (result.username, result.password) == (original.username, original.password)
    default = {"http": 80, "https": 443}[result.scheme]
    assert result.port == (None if original.port in (None, default) else original.port)
    # Path: same decoded segments (so the same case too), modulo trailing slashes.
    assert decoded_segments(result.path) == decoded_segments(original.path.replace("\\", "/"))
    assert result.path.startswith("/")
    assert result.path == "/" or not result.path.endswith("/")
    # Query: same multiset of decoded non-tracking parameters, and no tracking ones left.
    assert decoded_params(result.query) == decoded_params(original.query)
    assert not any(is_tracking(p.partition("=")[0]) for p in result.query.split("&") if p)


@PROPERTY_SETTINGS
@given(st.data(), st.lists(params, min_size=1, max_size=6))
def test_property_query_permutation_invariant(data: st.DataObject, pairs: list) -> None:
    shuffled = data.draw(st.permutations(pairs))
    # The fragment keeps a trailing " " in the last parameter from being stripped as whitespace.
    one, two = (f"http://Example.com/p?{build_query(p)}#end" for p in (shuffled, pairs))
    assert normalize_url(one) == normalize_url(two)


@PROPERTY_SETTINGS
@given(st.text(max_size=40), st.sampled_from(["http://", "https://a.com/", "HTTP://x.", ""]))
def test_property_arbitrary_text_is_value_error_or_stable(text: str, prefix: str) -> None:
    try:
        once = normalize_url(prefix + text, "http://base.example/dir/page")
    except ValueError:
        return
    assert normalize_url(once) == once


@settings(PROPERTY_SETTINGS, max_examples=150)
@given(urls(), st.lists(path_segment, max_size=3))
def test_property_relative_resolution_matches_absolute(url: str, rel_segments: list) -> None:
    base = normalize_url(url)
    relative = "./" + "/".join(rel_segments)
    directory = base.split("?")[0].rsplit("/", 1)[0]
    assert normalize_url(relative, base) == normalize_url(directory + "/" + "/".join(rel_segments))


# --------------------------------------------------------------------------------------------
# Numeric IPv4 hosts (the parse, also after UTS 46 mapping): one spelling, as in browsers
# --------------------------------------------------------------------------------------------


def test_numeric_ipv4_hosts_become_dotted_quads() -> None:
    check(
        [
            ("http://0x7f000001/", "http://127.0.0.1/"),
            ("http://0X7F000001:8080/a", "http://127.0.0.1:8080/a"),
            ("http://2130706433/", "http://127.0.0.1/"),
            ("http://127.1/", "http://127.0.0.1/"),
            ("http://127.0.1/", "http://127.0.0.1/"),
            ("http://0177.0.0.1/", "http://127.0.0.1/"),
            ("http://0x7f.0.0.1/", "http://127.0.0.1/"),
            ("http://127.0.0.1./", "http://127.0.0.1/"),
            ("http://user@0x7f000001:80/", "http://user@127.0.0.1/"),
            ("https://0xa9fea9fe/latest", "https://169.254.169.254/latest"),
            ("http://１２７.０.０.１/", "http://127.0.0.1/"),  # full-width, mapped by IDNA
            ("http://127。0。0。1/", "http://127.0.0.1/"),  # ideographic full stops
            ("http://0/", "http://0.0.0.0/"),
        ]
    )


def test_hosts_that_are_not_numeric_ipv4_are_kept() -> None:
    check(
        [
            ("http://1password.com/", "http://1password.com/"),
            ("http://127.0.0.1.nip.io/", "http://127.0.0.1.nip.io/"),
            ("http://0x7g000001/", "http://0x7g000001/"),  # last label is not a number
            ("http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]/"),  # IPv6, compressed
        ]
    )


@pytest.mark.parametrize("host", ["256.0.0.1", "1.2.3.4.5", "09.0.0.1", "example.1"])
def test_hosts_ending_in_a_number_that_are_not_ipv4_are_rejected(host: str) -> None:
    # Browsers refuse these; a crawler would waste a DNS lookup on each.
    with pytest.raises(ValueError, match="cannot normalize URL"):
        normalize_url(f"http://{host}/")


def test_numeric_hosts_dedup_to_one_key() -> None:
    spellings = ["http://127.0.0.1/a", "http://0x7f000001/a", "http://2130706433/a",
                 "http://127.1/a", "http://0177.0.0.01/a", "http://127.0.0.1./a"]  # fmt: skip
    assert {normalize_url(url) for url in spellings} == {"http://127.0.0.1/a"}
    assert url_origin("http://0x7f000001:8080/x") == "http://127.0.0.1:8080"


def test_ipv4_host_directly() -> None:
    assert ipv4_host("0x7f000001") == "127.0.0.1"
    assert ipv4_host("4294967295") == "255.255.255.255"
    assert ipv4_host("4294967296") is None
    assert ipv4_host("1.16777215") == "1.255.255.255"
    assert ipv4_host("1.16777216") is None
    assert ipv4_host("1.2.65535") == "1.2.255.255"
    assert ipv4_host("example.com") is None
    assert ipv4_host("") is None
    assert ipv4_host("١٢٧.0.0.1") is None  # Arabic-Indic digits are not inet_aton digits
    parts = resolve_relative("HTTP://0X7F.1:81/P")
    assert parts.netloc == "127.0.0.1:81" and parts.path == "/P"


@PROPERTY_SETTINGS
@given(st.integers(0, 2**32 - 1), st.sampled_from(["{:d}", "0x{:x}", "0{:o}", "dotted"]))
def test_property_numeric_spellings_normalize_alike(value: int, spelling: str) -> None:
    quad = ".".join(str((value >> shift) & 255) for shift in (24, 16, 8, 0))
    host = quad if spelling == "dotted" else spelling.format(value)
    assert normalize_url(f"http://{host}/p") == f"http://{quad}/p"


# Root-relative links: the short way normalize_url takes for the simple ones must give
# exactly what the full way gives, for every base.
simple_segment = st.text(UNRESERVED + "!$&'()*+,;=:@", max_size=6)
root_relative = st.one_of(
    st.builds(
        lambda segments, pairs: "/" + "/".join(segments) + ("?" + build_query(pairs)) * bool(pairs),
        st.lists(simple_segment, max_size=4),
        st.lists(params, max_size=4),
    ),
    st.builds(lambda segments: "/" + "/".join(segments), st.lists(path_segment, max_size=4)),
    st.sampled_from(["/", "/?", "//host/x", "/a/./b", "/a/../b", "/.well-known/x", "/a#f"]),
)


@settings(PROPERTY_SETTINGS, max_examples=300)
@given(urls(), root_relative)
def test_property_short_way_equals_full_way(base: str, ref: str) -> None:
    try:
        full = _normalize_full(ref, base)
    except ValueError:
        with pytest.raises(ValueError):
            normalize_url(ref, base)
        return
    assert normalize_url(ref, base) == full
    short = _normalize_simple(ref, base)
    assert short is None or short == full


def test_simple_links_take_the_short_way() -> None:
    base = "HTTP://Example.COM:80/docs/page?x=1"
    ref = "/p/1/?utm_source=nav&b=2&a=1&gclid=z"
    assert _normalize_simple(ref, base) == "http://example.com/p/1?a=1&b=2"
    assert _normalize_simple("/a/../b", base) is None  # dot segments: the full way
    assert _normalize_simple("/caf%C3%A9", base) is None  # escapes: the full way
    assert _normalize_simple("/x", "mailto:someone@example.com") is None
