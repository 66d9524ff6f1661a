"""`python -m events_manifest.testing.generate`: realistic batches of enriched events with duplicates
on purpose, written as `batch-N/part-00000.tsv.gz` (docs/shred-job.md, "Sample data")."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from events_manifest._snowplow.generator import BatchSpec, write_batches


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m events_manifest.testing.generate", description=__doc__)
    parser.add_argument("--events", type=int, default=1000, help="original events per batch")
    parser.add_argument("--batches", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, required=True, help="folder that receives batch-1/, batch-2/, ...")
    args = parser.parse_args(argv)
    for path in write_batches(
        args.out,
        batches=args.batches,
        spec=BatchSpec(events=args.events),
        seed=args.seed,
        first_etl=datetime(2026, 11, 1, 6, 0, 0),
    ):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
