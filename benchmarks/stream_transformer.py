"""The stream transformer against the batch transformer on the same events, each a whole process,
interleaved.

    python benchmarks/stream_transformer.py --events 300000 --rounds 3 [--mode widerow|parquet|shred]

(a) `python -m spark_integration.stream_transformer --available-now` reading the folder of one
    generated run of N events (about 1% of the lines duplicated) as a file stream: one window,
    dedup on a fresh SQLite manifest, gzip output;
(b) `python -m spark_integration.transformer` on the same run, the same manifest kind and config.
Both on `local[2]`. Prints each process's wall time, the medians, the ratio (a)/(b) and (a)'s
lines per second per core. The stream's extra cost is staging the lines under its checkpoint
before the window's run reads them again.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def stream(work: Path, n: int, mode: str) -> list[str]:
    """The stream transformer's command for round `n`: a fresh output folder and manifest."""
    from transformer import PARQUET, RUN, SHRED

    formats = {"shred": SHRED, "parquet": PARQUET}.get(mode, {"transformationType": "widerow"})
    config = {
        "input": {"type": "file", "dir": str(work / "in" / RUN)},
        "output": {"path": str(work / f"stream-{n}")},
        "formats": formats,
    }
    (work / f"s{n}.json").write_text(json.dumps(config))
    flags = ["--iglu-config", str(work / "iglu.json"), "--config", str(work / f"s{n}.json"), "--available-now"]
    module = "spark_integration.stream_transformer"
    return [sys.executable, "-m", module, *flags, "--manifest", f"sqlite:///{work}/s{n}.db"]


def main() -> int:
    from shred_job import compared, interleaved
    from transformer import prepare, transformer

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mode", choices=("widerow", "parquet", "shred"), default="widerow")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="stream-bench-"))
    try:
        lines = prepare(work, args.events, args.mode)
        commands = {
            "stream": lambda n: stream(work, n, args.mode),
            "batch": lambda n: transformer(work, n, args.mode),
        }
        return compared(interleaved(commands, args.rounds), lines)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
