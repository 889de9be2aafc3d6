"""A slow or fragile host: few requests at once, spaced out, and patient with failures."""

from crawlyx.settings import *  # noqa: F403

# One request at a time, two at most, and slow to grow (crawlyx/middlewares/window.py).
CRAWLYX_WINDOW_MIN = 1
CRAWLYX_WINDOW_START = 1
CRAWLYX_WINDOW_MAX = 2
CRAWLYX_WINDOW_GROW_AFTER = 50
# Seconds between two requests to the host (Scrapy jitters it by +-50%); a robots.txt
# Crawl-delay above it still wins.
DOWNLOAD_DELAY = 2.0
# A slow answer is expected: it neither times out nor shrinks the window as early.
DOWNLOAD_TIMEOUT = 90
CRAWLYX_WINDOW_SLOW_SECONDS = 20.0
RETRY_TIMES = 4
CRAWLYX_ROBOTS_RETRY_FOR = 600.0  # robots.txt may be down for a while
