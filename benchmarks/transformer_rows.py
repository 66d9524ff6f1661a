"""The transformer's per-event Python, alone: Parquet rows (`ParquetColumns.rows` of decoded
events, and from the lines with no event, as the job builds them: `columnar.kept_values`, split
included), shredded lines (`ShredModeLines.lines`) of generated events, and the parse of Parquet and
shred mode (`Parse.batch` rendering no wide row, 10,000 lines a batch), in microseconds an event
or a line (best of five), with Python's cyclic collector paused as the job's batches run.

    python benchmarks/transformer_rows.py --events 20000

The events are decoded once (`columnar.decoded`) from the shred job benchmark's generated lines,
with the transformer benchmark's schemas (Iglu Central's copies and the generator's own); shred
mode routes `web_page` and `link_click` to TSV, the rest to JSON. A digest of each output is
printed, to check that a change to their speed left what they write alone.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


T = TypeVar("T")


def best_of(times: int, run: Callable[[], T]) -> tuple[float, T]:
    """The shortest of `times` runs, and what the last one returned."""
    best = float("inf")
    for _ in range(times):
        started = time.perf_counter()
        found = run()
        best = min(best, time.perf_counter() - started)
    return best, found


def main() -> int:
    import pyarrow as pa
    from shred_job import generate
    from transformer import CENTRAL, SHRED, write_schemas

    from events_manifest._gc import paused
    from events_manifest._transformer import columnar
    from events_manifest._transformer.output.entity_types import EntityType
    from events_manifest._transformer.output.formats import Criterion, Routing
    from events_manifest._transformer.output.parquet import build_columns
    from events_manifest._transformer.output.shred_mode import ShredModeLines
    from events_manifest._transformer.parse_decide import Parse, event_types
    from events_manifest.iglu import ResolverConfig

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="transformer-rows-") as folder:  # the input and schemas, gone after
        work = Path(folder)
        generate(work / "in", args.events)
        lines: list[str] = []
        for path in sorted((work / "in").iterdir()):
            data = path.read_bytes()
            lines += (gzip.decompress(data) if path.suffix == ".gz" else data).decode().splitlines()
        resolver = {
            "schema": "iglu:com.snowplowanalytics.iglu/resolver-config/jsonschema/1-0-1",
            "data": {"cacheSize": 500, "repositories": [CENTRAL, write_schemas(work / "schemas")]},
        }
        iglu = ResolverConfig.parse(json.dumps(resolver))
        decoded, atomic = columnar.decoded(pa.array(lines), tsv=True)
        pairs = [(event, line) for event, line in zip(decoded, atomic, strict=True) if event is not None]
        events = [event for event, _ in pairs]
        seen = {(t.schema_key, t.entity) for event in events for t in map(EntityType.parse, event_types(event))}
        columns = build_columns(seen, iglu, synthetic=True)
        shred_mode = ShredModeLines(Routing("JSON", (), tuple(map(Criterion.parse, SHRED["tsv"])), ()), iglu)
        print(f"{len(events):,} events of {len(lines):,} lines")
        text = pa.array(lines)

        def from_lines() -> tuple[pa.StructArray, list[list[dict[str, Any]] | None]]:
            _, atomic, entities = columnar.kept_values(text)
            return columns.rows_of(atomic, entities)

        rows_time, rows = best_of(5, paused(lambda: columns.rows(events)))
        columnar_time, columnar_rows = best_of(5, paused(from_lines))
        lines_time, shredded = best_of(5, paused(lambda: [shred_mode.lines(event, line) for event, line in pairs]))
        parse = Parse(wide_rows=False)
        blocks = [text.slice(first, 10_000) for first in range(0, len(text), 10_000)]  # the job's Arrow batches
        parse_time, parsed = best_of(5, lambda: [parse.batch(block).column("types") for block in blocks])
        types = [found for block in parsed for found in block.to_pylist()]
        measured = (
            ("Parquet rows", rows_time, rows, len(events), "an event"),
            ("  from lines", columnar_time, columnar_rows, len(events), "an event"),
            ("shredded lines", lines_time, shredded, len(events), "an event"),
            ("parsed lines", parse_time, types, len(lines), "a line"),
        )
        for name, seconds, output, count, unit in measured:
            shown = output[0].to_pylist() if isinstance(output, tuple) else output
            digest = hashlib.sha256(str(shown).encode()).hexdigest()[:16]
            print(f"{name:<15} {seconds / count * 1e6:6.1f} us {unit}  (output sha256 {digest})")
        return 0


if __name__ == "__main__":
    sys.exit(main())
