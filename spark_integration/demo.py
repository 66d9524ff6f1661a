"""The README's jobs on the bundled sample batches, on a SQLite manifest.

    python -m spark_integration.demo [--job shred|transformer|stream] [--out demo-output]

`shred` (the main job): both batches through the shred job; the second batch re-delivers events
of the first, and its summary shows them dropped cross-batch. Running it again reruns both batches
on purpose, with their own etl times: identical output. `transformer`: both batches as two runs of
the transformer (wide-row JSON); running it again finds both runs done. `stream`: the stream
transformer, the batches arriving one after the other into a folder it reads: two windows.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from pyspark.sql import SparkSession

from events_manifest._transformer.face import StreamConfig, TransformerConfig
from events_manifest.iglu import ResolverConfig
from events_manifest.snowplow import sample_batches
from spark_integration.session import local_session
from spark_integration.shredder import shred
from spark_integration.stream_transformer import StreamTransformer
from spark_integration.transformer import transform

EMPTY_RESOLVER = {
    "schema": "iglu:com.snowplowanalytics.iglu/resolver-config/jsonschema/1-0-1",
    "data": {"cacheSize": 500, "repositories": []},
}


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


def run_transformer_demo(spark: SparkSession, out: Path) -> None:
    """The sample batches as runs `out/enriched/run=.../`, transformed into `out/transformed/`."""
    enriched = out / "enriched"
    for day, batch in enumerate(sample_batches(), start=1):
        run = enriched / f"run=2026-11-0{day}-06-00-00"
        if not run.exists():
            shutil.copytree(batch, run)
    config = {
        "input": str(enriched),
        "output": {"path": str(out / "transformed")},
        "formats": {"transformationType": "widerow"},
    }
    (out / "transformer.hocon").write_text(json.dumps(config, indent=2) + "\n")
    transform(  # prints each run's counts as it is committed
        spark,
        TransformerConfig.parse(json.dumps(config)),
        iglu=ResolverConfig.parse(json.dumps(EMPTY_RESOLVER)),
        manifest=f"sqlite://{out / 'transformer-manifest.db'}",
    )
    print(f"runs in {out / 'transformed'}; config {out / 'transformer.hocon'}")


def run_stream_demo(spark: SparkSession, out: Path) -> None:
    """The stream transformer reading `out/stream-input/`: the first sample batch arrives, a start
    of the stream reads it and commits its window; the second arrives, a second start (on the same
    checkpoint) commits it in a window of its own, the first's events it re-delivers dropped."""
    source = out / "stream-input"
    config = {
        "input": {"type": "file", "dir": str(source)},
        "output": {"path": str(out / "stream-output")},
        "windowing": "10 minutes",
    }
    (out / "stream-transformer.hocon").write_text(json.dumps(config, indent=2) + "\n")
    source.mkdir(parents=True, exist_ok=True)
    for n, batch in enumerate(sample_batches(), start=1):
        for part in sorted(batch.iterdir()):
            if not (source / f"batch-{n}-{part.name}").exists():
                shutil.copy(part, source / f"batch-{n}-{part.name}")
        print(f"batch {n} arrived in {source}")
        stream = StreamTransformer(  # prints each window's counts as it is committed
            spark,
            StreamConfig.parse(json.dumps(config)),
            iglu=ResolverConfig.parse(json.dumps(EMPTY_RESOLVER)),
            manifest=f"sqlite://{out / 'stream-manifest.db'}",
        )
        stream.run(available_now=True)
    print(f"windows in {out / 'stream-output'}; config {out / 'stream-transformer.hocon'}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_integration.demo", description=__doc__.split("\n")[0])
    parser.add_argument("--job", choices=("shred", "transformer", "stream"), default="shred", help="which job to run")
    parser.add_argument("--out", type=Path, default=Path("demo-output"), help="folder for outputs and manifest")
    args = parser.parse_args(argv)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    demos = {"shred": run_demo, "transformer": run_transformer_demo, "stream": run_stream_demo}
    demos[args.job](local_session(), out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
