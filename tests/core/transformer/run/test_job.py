"""What the runs of one transformer invocation share (`_transformer.run.job.TransformerJob`), without
Spark, on local folders and a SQLite manifest: which claims of another host are dead, and how the
ledger is brought to what the output says before any run (a committed run's record finished, what
a kill left beside its output removed, a stopped run named to finish first)."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

from events_manifest import SqliteManifest
from events_manifest._jobs.storage import Listing, LocalStorage
from events_manifest._manifest.ledger import LEASE_SECONDS
from events_manifest._transformer.config import TransformerConfig
from events_manifest._transformer.run.commit import COMPLETE, inspect
from events_manifest._transformer.run.job import TransformerJob


def job(tmp_path: Path, manifest: SqliteManifest | None) -> TransformerJob[LocalStorage]:
    document = {"input": str(tmp_path / "in"), "output": {"path": str(tmp_path / "out")}}
    config = TransformerConfig.parse(json.dumps({**document, "formats": {"transformationType": "widerow"}}))
    return TransformerJob.create(LocalStorage(), config, None, manifest, lister=lambda name: Listing(()))


def test_a_claim_of_another_host_is_dead_when_its_ledger_record_is_or_without_one_when_it_is_old(
    tmp_path: Path,
) -> None:
    held = {"host": socket.gethostname(), "pid": 1, "since": time.time()}
    assert not job(tmp_path, None).dead_elsewhere("run=1")(held), "without a manifest nothing tells"
    with SqliteManifest(tmp_path / "m.db") as manifest:
        transformer = job(tmp_path, manifest)
        judge = transformer.dead_elsewhere("run=1")
        assert not judge(held), "no record, a claim of now"
        assert judge({**held, "since": time.time() - LEASE_SECONDS - 5}), "no record, a claim older than the lease"
        run = manifest.start_run(transformer.item("run=1"))
        mine = {**held, "pid": int(run.owner.rpartition(":")[2])}
        assert not judge(mine), "the record of a run alive in this process"
        assert not judge({**mine, "since": 0}), "its record, not the claim's age, tells"
        manifest.abandon_run(run)
        assert judge(mine), "the record of a run that failed"


def test_the_ledger_is_brought_to_what_the_output_says_before_any_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "run=1" / ".staging-left").mkdir(parents=True)
    (out / "run=1" / COMPLETE).write_text("{}")
    with SqliteManifest(tmp_path / "m.db") as manifest:
        transformer = job(tmp_path, manifest)
        committed, stopped, alive = (manifest.start_run(transformer.item(name)) for name in ("run=1", "run=2", "run=3"))
        for run in (committed, stopped):
            manifest.abandon_run(run)  # a kill: failed, unfinished in the ledger
        folders = {"run=1": inspect(transformer.storage, str(out / "run=1"))}
        assert transformer.reconcile(folders, ["run=1", "run=2", "run=3"]) == ["run=2"]
        states = {record.item.rsplit("/", 1)[-1]: record.state for record in manifest.runs()}
        assert states == {"run=1": "finished", "run=2": "failed", "run=3": "started"}
        manifest.finish_run(alive)
    assert sorted(path.name for path in (out / "run=1").iterdir()) == [COMPLETE], "what the kill left, removed"
