"""How often a crawl's control comes back to the spider, and enters URL normalization.

    python bench/spider_calls.py --pages 200

Crawls the synthetic site (``bench/site.py``, on 127.0.0.1) in a child process that
profiles its main thread (``sys.setprofile``): every return from a function of another
file into a function of ``crawlyx/spiders/site.py`` is a return to the spider, counted
by the spider's function it returns to (an awaited coroutine that suspends on a future,
a page read in a worker, is counted apart: the spider waits for it); every call of
``crawlyx.urls.normalize.normalize_url`` is counted by its caller's module. All are
printed per page emitted.
The page workers (other processes) are not profiled: they normalize the page's links.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import subprocess
import sys
import tempfile
from asyncio import isfuture
from collections import Counter
from inspect import CO_COROUTINE
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from run import start_site  # noqa: E402
from scrapy.cmdline import execute  # noqa: E402

SPIDER = str(ROOT / "crawlyx" / "spiders" / "site.py")
NORMALIZE = str(ROOT / "crawlyx" / "urls" / "normalize.py")


def child(start: str, out: str, counts: str) -> None:
    returns: Counter = Counter()
    suspensions: Counter = Counter()
    normalizes: Counter = Counter()

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "normalize_url":
            if frame.f_code.co_filename == NORMALIZE and frame.f_back is not None:
                caller = frame.f_back.f_code
                normalizes[f"{Path(caller.co_filename).name}:{caller.co_name}"] += 1
        elif event == "return" and frame.f_code.co_filename != SPIDER:
            back = frame.f_back
            if back is not None and back.f_code.co_filename == SPIDER:
                # A coroutine that awaits a future hands it up: the spider waits, and
                # is resumed by the event loop, not returned to.
                suspended = frame.f_code.co_flags & CO_COROUTINE and isfuture(arg)
                counts = suspensions if suspended else returns
                counts[back.f_code.co_name] += 1

    def write():
        sys.setprofile(None)
        Path(counts).write_text(
            json.dumps({"returns": returns, "suspensions": suspensions, "normalize": normalizes})
        )

    atexit.register(write)
    sys.setprofile(profile)
    sys.argv = ["scrapy", "crawl", "site", "-a", f"start={start}", "-O", out]
    sys.argv += ["-s", "LOG_LEVEL=WARNING"]
    try:
        execute()
    except SystemExit:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    site, base = start_site(args.pages, 0)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            out, counts = Path(tmp) / "pages.jsonl", Path(tmp) / "counts.json"
            env = {**os.environ, "PYTHONPATH": str(ROOT)}
            env["SCRAPY_SETTINGS_MODULE"] = "crawlyx.settings"
            subprocess.run(
                [sys.executable, __file__, "--child", f"{base}/", str(out), str(counts)],
                cwd=tmp, env=env, check=True,
            )  # fmt: skip
            pages = sum(1 for _ in out.open())
            data = json.loads(counts.read_text())
    finally:
        site.terminate()
    print(f"pages emitted: {pages}")
    returns = data["returns"]
    print(f"returns to the spider per page: {sum(returns.values()) / pages:.2f}")
    for name, n in sorted(returns.items(), key=lambda kv: -kv[1]):
        print(f"  {name:24} {n / pages:6.2f}")
    suspensions = data["suspensions"]
    print(f"awaits in the spider suspended per page: {sum(suspensions.values()) / pages:.2f}")
    for name, n in sorted(suspensions.items(), key=lambda kv: -kv[1]):
        print(f"  {name:24} {n / pages:6.2f}")
    normalize = data["normalize"]
    print(f"normalize_url calls per page: {sum(normalize.values()) / pages:.2f}")
    for name, n in sorted(normalize.items(), key=lambda kv: -kv[1]):
        print(f"  {name:40} {n / pages:6.2f}")


if __name__ == "__main__":
    main()
