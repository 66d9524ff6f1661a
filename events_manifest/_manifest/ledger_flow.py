"""The run ledger's flows (start, finish, abandon, clean) written once, without I/O: each is a
generator that yields the step it needs done (read the runs, swap a record, delete entries, a
heartbeat's move) and takes its answer. `DuplicateStorage` drives them with calls,
`AsyncManifestBase` with awaits, as httpx's twins share everything but their I/O."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any, Literal, TypeVar

import attrs

from events_manifest._manifest import ledger
from events_manifest._manifest.ledger import Run
from events_manifest.errors import ManifestError, ManifestUnavailableError

T = TypeVar("T")


@attrs.frozen
class Runs:
    """Every ledger record, by etl time (`DuplicateStorage.runs`)."""


@attrs.frozen
class Swap:
    """`_swap_run(expected, new)`: True when the record was `expected` and is now `new`."""

    expected: Run | None
    new: Run | None


@attrs.frozen
class Delete:
    """`_delete_entries(etl_seconds)`: how many entries went."""

    etl_seconds: int


@attrs.frozen
class Beat:
    """A move of the runs' heartbeat: `announce`, `add` or `stop` (which answers the run as it
    was last renewed)."""

    move: Literal["announce", "add", "stop"]
    run: Run


Step = Runs | Swap | Delete | Beat
Flow = Generator[Step, Any, T]
"""A flow: the steps it yields, the answers it is sent, what it returns."""


def start(begun: ledger.Start) -> Flow[Run]:
    """Record a run as started (`DuplicateStorage.start_run`), trying again when another writer
    swapped the record first."""
    for _ in range(ledger.MAX_ATTEMPTS):
        decided = begun.plan((yield Runs()), ledger.now_seconds())
        yield Beat("announce", decided.record)
        if (yield Swap(decided.expected, decided.record)):
            yield Beat("add", decided.record)
            return decided.record
        yield Beat("stop", decided.record)
    raise begun.lost_race()


def finish(run: Run) -> Flow[Run]:
    """`DuplicateStorage.finish_run`."""
    current = yield Beat("stop", run)
    done = ledger.finished(current, ledger.now_seconds())
    if not (yield Swap(current, done)):
        raise ManifestUnavailableError(ledger.taken_over(current))
    return done


def abandon(run: Run) -> Flow[None]:
    """`DuplicateStorage.abandon_run`: a store that cannot be reached now leaves it started."""
    current = yield Beat("stop", run)
    try:
        yield Swap(current, ledger.failed(current, ledger.now_seconds()))
    except ManifestError as e:
        ledger.log.warning("could not record the %s as failed: %s", current.describe(), e)


def clean(etl_seconds: int, *, force: bool) -> Flow[int]:
    """`DuplicateStorage.clean`: the entries of an etl time and its run's record removed."""
    ledger.check_clean((yield Runs()), etl_seconds, ledger.now_seconds(), force=force)
    removed: int = yield Delete(etl_seconds)
    for run in (yield Runs()):
        if run.etl_seconds == etl_seconds:
            yield Swap(run, None)
    return removed


def drive(flow: Flow[T], do: Callable[[Step], Any]) -> T:
    """Run a flow with `do` doing each step; a step's error is raised inside the flow."""
    answer: Any = None
    error: Exception | None = None
    while True:
        try:
            step = flow.throw(error) if error is not None else flow.send(answer)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        try:
            answer, error = do(step), None
        except Exception as e:
            answer, error = None, e


async def drive_async(flow: Flow[T], do: Callable[[Step], Awaitable[Any]]) -> T:
    """`drive` with `do` awaited."""
    answer: Any = None
    error: Exception | None = None
    while True:
        try:
            step = flow.throw(error) if error is not None else flow.send(answer)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        try:
            answer, error = await do(step), None
        except Exception as e:
            answer, error = None, e
