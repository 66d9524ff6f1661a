"""A run folder's commit, and what a run folder's contents say about its run (docs/transformer.md,
"The commit").

A run writes its rows under a staging folder inside its run folder (`.staging-*/data/`), then
**seals** them: its message and its counts are written into the staging folder. From then on the
run is delivered in steps that a kill may stop anywhere and that are each repeatable:

1. every staged file moved to its place (`output=good/`, `output=bad/`), one file at a time;
2. the message sent to the queue;
3. `shredding_complete.json` written: the commit;
4. the staging folder and the claim removed.

`inspect` reads which of these a folder is at, for the next invocation to go on from there: a
sealed run is delivered as it was sealed (the same message), an unsealed one is transformed again.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Sequence

import attrs

from events_manifest._jobs import steps
from events_manifest._jobs.folders import CLAIM, STAGING_PREFIX, Judge, drop_dead_claim
from events_manifest._jobs.storage import Storage, join
from events_manifest._transformer.output.entity_types import EntityType

COMPLETE = "shredding_complete.json"
"""Written into a run's output folder last: the run is committed."""
OUTPUTS = ("output=good", "output=bad")
"""The folders a run delivers (`output=bad` not when bad rows go to Kinesis)."""
DATA = "data"
"""Where Spark writes a run's rows inside its staging folder."""
MESSAGE = "message.json"
COUNTS = "counts.json"
"""The sealed message and counts, inside the staging folder."""


@attrs.frozen
class RunCounts:
    """What a run wrote and dropped: the lines it read, its good and bad rows, the natural and
    cross-batch duplicates it dropped, the earliest and latest collector_tstamp of its good
    events (nanoseconds since the epoch) and their entity types; for monitoring, its synthetic
    duplicates and manifest puts."""

    lines: int = 0
    good: int = 0
    bad: int = 0
    natural: int = 0
    cross_batch: int = 0
    earliest: int | None = None
    latest: int | None = None
    types: tuple[EntityType, ...] = ()
    synthetic: int = 0
    """Events kept under new ids: synthetic duplicates (among the good rows)."""
    puts: int = 0
    """Manifest puts: the events that passed natural dedup, put to the manifest (`cross_batch` were refused)."""

    def check(self) -> None:
        """Every line is a good row, a bad row or a dropped duplicate: else nothing is committed."""
        accounted = self.good + self.bad + self.natural + self.cross_batch
        if accounted != self.lines:
            raise RuntimeError(f"internal error, nothing committed: {self.lines} lines but {accounted} accounted for")

    def line(self, name: str) -> str:
        """The run's counts, as the transformer prints them once it is committed."""
        return (
            f"{name}: {self.lines} lines, {self.good} good, {self.bad} bad, "
            f"{self.natural} natural and {self.cross_batch} cross-batch duplicates dropped"
        )

    def to_json(self) -> str:
        return json.dumps(attrs.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> RunCounts:
        found = json.loads(text)
        types = tuple(EntityType(**t) for t in found.pop("types"))
        return cls(**found, types=types)


class State(enum.Enum):
    """Where a run folder is in its life."""

    ABSENT = "absent"
    """No folder, or an empty one: the run is to transform."""
    COMMITTED = "committed"
    """`shredding_complete.json` is there: done."""
    SEALED = "sealed"
    """A staging folder holds the sealed message: to deliver, as sealed."""
    UNFINISHED = "unfinished"
    """Only what a transformer run leaves while it writes (a claim, an unsealed staging folder): to
    transform again."""
    INCOMPLETE = "incomplete"
    """Other files and no `shredding_complete.json`: not this transformer's; done, reported."""


@attrs.frozen
class RunFolder:
    """What `inspect` found in a run folder."""

    base: str
    state: State
    staging: tuple[str, ...] = ()
    """The staging folders there, by name."""
    sealed: str | None = None
    """The staging folder holding the sealed message, when there is one."""
    claimed: bool = False

    def leftovers(self) -> list[str]:
        """The staging folders a transformer run left beside a committed run's output."""
        return [join(self.base, name) for name in self.staging]


def inspect(storage: Storage, base: str) -> RunFolder:
    """The state of the run folder `base` (see `State`)."""
    children = storage.children(base)
    staging = tuple(name for name in children if name.startswith(STAGING_PREFIX))
    claimed = CLAIM in children
    if COMPLETE in children:
        return RunFolder(base, State.COMMITTED, staging, None, claimed)
    sealed = next((name for name in staging if storage.exists(join(base, name, MESSAGE))), None)
    if sealed is not None:
        return RunFolder(base, State.SEALED, staging, sealed, claimed)
    others = [name for name in children if name != CLAIM and name not in staging and not _checksum_of_ours(name)]
    if others:
        return RunFolder(base, State.INCOMPLETE, staging, None, claimed)
    return RunFolder(base, State.UNFINISHED if children else State.ABSENT, staging, None, claimed)


def _checksum_of_ours(name: str) -> bool:
    """Hadoop's local file system keeps a `.NAME.crc` beside each file it writes: the claim's."""
    return name == f".{CLAIM}.crc"


def seal(storage: Storage, staging: str, message: str, counts: RunCounts) -> None:
    """Write the run's message and counts into its staging folder, the counts first: the message
    is what says the run is sealed (`inspect`)."""
    storage.write_text(join(staging, COUNTS), counts.to_json() + "\n")
    storage.write_text(join(staging, MESSAGE), message)
    steps.reached("sealed")


def sealed_counts(storage: Storage, staging: str) -> RunCounts:
    """The counts a sealed staging folder holds (its message is what `deliver` sends)."""
    return RunCounts.from_json(storage.read_text(join(staging, COUNTS)))


def deliver(
    storage: Storage,
    base: str,
    staging: str,
    send: Callable[[str], None] | None,
    *,
    outputs: Sequence[str] = OUTPUTS,
) -> str:
    """Deliver the sealed run staged in `staging` into its run folder `base` (see the module's
    docstring) and return its message; after a kill at any step, calling it again finishes it."""
    message = storage.read_text(join(staging, MESSAGE))
    first = True

    def moved(_: str) -> None:
        nonlocal first
        if first:
            first = False
            steps.reached("moving")

    for name in outputs:
        target = join(base, name)
        storage.move_tree(join(staging, DATA, name), target, moved)
        storage.mkdirs(target)
        if not storage.exists(join(target, "_SUCCESS")):
            storage.write_text(join(target, "_SUCCESS"), "")
    steps.reached("moved")
    if send is not None:
        send(message)
    steps.reached("messaged")
    storage.write_text(join(base, COMPLETE), message)
    steps.reached("committed")
    storage.delete(staging)
    return message


def tidy(storage: Storage, found: RunFolder, dead_elsewhere: Judge | None = None) -> None:
    """Remove what a transformer run killed after its commit left in a committed run folder (its
    staging folder and claim), unless a live run holds the folder (see `folders.claim`)."""
    if found.claimed and not drop_dead_claim(storage, found.base, dead_elsewhere):
        return
    remove_leftovers(storage, found)


def remove_leftovers(storage: Storage, found: RunFolder) -> None:
    """Delete what a run killed after its commit left beside it: by `tidy`, or by the run itself
    when the folder is under its own claim."""
    for leftover in found.leftovers():
        storage.delete(leftover)
