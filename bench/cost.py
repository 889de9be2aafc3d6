"""What a page of the bench site costs, plain HTTP against the browser, from the crawl's
own report (crawlyx/cost/model.py), and the error classes the crawl met on the way.

Usage::

    python bench/cost.py --http-pages 2000 --browser-pages 300

Runs bench/site.py (pages of about 40 KB, no added latency) and two crawls of it, with
``render=never`` and ``render=always``, each to its page count, and the embedded Redis
(its CPU is the crawl's ``redis`` component). With ``--docs-root``, a third crawl, plain
HTTP, of a real documentation set served by bench/docs_site.py (20 ms per response), for
its error classes. Each crawl runs under a subreaper that waits
for every process of it, so the CPU the system counted around it is printed next to the
report's. Prints a Markdown table: CPU seconds per page by component, what a million
pages take, bytes received per page, and the errors per thousand fetches by class.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

REAPER = """
import ctypes, json, os, resource, subprocess, sys
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
status = subprocess.Popen(sys.argv[1:], stderr=subprocess.DEVNULL).wait()
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"status": status, "cpu": usage.ru_utime + usage.ru_stime}))
"""


def start_site(pages: int) -> tuple[subprocess.Popen, str]:
    return start([str(ROOT / "bench" / "site.py"), "--pages", str(pages), "--latency-ms", "0"])


def start(command: list[str]) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, *command, "--port", "0"], stdout=subprocess.PIPE, text=True
    )
    line = proc.stdout.readline().strip()
    if not line.startswith("READY "):
        raise RuntimeError(f"site did not start: {line!r}")
    return proc, line.split(" ", 1)[1]


def crawl(base: str, mode: str, pages: int, workdir: Path) -> dict:
    report = workdir / f"report-{mode}.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT), SCRAPY_SETTINGS_MODULE="crawlyx.settings")
    command = [sys.executable, "-m", "scrapy", "crawl", "site", "-a", f"start={base}",
               "-a", f"render={mode}", "-a", f"max_pages={pages}", "-a", f"report={report}",
               "-O", str(workdir / f"pages-{mode}.jsonl"), "-L", "WARNING",
               "-s", f"CRAWLYX_DATA_DIR={workdir / '.crawlyx'}"]  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-c", REAPER, *command],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    measured = json.loads(proc.stdout.splitlines()[-1])
    if measured["status"] != 0:
        raise RuntimeError(f"crawl failed: {' '.join(command)}")
    return {"report": json.loads(report.read_text()), "measured_cpu": measured["cpu"]}


def row(mode: str, result: dict) -> str:
    report = result["report"]
    cost = report["cost"]
    pages = report["pages"]
    by_component = {
        component: sum(modes.values())
        for component, modes in cost["cpu_seconds"]["by_component"].items()
    }
    total = cost["cpu_seconds"]["total"]
    parts = " + ".join(
        f"{component} {seconds / pages * 1000:.1f}"
        for component, seconds in by_component.items()
        if seconds
    )
    received = sum(cost["response_bytes"].values()) / pages
    return (
        f"| {mode} | {pages:,} | {report['wall_seconds']:.1f} | {total:.1f} "
        f"({result['measured_cpu']:.1f}) | {total / pages * 1000:.1f} ({parts}) | "
        f"{total / pages * 1e6 / 3600:,.0f} | {received / 1024:.0f} KiB | "
        f"{cost['per_url']['all'] * 1e6:.2f} |"
    )


def errors(mode: str, result: dict) -> str:
    report = result["report"]
    fetches = report["fetches"]["count"]
    classes = ", ".join(
        f"{name} {count / fetches * 1000:.1f}"
        for name, count in sorted(report["errors"]["by_class"].items())
    )
    return f"| {mode} | {fetches:,} | {classes or 'none'} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--http-pages", type=int, default=2000)
    parser.add_argument("--browser-pages", type=int, default=300)
    parser.add_argument("--docs-root", type=Path, help="a documentation set (bench/README.md)")
    parser.add_argument("--docs-start", default="api/index.html")
    parser.add_argument("--docs-pages", type=int, default=1500)
    args = parser.parse_args()
    site, base = start_site(max(args.http_pages, args.browser_pages) + 100)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            results = {
                "http": crawl(base, "never", args.http_pages, Path(tmp)),
                "browser": crawl(base, "always", args.browser_pages, Path(tmp)),
            }
    finally:
        site.terminate()
        site.wait(10)
    sites = dict(results)
    if args.docs_root:
        docs, base = start([str(ROOT / "bench" / "docs_site.py"), "serve", "--root",
                            str(args.docs_root), "--start", args.docs_start])  # fmt: skip
        try:
            with tempfile.TemporaryDirectory() as tmp:
                sites["docs, http"] = crawl(base, "never", args.docs_pages, Path(tmp))
        finally:
            docs.terminate()
            docs.wait(10)
    print(
        "| mode | pages | wall s | CPU s (system) | CPU ms per page (by component) | "
        "CPU hours per million pages | received per page | cost per million pages |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for mode, result in results.items():
        print(row(mode, result))
    print()
    print("| mode | fetches | errors per 1,000 fetches, by class |")
    print("| --- | --- | --- |")
    for mode, result in sites.items():
        print(errors(mode, result))


if __name__ == "__main__":
    main()
