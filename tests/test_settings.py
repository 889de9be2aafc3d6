"""Settings and Redis access that the rest relies on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from scrapy.addons import AddonManager
from scrapy.core.scheduler import BaseScheduler
from scrapy.crawler import Crawler
from scrapy.settings import Settings
from scrapy.spiders import Spider
from scrapy.utils.test import get_crawler

import crawlyx.settings
from crawlyx.addon import Addon
from crawlyx.frontier.fingerprint import url_fingerprint
from crawlyx.frontier.scheduler import Scheduler
from crawlyx.frontier.state import redact
from tests.conftest import crawl_command, crawl_env, read_items
from tests.sites.site import SiteServer

ROOT = Path(__file__).resolve().parent.parent


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


REMOTE_CONTROL = "scrapy.extensions.remote_control.RemoteControl"
COOKIES = "scrapy.downloadermiddlewares.cookies.CookiesMiddleware"


def test_remote_control_is_off_even_when_asked_for():
    # Scrapy 2.19's RemoteControl executes posted Python code.
    for settings in (crawl_settings(), crawl_settings(REMOTE_CONTROL_ENABLED=True)):
        assert REMOTE_CONTROL not in settings.getwithbase("EXTENSIONS")


def test_components_that_are_off_are_not_even_imported():
    """Out of Scrapy's base lists, not set to None (an entry set to None is imported):
    cookies are off unless turned on."""
    code = (
        "import sys; from tests.test_settings import crawl_settings as c, COOKIES; "
        "from scrapy.utils.conf import build_component_list as b; s = c(); "
        "b(s.getwithbase('EXTENSIONS')); b(s.getwithbase('DOWNLOADER_MIDDLEWARES')); "
        "assert COOKIES not in s.getwithbase('DOWNLOADER_MIDDLEWARES'); "
        "print(sorted({'aiohttp', 'tldextract'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.stdout.strip() == "[]", out.stderr
    middlewares = crawl_settings(COOKIES_ENABLED=True).getwithbase("DOWNLOADER_MIDDLEWARES")
    assert middlewares[COOKIES] == 700


def test_the_addon_wires_the_components():
    settings = crawl_settings()
    assert settings["SCHEDULER"] == "crawlyx.frontier.scheduler.Scheduler"
    assert settings["REQUEST_FINGERPRINTER_CLASS"] == "crawlyx.frontier.fingerprint.Fingerprinter"
    assert settings["TWISTED_DNS_RESOLVER"] == "crawlyx.policy.ssrf.SSRFResolver"
    middlewares = settings.getwithbase("DOWNLOADER_MIDDLEWARES")
    assert middlewares["crawlyx.middlewares.window.WindowMiddleware"] == 950
    assert middlewares["scrapy.downloadermiddlewares.redirect.RedirectMiddleware"] is None
    assert settings.getdict("ITEM_PIPELINES") == {
        "crawlyx.pipelines.markdown.MarkdownPipeline": 300,
        "crawlyx.pipelines.copies.CopiesPipeline": 310,
        "crawlyx.pipelines.chunks.ChunksPipeline": 320,  # NotConfigured without -a chunks
        "crawlyx.pipelines.lease.LeaseCheck": 1000,
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


def test_a_component_without_the_addon_says_so():
    crawler = get_crawler(Spider)  # no crawlyx add-on: no crawler.crawlyx
    with pytest.raises(RuntimeError, match=r"need the crawlyx add-on: ADDONS = "):
        Scheduler.from_crawler(crawler)


def test_the_scheduler_is_scrapys_not_scrapy_redis():
    # scrapy-redis's scheduler blocks the reactor in BRPOP with SCHEDULER_IDLE_BEFORE_CLOSE
    # above 0; crawlyx's pops from the visited table, with the crawl core's batches.
    settings = {"SCHEDULER_IDLE_BEFORE_CLOSE": 5, "ADDONS": crawlyx.settings.ADDONS}
    crawler = get_crawler(Spider, settings)
    scheduler = Scheduler.from_crawler(crawler)
    assert isinstance(scheduler, BaseScheduler)
    assert "scrapy_redis" not in {cls.__module__.split(".")[0] for cls in Scheduler.__mro__}


# -- profiles (settings/) -------------------------------------------------------------

# Every setting each profile changes (the first one is read through `scrapy settings`).
PROFILES = {
    "local": {"CRAWLYX_REDIS_URL": ""},
    "shared": {
        "CRAWLYX_REDIS_URL": "redis://127.0.0.1:6379/0",
        "CRAWLYX_REDIS_TIMEOUT": 10.0,
        "CRAWLYX_MARKDOWN_WORKERS": 2,
    },
    "fragile": {
        "CRAWLYX_WINDOW_MAX": 2,
        "CRAWLYX_WINDOW_MIN": 1,
        "CRAWLYX_WINDOW_START": 1,
        "CRAWLYX_WINDOW_GROW_AFTER": 50,
        "CRAWLYX_WINDOW_SLOW_SECONDS": 20.0,
        "DOWNLOAD_DELAY": 2.0,
        "DOWNLOAD_TIMEOUT": 90,
        "RETRY_TIMES": 4,
        "CRAWLYX_ROBOTS_RETRY_FOR": 600.0,
    },
    "render": {
        "CRAWLYX_RENDER": "always",
        "CRAWLYX_RENDER_WAIT_UNTIL": "networkidle",
        "CRAWLYX_RENDER_TIMEOUT": 60.0,
        "CRAWLYX_WINDOW_MAX": 8,
    },
    "scrapyd": {
        "CRAWLYX_MARKDOWN_WORKERS": 1,
        "CRAWLYX_PROGRESS_INTERVAL": 60.0,
        "CRAWLYX_WINDOW_RETRY_AFTER_MAX": 120.0,
    },
}


def scrapy_settings(name: str, env: dict, cwd: Path = ROOT) -> str:
    """``scrapy settings --get name``, as a user runs it."""
    env = {**crawl_env(), **env}
    env.pop("CRAWLYX_REDIS_URL", None)
    if "SCRAPY_PROJECT" in env:
        env.pop("SCRAPY_SETTINGS_MODULE")
    command = [sys.executable, "-m", "scrapy", "settings", "--get", name]
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_a_profile_is_picked_with_scrapy_project(profile):
    # scrapy.cfg's [settings] section names each profile.
    name, value = next(iter(PROFILES[profile].items()))
    assert scrapy_settings(name, {"SCRAPY_PROJECT": profile}) == str(value)


def test_a_profile_is_picked_with_scrapy_settings_module(tmp_path):
    # Anywhere, not only in the checkout's folder: the profiles are a package.
    env = {"SCRAPY_SETTINGS_MODULE": "settings.fragile"}
    assert scrapy_settings("CRAWLYX_WINDOW_MAX", env, cwd=tmp_path) == "2"


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_a_profile_changes_its_settings_only_and_checks_out(profile, monkeypatch):
    monkeypatch.delenv("CRAWLYX_REDIS_URL", raising=False)
    base = crawl_settings()
    settings = crawl_settings(f"settings.{profile}")
    changed = {name for name, value in settings.items() if value != base[name]}
    assert changed == {name for name, value in PROFILES[profile].items() if value != base[name]}
    assert {name: settings[name] for name in PROFILES[profile]} == PROFILES[profile]
    assert settings["SCHEDULER"] == "crawlyx.frontier.scheduler.Scheduler"  # still crawlyx
    Addon.check_settings(settings)  # the crawl would start


def test_a_crawl_with_a_profile(redis_url, tmp_path):
    # The shared profile, on the Redis named by the environment (no -s).
    out = tmp_path / "pages.jsonl"
    env = {
        **crawl_env(),
        "SCRAPY_SETTINGS_MODULE": "settings.shared",
        "CRAWLYX_REDIS_URL": redis_url,
    }
    with SiteServer() as site:
        command = crawl_command(out, f"start=http://127.0.0.1:{site.port}/start", "max_pages=3")
        proc = subprocess.run(
            command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
        )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(read_items(out)) == 3
    assert f"Using Redis at {redis_url}" in proc.stderr
    assert not (tmp_path / ".crawlyx").exists()  # no embedded Redis


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


def test_passwords_never_reach_the_log(site, crawl, redis_url):
    # The test server has no password (Redis accepts the AUTH): the log names the
    # server without the secret, nor does the settings dump (at DEBUG) hold it, nor the
    # start URL's password, sent as HTTP auth.
    port = redis_url.rsplit(":", 1)[1].split("/")[0]
    result = crawl(
        f"start=http://ann:s3cretpass@127.0.0.1:{site.port}/start",
        settings={
            "CRAWLYX_REDIS_URL": f"redis://:hunter2secret@127.0.0.1:{port}/0",
            "LOG_LEVEL": "DEBUG",
        },
    )
    assert result.returncode == 0
    assert f"Using Redis at redis://***@127.0.0.1:{port}/0" in result.log
    assert "'HTTPAUTH_PASS': '***'" in result.log
    assert "hunter2secret" not in result.log and "s3cretpass" not in result.log


def _defaults(*types) -> list[str]:
    return [
        name
        for name, value in vars(crawlyx.settings).items()
        if name.startswith("CRAWLYX_") and type(value) in types
    ]


@pytest.mark.parametrize(
    "names, value",
    [(_defaults(int, float), value) for value in ("lots", "-1", "nan", "inf", "")]
    + [(_defaults(bool), value) for value in ("maybe", "")],
)
def test_every_number_and_flag_is_checked_before_anything_starts(names, value):
    project = {name: v for name, v in vars(crawlyx.settings).items() if name.isupper()}
    Addon.check_settings(Settings(project))  # the defaults pass
    assert len(names) >= 10
    for name in names:
        with pytest.raises(ValueError, match=f"^{name} \\("):
            Addon.check_settings(Settings({**project, name: value}))


# Each string setting's wrong value; the other string settings take any text.
WRONG_STRINGS = {
    "CRAWLYX_REDIS_URL": "http://127.0.0.1:6379/0",
    "CRAWLYX_MARKDOWN_LINKS": "footnotes",
    "CRAWLYX_OPT_OUT_DIRECTIVES": "noai noindex",
    "CRAWLYX_RENDER": "sometimes",
    "CRAWLYX_RENDER_WAIT_UNTIL": "idle",
    "CRAWLYX_RENDER_ALLOWED_HOSTS": "https://example.com/",
    "CRAWLYX_BREADTH_BOTS": "notjson",
    "CRAWLYX_DEMAND_SLICE": "1x",
    "CRAWLYX_DEMAND_FLUSH_INTERVAL": "soon",
    "CRAWLYX_DEMAND_REFRESH_INTERVAL": "soon",
    "CRAWLYX_DEMAND_RUNGS": "6h,12x",
    "CRAWLYX_DEMAND_BASE_INTERVAL": "never",
    "CRAWLYX_DEMAND_STATS_INTERVAL": "0",
    "CRAWLYX_DEMAND_RETENTION": "forever",
    "CRAWLYX_COST_PROXY_TIER": "satellite",
    "CRAWLYX_COST_PROXY_PRICES": '{"datacenter": [0]}',
    "CRAWLYX_LOG_FORMAT": "xml",
    "CRAWLYX_DOCUMENTS": "pdf,odt",
}
ANY_STRING = {"CRAWLYX_DATA_DIR", "CRAWLYX_BOT_NAME", "CRAWLYX_CHROMIUM_PATH"}
# Every component that can be off, off: its settings are checked all the same.
ALL_OFF = {
    "CRAWLYX_WINDOW_ENABLED": False,
    "CRAWLYX_BREADTH_ENABLED": False,
    "CRAWLYX_DEMAND_ENABLED": False,
    "CRAWLYX_GRAPH_ENABLED": False,
    "CRAWLYX_RENDER": "never",
}


def project_settings(**overrides) -> Settings:
    project = {name: v for name, v in vars(crawlyx.settings).items() if name.isupper()}
    return Settings({**project, **overrides})


def test_every_string_setting_is_checked_before_anything_starts():
    strings = set(_defaults(str, list, dict, type(None)))
    assert strings == set(WRONG_STRINGS) | ANY_STRING  # a new one needs its wrong value here
    Addon.check_settings(project_settings(**ALL_OFF))
    for name, value in WRONG_STRINGS.items():
        with pytest.raises(ValueError, match=f"^{name}[: ]") as raised:
            Addon.check_settings(project_settings(**{**ALL_OFF, name: value}))
        assert "\n" not in str(raised.value)


def test_a_bot_pattern_that_does_not_compile_is_named():
    with pytest.raises(ValueError, match="^CRAWLYX_BREADTH_BOTS: bad bot pattern"):
        Addon.check_settings(project_settings(CRAWLYX_BREADTH_BOTS='{"mybot": "(unclosed"}'))


def test_the_ring_must_fit_the_ladder_only_when_demand_is_recorded():
    # A base interval shorter than a slice: fine for intervals alone (a quick refresh run).
    Addon.check_settings(project_settings(CRAWLYX_DEMAND_BASE_INTERVAL="1s"))
    with pytest.raises(ValueError, match="^CRAWLYX_DEMAND_SLICE: 1h must be positive"):
        Addon.check_settings(
            project_settings(CRAWLYX_DEMAND_BASE_INTERVAL="1s", CRAWLYX_DEMAND_ENABLED=True)
        )


@pytest.mark.parametrize(
    "name, meant",
    [
        ("CRAWLYX_BOTNAME", "; did you mean CRAWLYX_BOT_NAME?"),
        ("CRAWLYX_WINDOWS_MAX", "; did you mean CRAWLYX_WINDOW_MAX?"),
        ("CRAWLYX_redis_url", "; did you mean CRAWLYX_REDIS_URL?"),
        ("CRAWLYX_ZZZ", " (see crawlyx/settings.py)"),
    ],
)
def test_an_unknown_setting_is_refused_naming_the_closest(name, meant):
    # First, before the values: the unknown name is the likelier mistake. The value is
    # not shown (it may be a password).
    settings = project_settings(**{name: "redis://:hunter2@127.0.0.1/0"}, CRAWLYX_WINDOW_MAX="x")
    with pytest.raises(ValueError) as raised:
        Addon.check_settings(settings)
    assert str(raised.value) == f"{name} is not a crawlyx setting{meant}"


def test_settings_of_other_names_are_left_alone():
    Addon.check_settings(project_settings(MY_PROJECT_SETTING="x", CRAWLYX="x"))
