"""crawlyx's own signals, sent through the crawler's signal manager as Scrapy's are.

A component that keeps a record of what the crawl meets subscribes to the signal in its
own ``from_crawler`` (``crawler.signals.connect(handler, signal=url_failed)``), so that
what sends it never knows who listens. Handlers take the arguments by name and accept
more (``**kwargs``): a signal may carry more arguments later.
"""

# A URL failed, was skipped, or is another address of a page written once (one of
# crawlyx.errors.ERROR_CLASSES), sent by crawlyx.errors.ErrorLog.record with: url,
# error_class, detail, referrer, status (an HTTP error's), depth, holder (of an alias:
# the URL its document is written under).
url_failed = object()
