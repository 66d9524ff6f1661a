"""`events_manifest._jobs.storage` on this machine's file system (`LocalStorage`): qualified paths, an
exclusive create, whole-file writes, a move repeatable after a kill at any file, a merge, what a
path holds."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from events_manifest._jobs.storage import (
    FILE,
    FOLDER,
    Listing,
    LocalStorage,
    inside,
    join,
    literal_root,
    local_path,
    no_slash,
    unread,
)
from events_manifest.errors import InputNotWholeError


@pytest.fixture
def storage() -> LocalStorage:
    return LocalStorage()


def test_paths_are_qualified_without_a_trailing_slash(storage: LocalStorage, tmp_path: Path) -> None:
    assert storage.qualify(str(tmp_path) + "/") == f"file:{tmp_path}"
    assert storage.qualify(f"file:{tmp_path}/a/../b") == f"file:{tmp_path}/b"
    assert local_path(f"file:{tmp_path}") == str(tmp_path) and local_path("s3a://bucket/key") is None
    assert local_path(f"file:{tmp_path}/a #1?b") == f"{tmp_path}/a #1?b", "a name, not a URI's fragment or query"
    assert storage.qualify(f"{tmp_path}/a #1?b/") == f"file:{tmp_path}/a #1?b"
    assert (join("s3a://b/x/", "y", "z"), no_slash("s3a://b/x/"), no_slash("file:/")) == (
        "s3a://b/x/y/z",
        "s3a://b/x",
        "file:/",
    )
    assert (
        inside("s3a://b/x/y", "s3a://b/x")
        and inside("s3a://b/x", "s3a://b/x")
        and not inside("s3a://b/xy", "s3a://b/x")
    )
    assert literal_root("s3a://b/in/run=*/part-*") == "s3a://b/in" and literal_root("/a/b") == "/a/b"


def test_create_new_is_exclusive_and_write_text_replaces_whole(storage: LocalStorage, tmp_path: Path) -> None:
    claim = str(tmp_path / "out" / "_claim")
    assert storage.create_new(claim, "first") and not storage.create_new(claim, "second")
    assert storage.read_text(claim) == "first"
    storage.write_text(claim, "replaced")
    assert storage.read_text(claim) == "replaced"
    assert sorted(os.listdir(tmp_path / "out")) == ["_claim"], "no temporary file left beside it"


def test_a_record_once_written_stands_for_every_later_writer(storage: LocalStorage, tmp_path: Path) -> None:
    """A micro-batch's record: the first writer's text, which a replay or a racing writer takes."""
    record = str(tmp_path / "book" / "batch-7")
    assert storage.record_once(record, "first\n") == "first\n"
    assert storage.record_once(record, "second\n") == "first\n"
    assert storage.read_text(record) == "first\n" and os.listdir(tmp_path / "book") == ["batch-7"]


def test_what_a_path_holds(storage: LocalStorage, tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "d" / "e").mkdir(parents=True)
    assert [storage.kind(str(tmp_path / name)) for name in ("f", "d", "none")] == [FILE, FOLDER, None]
    assert storage.kind(str(tmp_path / "pipe")) not in (FILE, FOLDER, None), "a FIFO is named for what it is"
    assert storage.children(str(tmp_path)) == ["d", "f", "pipe"] and storage.subfolders(str(tmp_path)) == ["d"]
    assert storage.children(str(tmp_path / "none")) == [] and storage.files(str(tmp_path / "none")) == []
    assert storage.identity(str(tmp_path / "f")) == storage.identity(f"file:{tmp_path}/d/../f")


def test_a_move_stopped_at_any_file_is_finished_by_moving_again(storage: LocalStorage, tmp_path: Path) -> None:
    staging, target = tmp_path / "staging", tmp_path / "run"
    for name in ("output=good/part-0", "output=good/part-1", "output=bad/part-0"):
        (staging / name).parent.mkdir(parents=True, exist_ok=True)
        (staging / name).write_text(name)
    moved: list[str] = []

    def stop_after_first(name: str) -> None:
        moved.append(name)
        raise KeyboardInterrupt  # a kill between two files

    with pytest.raises(KeyboardInterrupt):
        storage.move_tree(str(staging), str(target), stop_after_first)
    assert moved == ["output=bad/part-0"] and storage.files(str(target)) == ["output=bad/part-0"]
    storage.move_tree(str(staging), str(target))
    assert storage.files(str(target)) == ["output=bad/part-0", "output=good/part-0", "output=good/part-1"]
    assert storage.files(str(staging)) == [] and (target / "output=good/part-1").read_text() == "output=good/part-1"


def test_merge_and_delete(storage: LocalStorage, tmp_path: Path) -> None:
    (tmp_path / "a" / "x").mkdir(parents=True)
    (tmp_path / "a" / "x" / "1").write_text("1")
    (tmp_path / "b" / "x").mkdir(parents=True)
    (tmp_path / "b" / "x" / "2").write_text("2")
    storage.merge(str(tmp_path / "a"), str(tmp_path / "b"))
    assert storage.files(str(tmp_path / "b")) == ["x/1", "x/2"]
    os.symlink(tmp_path / "b", tmp_path / "link")
    storage.delete(str(tmp_path / "link"))
    assert storage.files(str(tmp_path / "b")) == ["x/1", "x/2"], "a link is removed, not what it points to"
    storage.delete(str(tmp_path / "b"))
    storage.delete(str(tmp_path / "b"))  # nothing when absent
    assert not (tmp_path / "b").exists()


def test_what_a_read_of_folders_leaves_out_that_may_hold_events() -> None:
    """Files still being copied, and visible sub-folders none of whose files are read (a `k=v` one
    Spark reads as a partition is not); hidden names are Hadoop's to leave out. An input with either
    is refused in one line that names it and what to do."""
    entries: dict[str, int | None] = {
        "s3a://b/run=1/part-0.tsv": 10,
        "s3a://b/run=1/part-1.tsv._COPYING_": 4,
        "s3a://b/run=1/_part-2.tsv._COPYING_": 4,
        "s3a://b/run=1/.part-3.tsv._COPYING_": 4,
        "s3a://b/run=1/sub": None,
        "s3a://b/run=1/date=2026-11-01": None,
        "s3a://b/run=1/_temporary": None,
        "s3a://b/run=1/.staging": None,
    }
    read = ["s3a://b/run=1/part-0.tsv", "s3a://b/run=1/date=2026-11-01/part-0.tsv"]
    copying, nested = unread(entries, read)
    assert (copying, nested) == (("s3a://b/run=1/part-1.tsv._COPYING_",), ("s3a://b/run=1/sub",))
    assert unread(entries, read, named=["s3a://b/run=1"]) == (copying, nested), "the folder named"
    assert unread(entries, read[:1], named=read[:1]) == ((), ()), "a file named alone: not the others beside it"
    assert unread(entries, read, named=["s3a://b"]) == (copying, nested), "a folder above"
    deeper = {**entries, "s3a://b/run=1/y=2026": None}
    assert unread(deeper, [*read, "s3a://b/run=1/y=2026/m=11/part-0.tsv"]) == (copying, nested), "read two below"
    Listing(((read[0], 10),)).check_whole()  # whole: no refusal
    with pytest.raises(InputNotWholeError) as refused:
        Listing(((read[0], 10),), copying=copying, nested=nested).check_whole()
    assert str(refused.value).startswith("input file s3a://b/run=1/part-1.tsv._COPYING_ is still being copied")
    with pytest.raises(InputNotWholeError) as refused:
        Listing(((read[0], 10),), nested=(*nested, "s3a://b/run=1/other")).check_whole()
    assert str(refused.value) == (
        "input folder s3a://b/run=1/sub (and 1 more) is inside a folder the run reads, which reads the files "
        "directly in it, not those of its sub-folders: its files would never be read. Move them up into "
        "s3a://b/run=1, or the folder out of the input, then run again"
    )
