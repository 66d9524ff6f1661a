"""The transformer's commit on local folders, killed between two files of its move (a real process,
SIGKILL at the named step `moving`): the next invocation finishes it. In the integration session
beside the same kill on S3 (`test_s3.py`), where the move is a copy and a delete per file; the main
suite kills local runs at the other steps."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import boto3
import pytest

from events_manifest import SqliteManifest
from events_manifest.testing._servers import LocalServer
from tests.integration.outputs import FIFO
from tests.spark.test_crash_rerun import killed_at
from tests.spark.test_transformer import A, B, C, queue_config, read_lines, run, transformer, write_run
from tests.spark.test_transformer_operations import flags
from tests.transformer_helpers import event


def test_a_run_killed_between_the_files_of_its_move_is_finished(
    tmp_path: Path, moto_server: LocalServer, spark: Any
) -> None:
    """Killed after its first staged file moved into place: the next invocation moves the rest,
    sends the message and commits; the output is an unbroken run's, the later run follows."""
    lines = [event(A, "f"), event(A, "f", etl="2026-11-01 06:00:09"), event(B), event(B), "bad"]
    write_run(tmp_path, "run=1", *([line] for line in lines))
    unbroken = tmp_path / "unbroken"
    write_run(unbroken, "run=1", *([line] for line in lines))
    sqs = boto3.client("sqs", region_name="eu-west-1", endpoint_url=moto_server.endpoint)
    url = sqs.create_queue(QueueName=f"moved-{time.time_ns()}.fifo", Attributes=FIFO)["QueueUrl"]
    command = flags(tmp_path, queue_config("sqs", "queueName", url), "--manifest", "sqlite://m.db")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AWS_ENDPOINT_URL_SQS", moto_server.endpoint)
        killed_at("moving", tmp_path, *command, module="spark_integration.transformer")
        left = tmp_path / "out/run=1"
        assert not (left / "shredding_complete.json").exists() and any(left.glob(".staging-*/message.json"))
        write_run(tmp_path, "run=2", [event(C)])
        done = transformer(tmp_path, *command)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.index("run=1: 5 lines") < done.stdout.index("run=2: 1 lines")
    assert run(unbroken).returncode == 0
    assert sorted(read_lines(left / "output=good")) == sorted(read_lines(unbroken / "out/run=1/output=good"))
    assert sorted(p.name for p in left.iterdir()) == ["output=bad", "output=good", "shredding_complete.json"]
    bodies = [m["Body"] for m in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]]
    assert bodies == [(tmp_path / f"out/run={n}/shredding_complete.json").read_text() for n in (1, 2)]
    with SqliteManifest(tmp_path / "m.db") as manifest:
        assert [record.state for record in manifest.runs()] == ["finished", "finished"]
