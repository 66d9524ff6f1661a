"""Enriched events deduplicated in plain Python, for a consumer without Spark (a Kinesis or Kafka
reader, a Lambda): the shred job's checks and dedup decisions on a batch of lines, one
`LineDecision` per line.

The rules are the shred job's, through the same engine (`batch.decide`): a batch is
what the shred job calls a run, so two copies of an event in one call are in-batch duplicates and
a copy of an event an earlier call kept is a cross-batch duplicate.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime

import attrs
import pyarrow as pa

from events_manifest._iglu.resolver import ResolverConfig
from events_manifest._manifest.contract import DuplicateStorage
from events_manifest._opening.handle import InProcess
from events_manifest._snowplow import legacy_bad_rows
from events_manifest._snowplow.batch import decide
from events_manifest._snowplow.dedup import BAD, KEPT, MANIFEST_ERROR, Dedup
from events_manifest.model import to_epoch_seconds, unicode_text

_UNPAIRED = re.compile("[\ud800-\udfff]")
"""Half a UTF-16 surrogate pair: a Python string may hold one, Unicode text (and a file's line) cannot."""


def _unpaired(line: str) -> str | None:
    """Why `line` is no Unicode text (the first half pair it holds), or None."""
    found = _UNPAIRED.search(line)
    if found is None:
        return None
    return (
        f"line holds half a UTF-16 surrogate pair (U+{ord(found[0]):04X}) at character {found.start()}: no Unicode text"
    )


@attrs.frozen
class LineDecision:
    """What became of one enriched line: its `status` (`dedup.STATUSES`), the id to load a kept
    event under (`event_id`: a re-identified synthetic duplicate's new one) and its original id,
    and for a bad line its messages."""

    line: str
    status: str
    event_id: str | None
    original_event_id: str | None
    errors: tuple[str, ...] = ()

    @property
    def kept(self) -> bool:
        return self.status == KEPT

    @property
    def bad(self) -> bool:
        return self.status in (BAD, MANIFEST_ERROR)

    @property
    def reidentified(self) -> bool:
        """A kept synthetic duplicate: loaded under a new id, its original one in `original_event_id`."""
        return self.kept and self.event_id != self.original_event_id

    def bad_row(self, failed_at: datetime | None = None) -> str:
        """The bad row of a bad line, as the shred job writes it (`failure_tstamp`: now by default)."""
        if not self.bad:
            raise ValueError(f"the line is {self.status}, not a bad row")
        moment = failed_at or datetime.now(UTC)
        line = _UNPAIRED.sub("\ufffd", self.line).encode()  # as invalid UTF-8 shows
        return legacy_bad_rows.bad_row(line, list(self.errors), legacy_bad_rows.failure_tstamp(moment))


@attrs.frozen
class EnrichedDeduplicator:
    """Checks and deduplicates batches of enriched lines with the shred job's rules.

    `manifest` (an open manifest, used in this process) makes dedup cross-batch; None keeps it
    within each batch. `iglu` validates each entity against its schema. `synthetic`,
    `random_ids` and `cross_batch_synthetic` are the shred job's options of the same names.
    """

    manifest: DuplicateStorage | None = None
    synthetic: bool = True
    random_ids: bool = False
    cross_batch_synthetic: bool = False
    iglu: ResolverConfig | None = None

    def decide(self, lines: Iterable[str], etl_time: datetime | None = None) -> list[LineDecision]:
        """One decision per line, in order. `etl_time` is the batch's (now by default): the manifest
        stores it, and a later batch's copy of a kept event is a cross-batch duplicate. A line that
        is no Unicode text (half a surrogate pair) is a bad row."""
        if isinstance(lines, str | bytes):
            raise TypeError(
                "lines must be an iterable of enriched lines, not one text: pass [line] or text.splitlines()"
            )
        given = list(lines)
        unpaired: dict[int, str] = {}
        if not unicode_text("".join(given)):
            unpaired = {n: why for n, line in enumerate(given) if (why := _unpaired(line)) is not None}
        texts = [line for n, line in enumerate(given) if n not in unpaired]
        etl = etl_time or datetime.now(UTC)
        dedup = Dedup(
            InProcess(self.manifest) if self.manifest is not None else None,
            to_epoch_seconds(etl),
            synthetic=self.synthetic,
            random_ids=self.random_ids,
            cross_batch_synthetic=self.cross_batch_synthetic,
        )
        decided = decide(pa.array(texts, pa.string()), dedup, self.iglu)
        columns = zip(
            texts,
            decided["status"].to_pylist(),
            decided["new_event_id"].to_pylist(),
            decided["event_id"].to_pylist(),
            decided["errors"].to_pylist(),
            strict=True,
        )
        decisions = [
            LineDecision(line, status, new_id if status == KEPT else original, original, tuple(errors or ()))
            for line, status, new_id, original, errors in columns
        ]
        for n, why in unpaired.items():  # in order: each lands at its own place
            decisions.insert(n, LineDecision(given[n], BAD, None, None, (why,)))
        return decisions
