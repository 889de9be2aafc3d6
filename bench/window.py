"""The adaptive window against a host that starts answering 429, then recovers.

    python bench/window.py                 # crawlyx
    python bench/window.py --baseline      # and again with the window off

A local server (127.0.0.1 only) serves an endless tree of pages, each after
``--latency-ms``. From its first request it is healthy for ``--healthy`` seconds, then
answers every request with ``429 Retry-After: 1`` for ``--limited`` seconds, then is
healthy again for ``--recovered`` seconds, after which the crawl is stopped (SIGINT,
Scrapy's graceful stop). The window is sampled from the middleware's INFO line on
every change (``crawlyx: window <host> <value> (...)``), timed as it arrives.

Prints, per ``--bucket`` seconds: the phase, the window at the end of the bucket (its
lowest value in the bucket in brackets when lower), and the requests the server
answered per second, 200s and 429s; then the same per phase.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WINDOW_LINE = re.compile(r"crawlyx: window (\S+) (\d+) \(")
GIVEN_UP = re.compile(r"'crawlyx/error/http_4xx': (\d+)")
FANOUT = 4


class Server(ThreadingHTTPServer):
    request_queue_size = 256  # a burst must not overflow the listen backlog
    daemon_threads = True


class Site:
    """Pages /p/<i>, each linking to its FANOUT children; phases by time since the first
    request."""

    def __init__(self, latency: float, healthy: float, limited: float):
        self.latency = latency
        self.healthy = healthy
        self.limited = limited
        self.started: float | None = None
        self.lock = threading.Lock()
        self.served: list[tuple[float, int]] = []  # (monotonic time, status)
        self.httpd = Server(("127.0.0.1", 0), self._handler())
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def phase(self, now: float) -> str:
        if self.started is None or now - self.started < self.healthy:
            return "healthy"
        if now - self.started < self.healthy + self.limited:
            return "429"
        return "recovered"

    def _handler(self):
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):  # noqa: N802
                now = time.monotonic()
                with site.lock:
                    if site.started is None:
                        site.started = now
                headers, body = {}, b""
                if site.phase(now) == "429":
                    status, headers = 429, {"Retry-After": "1"}
                elif self.path in ("/robots.txt", "/sitemap.xml"):
                    status = 404
                else:
                    status, body = 200, site.page(self.path)
                    time.sleep(site.latency)
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                with site.lock:
                    site.served.append((time.monotonic(), status))

            def log_message(self, *args):
                pass

        return Handler

    def page(self, path: str) -> bytes:
        i = int(path.rsplit("/", 1)[1]) if path.startswith("/p/") else -1
        kids = range(FANOUT * i + FANOUT, FANOUT * i + 2 * FANOUT) if i >= 0 else range(FANOUT)
        links = "".join(f'<li><a href="/p/{k}">page {k}</a></li>' for k in kids)
        text = " ".join(f"Paragraph {i} of the benchmark page." for _ in range(20))
        return (
            f"<!doctype html><html><head><title>Page {i}</title></head><body><main>"
            f"<h1>Page {i}</h1><p>{text}</p><ul>{links}</ul></main></body></html>"
        ).encode()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def run(args, window: bool) -> dict:
    site = Site(args.latency_ms / 1000, args.healthy, args.limited)
    total = args.healthy + args.limited + args.recovered
    samples: list[tuple[float, int]] = []  # (monotonic time, window)
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, PYTHONPATH=str(ROOT), SCRAPY_SETTINGS_MODULE="crawlyx.settings")
        command = [sys.executable, "-m", "scrapy", "crawl", "site", "-a", f"start={site.base}/",
                   "-a", "sitemap=0", "-O", str(Path(tmp) / "pages.jsonl"),
                   "-s", f"CRAWLYX_DATA_DIR={Path(tmp) / '.crawlyx'}",
                   "-s", "CRAWLYX_PROGRESS_INTERVAL=1",
                   "-s", f"CRAWLYX_WINDOW_START={args.start_window}",
                   "-s", f"CRAWLYX_WINDOW_ENABLED={int(window)}"]  # fmt: skip
        proc = subprocess.Popen(
            command, cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        log: list[str] = []

        def read():
            for line in proc.stderr:
                log.append(line)
                match = WINDOW_LINE.search(line)
                if match:
                    samples.append((time.monotonic(), int(match.group(2))))

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        while site.started is None or time.monotonic() - site.started < total:
            if proc.poll() is not None:
                sys.stderr.write("".join(log[-40:]))
                raise RuntimeError("the crawl ended early")
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        proc.wait(120)
        reader.join(10)
    site.close()
    start = site.started
    given_up = next((int(m.group(1)) for m in map(GIVEN_UP.search, log) if m), 0)
    return {
        "window": window,
        "total": total,
        "served": [(t - start, status) for t, status in site.served if t - start < total],
        "samples": [(t - start, value) for t, value in samples],
        "given_up": given_up,
        "site": site,
    }


def window_at(samples, t: float, default: int | None) -> int | None:
    value = default
    for when, v in samples:
        if when > t:
            break
        value = v
    return value


def report(result: dict, args) -> None:
    site, served, samples = result["site"], result["served"], result["samples"]
    start_window = args.start_window if result["window"] else None
    label = "crawlyx, window on" if result["window"] else "crawlyx, window off"
    print(f"\n{label}: {args.latency_ms} ms per page; 429 with Retry-After: 1 from "
          f"{args.healthy:g} s to {args.healthy + args.limited:g} s")  # fmt: skip
    print(f"{'t (s)':>9}  {'phase':<9}  {'window':>9}  {'200/s':>6}  {'429/s':>6}")
    edges = [x * args.bucket for x in range(int(result["total"] / args.bucket) + 1)]
    for lo, hi in zip(edges, edges[1:], strict=False):
        mid = site.phase(site.started + (lo + hi) / 2)
        ok = sum(1 for t, s in served if lo <= t < hi and s == 200) / (hi - lo)
        limited = sum(1 for t, s in served if lo <= t < hi and s == 429) / (hi - lo)
        if result["window"]:
            end = window_at(samples, hi, start_window)
            low = min([window_at(samples, lo, start_window), end])
            low = min([low] + [v for t, v in samples if lo <= t < hi])
            shown = f"{end}" if low == end else f"{end} ({low})"
        else:
            shown = "-"
        print(f"{lo:>4.0f}-{hi:<4.0f}  {mid:<9}  {shown:>9}  {ok:>6.1f}  {limited:>6.1f}")
    print(f"\n{'phase':<9}  {'seconds':>7}  {'200/s':>6}  {'429/s':>6}  window")
    bounds = {
        "healthy": (0, args.healthy),
        "429": (args.healthy, args.healthy + args.limited),
        "recovered": (args.healthy + args.limited, result["total"]),
    }
    for phase, (lo, hi) in bounds.items():
        ok = sum(1 for t, s in served if lo <= t < hi and s == 200) / (hi - lo)
        limited = sum(1 for t, s in served if lo <= t < hi and s == 429) / (hi - lo)
        if result["window"]:
            first, last = window_at(samples, lo, start_window), window_at(samples, hi, None)
            low = min([first] + [v for t, v in samples if lo <= t < hi])
            shown = f"{first} -> {last} (lowest {low})"
        else:
            shown = "-"
        print(f"{phase:<9}  {hi - lo:>7.0f}  {ok:>6.1f}  {limited:>6.1f}  {shown}")
    print(f"pages given up (a 429 after RETRY_TIMES retries): {result['given_up']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--latency-ms", type=int, default=100)
    parser.add_argument("--healthy", type=float, default=8)
    parser.add_argument("--limited", type=float, default=8)
    parser.add_argument("--recovered", type=float, default=10)
    parser.add_argument("--bucket", type=float, default=2)
    parser.add_argument("--start-window", type=int, default=8, help="CRAWLYX_WINDOW_START")
    parser.add_argument("--baseline", action="store_true", help="also crawl with the window off")
    args = parser.parse_args()
    print(f"cores: {os.cpu_count()}")
    report(run(args, window=True), args)
    if args.baseline:
        report(run(args, window=False), args)


if __name__ == "__main__":
    main()
