"""Crawl breadth: distinct URLs per bot per UTC day, for a site, in HyperLogLog++ sketches.

Distinct counts do not add (the same URL fetched twice, by two processes or on two
runs, is one URL), so breadth is kept as sketches that merge losslessly:

- :mod:`.sketch`    one sketch (p=14, 16 KiB, ~0.8 % standard error, exact while small),
- :mod:`.recorder`  a process's sketches per (day, bot) for a site, the hot path,
- :mod:`.store`     the Redis rows, the atomic Lua max-merge, the streaming row scan,
- :mod:`.report`    per-day figures: each bot, the cross-bot union, coverage,
- :mod:`.bots`      user agent → bot name, :mod:`.accesslog` reading access logs.

Writers are the crawl's extension (:mod:`crawlyx.breadth.extension`: crawlyx's own
fetches and the site's corpus) and ``scrapy visits`` (other bots, from access logs);
the reader is ``scrapy breadth``.

Loss model: a process records into memory and merges into Redis every flush interval,
at day rollover and when it ends. A process killed hard (SIGKILL, power loss) loses at
most one flush interval of its own observations: an undercount, never a double count,
since a merge is an idempotent max and re-merging what was already merged changes
nothing. A flush that fails (Redis unreachable) keeps its sketches dirty for the next.
"""

from crawlyx.breadth.recorder import OVERFLOW, Recorder
from crawlyx.breadth.sketch import EXACT_LIMIT, M, P, Sketch, hash64, hash_url

__all__ = ["EXACT_LIMIT", "M", "OVERFLOW", "P", "Recorder", "Sketch", "hash64", "hash_url"]
