"""moto's DynamoDB server on loopback, one request at a time.

DynamoDB applies a conditional write atomically; moto's threaded server checks the condition and
writes without a lock, so two racing puts can both pass. Serialising requests restores the
guarantee the conformance tests check (`python -m events_manifest.testing._moto_server PORT`).

Kinesis puts a record in the open shard whose hash key range holds its key; moto (5.2) in the first
shard that holds it, closed or not, so that after a split or a merge every record went to a closed
parent, which a reader that has read it to its end never reads again. The server routes to open
shards only (`open_shard_for_key`).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

from moto.kinesis.models import Shard, Stream
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import run_simple

_SHARD_FOR_KEY = Stream.get_shard_for_key


def open_shard_for_key(stream: Stream, partition_key: str, explicit_hash_key: str) -> Shard | None:
    """moto's choice of a record's shard among the stream's open shards only, as Kinesis's (requests
    are served one at a time: the shards set aside meanwhile are seen by no other request)."""
    shards = stream.shards
    stream.shards = {name: shard for name, shard in shards.items() if shard.is_open}
    try:
        return _SHARD_FOR_KEY(stream, partition_key, explicit_hash_key)
    finally:
        stream.shards = shards


def serialised(app: Callable[..., Iterable[bytes]]) -> Callable[..., list[bytes]]:
    """`app` (WSGI) with each request handled under one lock, its body read inside it."""
    lock = threading.Lock()

    def handle(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        with lock:
            return list(app(environ, start_response))

    return handle


def main(argv: list[str]) -> None:
    (port,) = argv
    Stream.get_shard_for_key = open_shard_for_key  # type: ignore[method-assign, assignment]
    run_simple("127.0.0.1", int(port), serialised(DomainDispatcherApplication(create_backend_app)), threaded=True)


if __name__ == "__main__":
    main(sys.argv[1:])
