"""What a shred run did, in numbers: printed as a table, saved as `_summary.json`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs

from events_manifest._snowplow.dedup import BAD, CROSS_BATCH, IN_BATCH, KEPT, MANIFEST_ERROR

BUCKET_BOUNDS = (("1", 1, 1), ("2", 2, 2), ("3-10", 3, 10), ("11-100", 11, 100), (">100", 101, None))
"""Events per event id, as grouped in the distribution: name, least, most."""
BUCKETS = tuple(name for name, _, _ in BUCKET_BOUNDS)
BUCKET_COUNTS = {name: "ids_" + name.replace("-", "_").replace(">", "over_") for name, _, _ in BUCKET_BOUNDS}
"""The count of event ids per bucket of the distribution, by bucket name."""


@attrs.frozen
class ShredSummary:
    """Counts of one run; every input line is exactly one of kept, bad or a dropped duplicate."""

    input_lines: int
    kept_events: int
    bad_rows: int
    manifest_errors: int
    in_batch_duplicates: int
    cross_batch_duplicates: int
    synthetic_duplicates: int
    entities: dict[str, int]
    events_per_event_id: dict[str, int]
    etl_time: str | None
    manifest: str | None
    input_path: str
    output_path: str
    bad_path: str
    seconds: float = attrs.field(eq=False)
    cross_batch_synthetic_duplicates: int = 0
    """Of the synthetic duplicates, those re-identified because an earlier batch had their id."""

    @classmethod
    def of(
        cls, input_lines: int, counts: Mapping[str, int], entities: Mapping[str, int], **places: Any
    ) -> ShredSummary:
        """A run's summary from the counts its lines' batches gave (`shred_output.COUNTS`) and its
        entity lines per type; `places` are its etl time, manifest, paths and seconds."""
        return cls(
            input_lines=input_lines,
            kept_events=counts[KEPT],
            bad_rows=counts[BAD] + counts[MANIFEST_ERROR],
            manifest_errors=counts[MANIFEST_ERROR],
            in_batch_duplicates=counts[IN_BATCH],
            cross_batch_duplicates=counts[CROSS_BATCH],
            synthetic_duplicates=counts["synthetic"],
            cross_batch_synthetic_duplicates=counts["synthetic_across"],
            entities=dict(entities),
            events_per_event_id={name: counts[BUCKET_COUNTS[name]] for name in BUCKETS},
            **places,
        )

    @property
    def balanced(self) -> bool:
        dropped = self.in_batch_duplicates + self.cross_batch_duplicates
        return self.input_lines == self.kept_events + self.bad_rows + dropped

    def to_json(self) -> str:
        return json.dumps(attrs.asdict(self), indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str) -> ShredSummary:
        data: dict[str, Any] = json.loads(text)
        return cls(**{f.name: data[f.name] for f in attrs.fields(cls) if f.name in data})

    def counts(self) -> list[tuple[str, int]]:
        """The line counts, labelled, in the order the table and the report show them."""
        return [
            ("input lines", self.input_lines),
            ("kept events", self.kept_events),
            ("bad rows", self.bad_rows),
            ("  of which manifest errors", self.manifest_errors),
            ("natural duplicates dropped in-batch", self.in_batch_duplicates),
            ("natural duplicates dropped cross-batch", self.cross_batch_duplicates),
            ("synthetic duplicates re-identified", self.synthetic_duplicates),
            ("  of which across batches", self.cross_batch_synthetic_duplicates),
        ]

    def table(self) -> str:
        rows = self.counts()
        width = max(len(name) for name, _ in rows) + 2
        lines = [f"Shred run: {self.input_path} -> {self.output_path} ({self.seconds:.1f} s)"]
        lines.append(f"etl time {self.etl_time or '-'}, manifest {self.manifest or 'none (in-batch dedup only)'}")
        lines += [f"  {name:<{width}}{value:>12,}" for name, value in rows]
        lines.append("  events per event id:")
        lines += [f"    {name:<{width - 2}}{self.events_per_event_id.get(name, 0):>12,}" for name in BUCKETS]
        lines.append("  entities per shredded type:")
        lines += [f"    {count:>10,}  {name}" for name, count in sorted(self.entities.items())]
        lines.append("  check: input = kept + bad + dropped duplicates: " + ("yes" if self.balanced else "NO"))
        return "\n".join(lines)
