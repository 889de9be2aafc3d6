"""A JavaScript-heavy site: every page through the browser (Chromium at CRAWLYX_CHROMIUM_PATH).

The crawl does not start without a browser. ``-a render=auto`` still overrides the profile.
"""

from crawlyx.settings import *  # noqa: F403

CRAWLYX_RENDER = "always"  # sitemaps and robots.txt stay plain HTTP
# Content loaded by the page's scripts after the load event is waited for.
CRAWLYX_RENDER_WAIT_UNTIL = "networkidle"
CRAWLYX_RENDER_TIMEOUT = 60.0
# The browser holds CRAWLYX_RENDER_MAX_PAGES pages at once (4): more requests in flight
# to the host would only wait for one.
CRAWLYX_WINDOW_MAX = 8
