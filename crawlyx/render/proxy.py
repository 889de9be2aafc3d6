"""The browser's only way to the network: an HTTP proxy on 127.0.0.1, open only to its own
crawl, that resolves host names with the crawl's resolver and connects to exactly the address
it answered.

Chromium resolves names itself. Left to do so, it would look up a page's host again after
the SSRF guard checked it, and a name whose DNS answer changes in between (DNS rebinding)
would take the browser to an address the guard refuses. So the browser is launched with
this proxy as its proxy server, and it is then the only thing the browser connects to:

* The browser hands the proxy the host *name*: ``CONNECT host:port`` for https and
  WebSockets, the absolute URL of a plain http request. It does no lookup of its own.
  Playwright launches Chromium with ``--proxy-bypass-list=<-loopback>``: loopback goes
  through the proxy too.
* Every connection goes through it: the page, its subresources and XHRs, WebSockets,
  the redirects the browser follows on its own (which Playwright's request routing does
  not show), whatever the browser fetches for itself.
* The proxy asks the crawl's resolver (the reactor's: :class:`crawlyx.policy.ssrf.SSRFResolver`,
  with its cache and the crawl's guard), which answers only with an allowed address, IPv4
  or IPv6, or refuses. The proxy connects to that address: there is no second lookup
  between the check and the connection, as with the crawl's own downloads.

Only its own crawl's browser may use it. Each proxy makes a random secret when it is built
and hands it to Playwright with its address; a request without it is answered 407 and
closed, before any name is looked up. (Chromium cannot authenticate to a SOCKS5 proxy, so
the proxy speaks HTTP: Playwright answers Chromium's proxy challenge with the secret.) A
connection that moves no byte either way for ``idle_timeout`` seconds is closed.

A plain http request is forwarded alone on its connection: its request line made
origin-form, the proxy's own headers (``Proxy-Authorization``: the secret goes no further)
removed, ``Connection: close`` added; the response is passed back and both connections
closed (so each plain http request costs a connection of its own: the proxy does not read
responses, which keeping one open would take). A request body of unknown length (a chunked
upload) is not forwarded.

A refused request is closed without an answer (an HTTP status in answer to a plain http
request would pass for the site's own); the browser sees a failed request.

A proxy may also be given the only hosts it serves (``allowed_hosts``): any other host is
refused before it is looked up, so no DNS query is ever sent for it. The browser's own
traffic (update checks, sign-in, network time: whatever Chromium fetches for itself) goes
to a proxy that serves no host at all (:class:`crawlyx.render.browser.BrowserHandler`), and
``CRAWLYX_RENDER_ALLOWED_HOSTS`` narrows the pages' proxy to the hosts a crawl names.
"""

from __future__ import annotations

import asyncio
import base64
import hmac
import logging
import secrets
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from crawlyx.policy.ssrf import SSRFBlocked

logger = logging.getLogger(__name__)

#: A host name (or address) to the address to connect to; raises to refuse.
Resolve = Callable[[str], Awaitable[str]]

# A request's line and headers at most; Chromium's are a few KB.
HEAD_MAX_BYTES = 64 * 1024
# The proxy's own request headers, and the hop-by-hop ones it replaces.
_HOP_HEADERS = frozenset({"proxy-authorization", "proxy-connection", "connection", "keep-alive"})

AUTHENTICATE = (
    b"HTTP/1.1 407 Proxy Authentication Required\r\n"
    b'Proxy-Authenticate: Basic realm="crawlyx"\r\n'
    b"Content-Length: 0\r\nConnection: close\r\n\r\n"
)
ESTABLISHED = b"HTTP/1.1 200 Connection established\r\n\r\n"


async def crawl_resolve(host: str) -> str:
    """The address the crawl itself would connect to for ``host``: the reactor's resolver."""
    from scrapy.utils.defer import maybe_deferred_to_future
    from twisted.internet import reactor

    return await maybe_deferred_to_future(reactor.resolver.getHostByName(host))


@dataclass(frozen=True)
class ProxyRequest:
    """A request's head, as the browser sent it to the proxy."""

    method: str
    target: str
    version: str
    headers: tuple[tuple[str, str], ...]

    @classmethod
    def parse(cls, head: bytes) -> ProxyRequest | None:
        lines = head.decode("latin-1").split("\r\n")
        words = lines[0].split(" ")
        if len(words) != 3:
            return None
        headers = []
        for line in filter(None, lines[1:]):
            name, colon, value = line.partition(":")
            if not colon:
                return None
            headers.append((name.strip(), value.strip()))
        return cls(*words, tuple(headers))

    def header(self, name: str) -> str | None:
        return next((value for key, value in self.headers if key.lower() == name), None)

    def destination(self) -> tuple[str, int] | None:
        """The host and port asked for: CONNECT's authority, a plain request's URL."""
        try:
            if self.method == "CONNECT":
                parts = urlsplit(f"//{self.target}")
                port = parts.port
            else:
                parts = urlsplit(self.target)
                if parts.scheme != "http":
                    return None
                port = parts.port or 80
        except ValueError:  # a port out of range, a broken IPv6 literal
            return None
        if not parts.hostname or port is None:
            return None
        return parts.hostname, port

    def body_length(self) -> int | None:
        """The bytes of body that follow the head; None when that is not known."""
        if self.header("transfer-encoding") is not None:
            return None
        length = self.header("content-length") or "0"
        return int(length) if length.isdigit() else None

    def forwarded(self) -> bytes:
        """The head sent on to the site: origin-form, without the proxy's headers."""
        parts = urlsplit(self.target)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        lines = [f"{self.method} {path} {self.version}"]
        lines += [f"{k}: {v}" for k, v in self.headers if k.lower() not in _HOP_HEADERS]
        lines += ["Connection: close", "", ""]
        return "\r\n".join(lines).encode("latin-1")


