"""The transformer's command killed during its first run's commit (docs/transformer.md, how a run
commits), in this process (`tests.crashes`): its rows staged, not sealed; one file moved into place;
committed, the ledger not told. The next invocation, from what the kill left, finishes that run (a
sealed run as it was sealed: the same message; a committed one not again), then transforms the
next; both are what an unbroken invocation writes, each message sent once more at most, nothing
left behind, the ledger's runs finished. Every step of the commit is killed without Spark in
`tests/core/transformer/run/test_run_flow.py`; a real kill of the process group, on S3, is in
`tests/integration/test_s3.py`."""

from __future__ import annotations

import json
import time
from pathlib import Path

import boto3
import pytest

from events_manifest import SqliteManifest
from events_manifest.testing import LocalServer
from tests.commands import told
from tests.crashes import Crashes
from tests.spark.transformer.test_command import A, B, C, queue_config, transformer, write_run
from tests.transformer_helpers import FIFO, RESOLVER, config, event, local_run, same

STEPS = ["staged", "moving", "committed"]
SEALED = STEPS[1:]
"""The steps after which the next invocation delivers the run as sealed, with the same message."""


@pytest.mark.long
def test_a_run_killed_at_each_step_of_its_commit_is_finished_by_the_next_invocation(
    tmp_path: Path, moto_server: LocalServer, monkeypatch: pytest.MonkeyPatch, subtests: pytest.Subtests
) -> None:
    work, db = tmp_path / "work", tmp_path / "m.db"
    first = [event(A, "f"), event(A, "f", etl="2026-11-01 06:00:09"), event(B), event(B), "bad"]
    write_run(work, "run=1", first[:3], first[3:])
    write_run(work, "run=2", [event(A, "f", etl="2026-11-02 06:00:00"), event(C)])
    (work / "iglu.json").write_text(json.dumps(RESOLVER))
    monkeypatch.setenv("AWS_ENDPOINT_URL_SQS", moto_server.endpoint)
    sqs = boto3.client("sqs", region_name="eu-west-1", endpoint_url=moto_server.endpoint)

    def invocation(name: str, manifest: str) -> tuple[list[str], str]:
        """The command line of an invocation with a queue of its own, and the queue."""
        url = sqs.create_queue(QueueName=f"{name}-{time.time_ns()}.fifo", Attributes=FIFO)["QueueUrl"]
        (work / f"{name}.hocon").write_text(config("in", "out", queue_config("sqs", "queueName", url)))
        return ["--iglu-config", "iglu.json", "--config", f"{name}.hocon", "--manifest", manifest], url

    def sent(url: str) -> list[str]:
        return [m["Body"] for m in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])]

    crashes = Crashes(work / "out", db, tmp_path / "crashes")
    flags, url = invocation("unbroken", f"sqlite:///{db}")
    with crashes.recording(STEPS):
        done = transformer(work, *flags)
    assert done.returncode == 0, told(done.stderr)
    unbroken = {name: local_run(work / "out" / name) for name in ("run=1", "run=2")}
    texts = {name: (work / "out" / name / "shredding_complete.json").read_text() for name in unbroken}
    assert sent(url) == [texts["run=1"], texts["run=2"]]
    kept = {json.loads(row)["event_id"]: json.loads(row) for row in unbroken["run=1"]["good"]}
    assert kept[A]["etl_tstamp"] == "2026-11-01T06:00:00Z", "the earliest copy of A"
    assert len(kept) == 3 and unbroken["run=1"]["bad"] != [], "B twice under two new ids, the bad line a bad row"
    assert [json.loads(row)["event_id"] for row in unbroken["run=2"]["good"]] == [C], "A dropped across runs"

    for step in STEPS:
        with subtests.test(step=step):
            flags, url = invocation(step, crashes.restore(step) or "")
            left = sorted(p.name for p in (work / "out/run=1").iterdir())
            assert "_claim.json" in left and any(name.startswith(".staging-") for name in left), left
            done = transformer(work, *flags)
            assert done.returncode == 0, told(done.stderr)
            processed = "processing file:" + str(work / "in/run=1")
            assert (processed in done.stdout) == (step != "committed"), "a committed run is done"
            assert done.stdout.index("run=2: 2 lines") > done.stdout.find("run=1: 5 lines")
            for name in unbroken:
                found = work / "out" / name
                same(local_run(found), unbroken[name])
                assert sorted(p.name for p in found.iterdir()) == ["output=bad", "output=good", COMPLETE]
            if step in SEALED:
                assert (work / "out/run=1" / COMPLETE).read_text() == texts["run=1"], "delivered as it was sealed"
            resent = [] if step == "committed" else [(work / "out/run=1" / COMPLETE).read_text()]
            assert sent(url) == [*resent, (work / "out/run=2" / COMPLETE).read_text()]
            with SqliteManifest(Path(flags[-1].removeprefix("sqlite:///"))) as manifest:
                assert [record.state for record in manifest.runs()] == ["finished", "finished"]


COMPLETE = "shredding_complete.json"
