"""Several crawl processes, on one machine or more, working one job from a shared Redis.

Start each process with the same ``-a job=NAME``: they share its frontier and visited table.
"""

import os

from crawlyx.settings import *  # noqa: F403

# The Redis every process uses: the CRAWLYX_REDIS_URL environment variable, or a local server.
CRAWLYX_REDIS_URL = os.environ.get("CRAWLYX_REDIS_URL") or "redis://127.0.0.1:6379/0"
# A Redis over the network answers slower than the embedded one on a unix socket.
CRAWLYX_REDIS_TIMEOUT = 10.0
# Processes on one machine share its cores: two page workers each, not one per core each.
CRAWLYX_MARKDOWN_WORKERS = 2
