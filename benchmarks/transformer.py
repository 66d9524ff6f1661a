"""The transformer against a bare Spark job doing the same reading, dedup and writing, each a whole
process, interleaved.

    python benchmarks/transformer.py --events 300000 --rounds 3 [--mode widerow|parquet|shred]

(a) `python -m spark_integration.transformer` on one run of N generated events (about 1% of the
    lines duplicated), cross-batch dedup on a fresh SQLite manifest, gzip output;
(b) the baseline: a process that reads the same text, splits it into the 131 fields,
    `dropDuplicates(event_id, event_fingerprint)` and writes them as gzip JSON.
With `--mode parquet`: (a) writes wide-row Parquet (`web_page`, `link_click` and the generator's
own schemas from an embedded repository); (b) writes the 131 fields as Parquet, all strings.
With `--mode shred`: (a) in shred mode (JSON by default, `web_page` and `link_click` as TSV from
their Iglu Central schemas); (b) writes the same partitions: each event's atomic fields as one TSV
line under the atomic partition, each of its JSON columns as a line under its first entity's.
Both on `local[2]`. Prints each process's wall time, the medians and the ratio (a)/(b).

With `--warm`, instead: both in this process's one Spark session, after one run of each to warm
the JVM and the Python workers, alternated for the rounds (the cost a long-lived session pays).

With `--profile DIR`, instead: (a) in this process, once to warm the JVM and once under the JVM's
flight recorder and py-spy (the Python workers), the hottest frames into DIR and on stdout.

With `--jobs`, instead: (a) in this process, once to warm, then once more with Spark's event log
on: each Spark job of that run, when it started (seconds into the run), how long it took and its
tasks.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def baseline(source: str, target: str, mode: str) -> None:
    from pyspark.sql import functions as F

    from events_manifest._snowplow.fields import ATOMIC_FIELDS, FIELD_NAMES, JSON_FIELDS
    from spark_integration import local_session

    spark = local_session("local[2]")
    fields = F.split("value", "\t", -1)
    columns = [F.get(fields, i).alias(name) for i, name in enumerate(FIELD_NAMES)]
    events = spark.read.text(source).select(*columns).dropDuplicates(["event_id", "event_fingerprint"])
    if mode == "widerow":
        events.write.option("compression", "gzip").json(target)
        return
    if mode == "parquet":
        events.write.parquet(target)
        return
    key = r'"data":\[?\{"schema":"iglu:([^/]+)/([^/]+)/([^/]+)/(\d+)-(\d+)-(\d+)"'
    atomic = F.struct(
        F.array(*map(F.lit, ("com.snowplowanalytics.snowplow", "atomic", "tsv", "1", "0", "0"))).alias("place"),
        F.concat_ws("\t", *(F.coalesce(F.col(FIELD_NAMES[i]), F.lit("")) for i in ATOMIC_FIELDS)).alias("line"),
    )
    entities = [
        F.struct(
            F.array(*(F.regexp_extract(FIELD_NAMES[i], key, g) for g in range(1, 7))).alias("place"),
            F.col(FIELD_NAMES[i]).alias("line"),
        )
        for i in JSON_FIELDS
    ]
    lines = events.select(F.explode(F.array(atomic, *entities)).alias("x")).filter("x.line != ''")
    places = ("vendor", "name", "format", "model", "revision", "addition")
    written = lines.select(
        *(F.col("x.place")[i].alias(name) for i, name in enumerate(places)), F.col("x.line").alias("value")
    )
    written.write.partitionBy(*places).option("compression", "gzip").text(target)


RUN = "run=2026-11-01-06-00-00"
SCHEMAS = {
    "com.acme/product/jsonschema/1-0-0": {"sku": {"type": "string"}, "price": {"type": "number"}},
    "com.acme/product/jsonschema/1-0-1": {"sku": {"type": "string"}, "price": {"type": "number"}},
    "com.acme/product/jsonschema/1-0-2": {
        "sku": {"type": "string"},
        "price": {"type": "number", "multipleOf": 0.01, "minimum": 0, "maximum": 100000},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "com.acme/add_to_cart/jsonschema/1-0-0": {
        "sku": {"type": "string"},
        "unitPrice": {"type": "number"},
        "quantity": {"type": "integer", "minimum": 0, "maximum": 1000},
        "currency": {"type": "string"},
    },
    "com.snowplowanalytics.snowplow/ua_parser_context/jsonschema/1-0-0": {
        "useragentFamily": {"type": "string"},
        "useragentMajor": {"type": ["string", "null"]},
        "osFamily": {"type": "string"},
    },
}
"""Schemas of the generator's other entities, written as an embedded repository for Parquet."""


