"""Peer: the crawler a typical user writes with Crawlee for Python to turn a site into markdown.

A ``ParselCrawler`` with its defaults and robots.txt on (``respect_robots_txt_file=True``)
that follows the links of every page on the same host (``context.enqueue_links()``, default
strategy) and pushes ``{"url", "title", "markdown"}`` with ``markdownify`` of the whole page to
its dataset; at the end the dataset is written to ``--output`` as JSON lines.

    python bench/crawlee_spider.py --start http://127.0.0.1:PORT/ --output out.jsonl \
        [--max-pages N]

With ``--max-pages`` it stops after N pages (a counter in the handler, then ``crawler.stop()``:
pages in flight when it stops are not pushed), so crawlers compare at equal page counts.
Crawlee's storage (request queue, dataset, key-value store) goes to a temporary directory,
purged on start and removed at exit, never into the working directory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import tempfile
from pathlib import Path


async def crawl(start: str, output: Path, max_pages: int) -> int:
    # Imported here so that CRAWLEE_STORAGE_DIR is set before crawlee reads its configuration.
    import markdownify
    from crawlee.crawlers import ParselCrawler, ParselCrawlingContext
    from crawlee.storages import Dataset

    crawler = ParselCrawler(respect_robots_txt_file=True)
    emitted = 0

    @crawler.router.default_handler
    async def handler(context: ParselCrawlingContext) -> None:
        nonlocal emitted
        content_type = context.http_response.headers.get("content-type", "")
        if max_pages and emitted >= max_pages:
            return
        if "html" not in content_type:
            return
        emitted += 1
        body = (await context.http_response.read()).decode("utf-8", "replace")
        await context.push_data(
            {
                "url": context.request.loaded_url or context.request.url,
                "title": context.selector.css("title::text").get(),
                "markdown": markdownify.markdownify(body),
            }
        )
        if max_pages and emitted >= max_pages:
            crawler.stop(f"{max_pages} pages")
            return
        await context.enqueue_links()

    await crawler.run([start])
    dataset = await Dataset.open()
    count = 0
    with output.open("w", encoding="utf-8") as out:
        async for item in dataset.iterate_items():
            out.write(json.dumps(item, ensure_ascii=False) + "\n")
            count += 1
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--start", required=True, help="the start URL")
    parser.add_argument("--output", required=True, type=Path, help="JSON lines file to write")
    parser.add_argument("--max-pages", type=int, default=0, help="stop after N pages (0: all)")
    args = parser.parse_args()
    storage = tempfile.mkdtemp(prefix="crawlee-storage-")
    os.environ["CRAWLEE_STORAGE_DIR"] = storage
    os.environ["CRAWLEE_PURGE_ON_START"] = "true"
    try:
        count = asyncio.run(crawl(args.start, args.output, args.max_pages))
    finally:
        shutil.rmtree(storage, ignore_errors=True)
    print(f"crawlee: {count} pages written to {args.output}", flush=True)


if __name__ == "__main__":
    main()
