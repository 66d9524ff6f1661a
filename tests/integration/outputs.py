"""What the integration tests compare: a transformer's run folders on S3 and locally (good and bad
lines, message), its config, a fresh DynamoDB manifest and SQS queue, and the reference output of
one transformer on local folders."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import boto3

from events_manifest.testing import LocalServer
from tests.commands import told
from tests.integration.conftest import S3
from tests.spark.transformer.test_command import transformer
from tests.transformer_helpers import FIFO, lines, local_run


def s3_run(s3: S3, name: str) -> dict[str, Any]:
    """A run folder on S3: its good and bad lines, sorted, its message, its files' names."""
    keys = s3.keys(f"out/{name}/")
    found: dict[str, Any] = {"good": [], "bad": [], "names": [k.removeprefix(f"out/{name}/") for k in keys]}
    for key in keys:
        part = key.rsplit("/", 1)[-1]
        if part.startswith("part-"):
            found["good" if "/output=good/" in key else "bad"] += lines(s3.read(key), part)
    found["good"].sort()
    found["bad"].sort()
    complete = f"out/{name}/shredding_complete.json"
    found["message"] = json.loads(s3.read(complete)) if complete in keys else None
    return found


def config(input_path: str, output_path: str, queue: str | None = None) -> str:
    document: dict[str, Any] = {
        "input": input_path,
        "output": {"path": output_path},
        "formats": {"transformationType": "widerow"},
    }
    if queue is not None:
        document["queue"] = {"type": "sqs", "queueName": queue, "region": "us-east-1"}
    return json.dumps(document)


def manifest(dynalite: LocalServer) -> str:
    return f"dynamodb://runs-{time.time_ns()}?region=us-east-1&create=true&endpoint={dynalite.endpoint}"


def queue(server: LocalServer) -> tuple[Any, str]:
    sqs = boto3.client("sqs", region_name="us-east-1", endpoint_url=server.endpoint)
    return sqs, sqs.create_queue(QueueName=f"loader-{time.time_ns()}.fifo", Attributes=FIFO)["QueueUrl"]


def reference(runs: Path, dynalite: LocalServer, *, with_manifest: bool = True) -> dict[str, dict[str, Any]]:
    """What one transformer writes from the local runs, on a fresh manifest (or none)."""
    (runs / "local.hocon").write_text(config("in", "local"))
    more = ["--manifest", manifest(dynalite)] if with_manifest else []
    done = transformer(runs, "--iglu-config", "iglu.json", "--config", "local.hocon", *more)
    assert done.returncode == 0, told(done.stderr)
    return {name: local_run(runs / "local" / name) for name in ("run=1", "run=2")}
