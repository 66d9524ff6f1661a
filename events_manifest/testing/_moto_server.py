"""moto's DynamoDB server on loopback, one request at a time.

DynamoDB applies a conditional write atomically; moto's threaded server checks the condition and
writes without a lock, so two racing puts can both pass. Serialising requests restores the
guarantee the conformance tests check (`python -m events_manifest.testing._moto_server PORT`).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import run_simple


def serialised(app: Callable[..., Iterable[bytes]]) -> Callable[..., list[bytes]]:
    """`app` (WSGI) with each request handled under one lock, its body read inside it."""
    lock = threading.Lock()

    def handle(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        with lock:
            return list(app(environ, start_response))

    return handle


def main(argv: list[str]) -> None:
    (port,) = argv
    run_simple("127.0.0.1", int(port), serialised(DomainDispatcherApplication(create_backend_app)), threaded=True)


if __name__ == "__main__":
    main(sys.argv[1:])
