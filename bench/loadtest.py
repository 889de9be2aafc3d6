"""Measure how many requests/s bench/site.py sustains.

Opens ``--connections`` keep-alive connections and, for ``--seconds``, has each one fetch
``/p/{i}`` pages back to back (reading Content-Length bodies). Prints one JSON line.

    python bench/loadtest.py http://127.0.0.1:PORT/ --connections 200 --seconds 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from urllib.parse import urlsplit


async def worker(host: str, port: int, pages: int, wid: int, deadline: float, out: dict) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    i = wid
    try:
        while time.monotonic() < deadline:
            writer.write(f"GET /p/{i % pages} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            await reader.readexactly(length)
            out["requests"] += 1
            out["bytes"] += length
            status = int(head.split(b" ", 2)[1])
            if status != 200:
                out["errors"] += 1
            i += 7
    finally:
        writer.close()


async def run(url: str, connections: int, seconds: float, pages: int) -> dict:
    parts = urlsplit(url)
    out = {"requests": 0, "bytes": 0, "errors": 0}
    start = time.monotonic()
    deadline = start + seconds
    tasks = [
        worker(parts.hostname, parts.port, pages, w, deadline, out) for w in range(connections)
    ]
    results = await asyncio.gather(*tasks, return_exceptions=True)
    elapsed = time.monotonic() - start
    out["failed_connections"] = sum(isinstance(r, BaseException) for r in results)
    out["connections"] = connections
    out["elapsed_s"] = round(elapsed, 3)
    out["req_per_s"] = round(out["requests"] / elapsed, 1)
    out["mb_per_s"] = round(out["bytes"] / elapsed / 1e6, 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url")
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--pages", type=int, default=300, help="cycle over /p/0..pages-1")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args.url, args.connections, args.seconds, args.pages))))


if __name__ == "__main__":
    main()
