"""The shred job's process killed (SIGKILL, JVM included) at random points of the manifest writes
and of the output writes; a rerun of the same input gives the complete output of an unbroken run.

More kills than the suite's two: `EVENTS_MANIFEST_KILLS=20 pytest tests/test_crash_rerun.py`.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from spark_integration import shred
from spark_integration.generator import BatchSpec, write_batches
from tests.shred_helpers import read_bad, read_output

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


def _kill_at_random(command: list[str], out: Path, db: Path, phase: str, rnd: random.Random) -> str:
    """Start the job, wait for `phase` to begin (the first put stored, or the staging folder made),
    kill the whole process group (the JVM too) a random moment later; say what was interrupted."""
    started = (lambda: _stored(db) > 0) if phase == "manifest writes" else (lambda: _staging(out))
    # the suite's `spark` fixture has put the project on PYTHONPATH, which the job inherits
    process = subprocess.Popen(command, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while not started() and process.poll() is None:
            time.sleep(0.005)
        time.sleep(rnd.uniform(0, 3.0 if phase == "manifest writes" else 1.5))
        finished = process.poll() is not None
        os.killpg(process.pid, signal.SIGKILL)
    finally:
        process.wait()
    if finished:
        return "nothing (finished first)"
    if _staging(out):
        return "output writes"
    return "manifest writes or the counts after them" if _stored(db) else "before the manifest writes"


@pytest.mark.parametrize("attempt", range(KILLS))
def test_a_killed_run_rerun_gives_the_complete_output(
    spark: Any, batch: tuple[str, dict[str, Any]], tmp_path: Path, attempt: int
) -> None:
    source, unbroken = batch
    manifest = f"sqlite:///{tmp_path}/m.db"
    out, bad = tmp_path / "out", tmp_path / "bad"
    command = [
        sys.executable,
        "-m",
        "spark_integration.shredder",
        "--input-folder",
        source,
        "--output-folder",
        str(out),
    ]
    command += ["--bad-folder", str(bad), "--manifest", manifest]
    phase = PHASES[attempt % 2]
    interrupted = _kill_at_random(command, out, tmp_path / "m.db", phase, random.Random(attempt))
    print(f"kill {attempt}: aimed at {phase}, interrupted {interrupted}, {_stored(tmp_path / 'm.db')} puts stored")

    rerun = shred(spark, source, str(out), str(bad), manifest=manifest, overwrite=True)
    assert read_output(out) == unbroken["out"]
    assert read_bad(bad) == unbroken["bad"]
    assert rerun.counts() == unbroken["counts"]
    assert not any(p.name.startswith(".staging-") for p in [*out.iterdir(), *bad.iterdir()])
