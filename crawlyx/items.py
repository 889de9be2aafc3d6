"""The page item: one JSON line per fetched HTML page. Field names are a contract."""

from datetime import UTC, datetime

import scrapy

PAGE_FIELDS = (
    "url",
    "final_url",
    "status",
    "fetched_at",
    "depth",
    "referrer",
    "title",
    "description",
    "lang",
    "canonical",
    "markdown",
    "links",
    "content_hash",
    "etag",
    "last_modified",
    "render",
    "elapsed_ms",
    "bytes",
    "changed",
    "chunks",
)


class PageItem(scrapy.Item):
    url = scrapy.Field()  # normalized URL of the page as discovered
    final_url = scrapy.Field()  # URL the content came from, after redirects
    status = scrapy.Field()
    fetched_at = scrapy.Field()  # UTC ISO-8601
    depth = scrapy.Field()  # link hops from the start URL (sitemap-listed pages: 1)
    referrer = scrapy.Field()  # normalized URL of the page that linked here, or null
    title = scrapy.Field()
    description = scrapy.Field()
    lang = scrapy.Field()
    canonical = scrapy.Field()
    markdown = scrapy.Field()
    links = scrapy.Field()  # normalized internal out-links, sorted, unique
    content_hash = scrapy.Field()  # sha256 of the markdown
    etag = scrapy.Field()
    last_modified = scrapy.Field()
    render = scrapy.Field()  # "http" | "browser"
    elapsed_ms = scrapy.Field()
    bytes = scrapy.Field()
    changed = scrapy.Field()  # new, or its markdown differs from the last crawl's
    # -a chunks=N only: the markdown in chunks of at most N tokens (crawlyx/pipelines/chunks.py)
    chunks = scrapy.Field()


def page_item(url, depth, referrer, page: dict, facts: dict, kind: str, changed) -> PageItem:
    """The item of the page at ``url`` read at ``depth`` (``page``: what the page reader
    gives; ``facts``: :func:`response_facts`; ``kind``: http or browser)."""
    return PageItem(
        url=url,
        final_url=facts["final_url"],
        status=facts["status"],
        fetched_at=datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        depth=depth,
        referrer=referrer,
        title=page["title"],
        description=page["description"],
        lang=page["lang"],
        canonical=page["canonical"],
        markdown=page["markdown"],
        links=sorted(page["links"]),
        content_hash=None,
        etag=facts["etag"],
        last_modified=facts["last_modified"],
        render=kind,
        elapsed_ms=facts["elapsed_ms"],
        bytes=facts["bytes"],
        changed=changed,
    )


def response_facts(response) -> dict:
    """What a page's item takes from its response (plain data: it may be queued)."""

    def header(name):
        value = response.headers.get(name)
        return value.decode("latin-1") if value else None

    latency = response.meta.get("download_latency")
    return {
        "final_url": response.url,
        "status": response.status,
        "etag": header(b"ETag"),
        "last_modified": header(b"Last-Modified"),
        "elapsed_ms": round(latency * 1000, 1) if latency is not None else None,
        "bytes": len(response.body),
    }
