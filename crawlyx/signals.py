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

# The start URL's response fixed the crawl's scope (crawlyx.urls.scope), sent by the spider
# with: response (its redirect hops on the origin are the graph's first).
start_fixed = object()

# A page read: its item emitted, or kept out by a robots directive or as an alias of its
# canonical. Sent by the spider with: url (normalized), depth, page (what the page
# reader gives: title, description, canonical, links, anchors, frames, markdown...),
# directives (its robots directives), status.
page_read = object()

# A refresh run's conditional request answered 304 Not Modified: the page is not read
# again, its links are not known this run. Sent with: url (normalized), depth.
page_not_modified = object()

# Pages of the crawl's origin a sitemap lists, sent with: urls (normalized, in scope).
sitemap_listed = object()
