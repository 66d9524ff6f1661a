"""Nothing lost, whatever is typed, round two: outputs that cannot clobber, reruns that cannot
double, inputs with nothing to read, read-only commands that write nothing, messages that fit on
one line. The `events-manifest` command runs as a process of its own (it is cheap); the shred job
in this process, on the suite's Spark session, but for the one case where its own stderr is the
point. Each case checks the files on disk afterwards."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from events_manifest import ManifestUnavailableError, SqliteManifest
from spark_integration import shred
from tests.commands import error_line, shredder
from tests.core.test_cli_safety import snapshot
from tests.shred_helpers import FailingAfterPuts, line, read_bad, read_output, write_input

A = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"
B = "d7f5fa2f-3b3a-4c97-a030-8e05d9f40b0a"


@pytest.fixture
def shred_batch(spark: Any, tmp_path: Path) -> Path:
    """A small batch in `in`, and its good output in `out` and `bad`, on the manifest `m.db`."""
    write_input(tmp_path / "in", [line(A, "FP"), line(B, "FP"), "broken"])
    done = shredder(tmp_path, *_shred_flags("out", "bad"))
    assert done.returncode == 0, done.stderr
    return tmp_path


def _shred_flags(out: str, bad: str, source: str = "in") -> list[str]:
    return ["--input-folder", source, "--output-folder", out, "--bad-folder", bad, "--manifest", "sqlite://m.db"]


def test_the_shred_jobs_report_cannot_replace_an_input_the_manifest_or_a_folder(shred_batch: Path) -> None:
    cwd = shred_batch
    (cwd / "reports").mkdir()
    before = snapshot(cwd)
    refused = {
        "in/part-00000.tsv": "--report [in/part-00000.tsv] is inside the input [in]",
        "m.db": "--report [m.db] is also the manifest file",
        "reports": "--report [reports] is a folder: give a file name",
        "out2/report.html": "--report [out2/report.html] is inside the output folder [out2]",
    }
    for report, message in refused.items():
        done = shredder(cwd, *_shred_flags("out2", "bad2"), "--rerun", "--report", report)
        assert message in error_line(done), report
        assert snapshot(cwd) == before, report


def test_a_delivered_input_is_not_delivered_again_by_mistake(shred_batch: Path) -> None:
    cwd = shred_batch
    before = snapshot(cwd)
    again = error_line(shredder(cwd, *_shred_flags("out2", "bad2")))
    assert "was delivered already, by the run with etl time 2026-11-01 06:00:00 into file:" in again
    assert f"{cwd}/out" in again and "--rerun" in again
    assert snapshot(cwd) == before
    future = shredder(cwd, *_shred_flags("out2", "bad2"), "--etl-time", "3026-01-01 00:00:00")
    assert "etl time 3026-01-01 00:00:00 is more than a day ahead of now" in error_line(future)
    assert snapshot(cwd) == before
    done = shredder(cwd, *_shred_flags("out2", "bad2"), "--rerun")
    assert done.returncode == 0, done.stderr
    assert read_output(cwd / "out2") == read_output(cwd / "out"), "on purpose: the same events again"


def test_overwrite_refuses_an_input_with_nothing_to_read(shred_batch: Path) -> None:
    cwd = shred_batch
    (cwd / "empty").mkdir()
    (cwd / "hidden").mkdir()
    (cwd / "hidden" / ".part-0.tsv").write_text(line(A, "FP") + "\n")
    (cwd / "hidden" / "_SUCCESS").write_text("")
    (cwd / "nested" / "sub").mkdir(parents=True)
    (cwd / "nested" / "sub" / "part-0.tsv").write_text(line(A, "FP") + "\n")
    before = read_output(cwd / "out"), read_bad(cwd / "bad")
    found = {
        "empty": "input [empty]: nothing at all: no data for the job to read",
        "hidden": "input [hidden]: hidden files (.part-0.tsv, _SUCCESS): no data",
        "nested": "nested/sub is inside a folder the run reads, which reads the files directly in it",
    }
    for source, message in found.items():
        done = shredder(cwd, *_shred_flags("out", "bad", source), "--overwrite", "--item-id", source)
        assert message in error_line(done), source
        assert (read_output(cwd / "out"), read_bad(cwd / "bad")) == before, "the earlier output is whole"


class FailingWithTwoLines(FailingAfterPuts):
    """A store that fails after a batch's puts, with a message of several lines."""

    message = "the store went away\nat line two\nand three"


def test_a_processing_table_keeps_a_one_line_reason(spark: Any, tmp_path: Path) -> None:
    source = str(write_input(tmp_path / "in", [line(A, "FP")]))
    with pytest.raises(ManifestUnavailableError, match="went away"):
        shred(
            spark,
            source,
            str(tmp_path / "o"),
            str(tmp_path / "b"),
            manifest=FailingWithTwoLines(tmp_path / "m.db"),
            processing_table="processing",
            item_id="batch-1",
        )
    with SqliteManifest(tmp_path / "m.db") as manifest:
        [record] = manifest.processing_manifest("processing").items()
        assert (record.state, record.detail) == ("failed", "ManifestUnavailableError: the store went away")
        assert [run.state for run in manifest.runs()] == ["failed"]
