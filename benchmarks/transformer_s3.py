"""The transformer on S3 against the same transformer on local folders, each a whole spark-submit
process, interleaved.

    python benchmarks/transformer_s3.py --events 300000 --rounds 3 [--jars .cache/s3a-jars]

One run of N generated events, uploaded to a bucket of moto's S3 server on loopback (reached
through the S3A connector, whose jars `nox -s integration` fetches into `.cache/s3a-jars`) and
written under a local folder; each round transforms it into a fresh output folder (S3 or local),
with cross-batch dedup on a fresh SQLite manifest, both under spark-submit on `local[2]` with the
same jars. Prints each process's wall time, the medians and the ratio S3 / local: what the S3 path
(listing, reading and writing through S3A, the file-by-file commit, the conditional-write claim)
costs over a local disk. moto is a Python server on the same two cores, slower than S3 itself.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
RUN = "run=2026-11-01-06-00-00"
KEYS = {"access_key": "bench-access-key", "secret_key": "bench-secret-key"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jars", type=Path, default=ROOT / ".cache" / "s3a-jars", help="the S3A connector's jars")
    args = parser.parse_args()
    jars = sorted(args.jars.glob("*.jar"))
    if len(jars) < 2:
        print(f"no S3A jars in {args.jars}: run `nox -s integration` once, or pass --jars", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="transformer-s3-bench-"))
    try:
        return measure(work, args.events, args.rounds, jars)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure(work: Path, events: int, rounds: int, jars: list[Path]) -> int:
    import boto3
    import pyspark
    from shred_job import compared, generate, interleaved

    from events_manifest.testing import start_moto
    from spark_integration import transformer as module
    from spark_integration.session import s3a_settings

    lines = generate(work / "in" / RUN, events)
    print(f"input: {lines:,} lines in {work / 'in'}")
    (work / "iglu.json").write_text(
        json.dumps(
            {
                "schema": "iglu:com.snowplowanalytics.iglu/resolver-config/jsonschema/1-0-1",
                "data": {"cacheSize": 500, "repositories": []},
            }
        )
    )
    os.environ.update(AWS_ACCESS_KEY_ID=KEYS["access_key"], AWS_SECRET_ACCESS_KEY=KEYS["secret_key"])
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    with start_moto() as server:
        s3 = boto3.client("s3", region_name="us-east-1", endpoint_url=server.endpoint)
        s3.create_bucket(Bucket="bench")
        for path in sorted((work / "in" / RUN).iterdir()):
            s3.upload_file(str(path), "bench", f"in/{RUN}/{path.name}")
        submit = [
            str(Path(pyspark.__file__).parent / "bin" / "spark-submit"),
            "--master",
            "local[2]",
            "--driver-memory",
            "4g",
        ]
        submit += ["--jars", ",".join(map(str, jars))]
        for key, value in s3a_settings(server.endpoint, **KEYS).items():
            submit += ["--conf", f"{key}={value}"]

        def command(n: int, source: str, target: str) -> list[str]:
            config = {"input": source, "output": {"path": target}, "formats": {"transformationType": "widerow"}}
            (work / f"c{n}-{target.rsplit('/', 1)[-1]}.json").write_text(json.dumps(config))
            flags = [
                "--iglu-config",
                str(work / "iglu.json"),
                "--config",
                str(work / f"c{n}-{target.rsplit('/', 1)[-1]}.json"),
            ]
            manifest = f"sqlite:///{work}/m{n}-{target.rsplit('/', 1)[-1]}.db"
            return [*submit, module.__file__, *flags, "--manifest", manifest]

        os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
        commands = {
            "s3": lambda n: command(n, "s3a://bench/in", f"s3a://bench/out-{n}"),
            "local": lambda n: command(n, str(work / "in"), str(work / f"out-{n}")),
        }
        times = interleaved(commands, rounds)
    return compared(times, lines)


if __name__ == "__main__":
    sys.exit(main())
