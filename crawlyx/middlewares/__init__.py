"""crawlyx's downloader and spider middlewares."""

from crawlyx.middlewares import slots


def installed(crawler, cls):
    """The crawl's downloader middleware of class ``cls``, or None when it is not enabled
    (the engine must exist: from ``spider_opened`` on)."""
    return next(
        (mw for mw in slots.middlewares(crawler.engine.downloader) if isinstance(mw, cls)), None
    )
