"""Receivers of a transformer's monitoring, on loopback: a Sentry endpoint (an HTTP server taking
the SDK's envelopes) and a StatsD server (a UDP socket)."""

from __future__ import annotations

import gzip
import http.server
import json
import socket
from collections.abc import Iterator
from typing import Any

from events_manifest.testing._servers import serve_http


class SentryServer:
    """Takes the Sentry SDK's envelopes (`POST /api/<project>/envelope/`): `events` are their
    error events, decoded."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        received = self.events

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                lines = body.split(b"\n")
                for header, payload in zip(lines[1::2], lines[2::2], strict=False):
                    if json.loads(header).get("type") == "event":
                        received.append(json.loads(payload))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = serve_http(Handler, "sentry")

    def dsn(self, key: str = "public-key") -> str:
        return f"http://{key}@127.0.0.1:{self._server.server_port}/1"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


UNREACHABLE = "255.255.255.255"
"""A StatsD host that no datagram reaches, refused by the sender's own kernel (a broadcast address
on a socket without `SO_BROADCAST`): the same on every machine, with or without a name server,
where a name that does not resolve can take a resolver's timeout to fail."""


class StatsdServer:
    """A UDP socket on a free loopback port: `datagrams()` what it received so far."""

    def __init__(self) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._socket.bind(("127.0.0.1", 0))
        self._socket.settimeout(0.2)
        self.port: int = self._socket.getsockname()[1]

    def datagrams(self) -> list[str]:
        return list(self._take())

    def _take(self) -> Iterator[str]:
        while True:
            try:
                yield self._socket.recv(65536).decode()
            except TimeoutError:
                return

    def close(self) -> None:
        self._socket.close()
