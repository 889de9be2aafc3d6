"""Settings profiles: crawlyx's settings (``crawlyx/settings.py``) for common kinds of crawl.

Each module here starts from ``crawlyx.settings`` and changes what its kind of crawl needs:

- ``local``: one process, the embedded Redis (the same as ``crawlyx.settings``).
- ``shared``: several processes, on one machine or more, crawling one job from a shared Redis.
- ``fragile``: a slow or fragile host: one or two requests at a time, with a delay.
- ``render``: a JavaScript-heavy site: every page through the browser.
- ``scrapyd``: jobs run by scrapyd, several side by side.

Pick one per crawl with Scrapy's own mechanisms: ``SCRAPY_PROJECT=shared scrapy crawl ...``
(a ``[settings]`` entry of ``scrapy.cfg``) or ``SCRAPY_SETTINGS_MODULE=settings.shared``; ``-s``
still overrides any setting of the profile.
"""
