"""The page item: one JSON line per fetched HTML page. Field names are a contract."""

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
