"""A run's outputs staged under a hidden folder, then moved into place together (`_jobs.staging`),
with the shred job's layout (`_snowplow.shred_output.places`), on local folders: each kind where
the job's outputs go, two staged writes merged, one never written adding nothing; a move stopped
after any file, as on object storage (a copy, then a delete), finished by the next call."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from events_manifest._jobs.staging import Staging
from events_manifest._jobs.storage import LocalStorage, Storage
from events_manifest._snowplow.shred_output import places

SHREDDED = "kind=shredded/type=com.acme%2Fclick%2Fjsonschema%2F1-0-0"


def _staged(storage: Storage, out: Path) -> Staging:
    staging = Staging(storage, str(out))
    for name, files in {"a": ["kind=atomic/type=_/part-0", f"{SHREDDED}/part-0", "kind=bad/type=_/part-0"],
                        "b": ["kind=atomic/type=_/part-1"]}.items():  # fmt: skip
        for file in files:
            (Path(staging.path(name)) / file).parent.mkdir(parents=True, exist_ok=True)
            (Path(staging.path(name)) / file).write_text(f"{name}/{file}\n")
    return staging


def _found(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_staged_kinds_move_into_the_shred_job_s_layout_and_the_staging_folder_goes(tmp_path: Path) -> None:
    storage, out, bad = LocalStorage(), tmp_path / "out", tmp_path / "bad"
    staging = _staged(storage, out)
    assert Path(staging.root).parent == out and Path(staging.root).name.startswith(".staging-")
    written = [staging.path(name) for name in ("a", "b", "never")]
    staging.commit(places(written, str(out), str(bad)))
    found = _found(tmp_path)
    assert found == {
        "bad/_SUCCESS": "",
        "bad/part-0": "a/kind=bad/type=_/part-0\n",
        "out/atomic-events/_SUCCESS": "",
        "out/atomic-events/part-0": "a/kind=atomic/type=_/part-0\n",
        "out/atomic-events/part-1": "b/kind=atomic/type=_/part-1\n",
        "out/shredded-types/_SUCCESS": "",
        "out/shredded-types/vendor=com.acme/name=click/format=jsonschema/version=1-0-0/part-0": (
            f"a/{SHREDDED}/part-0\n"
        ),
    }
    assert not Path(staging.root).exists()


class Stopped(Exception):
    pass


class ObjectStore(LocalStorage):
    """A local disk that moves as S3 does, a file at a time, each copied, then deleted; stopped as
    it copies file number `stop` (counted from 0; never, with -1), which stays at both places."""

    def __init__(self, stop: int) -> None:
        self.stop = stop

    def move(self, source: str, target: str) -> None:
        src, dst = Path(self._os(source)), Path(self._os(target))
        if dst.exists():
            raise OSError(f"could not move {source} to {target}")  # as Hadoop's rename refuses
        for file in [src] if src.is_file() else sorted(p for p in src.rglob("*") if p.is_file()):
            to = dst if file == src else dst / file.relative_to(src)
            to.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(file, to)
            if self.stop == 0:
                raise Stopped
            self.stop -= 1
            file.unlink()
        shutil.rmtree(src, ignore_errors=True)

    def move_file(self, source: str, target: str) -> None:
        Storage.move_file(self, source, target)  # what a store without rename does


def test_a_commit_stopped_after_any_file_of_its_moves_is_finished_by_the_next(tmp_path: Path) -> None:
    """Stopped as it copies each file in turn (the copy made, the source not yet deleted, as a
    kill leaves an object store's rename), then committed again from the same staging folder on
    the same store: the layout an unbroken commit gives, each file once."""
    unbroken = tmp_path / "unbroken"
    staging = _staged(LocalStorage(), unbroken / "out")
    staging.commit(places([staging.path("a"), staging.path("b")], str(unbroken / "out"), str(unbroken / "bad")))
    expected = _found(unbroken)
    for stop in range(4):
        work = tmp_path / f"stopped-{stop}"
        stopping = _staged(ObjectStore(stop), work / "out")
        moves = places([stopping.path("a"), stopping.path("b")], str(work / "out"), str(work / "bad"))
        with pytest.raises(Stopped):
            stopping.commit(moves)
        again = Staging(ObjectStore(-1), str(work / "out"), Path(stopping.root).name)  # not stopped
        again.commit(places([again.path("a"), again.path("b")], str(work / "out"), str(work / "bad")))
        assert _found(work) == expected, stop
