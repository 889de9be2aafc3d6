"""Robots directives of a page: ``X-Robots-Tag`` headers and ``<meta name="robots">``.

``nofollow`` (or ``none``) stops link following from the page. A page carrying one of
``CRAWLYX_OPT_OUT_DIRECTIVES`` (default ``noai`` and ``noindex``; ``none`` implies
``noindex``) is kept out of the output and recorded as ``opted_out``. Directives
addressed to another crawler (``googlebot: noindex``) do not apply; those addressed to
ours (``CRAWLYX_BOT_NAME``) or to every crawler do. ``noimageai`` needs no action:
crawlyx keeps no images, only their alt text.
"""

from __future__ import annotations


class OptOut:
    def __init__(self, bot: str, refuse: frozenset[str], nofollow: bool = True):
        self.bot = bot.lower()
        self.refuse = refuse
        self.nofollow = nofollow

    @classmethod
    def from_settings(cls, settings) -> OptOut:
        """ValueError when a directive of CRAWLYX_OPT_OUT_DIRECTIVES is more than one word:
        no page's directive could match it (``noai noindex``: commas separate them)."""
        listed = settings.getlist("CRAWLYX_OPT_OUT_DIRECTIVES")
        refuse = frozenset(d.strip().lower() for d in listed if d.strip())
        for directive in refuse:
            if len(directive.split()) > 1:
                raise ValueError(
                    f"CRAWLYX_OPT_OUT_DIRECTIVES: {directive!r} is not one directive;"
                    " separate them with commas"
                )
        return cls(
            settings.get("CRAWLYX_BOT_NAME") or settings.get("BOT_NAME"),
            refuse,
            settings.getbool("CRAWLYX_HONOR_NOFOLLOW"),
        )

    def directives(self, headers, meta: list[tuple[str, str]]) -> set[str]:
        """The directives that apply to this crawler, from headers and meta tags."""
        found: set[str] = set()
        for raw in headers.getlist(b"X-Robots-Tag"):
            value = raw.decode("latin-1")
            agent, sep, rest = value.partition(":")
            if sep and " " not in agent.strip() and "," not in agent:
                if agent.strip().lower() != self.bot:
                    continue  # for another crawler
                value = rest
            found.update(_split(value))
        for name, content in meta:
            if name.lower() in ("robots", self.bot):
                found.update(_split(content))
        if "none" in found:
            found.update(("noindex", "nofollow"))
        return found

    def refused(self, directives: set[str]) -> str | None:
        """The directive that keeps the page out of the output, if any."""
        hits = sorted(self.refuse & directives)
        return hits[0] if hits else None


def _split(value: str) -> set[str]:
    return {d.strip().lower() for d in value.split(",") if d.strip()}
