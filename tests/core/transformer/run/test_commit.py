"""A run folder's commit in repeatable steps, and what its contents say of its run: absent,
unfinished, sealed, committed, or not this transformer's; a delivery stopped after any move,
called again, ends in the same folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from events_manifest._jobs.folders import CLAIM
from events_manifest._jobs.storage import LocalStorage
from events_manifest._transformer.output.entity_types import EntityType
from events_manifest._transformer.run.commit import (
    COMPLETE,
    RunCounts,
    State,
    deliver,
    inspect,
    seal,
    sealed_counts,
    tidy,
)

COUNTS = RunCounts(
    lines=5,
    good=2,
    bad=1,
    natural=1,
    cross_batch=1,
    types=(EntityType("iglu:com.acme/x/jsonschema/1-0-0", "CONTEXT", ""),),
)


def _staged(base: Path, name: str = ".staging-abc") -> Path:
    staging = base / name
    for output, files in {"output=good": ["part-0.txt", "part-1.txt"], "output=bad": ["part-0.txt"]}.items():
        (staging / "data" / output).mkdir(parents=True)
        for file in files:
            (staging / "data" / output / file).write_text(f"{output}/{file}\n")
    return staging


def _tree(base: Path) -> dict[str, str]:
    return {str(p.relative_to(base)): p.read_text() for p in sorted(base.rglob("*")) if p.is_file()}


def test_each_state_a_folder_can_be_in(tmp_path: Path) -> None:
    storage, base = LocalStorage(), tmp_path / "run=1"
    assert inspect(storage, str(base)).state is State.ABSENT
    staging = _staged(base)
    (base / CLAIM).write_text("{}")
    found = inspect(storage, str(base))
    assert (found.state, found.staging, found.claimed) == (State.UNFINISHED, (".staging-abc",), True)
    seal(storage, str(staging), '{"message": 1}', COUNTS)
    found = inspect(storage, str(base))
    assert (found.state, found.sealed) == (State.SEALED, ".staging-abc")
    assert sealed_counts(storage, str(staging)) == COUNTS
    (base / "someone-else.txt").write_text("x")
    (base / ".staging-abc" / "message.json").unlink()
    assert inspect(storage, str(base)).state is State.INCOMPLETE
    (base / COMPLETE).write_text("{}")
    assert inspect(storage, str(base)).state is State.COMMITTED


def test_a_delivery_moves_sends_commits_and_cleans_up(tmp_path: Path) -> None:
    storage, base = LocalStorage(), tmp_path / "run=1"
    staging = _staged(base)
    seal(storage, str(staging), '{"message": 1}', COUNTS)
    sent: list[str] = []
    assert deliver(storage, str(base), str(staging), sent.append) == '{"message": 1}'
    assert sent == ['{"message": 1}']
    assert _tree(base) == {
        COMPLETE: '{"message": 1}',
        "output=bad/_SUCCESS": "",
        "output=bad/part-0.txt": "output=bad/part-0.txt\n",
        "output=good/_SUCCESS": "",
        "output=good/part-0.txt": "output=good/part-0.txt\n",
        "output=good/part-1.txt": "output=good/part-1.txt\n",
    }


def test_a_delivery_stopped_after_a_move_called_again_ends_the_same(tmp_path: Path) -> None:
    """As a kill between two moved files leaves it: the next call moves the rest and commits."""
    storage = LocalStorage()
    whole, cut = tmp_path / "whole" / "run=1", tmp_path / "cut" / "run=1"
    for base in (whole, cut):
        seal(storage, str(_staged(base)), "{}", COUNTS)
    deliver(storage, str(whole), str(whole / ".staging-abc"), None)
    (cut / "output=good").mkdir()
    (cut / ".staging-abc" / "data" / "output=good" / "part-0.txt").rename(cut / "output=good" / "part-0.txt")
    assert inspect(storage, str(cut)).state is State.SEALED, "sealed still: delivered as it was sealed"
    deliver(storage, str(cut), str(cut / ".staging-abc"), None)
    assert _tree(cut) == _tree(whole)


def test_what_a_kill_after_the_commit_left_is_tidied_unless_a_live_run_holds_it(tmp_path: Path) -> None:
    storage, base = LocalStorage(), tmp_path / "run=1"
    _staged(base, ".staging-old")
    (base / COMPLETE).write_text("{}")
    tidy(storage, inspect(storage, str(base)))
    assert sorted(p.name for p in base.iterdir()) == [COMPLETE]


def test_counts_account_for_every_line_and_read_back() -> None:
    COUNTS.check()
    assert RunCounts.from_json(COUNTS.to_json()) == COUNTS
    assert COUNTS.line("run=1") == "run=1: 5 lines, 2 good, 1 bad, 1 natural and 1 cross-batch duplicates dropped"
    with pytest.raises(RuntimeError, match="5 lines but 4 accounted for"):
        RunCounts(lines=5, good=2, bad=1, natural=1).check()
    assert json.loads(COUNTS.to_json())["types"][0]["schema_key"] == "iglu:com.acme/x/jsonschema/1-0-0"
