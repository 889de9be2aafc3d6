"""Naming the bot behind a user agent.

A table, in order, of ``bot name -> regular expression`` searched (case-insensitively)
in the user agent; the first match names the bot. The default table is
:data:`DEFAULT_BOTS`; CRAWLYX_BREADTH_BOTS replaces it (a dict, or JSON with ``-s``).
A user agent no entry matches but that looks automated (:data:`BOT_LIKE`: "bot",
"crawler", "spider", HTTP libraries, an empty agent, ...) is ``other``; anything else
is a person's browser: ``None`` (skipped by ``scrapy visits`` unless ``--humans``,
which counts them as ``human``). crawlyx's own user agent (its CRAWLYX_BOT_NAME token,
or its USER_AGENT) is :data:`OWN`: its crawls record their own fetches, apart from the
bots that visit the site, and ``scrapy visits`` skips its lines.
"""

from __future__ import annotations

import json
import re

OTHER = "other"
HUMAN = "human"
OWN = "~own"  # crawlyx itself

DEFAULT_BOTS: dict[str, str] = {
    "Googlebot": r"googlebot|google-inspectiontool|googleother|storebot-google|adsbot-google",
    "Bingbot": r"bingbot|bingpreview|adidxbot",
    "GPTBot": r"gptbot",
    "OAI-SearchBot": r"oai-searchbot",
    "ChatGPT-User": r"chatgpt-user",
    "ClaudeBot": r"claudebot|claude-searchbot",
    "Claude-User": r"claude-user|claude-web",
    "PerplexityBot": r"perplexitybot",
    "Perplexity-User": r"perplexity-user",
    "CCBot": r"ccbot",
    "Meta-ExternalAgent": r"meta-externalagent|meta-externalfetcher|facebookbot",
    "Applebot": r"applebot",
    "Bytespider": r"bytespider",
    "Amazonbot": r"amazonbot",
    "YandexBot": r"yandex(bot|images|mobilebot)",
    "Baiduspider": r"baiduspider",
    "DuckDuckBot": r"duckduckbot|duckassistbot",
}

#: What makes an unnamed user agent count as a bot (``other``) rather than a person.
BOT_LIKE = (
    r"bot\b|bot/|crawl|spider|slurp|scrap|fetch|archiv|preview|monitor|checker|"
    r"headless|phantomjs|python-|python/|curl/|wget/|libwww|java/|okhttp|axios|"
    r"go-http-client|node-fetch|httpclient|http_client|aiohttp|httpx|guzzle|^\S*$"
)


class BotTable:
    """Classify user agents: a bot name, ``other``, or None for a person."""

    CACHE_LIMIT = 10_000

    def __init__(
        self,
        bots: dict[str, str] | None = None,
        humans: bool = False,
        own: tuple[str, ...] = (),
    ):
        """``own``: crawlyx's robots.txt token and its user agent, which name it."""
        bots = DEFAULT_BOTS if bots is None else bots
        self.names = list(bots)
        try:
            self._named = re.compile(
                "|".join(f"({pattern})" for pattern in bots.values()), re.IGNORECASE
            )
            # Group numbers: a pattern's own groups shift the ones after it.
            self._group_names: dict[int, str] = {}
            index = 1
            for name, pattern in bots.items():
                self._group_names[index] = name
                index += 1 + re.compile(pattern).groups
        except re.error as exc:
            raise ValueError(f"bad bot pattern: {exc}") from None
        self._bot_like = re.compile(BOT_LIKE, re.IGNORECASE)
        names = [rf"(?<![\w-]){re.escape(name)}(?![\w-])" for name in own if name.strip()]
        self._own = re.compile("|".join(names), re.IGNORECASE) if names else None
        self.humans = humans
        self._cache: dict[str, str | None] = {}

    @classmethod
    def from_settings(cls, settings, humans: bool = False) -> BotTable:
        raw = settings.get("CRAWLYX_BREADTH_BOTS")
        if isinstance(raw, str):
            try:
                raw = json.loads(raw) if raw.strip() else None
            except ValueError as exc:
                raise ValueError(f"CRAWLYX_BREADTH_BOTS is not JSON: {exc}") from None
        if raw is not None and not isinstance(raw, dict):
            raise ValueError("CRAWLYX_BREADTH_BOTS must map bot names to patterns")
        own = (settings.get("CRAWLYX_BOT_NAME") or "", settings.get("USER_AGENT") or "")
        try:
            return cls(dict(raw) if raw else None, humans=humans, own=own)
        except ValueError as exc:
            raise ValueError(f"CRAWLYX_BREADTH_BOTS: {exc}") from None

    def classify(self, agent: str) -> str | None:
        """The bot name, :data:`OWN` (crawlyx), ``other``, ``human`` (with humans on) or
        None (a person)."""
        cached = self._cache.get(agent, self)
        if cached is not self:
            return cached
        name = self._classify(agent)
        if len(self._cache) >= self.CACHE_LIMIT:
            self._cache.clear()
        self._cache[agent] = name
        return name

    def _classify(self, agent: str) -> str | None:
        agent = agent.strip()
        if agent in ("", "-"):
            return OTHER
        if self._own is not None and self._own.search(agent):
            return OWN
        if self.names:
            match = self._named.search(agent)
            if match is not None:
                return self._group_names[match.lastindex or 1]
        if self._bot_like.search(agent):
            return OTHER
        return HUMAN if self.humans else None
