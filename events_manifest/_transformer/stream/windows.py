"""The stream transformer's windows and its book of micro-batches (docs/stream-transformer.md).

Each micro-batch goes to one window: the processing-time window open when the batch first ran,
recorded in the book before any line of it is staged, so that a replay after a crash goes to the
same window. A window's lines are staged under the checkpoint, one folder per batch; once its time
is over and every batch of it is staged, the window is transformed and committed as one run of the
batch transformer, into the folder its name gives under `output.path`.

The book only ever creates files (`Storage.create_new`, never a rewrite), so a kill leaves it
whole, on object storage too:

- `batch-<id>.json`: the batch's window (its start, length and the job start's app id);
- `batch-<id>.staged`: every line of the batch is under its window's lines;
- `closed-<window name>`: the window is committed (its lines may be gone).

A window belongs to the job start that opened it (its app id): a later start assigns new batches
to windows of its own, so it never writes into a window an earlier start committed.

Within a start, batches are assigned and windows found due on one `ForwardClock`: a wall clock
that steps back (an NTP step, a resumed VM) never sends a batch to a window that is committed, and
one that steps ahead and back does not hold a window open until the wall clock catches up.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable

import attrs

from events_manifest._jobs.storage import Storage, join

BOOK = "book"
LINES = "lines"
"""The checkpoint's sub-folders: the book, and the windows' staged lines."""


@attrs.define
class ForwardClock:
    """A wall clock that only moves forward: each reading is the last plus how far the `wall`
    clock moved forward since it was read; a step back is not taken, and the time after it goes on
    from where the clock stood (thread-safe: the query's batches and the driver's loop read it)."""

    wall: Callable[[], float]
    _last_wall: float | None = attrs.field(default=None, init=False)
    _now: float = attrs.field(default=0.0, init=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)

    def __call__(self) -> float:
        with self._lock:
            wall = self.wall()
            self._now = wall if self._last_wall is None else self._now + max(0.0, wall - self._last_wall)
            self._last_wall = wall
            return self._now


@attrs.frozen(order=True)
class Window:
    """One processing-time window of one job start: `[start, start + seconds)`, seconds since the epoch."""

    start: int
    seconds: int
    app_id: str

    @classmethod
    def at(cls, now: float, seconds: int, app_id: str) -> Window:
        """The window `now` falls in: windows are aligned on the epoch (a 10-minute window starts at
        :00, :10, ...)."""
        return cls(int(now // seconds) * seconds, seconds, app_id)

    @property
    def end(self) -> int:
        return self.start + self.seconds

    @property
    def name(self) -> str:
        """The window's run folder: `run=yyyy-MM-dd-HH-mm-ss-<appId>`."""
        return f"run={time.strftime('%Y-%m-%d-%H-%M-%S', time.gmtime(self.start))}-{self.app_id}"

    def to_json(self) -> str:
        return json.dumps({"start": self.start, "seconds": self.seconds, "app_id": self.app_id})

    @classmethod
    def from_json(cls, text: str) -> Window:
        found = json.loads(text)
        return cls(int(found["start"]), int(found["seconds"]), str(found["app_id"]))


@attrs.frozen
class Batch:
    """A micro-batch as the book holds it."""

    id: int
    window: Window
    staged: bool
    closed: bool = False
    """Whether its window is committed."""


@attrs.define
class WindowBook:
    """The book under a checkpoint (see the module), for the job start `app_id`."""

    storage: Storage
    checkpoint: str
    seconds: int
    app_id: str
    _known: dict[int, Window] = attrs.field(factory=dict, init=False)
    """The batches' windows read so far: a record is never rewritten, so one read is enough."""

    @property
    def root(self) -> str:
        return join(self.checkpoint, BOOK)

    @property
    def lines_root(self) -> str:
        """The folder holding every window's lines, one sub-folder per window (by its name)."""
        return join(self.checkpoint, LINES)

    def batch_lines(self, batch: Batch) -> str:
        """Where a batch's lines are staged."""
        return join(self.lines_root, batch.window.name, f"batch={batch.id}")

    def assign(self, batch_id: int, now: float) -> Batch:
        """The batch's window: the one recorded (a replay), else the window of `now`, recorded."""
        record = join(self.root, f"batch-{batch_id}.json")
        window = Window.from_json(
            self.storage.record_once(record, Window.at(now, self.seconds, self.app_id).to_json() + "\n")
        )
        staged = self.storage.exists(join(self.root, f"batch-{batch_id}.staged"))
        return Batch(batch_id, window, staged, self.closed(window))

    def staged(self, batch: Batch) -> Batch:
        """Record that every line of `batch` is staged."""
        self.storage.create_new(join(self.root, f"batch-{batch.id}.staged"), "")
        return attrs.evolve(batch, staged=True)

    def closed(self, window: Window) -> bool:
        return self.storage.exists(join(self.root, f"closed-{window.name}"))

    def close(self, window: Window) -> None:
        """Record the window as committed, then drop its staged lines."""
        self.storage.create_new(join(self.root, f"closed-{window.name}"), "")
        self.storage.delete(join(self.lines_root, window.name))

    def batches(self) -> list[Batch]:
        """Every batch the book holds, by id, from one listing of the book."""
        names = set(self.storage.children(self.root)) if self.storage.exists(self.root) else set()
        found = []
        for name in names:
            if name.startswith("batch-") and name.endswith(".json"):
                number = int(name.removeprefix("batch-").removesuffix(".json"))
                window = self._known.get(number) or Window.from_json(self.storage.read_text(join(self.root, name)))
                self._known[number] = window
                staged, closed = f"batch-{number}.staged" in names, f"closed-{window.name}" in names
                found.append(Batch(number, window, staged, closed))
        return sorted(found, key=lambda batch: batch.id)

    def due(self, now: float, *, ending: bool = False) -> list[Window]:
        """The windows to commit now, oldest first: not committed yet, every batch of them staged,
        and over (their end passed, or they belong to an earlier job start, which adds no more
        batches to them; or this start is `ending`)."""
        by_window: dict[Window, list[Batch]] = {}
        for batch in self.batches():
            by_window.setdefault(batch.window, []).append(batch)
        return sorted(
            window
            for window, batches in by_window.items()
            if all(batch.staged for batch in batches)
            and (ending or window.app_id != self.app_id or window.end <= now)
            and not batches[0].closed
        )

    def open_windows(self) -> list[Window]:
        """The windows not committed yet, with the batches still to stage in them."""
        return sorted({batch.window for batch in self.batches() if not batch.closed})

    def prune(self, before: int) -> None:
        """Forget the batches before `before` (Spark committed them: it runs a batch only once the
        one before is committed) whose window is committed, then the marks of committed windows no
        batch refers to any more."""
        batches = self.batches()
        kept = {batch.window.name for batch in batches if batch.id >= before or not batch.closed}
        for batch in batches:
            if batch.window.name not in kept:
                self.storage.delete(join(self.root, f"batch-{batch.id}.staged"))
                self.storage.delete(join(self.root, f"batch-{batch.id}.json"))
                self._known.pop(batch.id, None)
        for name in self.storage.children(self.root):
            if name.startswith("closed-") and name.removeprefix("closed-") not in kept:
                self.storage.delete(join(self.root, name))
