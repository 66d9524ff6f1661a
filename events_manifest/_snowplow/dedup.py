"""The dedup decisions of the shred job, in the reference's order, for a batch of checked lines:

1. invalid lines are bad rows and take no part in what follows;
2. natural in-batch: one survivor per (event id, fingerprint), a missing fingerprint filled first;
3. cross-batch natural: each survivor is put to the manifest; a refused put is dropped, a failed
   one makes a bad row;
4. synthetic in-batch, over the events whose put succeeded: an id they share is re-identified;
5. cross-batch synthetic (opt-in): a kept event whose id an earlier batch stored with another
   fingerprint is re-identified too.

Pure pyarrow and numpy, no Spark: both paths of the job call `Dedup.decide`, lines of ids found
once per batch as they are read, lines of shared ids after a shuffle that brings all the lines
of an id into one call. Python loops only over the few rows that need one (fills, new ids).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

import attrs
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from events_manifest._opening.handle import Opener
from events_manifest._snowplow import legacy_bad_rows
from events_manifest.errors import ManifestConfigError, ManifestError
from events_manifest.model import from_epoch_seconds

KEPT = "kept"
BAD = "bad"
IN_BATCH = "in_batch_duplicate"
CROSS_BATCH = "cross_batch_duplicate"
MANIFEST_ERROR = "manifest_error"
STATUSES = (KEPT, BAD, IN_BATCH, CROSS_BATCH, MANIFEST_ERROR)
"""What becomes of a line: kept, a bad row, a natural duplicate dropped in-batch or across
batches, or a bad row because its put failed."""


def check_options(manifest: object | None, cross_batch_synthetic: bool) -> None:
    """Cross-batch synthetic dedup reads what earlier batches stored: it needs a manifest."""
    if cross_batch_synthetic and manifest is None:
        raise ManifestConfigError("cross-batch synthetic dedup needs a manifest: pass one, or leave it off")


def filled_fingerprint(event_id: str, etl_seconds: int, rank: int) -> str:
    """What a missing fingerprint becomes: a UUID v5 of the event id, the batch and the event's
    rank among its id's fingerprint-less events (earliest first). Never a natural duplicate of
    anything, and the same on a rerun of the batch."""
    return str(uuid.uuid5(uuid.UUID(event_id), f"missing-fingerprint:{etl_seconds}:{rank}"))


def new_event_id(event_id: str, fingerprint: str, *, random_id: bool) -> str:
    """A synthetic duplicate's new id: UUID v5 of its id and fingerprint (the same on every rerun),
    or v4 with `random_id`, as the reference does."""
    return str(uuid.uuid4() if random_id else uuid.uuid5(uuid.UUID(event_id), fingerprint))


def earliest_first(*keys: np.ndarray) -> np.ndarray:
    """The order in which the survivor of a pair is chosen (and fingerprint-less events ranked),
    for rows given by their group `keys` (first = outermost) then etl time, collector time and
    position in the input, the last three passed last: the earliest wins."""
    return np.lexsort(tuple(reversed(keys)))


def put_all(
    handle: Opener, event_ids: pa.Array, fingerprints: pa.Array, wanted: np.ndarray, etl_seconds: pa.Array | int
) -> tuple[list[bool | None], list[str | None]]:
    """The cross-batch put of each wanted row (one `try_put_many` call), with the batch's etl time
    or each row's: whether it was accepted, or the message of its failure; None on other rows."""
    ids, prints = event_ids.to_pylist(), fingerprints.to_pylist()
    rows = np.flatnonzero(wanted).tolist()
    accepted: list[bool | None] = [None] * len(ids)
    errors: list[str | None] = [None] * len(ids)
    if rows:
        etls = etl_seconds.to_pylist() if isinstance(etl_seconds, pa.Array) else [etl_seconds] * len(ids)
        times = {s: from_epoch_seconds(s) for s in {etls[i] for i in rows}}
        outcomes = handle.open().try_put_many([(ids[i], prints[i], times[etls[i]]) for i in rows])
        for i, outcome in zip(rows, outcomes, strict=True):
            if isinstance(outcome, ManifestError):
                errors[i] = legacy_bad_rows.manifest_failure(outcome)
            else:
                accepted[i] = outcome
    return accepted, errors


def stored_by_earlier_batch(
    handle: Opener, event_ids: pa.Array, fingerprints: pa.Array, wanted: np.ndarray, etl_seconds: int
) -> np.ndarray:
    """Whether an earlier batch (etl before this one's, entry not expired) stored each wanted row's
    id with another fingerprint: the cross-batch synthetic rule. Entries of later batches are
    ignored, so a rerun of an older batch gives its first output again."""
    rows = np.flatnonzero(wanted).tolist()
    answers = np.zeros(len(event_ids), dtype=bool)
    if rows:
        ids, prints = event_ids.to_pylist(), fingerprints.to_pylist()
        stored = handle.open().entries_of(ids[i] for i in rows)
        for i in rows:
            answers[i] = any(
                e.fingerprint != prints[i] and e.etl_seconds < etl_seconds < e.ttl_seconds for e in stored[ids[i]]
            )
    return answers


