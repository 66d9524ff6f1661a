"""Where the shred job's time goes: the job cut short after each step, side by side in one session.

    python benchmarks/shred_stages.py --events 300000 --rounds 3

Each stage runs the job up to a step, to Spark's `noop` sink (the last stage is the whole job),
so the difference between two consecutive stages is what that step costs:

    baseline      read, split, dropDuplicates, write (as in shred_job.py)
    scan          the batch scan: line count, etl time, ids on more than one line
    lines         + the main pass to every output line: checks, JSON, dedup, no manifest
    lines_put     + the SQLite manifest's puts
    job           + the partitioned write, the counts, the commit: the whole job

After a warm-up of each, the stages run alternately forwards and backwards; prints wall and CPU
seconds (the JVM and its Python workers) of each run, then medians.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path[:0] = [str(ROOT.parent), str(ROOT)]

import shred_ab  # noqa: E402
import shred_job  # noqa: E402

from events_manifest._opening.handle import ManifestHandle  # noqa: E402
from spark_integration import shred  # noqa: E402
from spark_integration._shred import plan  # noqa: E402
from spark_integration._spark.enriched import load_enriched  # noqa: E402
from spark_integration._spark.scan import scan_batch  # noqa: E402

STAGES = ["baseline", "scan", "lines", "lines_put", "job"]


def stage_runner(spark, source: str, work: Path) -> Callable[[str], None]:  # type: ignore[no-untyped-def]
    """A function that runs one stage, each run with its own output folder and manifest."""
    runs = 0

    def run(stage: str) -> None:
        nonlocal runs
        runs += 1
        out, manifest = work / f"out-{runs}", f"sqlite:///{work}/manifest-{runs}.db"
        try:
            if stage == "baseline":
                shred_job.baseline(spark, source, str(out))
            elif stage == "job":
                shred(spark, source, str(out), str(work / f"bad-{runs}"), manifest=manifest)
            else:
                _cut_short(spark, source, stage, ManifestHandle.of(manifest) if stage == "lines_put" else None)
        finally:
            shutil.rmtree(out, ignore_errors=True)
            shutil.rmtree(work / f"bad-{runs}", ignore_errors=True)

    return run


def _cut_short(spark, source: str, stage: str, manifest: ManifestHandle | None) -> None:  # type: ignore[no-untyped-def]
    lines = load_enriched(spark, source)  # listed once, as the job does
    scan = scan_batch(lines)
    try:
        if stage == "scan":
            return
        etl = scan.etl_time
        assert etl is not None
        rows = plan.output_lines(lines, etl, manifest, "2026-01-01T00:00:00.000Z", shared_keys=scan.shared_keys)
        rows.write.format("noop").mode("overwrite").save()
    finally:
        scan.release()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--stages", default=",".join(STAGES), help=f"comma-separated, of {','.join(STAGES)}")
    args = parser.parse_args()
    stages = args.stages.split(",")
    shred_ab.measure(
        "shred-stages-",
        args.events,
        args.rounds,
        "stage",
        lambda spark, work: (stage_runner(spark, str(work / "in"), work), stages),
    )


if __name__ == "__main__":
    main()
