"""Serve a real documentation set from disk; crawl it with crawlyx, Crawlee and plain Scrapy.

    python bench/docs_site.py serve --root DIR --latency-ms 20 --port 0
    python bench/docs_site.py compare --root DIR --pages 1500 --latency-ms 20

``serve`` serves the files under ``--root`` on 127.0.0.1 from a threaded HTTP server (HTTP/1.1
keep-alive), every response delayed by ``--latency-ms``, and prints ``READY URL`` once
listening, URL being the docs' top index page (``--start``, default ``index.html``). ``/dir/``
serves ``/dir/index.html``; a directory without one is 404 (no generated listings). A
``robots.txt`` allowing everything is served when the docs have none. Requests are counted
as ``bench/site.py`` counts them (its ``Stats``), ``/_stats`` and ``/_reset`` answer the
same JSON: a resource is a file answered with 200, so fetching one file again under another
URL (``/a/`` and ``/a/index.html``, a query string) is a duplicate fetch.

``compare`` starts the server and runs the crawlers one after another (``bench/run.py``'s
``crawl``), each until it has emitted ``--pages`` pages: crawlyx, Crawlee for Python
(``bench/crawlee_spider.py``) and the plain Scrapy spider (``bench/baseline_spider.py``).
For each: pages emitted, unique files fetched, duplicate fetches, megabytes the server sent,
wall seconds (process start to exit), pages emitted per second, the peak RSS of the whole
process tree (the crawl process and every descendant summed at the same sample, every 0.2 s),
of the crawl process alone and of its descendants, and CPU seconds of the crawl process and
of its descendants.
Everything listens on and talks to 127.0.0.1 only. See bench/README.md for the docs used.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from run import crawl  # noqa: E402


def _load_site_module():
    # bench/site.py shares its name with the standard library's site module, which Python has
    # already imported: load it from its path under another name.
    spec = importlib.util.spec_from_file_location("bench_site", BENCH / "site.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench_site = _load_site_module()

HOST = "127.0.0.1"
ROBOTS = b"User-agent: *\nDisallow:\n"


class DocsServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024

    def __init__(self, root: Path, latency: float, port: int) -> None:
        self.root = root
        self.latency = latency
        self.stats = bench_site.Stats()
        self.lock = threading.Lock()
        super().__init__((HOST, port), DocsHandler)

    def record(self, raw: str, key: str, kind: str, status: int, nbytes: int) -> None:
        with self.lock:
            self.stats.record(raw, key, kind, status, nbytes)

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a crawler that hung up
            super().handle_error(request, client_address)


class DocsHandler(SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: every response has a Content-Length
    server: DocsServer

    def translate_path(self, path: str) -> str:
        self.directory = str(self.server.root)
        return super().translate_path(path)

    def log_message(self, format: str, *args) -> None:  # noqa: A002
        pass

    def send_response(self, code: int, message: str | None = None) -> None:
        self._status = code
        super().send_response(code, message)

    def send_header(self, keyword: str, value: str) -> None:
        if keyword.lower() == "content-length":
            self._length = int(value)
        super().send_header(keyword, value)

    def list_directory(self, path):
        self.send_error(404, "No index page here")
        return None

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def _send_bytes(self, ctype: str, data: bytes, body: bool) -> None:
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if body:
            self.wfile.write(data)

    def _answer(self, body: bool) -> None:
        key, path, pairs = bench_site.canonicalize(self.path)
        if path in ("/_stats", "/_reset"):
            with self.server.lock:
                if path == "/_reset":
                    self.server.stats.reset()
                    data = b'{"reset": true}\n'
                else:
                    full = dict(pairs).get("full", "") not in ("", "0")
                    data = json.dumps(self.server.stats.snapshot(full)).encode() + b"\n"
            self._send_bytes("application/json", data, body)
            return
        if self.server.latency > 0:
            time.sleep(self.server.latency)
        self._status, self._length = 0, 0
        if path == "/robots.txt" and not (self.server.root / "robots.txt").is_file():
            self._send_bytes("text/plain; charset=utf-8", ROBOTS, body)
            self.server.record(self.path, key, "robots", 200, len(ROBOTS) if body else 0)
            return
        f = self.send_head()  # the status line and headers; the open file when 200
        if f is None:
            kind = "redirect" if 300 <= self._status < 400 else "missing"
            self.server.record(self.path, key, kind, self._status, self._length if body else 0)
            return
        try:
            # The resource is the file: the same file under two URLs is one resource.
            resource = "/" + os.path.relpath(f.name, self.server.root)
            kind = "robots" if resource == "/robots.txt" else "page"
            self.server.record(self.path, resource, kind, 200, self._length if body else 0)
            if body:
                self.copyfile(f, self.wfile)
        finally:
            f.close()


def start_path(root: Path, start: str) -> str:
    if not (root / start).is_file():
        raise SystemExit(f"docs_site: no {start} under {root}; pass --start PATH")
    return start.lstrip("/")


def serve(args: argparse.Namespace) -> None:
    root = args.root.resolve()
    start = start_path(root, args.start)
    server = DocsServer(root, args.latency_ms / 1000.0, args.port)
    port = server.server_address[1]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"READY http://{HOST}:{port}/{start}", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.server_close()
        print("STOPPED", file=sys.stderr, flush=True)


def start_server(root: Path, start: str, latency_ms: int) -> tuple[subprocess.Popen, str, str]:
    proc = subprocess.Popen(
        [sys.executable, str(BENCH / "docs_site.py"), "serve", "--root", str(root),
         "--start", start, "--latency-ms", str(latency_ms), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    line = proc.stdout.readline().strip()
    if not line.startswith("READY "):
        proc.terminate()
        raise RuntimeError(f"docs server did not start: {line!r}")
    url = line.split(" ", 1)[1]
    base = url[: url.index("/", len("http://")) + 1]
    return proc, base, url


def print_rows(rows: list[dict]) -> None:
    header = (
        f"{'crawler':<8} {'pages':>6} {'unique':>6} {'dup fetches':>11} {'MB':>5} {'wall s':>7} "
        f"{'pages/s':>8} {'tree MiB':>8} {'crawler MiB':>11} {'children MiB':>12} "
        f"{'CPU s':>6} {'children CPU s':>14}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['name']:<8} {r['pages']:>6} {r['unique']:>6} {r['duplicates']:>11} "
            f"{r['bytes'] / 1e6:>5.0f} {r['wall']:>7.1f} {r['pages_per_s']:>8.1f} "
            f"{r['rss_tree']:>8.1f} {r['rss_crawler']:>11.1f} {r['rss_children']:>12.1f} "
            f"{r['cpu_crawler']:>6.1f} {r['cpu_workers'] + r['cpu_redis']:>14.1f}"
        )


def compare(args: argparse.Namespace) -> None:
    root = args.root.resolve()
    names = ["crawlyx"]
    if not args.skip_crawlee:
        names.append("crawlee")
    if not args.skip_baseline:
        names.append("scrapy")
    server, base, start = start_server(root, args.start, args.latency_ms)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            keep = args.keep.resolve() if args.keep else None
            if keep:
                keep.mkdir(parents=True, exist_ok=True)
            rows = []
            for name in names:
                out = (keep or work) / f"{name}.jsonl"
                row = crawl(name, base, out, args.pages, work, start=start)
                rows.append(row)
                if keep:
                    (keep / f"{name}.log").write_text(row["log"])
                print(f"{name}: {row['pages']} pages in {row['wall']:.1f} s", file=sys.stderr)
    finally:
        server.terminate()
        server.wait(10)
    print(f"docs: {root} from {start[len(base) - 1 :]}; {args.latency_ms} ms latency; "
          f"cores: {os.cpu_count()}")  # fmt: skip
    print_rows(rows)
    first = rows[0]
    for other in rows[1:]:
        speed = first["pages_per_s"] / other["pages_per_s"]
        tree = first["rss_tree"] / other["rss_tree"]
        print(f"crawlyx / {other['name']}: pages/s {speed:.2f}x, peak tree RSS {tree:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("serve", "compare"):
        sub = commands.add_parser(name)
        sub.add_argument("--root", type=Path, required=True, help="the docs' directory")
        sub.add_argument("--start", default="index.html", help="top index page, under --root")
        sub.add_argument("--latency-ms", type=int, default=20, help="delay per response")
        if name == "serve":
            sub.add_argument("--port", type=int, default=0, help="0 picks a free port")
        else:
            sub.add_argument("--pages", type=int, default=1500, help="pages each crawler emits")
            sub.add_argument("--skip-crawlee", action="store_true")
            sub.add_argument("--skip-baseline", action="store_true", help="no plain Scrapy")
            sub.add_argument("--keep", type=Path, help="keep each crawler's JSONL and log here")
    args = parser.parse_args()
    serve(args) if args.command == "serve" else compare(args)


if __name__ == "__main__":
    main()
