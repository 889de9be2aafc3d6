"""Jobs run by scrapyd, several side by side on one machine (4 per core by default).

Chosen in scrapyd's configuration (scrapyd.conf), for the deployed project::

    [settings]
    crawlyx = settings.scrapyd

or by starting scrapyd with ``SCRAPY_SETTINGS_MODULE=settings.scrapyd``, which it keeps. Its jobs
share the embedded Redis under CRAWLYX_DATA_DIR (relative to scrapyd's own directory), unless
CRAWLYX_REDIS_URL names another.
"""

from crawlyx.settings import *  # noqa: F403

# Jobs share the machine's cores: one page worker each, not one per core each.
CRAWLYX_MARKDOWN_WORKERS = 1
# The job's log is a file, read later: a progress line a minute is enough.
CRAWLYX_PROGRESS_INTERVAL = 60.0
# cancel.json stops a job gracefully; a host's Retry-After holds it no longer than this.
CRAWLYX_WINDOW_RETRY_AFTER_MAX = 120.0
