"""Servers on free loopback ports: the DynamoDB-compatible dynalite (npm) and moto's server mode, the
Google Cloud CLI's Pub/Sub emulator, and HTTP servers of a test's own on a thread."""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType

import attrs


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


SHUTDOWN_POLL_SECONDS = 0.02
"""How often a served thread looks for its `shutdown()`: socketserver's default, half a second, is
waited at every close."""


def serve_http(
    handler: Callable[..., BaseHTTPRequestHandler], name: str, tls: ssl.SSLContext | None = None
) -> ThreadingHTTPServer:
    """An HTTP server (HTTPS with `tls`) on a free 127.0.0.1 port, served by a daemon thread until
    its `shutdown()`, which returns within `SHUTDOWN_POLL_SECONDS`."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    if tls is not None:  # the handshake happens in each connection's thread, at its first read
        server.socket = tls.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    threading.Thread(target=server.serve_forever, args=(SHUTDOWN_POLL_SECONDS,), name=name, daemon=True).start()
    return server


def wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with code {process.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"server did not listen on 127.0.0.1:{port} within {timeout:.0f} s")


@attrs.define
class LocalServer:
    """A server process on 127.0.0.1; a context manager that stops it."""

    name: str
    port: int
    process: subprocess.Popen[bytes]

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> LocalServer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def _start(name: str, command: list[str], port: int) -> LocalServer:
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_port(port, process)
    return LocalServer(name, port, process)


def find_dynalite(project: Path, *, install: bool = True) -> Path:
    """The dynalite launcher of `project`'s node_modules, installed with `npm ci` when missing."""
    launcher = project / "node_modules" / ".bin" / "dynalite"
    if not launcher.exists() and install:
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError("dynalite is not installed and npm is not on PATH: install Node.js 20")
        command = [npm, "ci" if (project / "package-lock.json").exists() else "install", "--no-audit", "--no-fund"]
        subprocess.run(command, cwd=project, check=True, stdout=subprocess.DEVNULL)
    if not launcher.exists():
        raise RuntimeError(f"dynalite not found at {launcher}: run `npm ci` in {project}")
    return launcher


def start_dynalite(project: Path, *, table_ms: int = 500) -> LocalServer:
    """dynalite (in-memory) from `project`'s node_modules, on loopback only. A table it creates,
    deletes or updates stays in that state `table_ms` (DynamoDB's own take seconds; the suite
    keeps a few milliseconds: every wait is still exercised, none costs half a second)."""
    port = free_port()
    node = shutil.which("node") or "node"
    timings = [f"--{action}TableMs" for action in ("create", "delete", "update")]
    command = [node, str(find_dynalite(project)), "--host", "127.0.0.1", "--port", str(port)]
    return _start("dynalite", [*command, *(arg for flag in timings for arg in (flag, str(table_ms)))], port)


def start_moto() -> LocalServer:
    """moto's server mode, in a child Python process, with DynamoDB's atomic conditional writes."""
    port = free_port()
    env_python = os.environ.get("EVENTS_MANIFEST_PYTHON", sys.executable)
    return _start("moto", [env_python, "-m", "events_manifest.testing._moto_server", str(port)], port)


def find_pubsub_emulator() -> Path:
    """The Pub/Sub emulator of the Google Cloud CLI on PATH (its `pubsub-emulator` component,
    Debian's `google-cloud-cli-pubsub-emulator`), which runs on Java."""
    gcloud = shutil.which("gcloud")
    if gcloud is None:
        raise RuntimeError("gcloud is not on PATH: install the Google Cloud CLI and its Pub/Sub emulator")
    launcher = Path(gcloud).resolve().parent.parent / "platform" / "pubsub-emulator" / "bin" / "cloud-pubsub-emulator"
    if not launcher.exists():
        raise RuntimeError(
            f"the Pub/Sub emulator is not at {launcher}: install it (gcloud components install pubsub-emulator, "
            "or the google-cloud-cli-pubsub-emulator package)"
        )
    return launcher


def start_pubsub_emulator() -> LocalServer:
    """The Pub/Sub emulator on loopback; point a client at it with `PUBSUB_EMULATOR_HOST` set to
    `127.0.0.1:PORT` (any project name is served)."""
    port = free_port()
    return _start("pubsub", [str(find_pubsub_emulator()), "--host=127.0.0.1", f"--port={port}"], port)
