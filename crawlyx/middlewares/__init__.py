"""crawlyx's downloader and spider middlewares."""


def installed(crawler, cls):
    """The crawl's downloader middleware of class ``cls``, or None when it is not enabled
    (the engine must exist: from ``spider_opened`` on)."""
    middlewares = crawler.engine.downloader.middleware.middlewares
    return next((mw for mw in middlewares if isinstance(mw, cls)), None)
