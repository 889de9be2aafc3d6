"""The browser's only way to the network: a SOCKS5 proxy on 127.0.0.1 that resolves host
names with the crawl's resolver and connects to exactly the address it answered.

Chromium resolves names itself. Left to do so, it would look up a page's host again after
the SSRF guard checked it, and a name whose DNS answer changes in between (DNS rebinding)
would take the browser to an address the guard refuses. So the browser is launched with
this proxy as its proxy server, and it is then the only thing the browser connects to:

* SOCKS5 carries the host *name* to the proxy; the browser does no lookup of its own.
  Playwright launches Chromium with ``--proxy-bypass-list=<-loopback>``: loopback goes
  through the proxy too.
* Every connection goes through it: the page, its subresources and XHRs, WebSockets,
  the redirects the browser follows on its own (which Playwright's request routing does
  not show), whatever the browser fetches for itself.
* The proxy asks the crawl's resolver (the reactor's: :class:`crawlyx.policy.ssrf.SSRFResolver`,
  with its cache and the crawl's guard), which answers only with an allowed address or
  refuses. The proxy connects to that address: there is no second lookup between the
  check and the connection, as with the crawl's own downloads.

A refused connection is answered "not allowed by ruleset"; the browser sees a failed
request. IPv6 literals are refused: the crawl's resolver answers IPv4 only.

A proxy may also be given the only hosts it serves (``allowed_hosts``): any other host is
refused before it is looked up, so no DNS query is ever sent for it. The browser's own
traffic (update checks, sign-in, network time: whatever Chromium fetches for itself) goes
to a proxy that serves no host at all (:class:`crawlyx.render.browser.BrowserHandler`), and
``CRAWLYX_RENDER_ALLOWED_HOSTS`` narrows the pages' proxy to the hosts a crawl names.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from ipaddress import IPv4Address, IPv6Address

from crawlyx.policy.ssrf import SSRFBlocked

logger = logging.getLogger(__name__)

# RFC 1928 reply codes.
SUCCEEDED = 0
NOT_ALLOWED = 2
HOST_UNREACHABLE = 4
CONNECTION_REFUSED = 5
COMMAND_NOT_SUPPORTED = 7
ADDRESS_TYPE_NOT_SUPPORTED = 8

_CONNECT = 1
_IPV4, _NAME, _IPV6 = 1, 3, 4
_NO_AUTH = 0

#: A host name (or dotted IPv4 address) to the address to connect to; raises to refuse.
Resolve = Callable[[str], Awaitable[str]]


async def crawl_resolve(host: str) -> str:
    """The address the crawl itself would connect to for ``host``: the reactor's resolver."""
    from scrapy.utils.defer import maybe_deferred_to_future
    from twisted.internet import reactor

    return await maybe_deferred_to_future(reactor.resolver.getHostByName(host))


class SocksProxy:
    """A CONNECT-only SOCKS5 proxy (no authentication) on a free port of 127.0.0.1."""

    def __init__(
        self,
        resolve: Resolve = crawl_resolve,
        timeout: float = 30.0,
        stats=None,
        allowed_hosts: Iterable[str] | None = None,
        log_level: int = logging.INFO,
    ):
        self.resolve = resolve
        self.timeout = timeout  # for the handshake, and for connecting
        self.stats = stats
        # None: any host the resolver allows; else only these, the others never looked up.
        self.allowed_hosts = None
        if allowed_hosts is not None:
            self.allowed_hosts = frozenset(host.lower() for host in allowed_hosts)
        self.log_level = log_level  # of refusals
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()

    async def start(self) -> str:
        """Listen; the proxy server's URL, for Playwright's ``proxy`` launch option."""
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return f"socks5://127.0.0.1:{port}"

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
            target = await asyncio.wait_for(self._handshake(reader, writer), self.timeout)
            if target is None:
                return
            host, port = target
            if self.allowed_hosts is not None and host.lower() not in self.allowed_hosts:
                self._refused(host, port, "not an allowed host; not looked up")
                return await _reply(writer, NOT_ALLOWED)
            if ":" in host:  # an IPv6 literal; the crawl's resolver answers IPv4 only
                self._refused(host, port, "an IPv6 address")
                return await _reply(writer, ADDRESS_TYPE_NOT_SUPPORTED)
            try:
                address = await self.resolve(host)
            except SSRFBlocked as exc:
                self._refused(host, port, str(exc))
                return await _reply(writer, NOT_ALLOWED)
            except Exception:  # noqa: BLE001 - a failed lookup: the browser reports it
                return await _reply(writer, HOST_UNREACHABLE)
            try:
                connect = asyncio.open_connection(address, port)
                up_reader, upstream = await asyncio.wait_for(connect, self.timeout)
            except OSError:  # TimeoutError included
                return await _reply(writer, CONNECTION_REFUSED)
            self._open.add(upstream)
            await _reply(writer, SUCCEEDED)
            await asyncio.gather(_pipe(reader, upstream), _pipe(up_reader, writer))
        except (asyncio.IncompleteReadError, OSError):  # TimeoutError included
            pass
        finally:
            for stream in (writer, upstream):
                if stream is not None:
                    self._open.discard(stream)
                    stream.close()

    async def _handshake(self, reader, writer) -> tuple[str, int] | None:
        """The target of a CONNECT request, or None once the client is answered a refusal."""
        version, count = await reader.readexactly(2)
        methods = await reader.readexactly(count)
        if version != 5:
            return None
        if _NO_AUTH not in methods:
            writer.write(b"\x05\xff")
            await writer.drain()
            return None
        writer.write(b"\x05\x00")
        await writer.drain()
        version, command, _, kind = await reader.readexactly(4)
        if kind == _IPV4:
            host = str(IPv4Address(await reader.readexactly(4)))
        elif kind == _NAME:
            length = (await reader.readexactly(1))[0]
            host = (await reader.readexactly(length)).decode("ascii", "replace")
        elif kind == _IPV6:
            host = str(IPv6Address(await reader.readexactly(16)))
        else:
            await _reply(writer, ADDRESS_TYPE_NOT_SUPPORTED)
            return None
        port = int.from_bytes(await reader.readexactly(2), "big")
        if command != _CONNECT:
            await _reply(writer, COMMAND_NOT_SUPPORTED)
            return None
        return host, port

    def _refused(self, host: str, port: int, why: str) -> None:
        if self.stats is not None:
            self.stats.inc_value("crawlyx/ssrf/browser_blocked")
        host = f"[{host}]" if ":" in host else host
        message = "SSRF guard refused the browser a connection to %s:%d: %s"
        logger.log(self.log_level, message, host, port, why)


async def _reply(writer: asyncio.StreamWriter, code: int) -> None:
    writer.write(bytes([5, code, 0, _IPV4, 0, 0, 0, 0, 0, 0]))
    await writer.drain()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until end of stream, then pass the end on (the other direction may go on)."""
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except OSError:
        writer.close()
