"""The shred job's process killed (SIGKILL, JVM and workers included) at named steps of its run (see
`events_manifest.steps`): while its puts are stored, and in the middle of its commit, the earlier
output deleted and its own not yet in place. A rerun of the same input gives the complete output of
an unbroken run; another input is refused until the killed run is cleaned.

Every step, not only the suite's two: `EVENTS_MANIFEST_KILLS=all pytest tests/test_crash_rerun.py`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from events_manifest import SqliteManifest, steps
from events_manifest.snowplow.generator import BatchSpec, write_batches
from spark_integration import shred
from tests.commands import env, events_manifest, shredder
from tests.shred_helpers import atomic, line, read_bad, read_output

pytestmark = pytest.mark.spark

STEPS = ["started", "puts", "staged", "committing", "committed"]
KILLED_AT = STEPS if os.environ.get("EVENTS_MANIFEST_KILLS") == "all" else ["puts", "committing"]


@pytest.fixture(scope="module")
def batch(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any]]:
    """A generated batch (duplicates of every kind, bad lines), and the output of an unbroken run."""
    folder = tmp_path_factory.mktemp("crash")
    spec = BatchSpec(events=2_000, bot_copies=20)
    source = str(write_batches(folder, batches=1, spec=spec, seed=7, first_etl=datetime(2026, 11, 1, 6))[0])
    summary = shred(spark, source, str(folder / "out"), str(folder / "bad"), manifest=f"sqlite:///{folder}/m.db")
    return source, {"out": read_output(folder / "out"), "bad": read_bad(folder / "bad"), "counts": summary.counts()}


def killed_at(step: str, cwd: Path, *args: str) -> None:
    """Run the shred job as a process of its own, stopped at `step` (it signals through a file),
    then kill its whole process group: the JVM and its Python workers too."""
    signal_file = cwd / f"reached-{step}"
    child = {**env(), steps.STOP_AT: step, steps.SIGNAL: str(signal_file)}
    command = [sys.executable, "-m", "spark_integration.shredder", *args]
    process = subprocess.Popen(
        command, cwd=cwd, env=child, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        while not signal_file.exists():  # the event: the run is at `step`, waiting to be killed
            assert process.poll() is None, f"the run ended before {step}: {process.stderr.read()[-3000:]}"  # type: ignore[union-attr]
            time.sleep(0.05)
        os.killpg(process.pid, signal.SIGKILL)
    finally:
        process.wait()
        process.stderr.close()  # type: ignore[union-attr]


@pytest.mark.parametrize("step", KILLED_AT)
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

    rerun = shredder(tmp_path, *flags, "--overwrite")
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert read_output(tmp_path / "out") == unbroken["out"]
    assert read_bad(tmp_path / "bad") == unbroken["bad"]
    assert (
        json.loads((tmp_path / "out" / "_summary.json").read_text())["kept_events"]
        == dict(unbroken["counts"])["kept events"]
    )
    assert not any(p.name.startswith((".staging-", "_claim")) for p in [*(tmp_path / "out").iterdir()])
    with SqliteManifest(tmp_path / "m.db") as manifest:
        assert [run.state for run in manifest.runs()] == ["finished"]


def test_a_killed_run_is_not_finished_by_another_input(
    spark: Any, batch: tuple[str, dict[str, Any]], tmp_path: Path
) -> None:
    """Killed during its puts; the input then gains a line and the rerun goes to a new output
    folder: the ledger knows the killed run read other files and refuses (its stored events and the
    grown input's would be mixed up). Once the killed run is cleaned, the grown input is delivered
    whole: no event of the killed run is dropped as a duplicate."""
    source, unbroken = batch
    inputs = tmp_path / "in"
    shutil.copytree(source, inputs)
    db = f"sqlite:///{tmp_path}/m.db"
    killed_at(
        "puts", tmp_path, "--input-folder", "in", "--output-folder", "out", "--bad-folder", "bad", "--manifest", db
    )
    with SqliteManifest(tmp_path / "m.db") as manifest:
        [killed] = manifest.runs()
        assert not killed.finished and manifest.lookup(*_first_pair(manifest)) is not None, "its puts were stored"

    late = line(str(uuid.uuid4()), "FP", etl="2026-11-01 05:00:00.000")
    (inputs / "late.tsv").write_text(late + "\n")
    flags = ["--input-folder", "in", "--output-folder", "out2", "--bad-folder", "bad2", "--manifest", db]
    refused = shredder(tmp_path, *flags)
    assert refused.returncode == 1 and "names another input than the run of" in refused.stderr
    assert f"events-manifest clean --etl-time '{killed.etl_time:%Y-%m-%d %H:%M:%S}'" in refused.stderr
    assert not (tmp_path / "out2").exists() and not (tmp_path / "bad2").exists()

    cleaned = events_manifest(tmp_path, "clean", "--etl-time", f"{killed.etl_time:%Y-%m-%d %H:%M:%S}", "--manifest", db)
    assert cleaned.returncode == 0, cleaned.stderr
    done = shredder(tmp_path, *flags)
    assert done.returncode == 0, done.stderr[-3000:]
    shred(spark, str(inputs), str(tmp_path / "fresh"), str(tmp_path / "fresh-bad"), manifest=f"{db}-fresh")
    assert read_output(tmp_path / "out2") == read_output(tmp_path / "fresh"), "as a run on an empty manifest: whole"
    assert atomic(late) in read_output(tmp_path / "out2")["atomic-events"]
    assert read_bad(tmp_path / "bad2") == unbroken["bad"]
    summary = json.loads((tmp_path / "out2" / "_summary.json").read_text())
    assert summary["cross_batch_duplicates"] == 0 and summary["etl_time"] == "2026-11-01 05:00:00"


def _first_pair(manifest: SqliteManifest) -> tuple[str, str]:
    row = manifest._connection().execute("SELECT event_id, fingerprint FROM events_manifest LIMIT 1").fetchone()
    return row[0], row[1]
