"""The stream transformer's windows and its book: where a micro-batch goes, on a replay too, which
windows are due, and what the book forgets."""

from __future__ import annotations

import itertools
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from events_manifest._jobs.storage import LocalStorage
from events_manifest._transformer.stream.windows import ForwardClock, Window, WindowBook

START = 1_794_997_800  # 2026-11-18 10:30:00 UTC


@given(st.integers(0, 2**40), st.sampled_from([1, 60, 300, 600, 3600, 86400]))
def test_a_time_falls_in_the_one_aligned_window_that_holds_it(now: int, seconds: int) -> None:
    window = Window.at(now + 0.5, seconds, "app")
    assert window.start <= now < window.end and window.start % seconds == 0
    assert Window.from_json(window.to_json()) == window


def test_a_window_is_named_as_its_run_folder() -> None:
    assert Window.at(START + 599.9, 600, "a1").name == "run=2026-11-18-10-30-00-a1"
    assert Window.at(START + 600, 600, "a1").name == "run=2026-11-18-10-40-00-a1"


def book(tmp_path: Path, app: str = "first") -> WindowBook:
    return WindowBook(LocalStorage(), str(tmp_path / "checkpoint"), 600, app)


def test_a_replayed_batch_goes_to_the_window_it_first_went_to(tmp_path: Path) -> None:
    first = book(tmp_path)
    assigned = first.assign(0, START + 10)
    assert not assigned.staged and assigned.window == Window(START, 600, "first")
    later = book(tmp_path, "second")  # a restart, an hour on
    again = later.assign(0, START + 3600)
    assert again == assigned, "the recorded window, not the restart's"
    later.staged(again)
    assert later.assign(0, START + 7200).staged
    assert later.batch_lines(again).endswith(f"lines/{assigned.window.name}/batch=0")


def test_a_window_is_due_once_over_and_all_its_batches_staged(tmp_path: Path) -> None:
    ours = book(tmp_path)
    one, two = ours.assign(0, START), ours.assign(1, START + 300)
    assert ours.due(START + 700) == [], "a batch of it is not staged yet"
    ours.staged(one)
    ours.staged(two)
    assert ours.due(START + 599) == [] and ours.due(START + 599, ending=True) == [one.window]
    assert ours.due(START + 600) == [one.window]
    ours.close(one.window)
    assert ours.closed(one.window) and ours.due(START + 9999, ending=True) == []


def test_an_earlier_start_s_windows_are_due_at_once_oldest_first(tmp_path: Path) -> None:
    earlier = book(tmp_path, "earlier")
    for batch, at in ((0, START), (1, START + 600)):
        earlier.staged(earlier.assign(batch, at))
    now = book(tmp_path, "now")
    mine = now.staged(now.assign(2, START + 900))
    assert now.due(START + 900) == [Window(START, 600, "earlier"), Window(START + 600, 600, "earlier")]
    assert mine.window not in now.due(START + 900) and now.open_windows()[-1] == mine.window


def test_the_book_forgets_committed_windows_only_once_spark_committed_their_batches(tmp_path: Path) -> None:
    ours = book(tmp_path)
    first = ours.staged(ours.assign(0, START))
    ours.close(first.window)
    second = ours.staged(ours.assign(1, START + 600))
    ours.prune(0)
    assert [b.id for b in ours.batches()] == [0, 1], "batch 0 may still be replayed: it is kept"
    ours.prune(1)  # batch 1 runs: Spark committed batch 0
    assert [b.id for b in ours.batches()] == [1] and not ours.closed(first.window)
    assert sorted(p.name for p in (tmp_path / "checkpoint/book").iterdir()) == ["batch-1.json", "batch-1.staged"]
    ours.close(second.window)
    ours.prune(2)
    assert ours.batches() == [] and list((tmp_path / "checkpoint/book").iterdir()) == []


@given(st.lists(st.integers(-(10**6), 10**6), min_size=1, max_size=40))
def test_the_forward_clock_moves_as_the_wall_clock_forward_only(steps: list[int]) -> None:
    """Each reading: the last, plus how far the wall clock moved forward since; never back."""
    walls = [START + sum(steps[: n + 1]) for n in range(len(steps))]
    readings = iter(walls)
    clock = ForwardClock(lambda: next(readings))
    seen = [clock() for _ in walls]
    assert seen[0] == walls[0] and all(later >= earlier for earlier, later in itertools.pairwise(seen))
    for n in range(1, len(walls)):
        assert seen[n] - seen[n - 1] == max(0.0, walls[n] - walls[n - 1])


def test_a_step_back_never_sends_a_batch_to_a_committed_window(tmp_path: Path) -> None:
    """The wall clock past W1's end (W1 committed), then 2 s back into W1: the next batch goes to W2."""
    wall = [START + 10.0]
    clock, found = ForwardClock(lambda: wall[0]), book(tmp_path)
    first = found.assign(0, clock())
    found.staged(first)
    wall[0] = START + 601
    second = found.assign(1, clock())
    assert found.due(clock()) == [first.window]
    found.close(first.window)
    wall[0] = START + 599
    third = found.assign(2, clock())
    assert third.window == second.window != first.window and not third.closed
