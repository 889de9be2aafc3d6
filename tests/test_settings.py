"""Settings and Redis access that the rest relies on."""

from __future__ import annotations

from scrapy.settings import Settings

from crawlyx.frontier.fingerprint import url_fingerprint
from crawlyx.frontier.state import redact


def project_settings() -> Settings:
    settings = Settings()
    settings.setmodule("crawlyx.settings")
    return settings


def test_remote_control_is_off():
    # Scrapy 2.19's RemoteControl executes posted Python code.
    assert project_settings().getbool("REMOTE_CONTROL_ENABLED") is False


def test_scheduler_and_fingerprinter_are_crawlyx():
    settings = project_settings()
    assert settings["SCHEDULER"] == "crawlyx.frontier.scheduler.Scheduler"
    assert settings["REQUEST_FINGERPRINTER_CLASS"] == "crawlyx.frontier.fingerprint.Fingerprinter"
    assert settings.getint("SCHEDULER_IDLE_BEFORE_CLOSE") == 0


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
