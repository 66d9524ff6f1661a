"""Loopback stand-ins for the network between a client and a DynamoDB-compatible server.

- `FaultProxy`: a reverse proxy in front of the server that adds delay and throttling, over HTTP
  or TLS. `delay` adds a fixed latency per request (5 ms is a same-region round trip),
  `throttle_rate` answers that share of the chosen operations with
  `ProvisionedThroughputExceededException`, as DynamoDB does, and `tls` serves HTTPS with a
  certificate of the caller's (a private CA's, say).
- `ConnectProxy`: an HTTP CONNECT proxy, as `HTTPS_PROXY` names one, that counts its tunnels.
"""

from __future__ import annotations

import http.client
import json
import random
import selectors
import socket
import ssl
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler
from types import TracebackType
from urllib.parse import urlsplit

from events_manifest.testing._servers import serve_http

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "content-length"}
THROTTLED = "ProvisionedThroughputExceededException"
EXPIRED_ITERATOR = "ExpiredIteratorException"
_MESSAGES = {
    THROTTLED: "The level of configured provisioned throughput for the table was exceeded (injected)",
    EXPIRED_ITERATOR: "Iterator expired (injected)",
}


class FaultProxy:
    """Forward to `upstream`, adding `delay` seconds and refusing `throttle_rate` of `operations`
    with `fault` (by default the throttling error; `EXPIRED_ITERATOR` for Kinesis's reads)."""

    def __init__(
        self,
        upstream: str,
        *,
        delay: float = 0.0,
        throttle_rate: float = 0.0,
        operations: frozenset[str] = frozenset({"PutItem"}),
        seed: int = 0,
        tls: ssl.SSLContext | None = None,
        fault: str = THROTTLED,
    ) -> None:
        parts = urlsplit(upstream)
        self._upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.delay = delay
        self.throttle_rate = throttle_rate
        self.operations = operations
        self._random = random.Random(seed)
        self._fault = json.dumps({"__type": f"com.amazonaws.injected#{fault}", "message": _MESSAGES[fault]}).encode()
        self._lock = threading.Lock()
        self.requests = 0
        self.throttled = 0
        self.counts: Counter[str] = Counter()
        """The requests of each operation (`X-Amz-Target`'s last part)."""
        self.peers: set[int] = set()
        """The client port of every connection served: which sockets the requests came through."""
        self._tls = tls
        self._server = serve_http(self._handler(), "fault-proxy", tls)

    @property
    def endpoint(self) -> str:
        port = self._server.server_address[1]
        return f"https://localhost:{port}" if self._tls else f"http://127.0.0.1:{port}"

    def _should_throttle(self, target: str) -> bool:
        with self._lock:
            self.requests += 1
            self.counts[target.rsplit(".", 1)[-1]] += 1
            if target.rsplit(".", 1)[-1] in self.operations and self._random.random() < self.throttle_rate:
                self.throttled += 1
                return True
            return False

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self
        local = threading.local()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # else a small reply waits for a delayed ACK (~40 ms)
            wbufsize = -1  # headers and body leave in one write, flushed after each request

            def log_message(self, format: str, *args: object) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                with proxy._lock:
                    proxy.peers.add(self.client_address[1])

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if proxy.delay:
                    time.sleep(proxy.delay)
                if proxy._should_throttle(self.headers.get("X-Amz-Target", "")):
                    self._reply(400, [("Content-Type", "application/x-amz-json-1.0")], proxy._fault)
                    return
                status, headers, payload = self._forward(body)
                self._reply(status, headers, payload)

            def _forward(self, body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
                for attempt in (1, 2):
                    conn = getattr(local, "conn", None)
                    if conn is None:
                        conn = local.conn = http.client.HTTPConnection(*proxy._upstream, timeout=30)
                        conn.connect()
                        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    try:
                        conn.request(self.command, self.path, body, dict(self.headers.items()))
                        response = conn.getresponse()
                        return response.status, response.getheaders(), response.read()
                    except (OSError, http.client.HTTPException):
                        conn.close()
                        local.conn = None
                        if attempt == 2:
                            raise
                raise AssertionError("unreachable")

            def _reply(self, status: int, headers: list[tuple[str, str]], payload: bytes) -> None:
                self.send_response(status)
                for name, value in headers:
                    if name.lower() not in _HOP_BY_HOP:
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST

        return Handler

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FaultProxy:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class ConnectProxy:
    """An HTTP proxy on loopback that only tunnels (CONNECT, what clients do for https:// through
    `HTTPS_PROXY`); `tunnels` counts them and `upstream_ports` holds the local port of each
    tunnel's connection to its target, to match against the target's `peers`."""

    def __init__(self) -> None:
        self.tunnels = 0
        self.upstream_ports: set[int] = set()
        self._lock = threading.Lock()
        self._server = serve_http(self._handler(), "connect-proxy")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_CONNECT(self) -> None:
                host, _, port = self.path.rpartition(":")
                try:
                    upstream = socket.create_connection((host, int(port)), timeout=30)
                except OSError:
                    self.send_error(502)
                    return
                with proxy._lock:
                    proxy.tunnels += 1
                    proxy.upstream_ports.add(upstream.getsockname()[1])
                self.send_response(200, "Connection Established")
                self.end_headers()
                self.wfile.flush()
                _relay(self.connection, upstream)

        return Handler

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> ConnectProxy:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _relay(client: socket.socket, upstream: socket.socket) -> None:
    """Copy bytes both ways until either side closes."""
    with selectors.DefaultSelector() as selector, upstream:
        selector.register(client, selectors.EVENT_READ, upstream)
        selector.register(upstream, selectors.EVENT_READ, client)
        while True:
            for key, _ in selector.select(timeout=60):
                source = key.fileobj
                assert isinstance(source, socket.socket)
                try:
                    data = source.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                key.data.sendall(data)
