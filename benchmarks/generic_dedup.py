"""Generic dedup in plain Python: records/s of `Deduplicator` and of `events-manifest dedup`.

    python benchmarks/generic_dedup.py --records 200000

Records are small JSON objects (an id, a timestamp, a payload) with about 5% repeated ids. Each
setting runs on a fresh manifest in the same process, one after another.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from events_manifest import InMemoryManifest, SqliteManifest  # noqa: E402
from events_manifest._cli import main as cli  # noqa: E402
from events_manifest._dedup.engine import Deduplicator, Expiry  # noqa: E402

ETL = datetime(2026, 11, 1, 6)


def records(count: int) -> list[dict[str, object]]:
    rng = random.Random(7)
    made = []
    for n in range(count):
        ident = rng.randrange(n) if n and rng.random() < 0.05 else n
        made.append(
            {"id": f"order-{ident}", "ts": 1_793_000_000 + n, "payload": {"total": ident % 97, "items": [1, 2]}}
        )
    return made


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    args = parser.parse_args()
    data = records(args.records)
    with tempfile.TemporaryDirectory(prefix="dedup-bench-") as folder:
        settings: dict[str, Callable[[], tuple[Any, dict[str, Any]]]] = {
            "Deduplicator, in-memory manifest, key only": lambda: (InMemoryManifest(), {"fingerprint": ["id"]}),
            "Deduplicator, in-memory manifest, whole-record fingerprint": lambda: (InMemoryManifest(), {}),
            "Deduplicator, SQLite manifest, whole-record fingerprint": lambda: (
                SqliteManifest(Path(folder) / f"m-{time.monotonic_ns()}.db"),
                {},
            ),
            "Deduplicator, SQLite manifest, on_disk run memory, expiry": lambda: (
                SqliteManifest(Path(folder) / f"m-{time.monotonic_ns()}.db"),
                {"on_disk": True, "expiry": Expiry("ts", "1d")},
            ),
        }
        for name, make in settings.items():
            manifest, options = make()
            started = time.perf_counter()
            with manifest, Deduplicator(manifest, key=["id"], etl_time=ETL, **options) as dedup:
                for _ in dedup.classify(data):
                    pass
            seconds = time.perf_counter() - started
            print(f"{name:<62}{args.records / seconds:>12,.0f} records/s  {dict(dedup.counts)}")

        source = Path(folder) / "in.ndjson"
        source.write_text("".join(json.dumps(r) + "\n" for r in data), encoding="utf-8")
        command = ["dedup", str(source), "--key", "id", "--manifest", f"sqlite:///{folder}/cli.db"]
        command += ["--unique", str(Path(folder) / "u.ndjson"), "--duplicates", str(Path(folder) / "d.ndjson")]
        started = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            cli(command)
        seconds = time.perf_counter() - started
        print(f"{'events-manifest dedup (NDJSON file to files, SQLite)':<62}{args.records / seconds:>12,.0f} records/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
