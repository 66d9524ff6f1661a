"""A job's listing of its input (`HadoopStorage.files_of`, once a run) over many small files: their
folder listed once, against each file's size asked alone (`getFileStatus`: on S3 a HEAD request a
file), as it was. Alternated rounds in one warm local session, the median of each, in seconds.

    python benchmarks/listing.py --files 2000 --rounds 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def file_by_file(storage: Any, frame: Any) -> list[tuple[str, int]]:
    """`files_of` as it was: each file's size asked alone."""
    from events_manifest._jobs.face import no_slash

    files = []
    for name in sorted(frame.inputFiles()):
        p = storage._path(storage._uri(name))
        fs = p.getFileSystem(storage._conf)
        files.append((no_slash(str(fs.makeQualified(p).toString())), int(fs.getFileStatus(p).getLen())))
    return files


def main() -> int:
    from spark_integration._spark.storage import HadoopStorage
    from spark_integration.session import local_session

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for n in range(args.files):
            Path(folder, f"part-{n:05d}.txt").write_text("x\n")
        spark = local_session("local[2]", "listing-benchmark")
        storage, frame = HadoopStorage(spark), spark.read.text(folder)
        cases: dict[str, Callable[[], object]] = {
            "files_of, a folder listed once": lambda: storage.files_of(frame),
            "each file's size asked alone, as it was": lambda: file_by_file(storage, frame),
        }
        assert list(storage.files_of(frame).files) == file_by_file(storage, frame)  # warm, and alike
        assert len(file_by_file(storage, frame)) == args.files
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.rounds):
            for name, run in cases.items():
                started = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - started)
        spark.stop()
    medians = {name: statistics.median(found) for name, found in times.items()}
    for name, median in medians.items():
        print(f"{name:40} {median:6.2f} s")
    first, second = medians.values()
    print(f"ratio {first / second:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
