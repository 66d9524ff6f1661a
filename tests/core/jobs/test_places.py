"""`events_manifest._jobs.places.check_places`: an output that would overwrite, destroy or read an input,
the manifest or another output is refused before anything is written, in one line that says what
to give instead."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from events_manifest import ManifestConfigError
from events_manifest._jobs.places import INPUT, MANIFEST, Place, check_places
from events_manifest._jobs.storage import LocalStorage


def refusal(outputs: list[Place], protected: list[Place]) -> str:
    with pytest.raises(ManifestConfigError) as refused:
        check_places(LocalStorage(), outputs, protected)
    return str(refused.value)


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "part-0").write_text("line\n")
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    return tmp_path


def test_outputs_apart_from_everything_pass(work: Path) -> None:
    check_places(
        LocalStorage(),
        [Place("output folder", str(work / "out"), folder=True), Place("--unique", str(work / "u.ndjson"))],
        [Place(INPUT, str(work / "in"), folder=True), Place(MANIFEST, str(work / "m.db"))],
    )


@pytest.mark.parametrize(
    ("output", "words"),
    [
        (("output folder", "in/deeper", True), "is inside the input [IN]: give a folder apart from it"),
        (("output folder", ".", True), "is the current folder or one of its ancestors"),
        (("output folder", "..", True), "is the current folder or one of its ancestors"),
        (("--unique", "in/part-0", False), "is inside the input [IN]: give a file apart from it"),
        (("output folder", "in/part-0", True), "is a file, not a folder: give a folder"),
        (("--unique", "m.db", False), "is also the manifest file"),
        (("--unique", "nowhere/u.ndjson", False), "nowhere does not exist, create it first"),
    ],
)
def test_an_output_over_what_must_stay_is_refused(work: Path, output: tuple[str, str, bool], words: str) -> None:
    role, shown, folder = output
    (work / "m.db").touch()
    path = shown if shown in (".", "..") else str(work / shown)
    message = refusal(
        [Place(role, path, folder=folder)],
        [Place(INPUT, str(work / "in"), folder=True), Place(MANIFEST, str(work / "m.db"))],
    )
    assert words.replace("[IN]", f"[{work / 'in'}]") in message


def test_two_outputs_in_one_place_and_a_folder_holding_the_input(work: Path) -> None:
    same = str(work / "out")
    message = refusal([Place("output folder", same, folder=True), Place("bad folder", same, folder=True)], [])
    assert message == f"output folder and bad folder are the same [{same}]: give two folders"
    (work / "outer" / "in").mkdir(parents=True)
    outer = [Place("output folder", str(work / "outer"), folder=True)]
    holder = refusal(outer, [Place(INPUT, str(work / "outer" / "in"), folder=True)])
    assert (
        holder
        == f"output folder [{work / 'outer'}] holds the input [{work / 'outer' / 'in'}]: give a folder apart from it"
    )


def test_a_link_to_the_input_is_the_input(work: Path) -> None:
    os.symlink(work / "in" / "part-0", work / "alias")
    message = refusal([Place("--unique", str(work / "alias"))], [Place(INPUT, str(work / "in" / "part-0"))])
    assert "is also the input" in message


def test_a_manifest_inside_the_input_is_refused(work: Path) -> None:
    message = refusal([], [Place(INPUT, str(work / "in"), folder=True), Place(MANIFEST, str(work / "in" / "m.db"))])
    assert "its files would be read as input lines. Keep the manifest apart from the input" in message


@pytest.mark.parametrize("name", ["out[x]", "out*", "out{a,b}", "out?"])
def test_an_output_named_like_a_glob_is_the_folder_it_names(work: Path, name: str) -> None:
    """An output is written where it is named: its glob characters match nothing, so a sibling of
    the input is not taken for its parent; an input glob still covers what it can match."""
    (work / "my input").mkdir()
    check_places(
        LocalStorage(),
        [Place("output folder", str(work / name), folder=True)],
        [Place(INPUT, str(work / "my input"), folder=True)],
    )
    message = refusal(
        [Place("output folder", str(work / "in" / name), folder=True)], [Place(INPUT, str(work / "i*"), folder=True)]
    )
    assert "is inside the input" in message