class BrowserProxy:
    """A proxy for CONNECT and plain http requests, with a secret of its own, on a free port
    of 127.0.0.1."""

    def __init__(
        self,
        resolve: Resolve = crawl_resolve,
        timeout: float = 30.0,
        idle_timeout: float | None = None,
        stats=None,
        allowed_hosts: Iterable[str] | None = None,
        log_level: int = logging.INFO,
    ):
        self.resolve = resolve
        self.timeout = timeout  # for a request's head, and for connecting
        # A connection idle for as long as a whole navigation may take serves no page.
        self.idle_timeout = timeout if idle_timeout is None else idle_timeout
        self.stats = stats
        # None: any host the resolver allows; else only these, the others never looked up.
        self.allowed_hosts = None
        if allowed_hosts is not None:
            self.allowed_hosts = frozenset(host.lower() for host in allowed_hosts)
        self.log_level = log_level  # of refusals
        self.username = "crawlyx"
        self.password = secrets.token_urlsafe(24)
        credentials = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
        self._authorization = f"Basic {credentials}".encode()
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()

    async def start(self) -> dict:
        """Listen; Playwright's ``proxy`` option for this proxy, with its secret."""
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, limit=HEAD_MAX_BYTES)
        port = self._server.sockets[0].getsockname()[1]
        server = f"http://127.0.0.1:{port}"
        return {"server": server, "username": self.username, "password": self.password}

    async def close(self) -> None:
        if self._server is None:
            return
        self._server.close()
        for writer in list(self._open):
            writer.close()
        await self._server.wait_closed()
        self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self._open.add(writer)
        upstream = None
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.timeout)
            request = ProxyRequest.parse(head)
            if request is None:
                return
            if not self._authorized(request):
                writer.write(AUTHENTICATE)
                return await writer.drain()
            destination = request.destination()
            length = request.body_length()
            if destination is None or length is None:
                return
            host, port = destination
            if self.allowed_hosts is not None and host.lower() not in self.allowed_hosts:
                return self._refused(host, port, "not an allowed host; not looked up")
            try:
                address = await self.resolve(host)
            except SSRFBlocked as exc:
                return self._refused(host, port, str(exc))
            except Exception:  # noqa: BLE001 - a failed lookup: the browser reports it
                return
            connect = asyncio.open_connection(address, port)
            up_reader, upstream = await asyncio.wait_for(connect, self.timeout)
            self._open.add(upstream)
            received = _copy(up_reader, writer, counted=self._received)
            if request.method == "CONNECT":
                writer.write(ESTABLISHED)
                await self._relay(_copy(reader, upstream), received)
            else:
                upstream.write(request.forwarded())
                await self._relay(_copy(reader, upstream, length), received)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
            pass  # the client went away, sent too long a head, or the site failed
        finally:
            for stream in (writer, upstream):
                if stream is not None:
                    self._open.discard(stream)
                    stream.close()

    def _received(self, size: int) -> None:
        """Bytes from a site to the browser: the browser's egress, for the crawl's cost."""
        if self.stats is not None:
            self.stats.inc_value("crawlyx/render/bytes_received", size)

    def _authorized(self, request: ProxyRequest) -> bool:
        given = request.header("proxy-authorization")
        if given is None:  # the browser's first try: it answers the challenge
            return False
        if hmac.compare_digest(given.encode("latin-1"), self._authorization):
            return True
        logger.warning("The browser's proxy refused a client with a wrong secret")
        return False

    async def _relay(self, *copies) -> None:
        """Run ``copies`` until all end, or until none has moved a byte for
        ``idle_timeout`` seconds."""
        loop = asyncio.get_running_loop()
        moved = [loop.time()]  # when a byte last moved, either way
        task = asyncio.gather(*(copy(moved) for copy in copies))
        try:
            while not task.done():
                idle = loop.time() - moved[0]
                if idle >= self.idle_timeout:
                    return
                await asyncio.wait({task}, timeout=self.idle_timeout - idle)
            await task
        finally:
            task.cancel()

    def _refused(self, host: str, port: int, why: str) -> None:
        if self.stats is not None:
            self.stats.inc_value("crawlyx/ssrf/browser_blocked")
        host = f"[{host}]" if ":" in host else host
        message = "SSRF guard refused the browser a connection to %s:%d: %s"
        logger.log(self.log_level, message, host, port, why)


def _copy(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    length: int | None = None,
    counted: Callable[[int], None] | None = None,
):
    """A copy of ``reader`` to ``writer``, to run given a list whose only item is set to the
    time each time bytes move: to the end of the stream, which is then passed on (the other
    direction may go on), or ``length`` bytes only. ``counted`` is told each chunk's size."""

    async def copy(moved: list[float]) -> None:
        loop = asyncio.get_running_loop()
        left = length
        try:
            while left is None or left > 0:
                data = await reader.read(65536 if left is None else min(left, 65536))
                if not data:
                    break
                moved[0] = loop.time()
                if counted is not None:
                    counted(len(data))
                writer.write(data)
                await writer.drain()
                if left is not None:
                    left -= len(data)
            if length is None and writer.can_write_eof():
                writer.write_eof()
        except OSError:
            writer.close()

    return copy
