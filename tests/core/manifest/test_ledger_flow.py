"""The ledger's flows driven step by step, each step answered by the test: what a flow asks for,
in which order, and what it makes of a lost race, a record taken over and a failed write."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

import pytest

from events_manifest._manifest import ledger, ledger_flow
from events_manifest._manifest.ledger import Run
from events_manifest.errors import ManifestRequestError, ManifestUnavailableError
from events_manifest.model import to_epoch_seconds

WHEN = datetime(2026, 11, 1)  # naive: the ledger's times are naive UTC


class Script:
    """Answers each step of a flow from what it was given, and records the steps."""

    def __init__(self, *, runs: list[Run] | None = None, swaps: list[bool | Exception] | None = None) -> None:
        self.runs: list[Run] = runs or []
        self.swaps: list[bool | Exception] = list(swaps or [])
        self.steps: list[ledger_flow.Step] = []

    def __call__(self, step: ledger_flow.Step) -> Any:
        self.steps.append(step)
        match step:
            case ledger_flow.Runs():
                return self.runs
            case ledger_flow.Swap():
                answer = self.swaps.pop(0) if self.swaps else True
                if isinstance(answer, Exception):
                    raise answer
                return answer
            case ledger_flow.Delete():
                return 7
            case ledger_flow.Beat("stop", run):
                return run
            case ledger_flow.Beat():
                return None

    def moves(self) -> list[str]:
        return [type(step).__name__ if not isinstance(step, ledger_flow.Beat) else step.move for step in self.steps]


def test_a_start_announces_swaps_and_adds_the_run_to_the_heartbeat() -> None:
    script = Script()
    run = ledger_flow.drive(ledger_flow.start(ledger.Start.of("in/a", WHEN)), script)
    assert (run.item, run.etl_time, run.state) == ("in/a", WHEN, ledger.STARTED)
    assert script.moves() == ["Runs", "announce", "Swap", "add"]


def test_a_start_that_loses_the_race_reads_again_and_gives_up_after_the_last_attempt() -> None:
    script = Script(swaps=[False, True])
    ledger_flow.drive(ledger_flow.start(ledger.Start.of("in/a", WHEN)), script)
    assert script.moves() == ["Runs", "announce", "Swap", "stop", "Runs", "announce", "Swap", "add"]
    losing = Script(swaps=[False] * ledger.MAX_ATTEMPTS)
    with pytest.raises(ManifestUnavailableError, match=r"other runs kept taking the same etl time \(20 attempts\)"):
        ledger_flow.drive(ledger_flow.start(ledger.Start.of("in/a", WHEN)), losing)
    assert losing.moves().count("Swap") == ledger.MAX_ATTEMPTS


def test_a_finish_whose_record_was_taken_over_says_so() -> None:
    run = Run(to_epoch_seconds(WHEN), "in/a")
    done = ledger_flow.drive(ledger_flow.finish(run), Script())
    assert done.finished
    with pytest.raises(ManifestUnavailableError, match="changed while it ran"):
        ledger_flow.drive(ledger_flow.finish(run), Script(swaps=[False]))


def test_an_abandon_that_cannot_write_leaves_the_run_started_and_only_warns(caplog: pytest.LogCaptureFixture) -> None:
    run = Run(to_epoch_seconds(WHEN), "in/a")
    script = Script(swaps=[ManifestRequestError("the table is gone")])
    assert ledger_flow.drive(ledger_flow.abandon(run), script) is None
    assert script.moves() == ["stop", "Swap"] and "could not record the run of [in/a]" in caplog.text


def test_an_error_the_flow_does_not_handle_reaches_the_caller() -> None:
    with pytest.raises(ManifestRequestError, match="throttled"):
        ledger_flow.drive(ledger_flow.finish(Run(1, "in/a")), Script(swaps=[ManifestRequestError("throttled")]))


def test_clean_removes_the_entries_then_the_record_of_that_etl_time_only() -> None:
    etl = to_epoch_seconds(WHEN)
    runs = [Run(etl, "in/a", ledger.FAILED), Run(etl + 60, "in/b", ledger.FINISHED)]
    script = Script(runs=runs)
    assert ledger_flow.drive(ledger_flow.clean(etl, force=False), script) == 7
    assert [step for step in script.steps if isinstance(step, ledger_flow.Swap)] == [ledger_flow.Swap(runs[0], None)]


def test_the_async_driver_takes_the_same_steps() -> None:
    script = Script(swaps=[False, True])

    async def do(step: ledger_flow.Step) -> Any:
        await asyncio.sleep(0)
        return script(step)

    run = asyncio.run(ledger_flow.drive_async(ledger_flow.start(ledger.Start.of("in/a", WHEN)), do))
    assert run.item == "in/a"
    assert script.moves() == ["Runs", "announce", "Swap", "stop", "Runs", "announce", "Swap", "add"]
