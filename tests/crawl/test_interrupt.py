"""Ctrl-C in a terminal: the signal reaches the crawl's whole process group (page workers,
the browser's driver), as ``os.killpg`` sends it here. Once pauses cleanly, whatever the
moment; twice stops at once with a non-zero status. Either way nothing is left running
(the embedded Redis included) and the job, resumed, loses nothing and emits nothing twice.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import psutil
import pytest

from tests.conftest import crawl_command, crawl_env, read_items
from tests.sites.site import QuietHandler, Serving

PAGES = 60
BIG_ROWS = 40_000  # a page of some MB: a worker reads it for a while


class BookSite(Serving):
    """``/`` links ``/big``, then ``/p/0`` .. ``/p/{PAGES-1}`` (served slowly)."""

    def __init__(self, latency: float):
        self.latency = latency
        self.counts: Counter[str] = Counter()
        site = self

        class Handler(QuietHandler):
            def do_GET(self):  # noqa: N802
                site.counts[self.path] += 1
                if self.path == "/robots.txt":
                    return self.reply(200, "User-agent: *\nAllow: /\n", "text/plain")
                if self.path == "/":
                    links = ["/big"] + [f"/p/{i}" for i in range(PAGES)]
                    return self.reply(200, _page("Home", links))
                if self.path == "/big":
                    rows = "".join(
                        f"<tr><td>row {i}</td><td>value {i * 7}</td></tr>" for i in range(BIG_ROWS)
                    )
                    return self.reply(200, _page("Big", [], f"<table>{rows}</table>"))
                if self.path.startswith("/p/"):
                    time.sleep(site.latency)
                    return self.reply(200, _page(f"Page {self.path}", ["/"]))
                return self.reply(404, "<html><body>not found</body></html>")

        super().__init__(Handler)

    def expected(self) -> set[str]:
        return {self.base + p for p in ["/", "/big", *(f"/p/{i}" for i in range(PAGES))]}


def _page(title: str, links: list[str], extra: str = "") -> str:
    anchors = "".join(f'<p><a href="{href}">link to {href}</a></p>' for href in links)
    return (
        f"<html><head><title>{title}</title></head><body><main><h1>{title}</h1>"
        f"<p>The text of {title}, long enough to be the page's content.</p>"
        f"{anchors}{extra}</main></body></html>"
    )


class Crawl:
    """``scrapy crawl site`` as a terminal runs it: a process group of its own, which
    ``interrupt`` signals whole. On the embedded Redis under ``data``."""

    def __init__(self, tmp_path, site: BookSite, job: str, out: str):
        self.data = tmp_path / "data"
        self.out = tmp_path / out
        settings = {"CRAWLYX_DATA_DIR": self.data, "CRAWLYX_PROGRESS_INTERVAL": 0}
        command = crawl_command(self.out, f"start={site.base}/", f"job={job}", settings=settings)
        self.proc = subprocess.Popen(
            command,
            cwd=tmp_path,
            env=crawl_env(),
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its own process group, as a shell's job
        )
        self.tree: list[psutil.Process] = []

    def interrupt(self) -> None:
        """Ctrl-C: SIGINT to the crawl's process group; what runs then is remembered."""
        self.tree = _tree(self.proc.pid, self.data)
        os.killpg(self.proc.pid, signal.SIGINT)

    def finish(self) -> str:
        log = self.proc.communicate(timeout=120)[1]
        assert not _alive(self.tree), "left running: " + ", ".join(
            " ".join(p.cmdline()[:2]) for p in _alive(self.tree)
        )
        return log


def _tree(pid: int, data) -> list[psutil.Process]:
    """The crawl process, its descendants, and the embedded Redis serving ``data`` (it
    runs in a session of its own)."""
    crawl = psutil.Process(pid)
    tree = [crawl, *crawl.children(recursive=True)]
    for process in psutil.process_iter(["cmdline"]):
        if any(str(data) in part for part in process.info["cmdline"] or ()):
            tree.append(process)
    return tree


def _alive(processes: list[psutil.Process], wait: float = 15.0) -> list[psutil.Process]:
    """Those still running after ``wait`` seconds (the embedded Redis's watchdog looks
    every 2 s)."""
    deadline = time.monotonic() + wait
    while True:
        alive = [p for p in processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.2)