@attrs.frozen
class Dedup:
    """How a run decides its lines: its manifest (None: in-batch dedup only), its etl time, and
    its options."""

    manifest: Opener | None
    etl_seconds: int
    synthetic: bool = True
    random_ids: bool = False
    cross_batch_synthetic: bool = False

    def __attrs_post_init__(self) -> None:
        check_options(self.manifest, self.cross_batch_synthetic)

    def decide(self, checked: Mapping[str, pa.Array]) -> dict[str, pa.Array]:
        """The columns `shred_output.output_lines` reads, of checked lines (`batch.CHECKED` and
        `line`), in input order, every line of an id among them."""
        rows = len(checked["line"])
        valid = legacy_bad_rows.without_messages(checked["errors"])
        event_ids = checked["event_id"]
        id_of = _codes(event_ids, valid)
        etl = pc.fill_null(checked["etl_us"], 0).to_numpy()
        collector = pc.fill_null(checked["collector_us"], 0).to_numpy()
        position = np.arange(rows)
        # 1: invalid lines take no part; 2: natural in-batch, fingerprints filled first
        fingerprints = self._filled(event_ids, checked["fingerprint"], valid, id_of, (etl, collector, position))
        survivor = valid & _first_of_pairs(id_of, _codes(fingerprints, valid), (etl, collector, position))

        status = np.where(valid, np.where(survivor, KEPT, IN_BATCH), BAD).astype(object)
        errors = checked["errors"]
        if self.manifest is not None:  # 3: cross-batch natural
            accepted, failures = put_all(self.manifest, event_ids, fingerprints, survivor, self.etl_seconds)
            failed = np.array([f is not None for f in failures], dtype=bool)
            refused = np.array([a is False for a in accepted], dtype=bool)
            status[refused] = CROSS_BATCH
            status[failed] = MANIFEST_ERROR
            if failed.any():
                errors = pa.array(
                    [[f] if f is not None else m for f, m in zip(failures, errors.to_pylist(), strict=True)],
                    errors.type,
                )
        kept = status == KEPT  # 4: synthetic in-batch, over the puts that succeeded
        synthetic = kept & (_per_id(id_of, kept) > 1) if self.synthetic else np.zeros(rows, dtype=bool)
        across = np.zeros(rows, dtype=bool)  # 5: cross-batch synthetic
        if self.cross_batch_synthetic and self.manifest is not None:  # (check_options: both or neither)
            across = stored_by_earlier_batch(
                self.manifest, event_ids, fingerprints, kept & ~synthetic, self.etl_seconds
            )
        first = np.full(id_of.max(initial=-1) + 2, rows)  # for the summary: each id's first line; slot 0: no id
        np.minimum.at(first, id_of[valid] + 1, position[valid])
        return {
            **checked,
            "status": pa.array(status, pa.string()),
            "new_event_id": self._new_ids(event_ids, fingerprints, synthetic | across),
            "synthetic": pa.array(synthetic | across),
            "synthetic_across": pa.array(across),
            "id_events": pa.array(np.where(valid, _per_id(id_of, valid), 0), pa.int64(), mask=~valid),
            "id_first": pa.array(valid & (first[id_of + 1] == position)),
            "errors": errors,
        }

    def _filled(
        self,
        event_ids: pa.Array,
        fingerprints: pa.Array,
        valid: np.ndarray,
        id_of: np.ndarray,
        times: tuple[np.ndarray, ...],
    ) -> pa.Array:
        """Fingerprints with each valid event's missing one filled (`filled_fingerprint`)."""
        missing = np.flatnonzero(valid & pc.fill_null(pc.equal(fingerprints, ""), False).to_numpy(zero_copy_only=False))
        if not len(missing):
            return fingerprints
        filled, ids = fingerprints.to_pylist(), event_ids.to_pylist()
        ranked = missing[earliest_first(id_of[missing], *(key[missing] for key in times))]
        rank, previous = 0, -1
        for row in ranked.tolist():
            rank = rank + 1 if id_of[row] == previous else 1
            previous = id_of[row]
            filled[row] = filled_fingerprint(ids[row], self.etl_seconds, rank)
        return pa.array(filled, pa.string())

    def _new_ids(self, event_ids: pa.Array, fingerprints: pa.Array, renamed: np.ndarray) -> pa.Array:
        rows = np.flatnonzero(renamed).tolist()
        if not rows:
            return event_ids
        ids, prints = event_ids.to_pylist(), fingerprints.to_pylist()
        for row in rows:
            ids[row] = new_event_id(ids[row], prints[row], random_id=self.random_ids)
        return pa.array(ids, pa.string())


def _codes(values: pa.Array, valid: np.ndarray) -> np.ndarray:
    """A number per distinct value among the valid rows (-1 on the others)."""
    codes = np.full(len(values), -1, dtype=np.int64)
    rows = np.flatnonzero(valid)
    if len(rows):
        codes[rows] = pc.dictionary_encode(values.take(rows)).indices.to_numpy()
    return codes


def _first_of_pairs(id_of: np.ndarray, fingerprint_of: np.ndarray, times: tuple[np.ndarray, ...]) -> np.ndarray:
    """The survivor of each (id, fingerprint) pair (`earliest_first`); meaningful on valid rows."""
    order = earliest_first(id_of, fingerprint_of, *times)
    pair = np.stack([id_of[order], fingerprint_of[order]])
    starts = np.ones(len(order), dtype=bool)
    starts[1:] = (pair[:, 1:] != pair[:, :-1]).any(axis=0)
    survivor = np.zeros(len(order), dtype=bool)
    survivor[order[starts]] = True
    return survivor


def _per_id(id_of: np.ndarray, counted: np.ndarray) -> np.ndarray:
    """For each row, how many counted rows share its id (0 for a row without one)."""
    counts = np.bincount(id_of[counted] + 1, minlength=id_of.max(initial=-1) + 2)  # slot 0: no id
    counts[0] = 0
    per_row: np.ndarray = counts[id_of + 1]
    return per_row