def write_schemas(folder: Path) -> dict[str, object]:
    for path, properties in SCHEMAS.items():
        file = folder / "schemas" / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(json.dumps({"type": "object", "properties": properties}))
    return {"name": "generator", "priority": 1, "connection": {"embedded": {"path": str(folder)}}}


CENTRAL = {"name": "central", "priority": 0, "connection": {"embedded": {"path": str(ROOT / "tests" / "iglu_central")}}}
"""The copies of Iglu Central's schemas the tests use: `web_page` and `link_click` among them."""


PARQUET = {"transformationType": "widerow", "fileFormat": "parquet"}
SHRED = {
    "transformationType": "shred",
    "default": "JSON",
    "tsv": [
        "iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-*-*",
        "iglu:com.snowplowanalytics.snowplow/link_click/jsonschema/1-*-*",
    ],
}


def transformer(work: Path, n: int, mode: str) -> list[str]:
    """The transformer's command for round `n`: a fresh output folder and manifest."""
    config = {"input": str(work / "in"), "output": {"path": str(work / f"out-{n}")}}
    formats = {"shred": SHRED, "parquet": PARQUET}.get(mode, {"transformationType": "widerow"})
    text = json.dumps({**config, "formats": formats})
    (work / f"c{n}.json").write_text(text)
    flags = ["--iglu-config", str(work / "iglu.json"), "--config", str(work / f"c{n}.json")]
    return [sys.executable, "-m", "spark_integration.transformer", *flags, "--manifest", f"sqlite:///{work}/m{n}.db"]


