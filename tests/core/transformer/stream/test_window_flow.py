"""The stream's windows between its micro-batches and its runs (`_transformer.stream.window_flow`),
without Spark: batches staged as a query gives them, on local folders and a SQLite manifest, with a
clock the test moves. Killed at each step of the stream (`tests.crashes`: a batch recorded in its
window, its lines written, staged; a window's run at each step of its commit; a window committed
before the query knows its batch), a new start on what the kill left, given again the batch the
query had not finished (as Spark replays it), commits the windows an unbroken stream commits:
every line in exactly one window. On Spark, once, in `tests/spark/stream/test_crashes.py`."""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import attrs
import pytest

from events_manifest import SqliteManifest
from events_manifest._jobs import steps
from events_manifest._jobs.run import JobRun
from events_manifest._jobs.storage import Listing, LocalStorage, join
from events_manifest._manifest.contract import DuplicateStorage
from events_manifest._transformer.run.commit import COMPLETE, RunCounts
from events_manifest._transformer.run.job import TransformerJob
from events_manifest._transformer.stream.stream_config import StreamConfig
from events_manifest._transformer.stream.window_flow import WindowFlow
from events_manifest._transformer.stream.windows import ForwardClock, WindowBook
from tests.crashes import Crashes
from tests.transformer_helpers import START, Clock

BATCHES = [(0, START + 5, ["a1", "a2", "a3"]), (1, START + 600, ["b1", "b2"])]
"""The query's micro-batches: id, when it runs, its lines; one window apart."""
STREAM_STEPS = ["batch-assigned", "batch-written", "batch-staged", "window-committed"]
RUN_STEPS = ["staged", "sealed", "moving", "moved", "messaged", "committed"]
"""A window's run at each step of its commit (`run.run_flow`), the first window's, in the second batch."""


