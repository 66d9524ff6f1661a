"""`events_manifest._jobs.folders`: a run's claim on its folders (a second run refused at once, a killed
run's claim taken over, another host's held until a judge says it is dead), what a folder may
hold before a run writes into it, the marker that makes a folder the job's, and the release."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from events_manifest._jobs.folders import (
    CLAIM,
    FolderClaimedError,
    JobFolders,
    Layout,
    OutputExistsError,
    beat,
    claim,
    drop_dead_claim,
    quiet,
    silent_for,
)
from events_manifest._jobs.storage import LocalStorage
from events_manifest._manifest import liveness
from tests.commands import dead_pid

LAYOUT = Layout("shred job", "_job.json", lambda role, name: name.startswith("part-") or name == "_SUCCESS")


def write_claim(folder: Path, **fields: Any) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / CLAIM).write_text(json.dumps({"run": "other", "since": 0, **fields}) + "\n")


def test_a_second_run_is_refused_at_once_and_the_advice_works(tmp_path: Path) -> None:
    storage = LocalStorage()
    out = str(tmp_path / "out")
    first = claim(storage, storage.qualify(out), out, "output", "run-1")
    with pytest.raises(FolderClaimedError) as refused:
        claim(storage, storage.qualify(out), out, "output", "run-2")
    assert "is being written by another run (process" in str(refused.value)
    assert str(refused.value).endswith(f"delete {tmp_path / 'out' / CLAIM}")
    (tmp_path / "out" / CLAIM).unlink()  # the advice, followed
    second = claim(storage, storage.qualify(out), out, "output", "run-2")
    first.release()
    assert (tmp_path / "out" / CLAIM).exists(), "a run does not remove a claim another run wrote over its own"
    second.release()
    assert list((tmp_path / "out").iterdir()) == [], "a folder the run found is left, empty"
    made = claim(storage, storage.qualify(str(tmp_path / "new")), "new", "bad", "run-3")
    made.release()
    assert not (tmp_path / "new").exists(), "the folder the run made, left empty, is removed"


def test_a_claim_whose_process_is_gone_is_taken_over(tmp_path: Path) -> None:
    host = liveness.this_process().rpartition(":")[0]
    write_claim(tmp_path / "out", host=host, pid=dead_pid())
    storage = LocalStorage()
    taken = claim(storage, storage.qualify(str(tmp_path / "out")), "out", "output", "mine")
    assert json.loads((tmp_path / "out" / CLAIM).read_text())["run"] == "mine"
    taken.release()


def test_another_hosts_claim_holds_until_the_judge_says_its_run_is_dead(tmp_path: Path) -> None:
    write_claim(tmp_path / "out", host="elsewhere.example", pid=1)
    storage = LocalStorage()
    path = storage.qualify(str(tmp_path / "out"))
    with pytest.raises(FolderClaimedError, match=r"process 1 on elsewhere\.example"):
        claim(storage, path, "out", "output", "mine")
    assert not drop_dead_claim(storage, path, dead_elsewhere=lambda held: False)
    assert drop_dead_claim(storage, path, dead_elsewhere=lambda held: held["host"] == "elsewhere.example")
    assert not (tmp_path / "out" / CLAIM).exists()


def test_a_long_running_holder_on_another_host_lives_while_it_beats(tmp_path: Path) -> None:
    write_claim(tmp_path / "out", host="elsewhere.example", pid=1, since=1000)
    storage = LocalStorage()
    path = storage.qualify(str(tmp_path / "out"))
    now = [1000.0 + 599]
    judge = silent_for(storage, path, 600, now=lambda: now[0])
    assert not drop_dead_claim(storage, path, judge), "its claim is ten minutes old at most"
    now[0] = 1000.0 + 601
    beat(storage, path, 1500)
    beat(storage, path, 1560)
    assert [p.name for p in (tmp_path / "out").iterdir() if p.name.startswith("_alive")] == ["_alive-1560"]
    with pytest.raises(FolderClaimedError):
        claim(storage, path, "out", "output", "mine", dead_elsewhere=judge)
    now[0] = 1560.0 + 601
    taken = claim(storage, path, "out", "output", "mine", dead_elsewhere=judge)
    quiet(storage, path)
    taken.release()
    assert list((tmp_path / "out").iterdir()) == [], "no claim and no sign of life left"


def test_a_folder_holds_nothing_or_only_what_the_job_wrote(tmp_path: Path) -> None:
    storage = LocalStorage()
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(
        OutputExistsError, match=r"is not empty \(notes.txt\): choose an empty folder or pass --overwrite"
    ):
        JobFolders.claim_all(storage, LAYOUT, [(str(out), "output")], overwrite=False)
    with pytest.raises(OutputExistsError, match=r"did not write .*no _job\.json.*empty this one yourself"):
        JobFolders.claim_all(storage, LAYOUT, [(str(out), "output")], overwrite=True)
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"], "refused: the claim released, nothing touched"
    (out / "notes.txt").unlink()
    (out / "_job.json").write_text("{}")
    (out / "part-0").write_text("old")
    (out / ".staging-dead").mkdir()
    folders = JobFolders.claim_all(storage, LAYOUT, [(str(out), "output")], overwrite=True)
    assert not (out / ".staging-dead").exists(), "a killed run's staging is the job's to remove"
    folders.commit("2026-11-01 06:00:00")
    folders.release()
    assert sorted(p.name for p in out.iterdir()) == ["_job.json"], "the old output replaced, the claim gone"
    marker = json.loads((out / "_job.json").read_text())
    assert marker == {"written_by": "events-manifest shred job", "role": "output", "etl_time": "2026-11-01 06:00:00"}
