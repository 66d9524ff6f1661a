"""The processing manifest: which items (input folders) runs have processed, in a table of its own.

The reference's `--processing-manifest-table` and `--item-id`: a run records its item as
processing before it starts, then processed (or failed) when it ends, and a run is refused an
item already processed or being processed. A failed item may be run again. A run killed outright
leaves its item processing: `events-manifest processing release` frees it, once you know the run
is dead (a run killed on this host is noticed, and its item taken again). The table lives in the
events manifest's store (a table of the SQLite file, a DynamoDB table beside the manifest's); each
backend only reads and swaps records, the decisions are here.
"""

from __future__ import annotations

import abc
import threading
import uuid

import attrs

from events_manifest import model
from events_manifest._manifest import ledger, liveness
from events_manifest.errors import ItemClaimedError, ManifestConfigError, ManifestUnavailableError

PROCESSING = "processing"
PROCESSED = "processed"
FAILED = "failed"
MAX_DETAIL = 1000
"""Characters of a failure's message kept in its record."""


@attrs.frozen
class ItemRecord:
    """One item in the processing table: its state, the run that set it and when."""

    item: str
    state: str
    run_id: str
    application: str
    owner: str
    updated_seconds: int
    detail: str = ""

    def free(self) -> bool:
        """Whether a new run may take the item: its last run failed, or was killed on this host."""
        return self.state == FAILED or (self.state == PROCESSING and liveness.gone(self.owner) is True)

    def describe(self) -> str:
        return (
            f"[{self.item}] is {self.state} (run {self.run_id} of {self.application}, "
            f"{liveness.describe(self.owner)}, {ledger.text(self.updated_seconds)} UTC)"
        )


def check_table_name(name: str) -> str:
    """A DynamoDB table name (SQLite takes the same, quoted), and not one of the manifest's own."""
    model.check_table_name(name, "processing manifest table")
    if name.lower().startswith("events_manifest"):
        raise ManifestConfigError(
            f"processing manifest table: [{name}] starts with events_manifest, which the manifest's own tables use"
        )
    return name


def refusal(current: ItemRecord, table: str) -> ItemClaimedError:
    """Why a run may not take an item that `current` holds, and what to do."""
    release = f"`events-manifest processing release '{current.item}' --table {table} --manifest URL`"
    if current.state == PROCESSED:
        return ItemClaimedError(
            f"{current.describe()}: nothing to do. To process it again on purpose, release it first with {release}"
        )
    return ItemClaimedError(
        f"{current.describe()}: another run is processing it, wait for it to end. If that run was killed, "
        f"release the item with {release}, then run again"
    )


class ProcessingManifest(abc.ABC):
    """Items and their processing state in one table; see the module docstring."""

    def __init__(self, table: str) -> None:
        self.table = check_table_name(table)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(table={self.table!r})"

    def get(self, item: str) -> ItemRecord | None:
        return self._get(ledger.check_item(item) or "")

    def items(self) -> list[ItemRecord]:
        """Every item of the table, by item."""
        return sorted(self._items(), key=lambda record: record.item)

    def claim(self, item: str, application: str) -> ItemRecord:
        """Record `item` as processing by a new run, or raise `ItemClaimedError` if it is processed
        or being processed; a failed item is taken again, and so is the item of a run killed on
        this host."""
        item = ledger.check_item(item) or ""
        current = self._get(item)
        if current is not None and not current.free():
            raise refusal(current, self.table)
        record = ItemRecord(
            item, PROCESSING, str(uuid.uuid4()), application, liveness.this_process(), ledger.now_seconds()
        )
        if not self._swap(current, record):
            taken = self._get(item)
            raise (
                refusal(taken, self.table)
                if taken is not None
                else ItemClaimedError(f"[{item}]: another run took and released it at the same moment; retry")
            )
        return record

    def processed(self, claimed: ItemRecord) -> ItemRecord:
        """Record a claimed item as processed, once the run's output is delivered."""
        return self._end(claimed, PROCESSED, "")

    def failed(self, claimed: ItemRecord, reason: str) -> ItemRecord:
        """Record a claimed item as failed, with why: a later run may take it again."""
        return self._end(claimed, FAILED, reason[:MAX_DETAIL])

    def release(self, item: str) -> ItemRecord | None:
        """Remove an item's record whatever its state (a killed run's, or to process it again); the
        record removed, or None if there was none."""
        current = self.get(item)
        if current is not None and not self._swap(current, None):
            raise ItemClaimedError(f"[{item}] changed while it was released; look again and retry")
        return current

    def _end(self, claimed: ItemRecord, state: str, detail: str) -> ItemRecord:
        record = attrs.evolve(claimed, state=state, updated_seconds=ledger.now_seconds(), detail=detail)
        if not self._swap(claimed, record):
            raise ManifestUnavailableError(
                f"[{claimed.item}] in processing table {self.table} changed while run {claimed.run_id} held it "
                f"(released or taken by another run): its state was not set to {state}; check both runs' outputs"
            )
        return record

    @abc.abstractmethod
    def _get(self, item: str) -> ItemRecord | None:
        """The record of an item, or None."""

    @abc.abstractmethod
    def _items(self) -> list[ItemRecord]:
        """Every record."""

    @abc.abstractmethod
    def _swap(self, expected: ItemRecord | None, new: ItemRecord | None) -> bool:
        """Write `new` (or delete, when None) in the place of the item's record if that place holds
        exactly `expected` (None: nothing); False when it holds something else."""


class InMemoryProcessingManifest(ProcessingManifest):
    """A processing table in memory, for tests and one process."""

    def __init__(self, table: str) -> None:
        super().__init__(table)
        self._records: dict[str, ItemRecord] = {}
        self._lock = threading.Lock()

    def _get(self, item: str) -> ItemRecord | None:
        with self._lock:
            return self._records.get(item)

    def _items(self) -> list[ItemRecord]:
        with self._lock:
            return list(self._records.values())

    def _swap(self, expected: ItemRecord | None, new: ItemRecord | None) -> bool:
        item = (new or expected).item  # type: ignore[union-attr]
        with self._lock:
            return ledger.swap_in(self._records, item, expected, new)


def no_processing_table(manifest: object) -> ManifestConfigError:
    return ManifestConfigError(
        f"{type(manifest).__name__} keeps no processing table: use a SQLite or DynamoDB manifest with "
        "--processing-manifest-table"
    )
