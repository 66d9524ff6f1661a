"""The transformer (wide-row JSON) against a bare Spark job doing the same reading, dedup and JSON
writing, each a whole process, interleaved.

    python benchmarks/transformer.py --events 300000 --rounds 3

(a) `python -m spark_integration.transformer` on one run of N generated events (about 1% of the
    lines duplicated), cross-batch dedup on a fresh SQLite manifest, gzip output;
(b) the baseline: a process that reads the same text, splits it into the 131 fields,
    `dropDuplicates(event_id, event_fingerprint)` and writes them as gzip JSON.
Both on `local[2]`. Prints each process's wall time, the medians and the ratio (a)/(b).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def baseline(source: str, target: str) -> None:
    from pyspark.sql import functions as F

    from events_manifest.snowplow.fields import FIELD_NAMES
    from spark_integration import local_session

    spark = local_session("local[2]")
    fields = F.split("value", "\t", -1)
    columns = [F.get(fields, i).alias(name) for i, name in enumerate(FIELD_NAMES)]
    events = spark.read.text(source).select(*columns)
    events.dropDuplicates(["event_id", "event_fingerprint"]).write.option("compression", "gzip").json(target)


RUN = "run=2026-11-01-06-00-00"


def transformer(work: Path, n: int) -> list[str]:
    """The transformer's command for round `n`: a fresh output folder and manifest."""
    config = {"input": str(work / "in"), "output": {"path": str(work / f"out-{n}")}}
    text = json.dumps({**config, "formats": {"transformationType": "widerow"}})
    (work / f"c{n}.json").write_text(text)
    flags = ["--iglu-config", str(work / "iglu.json"), "--config", str(work / f"c{n}.json")]
    return [sys.executable, "-m", "spark_integration.transformer", *flags, "--manifest", f"sqlite:///{work}/m{n}.db"]


def base(work: Path, n: int) -> list[str]:
    return [sys.executable, __file__, "--baseline", str(work / "in" / RUN), str(work / f"base-{n}")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", nargs=2, metavar=("SOURCE", "TARGET"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.baseline:
        baseline(*args.baseline)
        return 0
    work = Path(tempfile.mkdtemp(prefix="transformer-bench-"))
    try:
        return measure(work, args.events, args.rounds)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure(work: Path, events: int, rounds: int) -> int:
    from shred_job import generate

    lines = generate(work / "in" / RUN, events)
    print(f"input: {lines:,} lines in {work / 'in'}")
    resolver = {
        "schema": "iglu:com.snowplowanalytics.iglu/resolver-config/jsonschema/1-0-1",
        "data": {"cacheSize": 500, "repositories": []},
    }
    (work / "iglu.json").write_text(json.dumps(resolver))
    times: dict[str, list[float]] = {"transformer": [], "baseline": []}
    for n in range(rounds):
        order = ["transformer", "baseline"] if n % 2 == 0 else ["baseline", "transformer"]
        for name in order:
            command = transformer(work, n) if name == "transformer" else base(work, n)
            started = time.monotonic()
            done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
            seconds = time.monotonic() - started
            if done.returncode != 0:
                print(done.stderr[-3000:])
                return 1
            times[name].append(seconds)
            print(
                f"round {n + 1} {name:<11} {seconds:6.1f} s"
                + (f"  {done.stdout.splitlines()[-1]}" if name == "transformer" else "")
            )
    a, b = median(times["transformer"]), median(times["baseline"])
    print(f"median: transformer {a:.1f} s, baseline {b:.1f} s, ratio {a / b:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
