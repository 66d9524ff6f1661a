"""The README's main job: both bundled sample batches through the shred job, on a SQLite manifest.

    python -m spark_integration.demo [--out demo-output]

The second batch re-delivers events of the first: its summary shows them dropped cross-batch.
Running the demo again reruns both batches on purpose, with their own etl times: identical output.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from pyspark.sql import SparkSession

from events_manifest.snowplow.generator import sample_batches
from spark_integration.session import local_session
from spark_integration.shredder import shred


def run_demo(spark: SparkSession, out: Path) -> None:
    """Shred each sample batch into `out/batch-N/`, with the manifest `out/manifest.db`."""
    out.mkdir(parents=True, exist_ok=True)
    manifest = f"sqlite://{out / 'manifest.db'}"
    for batch in sample_batches():
        summary = shred(
            spark,
            str(batch),
            str(out / batch.name / "shredded"),
            str(out / batch.name / "bad"),
            manifest=manifest,
            overwrite=True,
            rerun=True,
        )
        print(summary.table(), end="\n\n")
    print(f"outputs in {out}/batch-*/shredded and bad; manifest {out / 'manifest.db'}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_integration.demo", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("demo-output"), help="folder for outputs and manifest")
    args = parser.parse_args(argv)
    run_demo(local_session(), args.out.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
