"""The shred job's process killed (SIGKILL, JVM and workers included) at named steps of its run (see
`events_manifest._jobs.steps`): while its puts are stored, and in the middle of its commit, the earlier
output deleted and its own not yet in place. A rerun of the same input gives the complete output of
an unbroken run; another input is refused until the killed run is cleaned. What a kill leaves is
files on disk: one killed run's manifest, copied, is the starting point of two continuations.

Every step, not only the suite's two: `EVENTS_MANIFEST_KILLS=all pytest tests/test_crash_rerun.py`.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from events_manifest import SqliteManifest
from events_manifest._snowplow.generator import BatchSpec, write_batches
from spark_integration import shred
from tests.commands import env, events_manifest, killed, shredder
from tests.shred_helpers import atomic, line, read_bad, read_output

pytestmark = pytest.mark.process

STEPS = ["started", "puts", "staged", "committing", "committed"]
KILLED_AT = STEPS if os.environ.get("EVENTS_MANIFEST_KILLS") == "all" else ["puts", "committing"]
"""The steps the suite kills a run at; a kill during the puts has a test of its own."""


@pytest.fixture(scope="module")
def batch(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any]]:
    """A generated batch (duplicates of every kind, bad lines), and the output of an unbroken run."""
    folder = tmp_path_factory.mktemp("crash")
    spec = BatchSpec(events=2_000, bot_copies=20)
    source = str(write_batches(folder, batches=1, spec=spec, seed=7, first_etl=datetime(2026, 11, 1, 6))[0])
    summary = shred(spark, source, str(folder / "out"), str(folder / "bad"), manifest=f"sqlite:///{folder}/m.db")
    return source, {"out": read_output(folder / "out"), "bad": read_bad(folder / "bad"), "counts": summary.counts()}


def killed_at(step: str, cwd: Path, *args: str, module: str = "spark_integration.shredder") -> None:
    """Run a job (the shred job by default) as a process of its own, killed at `step`."""
    killed([sys.executable, "-m", module, *args], cwd, step, env())


def copy_manifest(folder: Path, into: Path) -> str:
    """The URL of a copy in `into` of the SQLite manifest a killed run left in `folder` (its journal
    too): the same state, for a second continuation (an open connection never sees it replaced)."""
    into.mkdir()
    for path in folder.glob("m.db*"):
        shutil.copy2(path, into / path.name)
    return f"sqlite:///{into}/m.db"


def rerun_gives_the_unbroken_output(folder: Path, flags: list[str], unbroken: dict[str, Any]) -> None:
    rerun = shredder(folder, *flags, "--overwrite")
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert read_output(folder / "out") == unbroken["out"]
    assert read_bad(folder / "bad") == unbroken["bad"]
    summary = json.loads((folder / "out" / "_summary.json").read_text())
    assert summary["kept_events"] == dict(unbroken["counts"])["kept events"]
    assert not any(p.name.startswith((".staging-", "_claim")) for p in [*(folder / "out").iterdir()])
    with SqliteManifest(folder / "m.db") as manifest:
        assert [run.state for run in manifest.runs()] == ["finished"]


@pytest.mark.parametrize("step", [step for step in KILLED_AT if step != "puts"])
def test_a_killed_run_rerun_gives_the_complete_output(
    spark: Any, batch: tuple[str, dict[str, Any]], tmp_path: Path, step: str
) -> None:
    source, unbroken = batch
    flags = ["--input-folder", source, "--output-folder", "out", "--bad-folder", "bad", "--manifest", "sqlite:///"]
    flags[-1] += str(tmp_path / "m.db")
    if step in ("committing", "committed"):  # the killed run replaces an earlier one's output, on purpose
        assert shredder(tmp_path, *flags).returncode == 0
        flags += ["--overwrite", "--rerun"]
    killed_at(step, tmp_path, *flags)
    rerun_gives_the_unbroken_output(tmp_path, flags, unbroken)


def test_a_run_killed_during_its_puts_is_finished_by_a_rerun_of_its_input_only(
    spark: Any, batch: tuple[str, dict[str, Any]], tmp_path: Path
) -> None:
    """Killed during its puts (some events stored, nothing delivered). From that state on disk:
    (1) the input gains a line and the rerun goes to a new output folder: the ledger knows the
    killed run read other files and refuses (its stored events and the grown input's would be mixed
    up); once the killed run is cleaned, the grown input is delivered whole, no event of the killed
    run dropped as a duplicate. (2) From the same state again, a rerun of the same input gives the
    output of an unbroken run."""
    source, unbroken = batch
    work = tmp_path / "work"
    inputs = work / "in"
    shutil.copytree(source, inputs)
    flags = ["--input-folder", "in", "--output-folder", "out", "--bad-folder", "bad", "--manifest", "sqlite://m.db"]
    killed_at("puts", work, *flags)
    with SqliteManifest(work / "m.db") as manifest:
        [killed] = manifest.runs()
        assert not killed.finished and manifest.lookup(*_first_pair(manifest)) is not None, "its puts were stored"
    copy = tmp_path / "copy"
    db = copy_manifest(work, copy)

    late = line(str(uuid.uuid4()), "FP", etl="2026-11-01 05:00:00.000")
    (inputs / "late.tsv").write_text(late + "\n")
    other = ["--input-folder", str(inputs), "--output-folder", "out2", "--bad-folder", "bad2", "--manifest", db]
    refused = shredder(copy, *other)
    assert refused.returncode == 1 and "names another input than the run of" in refused.stderr
    assert f"events-manifest clean --etl-time '{killed.etl_time:%Y-%m-%d %H:%M:%S}'" in refused.stderr
    assert not (copy / "out2").exists() and not (copy / "bad2").exists()

    cleaned = events_manifest(copy, "clean", "--etl-time", f"{killed.etl_time:%Y-%m-%d %H:%M:%S}", "--manifest", db)
    assert cleaned.returncode == 0, cleaned.stderr
    done = shredder(copy, *other)
    assert done.returncode == 0, done.stderr[-3000:]
    shred(spark, str(inputs), str(tmp_path / "fresh"), str(tmp_path / "fresh-bad"), manifest=f"{db}-fresh")
    assert read_output(copy / "out2") == read_output(tmp_path / "fresh"), "as a run on an empty manifest: whole"
    assert atomic(late) in read_output(copy / "out2")["atomic-events"]
    assert read_bad(copy / "bad2") == unbroken["bad"]
    summary = json.loads((copy / "out2" / "_summary.json").read_text())
    assert summary["cross_batch_duplicates"] == 0 and summary["etl_time"] == "2026-11-01 05:00:00"

    (inputs / "late.tsv").unlink()
    rerun_gives_the_unbroken_output(work, flags, unbroken)


def _first_pair(manifest: Any) -> tuple[str, str]:
    """An (event id, fingerprint) the SQLite manifest holds, read from its table."""
    row = manifest._connection().execute("SELECT event_id, fingerprint FROM events_manifest LIMIT 1").fetchone()
    return row[0], row[1]
