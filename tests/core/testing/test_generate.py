"""`python -m events_manifest.testing.generate`, run as a user runs it: the batches on disk, each
re-delivering some of the one before, the same for the same seed."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path


def _generate(out: Path, seed: str) -> list[list[str]]:
    flags = ["--events", "50", "--batches", "2", "--seed", seed, "--out", str(out)]
    done = subprocess.run(
        [sys.executable, "-m", "events_manifest.testing.generate", *flags],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(out / "batch-1"), str(out / "batch-2")]
    return [gzip.open(out / f"batch-{n}" / "part-00000.tsv.gz", "rt").read().splitlines() for n in (1, 2)]


def test_batches_with_duplicates_within_and_across(tmp_path: Path) -> None:
    first, second = _generate(tmp_path / "a", "7")
    ids = [[line.split("\t")[6] for line in batch if line.count("\t") > 100] for batch in (first, second)]
    assert len(first) >= 50 and len(set(ids[0])) < len(ids[0])  # duplicates within a batch
    assert set(ids[0]) & set(ids[1])  # re-deliveries of the batch before
    assert _generate(tmp_path / "b", "7") == [first, second]
    assert _generate(tmp_path / "c", "8") != [first, second]
