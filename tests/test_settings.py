"""Settings and Redis access that the rest relies on."""

from __future__ import annotations

from scrapy.addons import AddonManager
from scrapy.crawler import Crawler
from scrapy.settings import Settings
from scrapy.spiders import Spider
from scrapy.utils.test import get_crawler

import crawlyx.settings
from crawlyx.frontier.fingerprint import url_fingerprint
from crawlyx.frontier.scheduler import Scheduler
from crawlyx.frontier.state import redact


def crawl_settings(module: str = "crawlyx.settings", **overrides) -> Settings:
    """The settings a crawl of ``module``'s project runs with: its own, ``overrides`` as
    with -s, then what its add-ons set (here without a spider: no rendering)."""
    settings = Settings()
    settings.setmodule(module)
    settings.setdict(overrides, priority="cmdline")
    AddonManager.load_pre_crawler_settings(settings)
    crawler = Crawler(Spider, settings)
    crawler.addons.load_settings(crawler.settings)
    return crawler.settings


def test_remote_control_is_off():
    # Scrapy 2.19's RemoteControl executes posted Python code.
    settings = crawl_settings()
    assert settings.getbool("REMOTE_CONTROL_ENABLED") is False
    assert settings.getdict("EXTENSIONS")["scrapy.extensions.remote_control.RemoteControl"] is None


def test_the_addon_wires_the_components():
    settings = crawl_settings()
    assert settings["SCHEDULER"] == "crawlyx.frontier.scheduler.Scheduler"
    assert settings["REQUEST_FINGERPRINTER_CLASS"] == "crawlyx.frontier.fingerprint.Fingerprinter"
    assert settings["TWISTED_DNS_RESOLVER"] == "crawlyx.policy.ssrf.SSRFResolver"
    middlewares = settings.getwithbase("DOWNLOADER_MIDDLEWARES")
    assert middlewares["crawlyx.middlewares.window.WindowMiddleware"] == 950
    assert middlewares["scrapy.downloadermiddlewares.redirect.RedirectMiddleware"] is None
    assert settings.getdict("ITEM_PIPELINES") == {
        "crawlyx.pipelines.markdown.MarkdownPipeline": 300
    }
    assert settings.getdict("FEED_STORAGES")["file"] == "crawlyx.feeds.FileFeedStorage"
    # Nothing is installed for the browser without a crawl that may render.
    assert "http" not in settings.getdict("DOWNLOAD_HANDLERS")
    # The project's settings keep the defaults; the add-on the wiring.
    assert "SCHEDULER" not in vars(crawlyx.settings)
    assert "DOWNLOADER_MIDDLEWARES" not in vars(crawlyx.settings)


def test_the_projects_settings_and_the_command_line_beat_the_addon():
    settings = crawl_settings(
        DOWNLOADER_MIDDLEWARES={"crawlyx.middlewares.robots.RobotsMiddleware": None},
        ROBOTSTXT_OBEY=True,
    )
    middlewares = settings.getwithbase("DOWNLOADER_MIDDLEWARES")
    assert middlewares["crawlyx.middlewares.robots.RobotsMiddleware"] is None
    assert middlewares["crawlyx.middlewares.ssrf.SSRFMiddleware"] == 50
    assert settings.getbool("ROBOTSTXT_OBEY") is True


def test_scheduler_idle_before_close_does_nothing():
    # scrapy-redis blocks the reactor in BRPOP when it is above 0; crawlyx's scheduler
    # pops from the visited table and never reads it.
    crawler = get_crawler(Spider, {"SCHEDULER_IDLE_BEFORE_CLOSE": 5})
    assert Scheduler.from_crawler(crawler).idle_before_close == 0


def test_fingerprints_are_taken_on_the_normalized_url():
    same = [
        "http://Example.com:80/a?b=2&a=1#x",
        "http://example.com/a/?a=1&b=2&utm_medium=mail",
        "http://example.com/%61?a=1&b=2",
    ]
    assert len({url_fingerprint(url) for url in same}) == 1
    assert url_fingerprint("http://example.com/A") != url_fingerprint("http://example.com/a")
    assert url_fingerprint("http://example.com/a", "POST") != url_fingerprint(
        "http://example.com/a"
    )


def test_redact_hides_passwords():
    assert redact("redis://:s3cret@host:6379/0") == "redis://***@host:6379/0"
    assert redact("redis://user:s3cret@host/1") == "redis://user:***@host/1"
    assert redact("redis://host:6379/0") == "redis://host:6379/0"


def test_redis_password_never_reaches_the_log(site, crawl, redis_url):
    # The test server has no password (Redis accepts the AUTH): the log names the
    # server without the secret.
    port = redis_url.rsplit(":", 1)[1].split("/")[0]
    result = crawl(
        f"start=http://127.0.0.1:{site.port}/start",
        settings={"CRAWLYX_REDIS_URL": f"redis://:hunter2secret@127.0.0.1:{port}/0"},
    )
    assert result.returncode == 0
    assert f"Using Redis at redis://***@127.0.0.1:{port}/0" in result.log
    assert "hunter2secret" not in result.log
