"""One process on one machine: crawlyx's defaults, as ``scrapy crawl`` runs without a profile.

Redis is the embedded redis-server, its data under ``CRAWLYX_DATA_DIR`` (``.crawlyx`` in the
current directory), so a job can be stopped and resumed from the same directory; pages are
read by one worker per core.
"""

from crawlyx.settings import *  # noqa: F403
