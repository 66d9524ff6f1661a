"""A job's listing of its input over many small files, each against what it was: the shred job's
sizes of the files it reads (`HadoopStorage.files_of`) from their folder listed once, against each
file's size asked alone (`getFileStatus`: on S3 a HEAD request a file); the transformer's read of a
run's files (`HadoopStorage.frame_of`, planned) as their folder, against by their names (Spark looks
for each on its own: on S3 two or three requests a file). Alternated rounds in one warm local
session, the median of each, in seconds.

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


def by_name(spark: Any, listing: Any) -> Any:
    """`frame_of` as it was: a run's files read by their names."""
    from spark_integration._spark.storage import literal

    return spark.read.text([literal(name) for name, _ in listing.files])


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
        listed = storage.folder_files(folder)
        cases: dict[str, Callable[[], object]] = {
            "files_of, a folder listed once": lambda: storage.files_of(frame),
            "each file's size asked alone, as it was": lambda: file_by_file(storage, frame),
            "frame_of, a run read as its folder": lambda: storage.frame_of(listed).inputFiles(),
            "a run read by its names, as it was": lambda: by_name(spark, listed).inputFiles(),
        }
        assert list(storage.files_of(frame).files) == file_by_file(storage, frame)  # warm, and alike
        assert len(file_by_file(storage, frame)) == args.files
        assert sorted(storage.frame_of(listed).inputFiles()) == sorted(by_name(spark, listed).inputFiles())
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
    pairs = list(medians.items())
    for (name, first), (_, second) in zip(pairs[::2], pairs[1::2], strict=True):
        print(f"ratio {first / second:.2f} ({name.split(',')[0]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