def write(job: TransformerJob[LocalStorage], ledger: JobRun, listing: Listing, staging: str, now: int) -> RunCounts:
    """A window's run: its staged lines, each a good row (as Spark's writer, under the staging folder)."""
    ledger.start(datetime.fromtimestamp(now // 10**9, UTC))
    lines = [line for name, _ in listing.files for line in Path(name.removeprefix("file:")).read_text().splitlines()]
    job.storage.write_text(join(staging, "data", "output=good", "part-0.txt"), "".join(f"{x}\n" for x in lines))
    return RunCounts(lines=len(lines), good=len(lines))


def start(tmp_path: Path, manifest: DuplicateStorage, clock: Callable[[], float]) -> WindowFlow:
    """A start of the stream on the checkpoint under `out` (a new app id, as each start has)."""
    out, checkpoint = tmp_path / "out", tmp_path / "out" / "_checkpoint"
    config = StreamConfig.parse(json.dumps({"input": {"type": "file", "dir": "in"}, "output": {"path": str(out)}}))
    book = WindowBook(LocalStorage(), str(checkpoint), config.window_seconds, str(uuid.uuid4()))
    run_config = attrs.evolve(config.run, input=book.lines_root)

    def listing(name: str) -> Listing:
        window = Path(book.lines_root.removeprefix("file:")) / name
        files = sorted(p for p in window.glob("batch=*/*") if p.is_file()) if window.exists() else []
        return Listing(tuple((LocalStorage().qualify(str(p)), p.stat().st_size) for p in files), records=True)

    job = TransformerJob.create(LocalStorage(), run_config, None, manifest, lister=listing, rerun=True)
    flow = WindowFlow(book, job, write, clock, lambda line: None, lambda line: None)
    flow.begin()
    flow.commit_due()
    return flow


def stage(flow: WindowFlow, clock: Clock, batch_id: int, at: float, lines: list[str]) -> None:
    clock.now = at
    flow.stage(batch_id, lambda folder: _lines(folder, lines))


def _lines(folder: str, lines: list[str]) -> None:
    """A batch's lines written in its folder (again on a replay, as Spark's overwrite)."""
    path = Path(folder.removeprefix("file:"))
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    (path / "part-0.txt").write_text("".join(f"{x}\n" for x in lines))


def committed(out: Path) -> list[tuple[str, list[str]]]:
    """Each committed window's start and its good rows, in order."""
    return [
        (folder.name[4:23], (folder / "output=good" / "part-0.txt").read_text().splitlines())
        for folder in sorted(out.glob("run=*"))
        if (folder / COMPLETE).exists()
    ]


def test_a_stream_killed_at_each_step_commits_every_line_in_exactly_one_window(
    tmp_path: Path, subtests: pytest.Subtests
) -> None:
    db, crashes = tmp_path / "m.db", Crashes(tmp_path / "out", tmp_path / "m.db", tmp_path / "crashes")
    wanted = STREAM_STEPS + RUN_STEPS
    during: dict[str, int] = {}
    """The batch the query was giving when each step was first reached: the one it gives again."""
    current = [0]
    with SqliteManifest(db) as manifest, crashes.recording(wanted):
        reach = steps.reached

        def noted(step: str) -> None:
            during.setdefault(step, current[0])
            reach(step)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(steps, "reached", noted)
            clock = Clock(START)
            flow = start(tmp_path, manifest, clock)
            for batch_id, at, lines in BATCHES:
                current[0] = batch_id
                stage(flow, clock, batch_id, at, lines)
            flow.commit_due(ending=True)
    unbroken = committed(tmp_path / "out")
    assert unbroken == [("2026-11-18-10-30-00", ["a1", "a2", "a3"]), ("2026-11-18-10-40-00", ["b1", "b2"])]
    assert [during[step] for step in wanted] == [0, 0, 0] + [1] * 7

    for step in wanted:
        with subtests.test(step=step):
            url = crashes.restore(step)
            assert url is not None
            with SqliteManifest(url.removeprefix("sqlite:///")) as manifest:
                clock = Clock(START + 600)
                flow = start(tmp_path, manifest, clock)
                for batch_id, at, lines in BATCHES[during[step] :]:
                    stage(flow, clock, batch_id, max(at, clock.now), lines)
                flow.commit_due(ending=True)
                assert all(record.finished for record in manifest.runs())
            assert committed(tmp_path / "out") == unbroken
            assert flow.book.open_windows() == []


def test_the_lag_is_the_age_of_the_oldest_window_with_lines_not_committed(tmp_path: Path) -> None:
    with SqliteManifest(tmp_path / "m.db") as manifest:
        clock = Clock(START)
        flow = start(tmp_path, manifest, clock)
        assert flow.lag() == 0.0
        stage(flow, clock, 0, START + 5, ["a1"])
        clock.now = START + 65
        assert flow.lag() == 65.0
        stage(flow, clock, 1, START + 600, ["b1"])
        clock.now = START + 630
        assert flow.lag() == 30.0, "the first window committed: the second's age"
        flow.commit_due(ending=True)
        assert flow.lag() == 0.0 and [r.lines for r in flow.results] == [1, 1]


def test_a_wall_clock_stepping_back_and_ahead_loses_no_event(tmp_path: Path) -> None:
    """a in W1; past W1's end, b (W1 committed); 2 s back into W1, c; a day ahead for one batch,
    d; corrected, e: every line in one committed window, each window committed while the stream
    runs (the stream reads the wall clock through a `ForwardClock`, as the glue does)."""
    wall = Clock(START)
    with SqliteManifest(tmp_path / "m.db") as manifest:
        flow = start(tmp_path, manifest, ForwardClock(wall))

        def feed(batch_id: int, line: str, by: float) -> None:
            wall.now += by
            flow.stage(batch_id, lambda folder: _lines(folder, [line]))

        feed(0, "a", 5)
        feed(1, "b", 601)
        assert len(committed(tmp_path / "out")) == 1
        feed(2, "c", -2)
        feed(3, "d", 86_400)
        assert len(committed(tmp_path / "out")) == 2, "the window of b and c is over once the clock stepped ahead"
        wall.now -= 86_400
        feed(4, "e", 0)
        wall.now += 600
        flow.commit_due()
    assert [lines for _, lines in committed(tmp_path / "out")] == [["a"], ["b", "c"], ["d", "e"]]
