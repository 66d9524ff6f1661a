"""The files the stream's file source read, from Spark's own log of them, and the ones changed since."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from events_manifest._jobs.storage import LocalStorage
from events_manifest._transformer.stream.read_files import ReadFiles, path_of


def log(folder: Path, name: str, *entries: tuple[str, int, int]) -> None:
    lines = ["v1", *(json.dumps({"path": path, "timestamp": ms, "batchId": batch}) for path, ms, batch in entries)]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("\n".join(lines))


def test_a_uri_of_the_log_is_the_path_a_listing_gives() -> None:
    assert path_of("file:///in/part%201.tsv") == "file:/in/part 1.tsv"
    assert path_of("s3a://bucket/enriched/a%25b.tsv") == "s3a://bucket/enriched/a%b.tsv"


def test_a_file_changed_since_it_was_read_is_named_once(tmp_path: Path) -> None:
    sources = tmp_path / "sources"
    log(sources, "0", ("file:///in/a.tsv", 1_000, 0), ("file:///in/b.tsv", 2_000, 0))
    files = ReadFiles(LocalStorage(), str(sources))
    files.update()
    assert files.folders() == {"file:/in"}
    assert files.changed({"file:/in/a.tsv": 1_000, "file:/in/b.tsv": 2_000, "file:/in/new.tsv": 5}) == []
    [line] = files.changed({"file:/in/a.tsv": 61_500, "file:/in/b.tsv": 2_000})
    assert line.startswith(
        "input file [file:/in/a.tsv] changed after it was read (modified 1970-01-01 00:00:01.000Z when read, "
        "now 1970-01-01 00:01:01.500Z): a file is read once, as it was when listed, so what changed is not read."
    )
    assert files.changed({"file:/in/a.tsv": 61_500}) == [], "said once"
    assert len(files.changed({"file:/in/a.tsv": 90_000})) == 1, "a change after that is another"


def test_a_sub_folder_none_of_whose_files_was_read_is_named_once(tmp_path: Path) -> None:
    """The file source reads the files directly in its folder, and a `column=value` sub-folder as a
    partition (maybe in a batch to come): any other visible sub-folder's files are never read."""
    sources = tmp_path / "sources"
    log(sources, "0", ("file:///in/a.tsv", 1_000, 0), ("file:///in/day=1/b.tsv", 2_000, 0))
    files = ReadFiles(LocalStorage(), str(sources))
    files.update()
    entries: dict[str, int | None] = {
        "file:/in/a.tsv": 10,
        "file:/in/day=1": None,
        "file:/in/day=2": None,
        "file:/in/copied": None,
        "file:/in/_temporary": None,
    }
    [line] = files.nested(entries)
    assert line.startswith("input folder [file:/in/copied] is inside input.dir, whose files the file source reads")
    assert files.nested(entries) == [], "said once"


def test_the_log_is_read_as_it_grows_and_from_its_compaction(tmp_path: Path) -> None:
    """Spark compacts every few batches into `<batch>.compact` and deletes the batches before it."""
    sources = tmp_path / "sources"
    log(sources, "0", ("file:///in/a.tsv", 1, 0))
    files = ReadFiles(LocalStorage(), str(sources))
    files.update()
    log(sources, "1", ("file:///in/b.tsv", 1, 1))
    files.update()
    assert len(files.changed({"file:/in/a.tsv": 2, "file:/in/b.tsv": 2})) == 2
    later = ReadFiles(LocalStorage(), str(sources))
    (sources / "0").unlink()
    (sources / "1").unlink()
    log(sources, "2.compact", ("file:///in/a.tsv", 1, 0), ("file:///in/b.tsv", 1, 1), ("file:///in/c.tsv", 1, 2))
    log(sources, "3", ("file:///in/d.tsv", 1, 3))
    later.update()
    assert len(later.changed({f"file:/in/{name}.tsv": 2 for name in "abcd"})) == 4


def test_a_log_of_another_version_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "0").write_text('v2\n{"path": "file:///in/a.tsv"}\n')
    with pytest.raises(ValueError, match=r"0: not a file source log of version v1"):
        ReadFiles(LocalStorage(), str(tmp_path)).update()
