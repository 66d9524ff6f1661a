"""The shred job on Spark killed where its run meets Hadoop's file system, in this process
(`tests.crashes`): its output staged, and in the middle of its commit (the earlier output deleted,
its own not yet in place, then partly moved). A rerun of the same input from what the kill left
gives the complete output of an unbroken run: in the commit, by delivering the sealed run, what it
moved already merged with the rest on Hadoop's file system. Every named step of the run
(`events_manifest._jobs.steps`), the puts among them, without Spark:
`tests/core/snowplow/test_shred_run.py`; a kill during the puts, which Spark's workers store, a real
kill of the process group (`tests/integration/test_processes.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.commands import shredder
from tests.crashes import Crashes
from tests.shred_helpers import generated_batch, rerun_gives_the_unbroken_output, written

FIRST_RUN = ["staged"]
"""Steps of a first run into empty folders."""
REPLACING_RUN = ["committing", "moving"]
"""Steps of a run that replaces an earlier one's output, on purpose (`--overwrite --rerun`): sealed, so
delivered by the rerun."""


def test_a_run_killed_at_each_step_is_finished_by_a_rerun(
    spark: Any, tmp_path: Path, subtests: pytest.Subtests
) -> None:
    source = generated_batch(tmp_path / "batch", events=600)
    work, db = tmp_path / "work", tmp_path / "m.db"
    work.mkdir()
    flags = ["--input-folder", source, "--output-folder", "out", "--bad-folder", "bad"]
    crashes = Crashes(work, db, tmp_path / "crashes")
    with crashes.recording(FIRST_RUN):
        assert shredder(work, *flags, "--manifest", f"sqlite:///{db}").returncode == 0
    unbroken = written(work)
    assert unbroken["kept"] > 500 and unbroken["bad"], "events kept, bad lines bad rows"
    with crashes.recording(REPLACING_RUN):
        assert shredder(work, *flags, "--manifest", f"sqlite:///{db}", "--overwrite", "--rerun").returncode == 0
    for step in FIRST_RUN + REPLACING_RUN:
        with subtests.test(step=step):
            url = crashes.restore(step)
            assert url is not None
            again = [*flags, "--manifest", url, *(["--overwrite", "--rerun"] if step in REPLACING_RUN else [])]
            rerun_gives_the_unbroken_output(work, again, unbroken, Path(url.removeprefix("sqlite:///")))