def base(work: Path, n: int, mode: str) -> list[str]:
    return [sys.executable, __file__, "--baseline", str(work / "in" / RUN), str(work / f"base-{n}"), "--mode", mode]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mode", choices=("widerow", "parquet", "shred"), default="widerow")
    parser.add_argument("--warm", action="store_true", help="both in one warm session, alternated")
    parser.add_argument("--profile", metavar="DIR", type=Path, help="profile one warm in-process run into DIR")
    parser.add_argument("--jobs", action="store_true", help="Spark's jobs of one warm in-process run")
    parser.add_argument("--baseline", nargs=2, metavar=("SOURCE", "TARGET"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.baseline:
        source, target = args.baseline
        baseline(source, target, args.mode)
        return 0
    work = Path(tempfile.mkdtemp(prefix="transformer-bench-"))
    try:
        if args.profile:
            return profiled(work, args.events, args.mode, args.profile)
        if args.jobs:
            return jobs(work, args.events, args.mode)
        if args.warm:
            return in_session(work, args.events, args.rounds, args.mode)
        return measure(work, args.events, args.rounds, args.mode)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def prepare(work: Path, events: int, mode: str) -> int:
    """The run's generated lines and the resolver's config; the number of lines."""
    from shred_job import generate

    lines = generate(work / "in" / RUN, events)
    print(f"input: {lines:,} lines in {work / 'in'}")
    resolver = {
        "schema": "iglu:com.snowplowanalytics.iglu/resolver-config/jsonschema/1-0-1",
        "data": {
            "cacheSize": 500,
            "repositories": [CENTRAL, write_schemas(work / "schemas")] if mode != "widerow" else [],
        },
    }
    (work / "iglu.json").write_text(json.dumps(resolver))
    return lines


def measure(work: Path, events: int, rounds: int, mode: str) -> int:
    from shred_job import compared, interleaved

    lines = prepare(work, events, mode)
    commands = {"transformer": lambda n: transformer(work, n, mode), "baseline": lambda n: base(work, n, mode)}
    return compared(interleaved(commands, rounds), lines)


def in_session(work: Path, events: int, rounds: int, mode: str) -> int:
    """The transformer's entry point and the baseline in this process's session, each warmed by a
    first run, then alternated (the order reversed every other round)."""
    from shred_job import compared

    from spark_integration.session import local_session
    from spark_integration.transformer import main as transformer_main

    lines = prepare(work, events, mode)
    local_session("local[2]")
    runs: dict[str, Callable[[int], object]] = {
        "transformer": lambda n: transformer_main(transformer(work, n, mode)[3:]),
        "baseline": lambda n: baseline(str(work / "in" / RUN), str(work / f"base-{n}"), mode),
    }
    times: dict[str, list[float]] = {name: [] for name in runs}
    for n in range(rounds + 1):
        for name in list(runs) if n % 2 == 0 else list(runs)[::-1]:
            started = time.monotonic()
            runs[name](n)
            seconds = time.monotonic() - started
            if n:  # the first round warms
                times[name].append(seconds)
            print(f"{'warm-up' if n == 0 else f'round {n}'} {name:<11} {seconds:6.1f} s")
    return compared(times, lines)


def profiled(work: Path, events: int, mode: str, folder: Path) -> int:
    from shred_job import profile

    from spark_integration.session import local_session
    from spark_integration.transformer import main as transformer_main

    prepare(work, events, mode)
    spark = local_session("local[2]")
    transformer_main(transformer(work, 1, mode)[3:])  # warms the JVM
    profiled_run = transformer(work, 2, mode)[3:]
    profile(spark, lambda: transformer_main(profiled_run), folder)
    return 0


def jobs(work: Path, events: int, mode: str) -> int:
    """One warm run's Spark jobs, from the session's event log: start, duration and tasks."""
    from spark_integration.session import local_session
    from spark_integration.transformer import main as transformer_main

    prepare(work, events, mode)
    log = work / "events"
    log.mkdir()
    settings: dict[str, Any] = {
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": log.as_uri(),
        "spark.eventLog.compress": "false",
    }
    spark = local_session("local[2]", "transformer-benchmark", **settings)
    transformer_main(transformer(work, 1, mode)[3:])  # warms the JVM
    started = time.time()
    transformer_main(transformer(work, 2, mode)[3:])
    print(f"the run: {time.time() - started:.1f} s")
    spark.stop()  # the log is complete once the session stops
    logged = [
        json.loads(line)
        for path in sorted(p for p in log.rglob("*") if p.is_file() and not p.name.startswith("."))
        for line in path.read_text().splitlines()
    ]
    job_of = {stage: e["Job ID"] for e in logged if e["Event"] == "SparkListenerJobStart" for stage in e["Stage IDs"]}
    tasks = Counter(job_of.get(e["Stage ID"]) for e in logged if e["Event"] == "SparkListenerTaskEnd")
    begun = {
        e["Job ID"]: e["Submission Time"] / 1000
        for e in logged
        if e["Event"] == "SparkListenerJobStart" and e["Submission Time"] >= started * 1000
    }
    for e in logged:
        if e["Event"] == "SparkListenerJobEnd" and e["Job ID"] in begun:
            at = begun[e["Job ID"]]
            took = e["Completion Time"] / 1000 - at
            print(f"job {e['Job ID']:>3}  at {at - started:5.2f} s  took {took:5.2f} s  {tasks[e['Job ID']]:>3} tasks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
