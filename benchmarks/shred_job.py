"""The shred job against what a user would write instead, side by side in one Spark session.

    python benchmarks/shred_job.py --events 300000

(a) the shred job with the SQLite manifest: validation, JSON entities, natural/cross-batch/
    synthetic dedup, atomic + shredded + bad outputs, summary;
(b) the baseline: read the same text, split, `dropDuplicates(event_id, fingerprint)`, write text.
Input: N generated events, about 1% of the lines duplicated. Prints wall times, events/s and the
ratio (a)/(b).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pyspark.sql import functions as F  # noqa: E402

from spark_integration import local_session, shred  # noqa: E402
from spark_integration.generator import BatchSpec, Generator, to_lines  # noqa: E402


def generate(folder: Path, events: int, files: int = 4) -> int:
    spec = BatchSpec(
        events=events,
        natural_share=0.004,
        synthetic_share=0.001,
        legacy_share=0.01,
        missing_fingerprint_share=0.005,
        bad_share=0.0005,
        redelivered_share=0.0,
        bot_copies=0,
    )
    lines, _ = to_lines(Generator(7), datetime(2026, 11, 1, 6, 0), spec, ())
    folder.mkdir(parents=True)
    size = len(lines) // files + 1
    for n in range(files):
        with open(folder / f"part-{n:05d}.tsv", "w", encoding="utf-8") as out:
            out.writelines(line + "\n" for line in lines[n * size : (n + 1) * size])
    return len(lines)


def baseline(spark, source: str, target: str) -> None:  # type: ignore[no-untyped-def]
    fields = F.split("value", "\t", -1)
    lines = (
        spark.read.text(source).withColumn("event_id", F.get(fields, 6)).withColumn("fingerprint", F.get(fields, 129))
    )
    lines.dropDuplicates(["event_id", "fingerprint"]).select("value").write.text(target)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=300_000)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="shred-bench-"))
    try:
        started = time.perf_counter()
        lines = generate(work / "in", args.events)
        size = sum(p.stat().st_size for p in (work / "in").iterdir())
        print(f"input: {lines:,} lines, {size / 2**20:,.0f} MiB, generated in {time.perf_counter() - started:.0f} s")
        spark = local_session("local[2]")
        source = str(work / "in")
        # warm up both paths (JVM, Python workers) on a small slice
        warm = work / "warm"
        warm.mkdir()
        shutil.copy(work / "in" / "part-00000.tsv", warm / "part.tsv")
        baseline(spark, str(warm), str(work / "warm-base"))
        shred(spark, str(warm), str(work / "warm-out"), str(work / "warm-bad"))

        times = {}
        started = time.perf_counter()
        baseline(spark, source, str(work / "base-1"))
        times["baseline 1"] = time.perf_counter() - started
        started = time.perf_counter()
        summary = shred(spark, source, str(work / "out"), str(work / "bad"), manifest=f"sqlite://{work}/manifest.db")
        times["shred"] = time.perf_counter() - started
        started = time.perf_counter()
        baseline(spark, source, str(work / "base-2"))
        times["baseline 2"] = time.perf_counter() - started
        base = (times["baseline 1"] + times["baseline 2"]) / 2
        print(summary.table())
        print("shred phases:", ", ".join(f"{k} {v:.1f} s" for k, v in summary.phase_seconds.items()))
        for name, seconds in times.items():
            print(f"{name:<12}{seconds:>8.1f} s {lines / seconds:>12,.0f} lines/s")
        print(
            f"headline: shred job with SQLite manifest {times['shred']:.1f} s = {times['shred'] / base:.2f}x the "
            f"baseline ({base:.1f} s); {lines / times['shred']:,.0f} events/s on local[2]"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