def _wait_for(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the crawl never got there"
        time.sleep(0.02)


def _resume(tmp_path, site: BookSite, job: str) -> tuple[int, str]:
    """The job run again to its end, as its "paused" line says."""
    resumed = Crawl(tmp_path, site, job, "resumed.jsonl")
    log = resumed.finish()
    return resumed.proc.returncode, log


MOMENTS = {
    # As the spider opens: robots.txt is the first thing it asks for.
    "start": lambda site: site.counts["/robots.txt"] >= 1,
    "mid-crawl": lambda site: sum(site.counts[f"/p/{i}"] for i in range(PAGES)) >= 8,
    # The big page was just served: a page worker is reading it.
    "while a worker reads": lambda site: site.counts["/big"] >= 1,
}


@pytest.mark.parametrize("moment", list(MOMENTS))
def test_ctrl_c_once_pauses_cleanly_and_the_job_resumes_without_loss(tmp_path, moment):
    with BookSite(latency=0.3) as site:
        job = f"ctrl-c-{moment.split()[0]}"
        first = Crawl(tmp_path, site, job, "first.jsonl")
        _wait_for(lambda: MOMENTS[moment](site))
        if moment == "while a worker reads":
            time.sleep(0.3)  # received, handed to a worker
        first.interrupt()
        log = first.finish()
        assert first.proc.returncode == 0, log[-3000:]
        assert "Traceback" not in log and "KeyboardInterrupt" not in log, log[-3000:]
        assert "crawlyx: pausing: finishing the pages in flight (Ctrl-C again to stop" in log
        assert f"crawlyx: paused; resume with -a job={job}" in log
        written = [item["url"] for item in read_items(first.out)]
        assert len(written) < len(site.expected())  # paused, not finished
        if moment == "while a worker reads":
            assert site.base + "/big" in written  # the page being read was finished

        returncode, log = _resume(tmp_path, site, job)
        assert returncode == 0, log[-3000:]
        urls = written + [item["url"] for item in read_items(tmp_path / "resumed.jsonl")]
        assert len(urls) == len(set(urls))  # nothing twice
        assert set(urls) == site.expected()  # nothing lost


def test_ctrl_c_twice_stops_at_once_with_a_non_zero_status(tmp_path):
    with BookSite(latency=5.0) as site:  # pages in flight for seconds
        job = "ctrl-c-twice"
        first = Crawl(tmp_path, site, job, "first.jsonl")
        _wait_for(lambda: site.counts["/p/0"] >= 1)
        first.interrupt()
        time.sleep(0.5)
        os.killpg(first.proc.pid, signal.SIGINT)
        log = first.finish()
        assert first.proc.returncode == 128 + signal.SIGINT, log[-3000:]
        # It did not wait for the pages in flight.
        assert not [i for i in read_items(first.out) if "/p/" in i["url"]]
        assert "crawlyx: stopped at once; what was being fetched is fetched again" in log
        assert "Traceback" not in log, log[-3000:]

        site.latency = 0.0
        returncode, log = _resume(tmp_path, site, job)
        assert returncode == 0, log[-3000:]
        outputs = [read_items(tmp_path / name) for name in ("first.jsonl", "resumed.jsonl")]
        urls = [item["url"] for items in outputs for item in items]
        assert len(urls) == len(set(urls))
        assert set(urls) == site.expected()


def _shared_objects(paths) -> set[str]:
    return {path for path in paths if ".so" in os.path.basename(path)}


def _loaded_before_main(tmp_path, env: dict) -> set[str]:
    """The shared objects a crawlyx process has loaded when its main() starts: Python's
    own start and the import of crawlyx.cli, as the installed script runs them."""
    from tests.test_cli import crawlyx_script

    python = Path(crawlyx_script()).read_text().splitlines()[0].removeprefix("#!")
    code = "import sys\nfrom crawlyx.cli import main\nprint(open('/proc/self/maps').read())"
    maps = subprocess.run(
        [python, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    ).stdout
    fields = (line.split(maxsplit=5) for line in maps.splitlines())
    return _shared_objects(f[5] for f in fields if len(f) == 6)  # the mapped file's path


@pytest.mark.parametrize("after", [0.1, 0.4, 0.8])
def test_ctrl_c_at_any_moment_of_the_start_is_no_traceback(tmp_path, after):
    """However early it comes (Python still importing Scrapy, the checks, the spider
    opening): status 0, one line, no traceback.

    The moments count from main()'s start, not the process's: before main runs, Python
    starts and imports crawlyx.cli, where no code of crawlyx's can catch the signal (a
    tenth of a second, or several on a loaded machine). main() is known to have started
    once the process loads a shared object that those two did not need (Scrapy's imports
    load dozens)."""
    from tests.test_cli import crawlyx_script, outside_env

    env = outside_env()
    before_main = _loaded_before_main(tmp_path, env)
    with BookSite(latency=0.3) as site:
        proc = subprocess.Popen(
            [crawlyx_script(), "crawl", f"{site.base}/", "-O", "pages.jsonl"],
            cwd=tmp_path,
            env=env,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )

        def in_main() -> bool:
            assert proc.poll() is None, "the crawl ended before any Ctrl-C"
            maps = psutil.Process(proc.pid).memory_maps()
            return bool(_shared_objects(m.path for m in maps) - before_main)

        try:
            _wait_for(in_main)
            time.sleep(after)
            os.killpg(proc.pid, signal.SIGINT)
            log = proc.communicate(timeout=120)[1]
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
    assert proc.returncode == 0, log[-3000:]
    assert "Traceback" not in log and "KeyboardInterrupt" not in log, log[-3000:]
    assert (
        "crawlyx: stopped before the crawl started; nothing was fetched" in log
        or "crawlyx: paused; resume with -a job=" in log
    )
