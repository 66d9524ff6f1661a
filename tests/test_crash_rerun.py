"""The shred job's process killed (SIGKILL, JVM included) at random points of the manifest writes
and of the output writes; a rerun of the same input gives the complete output of an unbroken run,
and so does a rerun of a grown input into a new folder.

More kills than the suite's two: `EVENTS_MANIFEST_KILLS=20 pytest tests/test_crash_rerun.py`.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from events_manifest.snowplow.generator import BatchSpec, write_batches
from spark_integration import shred
from tests.shred_helpers import atomic, line, read_bad, read_output

pytestmark = pytest.mark.spark

KILLS = int(os.environ.get("EVENTS_MANIFEST_KILLS", "2"))
PHASES = ["manifest writes", "output writes"]


@pytest.fixture(scope="module")
def batch(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any]]:
    """A batch big enough to be killed in the middle of, and the output of an unbroken run."""
    folder = tmp_path_factory.mktemp("crash")
    spec = BatchSpec(events=20_000, bot_copies=20)
    source = str(write_batches(folder, batches=1, spec=spec, seed=7, first_etl=datetime(2026, 11, 1, 6))[0])
    summary = shred(spark, source, str(folder / "out"), str(folder / "bad"), manifest=f"sqlite:///{folder}/m.db")
    return source, {"out": read_output(folder / "out"), "bad": read_bad(folder / "bad"), "counts": summary.counts()}


def _staging(out: Path) -> bool:
    return out.exists() and any(child.name.startswith(".staging-") for child in out.iterdir())


def _stored(db: Path) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as connection:
            return int(connection.execute("SELECT count(*) FROM events_manifest").fetchone()[0])
    except sqlite3.OperationalError:  # not created yet
        return 0


def _kill(command: list[str], out: Path, db: Path, phase: str, delay: float) -> str:
    """Start the job, wait for `phase` to begin (the first put stored, or the staging folder made),
    kill the whole process group (the JVM too) `delay` seconds later; say what was interrupted."""
    started = (lambda: _stored(db) > 0) if phase == "manifest writes" else (lambda: _staging(out))
    # the suite's `spark` fixture has put the project on PYTHONPATH, which the job inherits
    process = subprocess.Popen(command, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while not started() and process.poll() is None:
            time.sleep(0.005)
        time.sleep(delay)
        finished = process.poll() is not None
        os.killpg(process.pid, signal.SIGKILL)
    finally:
        process.wait()
    if finished:
        return "nothing (finished first)"
    if _staging(out):
        return "output writes"
    return "manifest writes or the counts after them" if _stored(db) else "before the manifest writes"


def _shredder(*args: str) -> list[str]:
    return [sys.executable, "-m", "spark_integration.shredder", *args]


@pytest.mark.parametrize("attempt", range(KILLS))
def test_a_killed_run_rerun_gives_the_complete_output(
    spark: Any, batch: tuple[str, dict[str, Any]], tmp_path: Path, attempt: int
) -> None:
    source, unbroken = batch
    manifest = f"sqlite:///{tmp_path}/m.db"
    out, bad = tmp_path / "out", tmp_path / "bad"
    command = _shredder("--input-folder", source, "--output-folder", str(out), "--bad-folder", str(bad))
    command += ["--manifest", manifest]
    phase = PHASES[attempt % 2]
    delay = random.Random(attempt).uniform(0, 3.0 if phase == "manifest writes" else 1.5)
    interrupted = _kill(command, out, tmp_path / "m.db", phase, delay)
    print(f"kill {attempt}: aimed at {phase}, interrupted {interrupted}, {_stored(tmp_path / 'm.db')} puts stored")

    rerun = shred(spark, source, str(out), str(bad), manifest=manifest, overwrite=True)
    assert read_output(out) == unbroken["out"]
    assert read_bad(bad) == unbroken["bad"]
    assert rerun.counts() == unbroken["counts"]
    assert not any(p.name.startswith(".staging-") for p in [*out.iterdir(), *bad.iterdir()])


def test_a_killed_run_is_finished_by_a_rerun_of_changed_input_into_a_new_folder(
    batch: tuple[str, dict[str, Any]], tmp_path: Path
) -> None:
    """Killed during its puts; the input then gains a line of an earlier etl_tstamp and the rerun
    goes to a new output folder: the ledger, not the folder, says the killed run is unfinished, so
    the rerun takes its etl time and delivers its events instead of dropping them as duplicates."""
    source, unbroken = batch
    inputs = tmp_path / "in"
    shutil.copytree(source, inputs)
    db, manifest = tmp_path / "m.db", f"sqlite:///{tmp_path}/m.db"
    killed = _shredder("--input-folder", str(inputs), "--output-folder", str(tmp_path / "out"))
    interrupted = _kill([*killed, "--bad-folder", str(tmp_path / "bad"), "--manifest", manifest], tmp_path / "out", db,
                        "manifest writes", delay=0)  # fmt: skip
    assert interrupted in ("manifest writes or the counts after them", "output writes") and _stored(db) > 0

    def rerun(*flags: str) -> subprocess.CompletedProcess[str]:
        command = _shredder("--input-folder", str(inputs), "--output-folder", str(tmp_path / "out2"))
        command += ["--bad-folder", str(tmp_path / "bad2"), "--manifest", manifest, *flags]
        return subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)

    refused = rerun("--etl-time", "2026-11-01 05:00:00")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "Finish it with --etl-time '2026-11-01 06:" in refused.stderr
    assert not (tmp_path / "out2").exists() and not (tmp_path / "bad2").exists()

    late = line(str(uuid.uuid4()), "FP", etl="2026-11-01 05:00:00.000")
    (inputs / "late.tsv").write_text(late + "\n")
    done = rerun()
    assert done.returncode == 0, done.stderr[-3000:]
    expected = {**unbroken["out"], "atomic-events": sorted([*unbroken["out"]["atomic-events"], atomic(late)])}
    assert read_output(tmp_path / "out2") == expected, "every event of the killed run is delivered"
    assert read_bad(tmp_path / "bad2") == unbroken["bad"]
    summary = json.loads((tmp_path / "out2" / "_summary.json").read_text())
    assert summary["cross_batch_duplicates"] == 0 and summary["etl_time"].startswith("2026-11-01 06:")
