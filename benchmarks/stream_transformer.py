"""The stream transformer against the batch transformer on the same events, each a whole process,
interleaved.

    python benchmarks/stream_transformer.py --events 300000 --rounds 3 [--mode widerow|parquet|shred]
    python benchmarks/stream_transformer.py --events 100000 --rounds 3 --kinesis 4
    python benchmarks/stream_transformer.py --events 100000 --rounds 3 --pubsub

(a) `python -m spark_integration.stream_transformer --available-now` reading the folder of one
    generated run of N events (about 1% of the lines duplicated) as a file stream: one window,
    dedup on a fresh SQLite manifest, gzip output;
(b) `python -m spark_integration.transformer` on the same run, the same manifest kind and config.
Both on `local[2]`. Prints each process's wall time, the medians, the ratio (a)/(b) and (a)'s
lines per second per core. The stream's extra cost is staging the lines under its checkpoint
before the window's run reads them again.

With `--kinesis SHARDS`, (a) reads the same lines from a Kinesis stream of that many shards on
moto's server (one record a line, from `TRIM_HORIZON`, 10,000 records a GetRecords) and (b) is
the file source of (a) above: what reading Kinesis costs against reading files.

With `--pubsub`, (a) reads the same lines from a Pub/Sub subscription on the Google Cloud CLI's
emulator (one message a line, published before the rounds, a subscription a round), its
`--available-now` reading until the subscription has been quiet for five seconds; (b) is the file
source: what pulling and staging messages costs against reading files.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def stream(work: Path, n: int, mode: str) -> list[str]:
    """The stream transformer's command for round `n`: a fresh output folder and manifest."""
    from transformer import PARQUET, RUN, SHRED

    formats: dict[str, dict[str, Any]] = {"shred": SHRED, "parquet": PARQUET}
    return _command(work, f"stream-{n}", {"type": "file", "dir": str(work / "in" / RUN)}, formats.get(mode))


def _command(work: Path, name: str, source: dict[str, Any], formats: dict[str, Any] | None = None) -> list[str]:
    """`--available-now` reading `source` into the folder `name` under `work`, on a fresh SQLite manifest."""
    config = {
        "input": source,
        "output": {"path": str(work / name)},
        "formats": formats or {"transformationType": "widerow"},
    }
    (work / f"{name}.json").write_text(json.dumps(config))
    flags = ["--iglu-config", str(work / "iglu.json"), "--config", str(work / f"{name}.json"), "--available-now"]
    module = "spark_integration.stream_transformer"
    return [sys.executable, "-m", module, *flags, "--manifest", f"sqlite:///{work}/{name}.db"]


def _lines(work: Path) -> list[bytes]:
    """Every generated line, in the order of the run's files."""
    import gzip

    from transformer import RUN

    return [
        line
        for part in sorted((work / "in" / RUN).glob("part-*"))
        for line in (gzip.decompress(part.read_bytes()) if part.suffix == ".gz" else part.read_bytes()).splitlines()
    ]


def kinesis(work: Path, n: int, stream_name: str, endpoint: str) -> list[str]:
    """The stream transformer's command reading the Kinesis stream, round `n`."""
    section = {"streamName": stream_name, "region": "us-east-1", "position": "TRIM_HORIZON"}
    return _command(work, f"kinesis-{n}", {"type": "kinesis", **section, "customEndpoint": endpoint})


def fill(work: Path, shards: int, endpoint: str) -> str:
    """A stream of `shards` shards holding every generated line, one record each; its name."""
    import os
    import time

    import boto3

    os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_DEFAULT_REGION="us-east-1")
    client = boto3.client("kinesis", endpoint_url=endpoint)
    name = "enriched"
    client.create_stream(StreamName=name, ShardCount=shards)
    lines = _lines(work)
    started = time.monotonic()
    for at in range(0, len(lines), 500):
        chunk = lines[at : at + 500]
        client.put_records(
            StreamName=name, Records=[{"Data": line, "PartitionKey": str(at + i)} for i, line in enumerate(chunk)]
        )
    print(f"{len(lines):,} records put in {shards} shards in {time.monotonic() - started:.1f} s")
    return name


def pubsub(work: Path, n: int, subscription: str) -> list[str]:
    """The stream transformer's command reading the subscription of round `n`."""
    return _command(work, f"pubsub-{n}", {"subscription": subscription})


def publish(work: Path, rounds: int) -> list[str]:
    """A topic with a subscription a round, every generated line published once; the subscriptions."""
    import time

    from google.cloud import pubsub_v1

    publisher, subscriber = pubsub_v1.PublisherClient(), pubsub_v1.SubscriberClient()
    topic = publisher.create_topic(name="projects/bench/topics/enriched").name
    names = [f"projects/bench/subscriptions/round-{n}" for n in range(rounds)]
    for name in names:
        subscriber.create_subscription(name=name, topic=topic, ack_deadline_seconds=60)
    lines = _lines(work)
    started = time.monotonic()
    for future in [publisher.publish(topic, line) for line in lines]:
        future.result(timeout=120)
    print(f"{len(lines):,} messages published in {time.monotonic() - started:.1f} s")
    return names


def main() -> int:
    from shred_job import compared, interleaved
    from transformer import prepare, transformer

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mode", choices=("widerow", "parquet", "shred"), default="widerow")
    parser.add_argument("--kinesis", type=int, metavar="SHARDS", help="compare Kinesis (moto) with the file source")
    parser.add_argument("--pubsub", action="store_true", help="compare Pub/Sub (the emulator) with the file source")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="stream-bench-"))
    try:
        lines = prepare(work, args.events, args.mode)
        if args.kinesis:
            from events_manifest.testing import start_moto

            with start_moto() as moto:
                name = fill(work, args.kinesis, moto.endpoint)
                commands = {
                    "kinesis": lambda n: kinesis(work, n, name, moto.endpoint),
                    "files": lambda n: stream(work, n, "widerow"),
                }
                return compared(interleaved(commands, args.rounds), lines)
        if args.pubsub:
            import os

            from events_manifest.testing import start_pubsub_emulator

            with start_pubsub_emulator() as emulator:
                os.environ["PUBSUB_EMULATOR_HOST"] = f"127.0.0.1:{emulator.port}"  # here and in the rounds
                names = publish(work, args.rounds)
                commands = {
                    "pubsub": lambda n: pubsub(work, n, names[n]),
                    "files": lambda n: stream(work, n, "widerow"),
                }
                return compared(interleaved(commands, args.rounds), lines)
        commands = {
            "stream": lambda n: stream(work, n, args.mode),
            "batch": lambda n: transformer(work, n, args.mode),
        }
        return compared(interleaved(commands, args.rounds), lines)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
