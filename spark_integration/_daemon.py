"""Spark's Python daemon for a local session: the same daemon, importing pyspark from the
installed package rather than from the copy of its sources Spark zips inside it, and with the
jobs' engines imported once, before it forks its workers."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

PRELOADED = (
    "events_manifest._snowplow.batch",
    "events_manifest._transformer.batch",
    "events_manifest._dedup.arrow",
)
"""The engines the jobs' tasks call (and what they import: pyarrow, numpy, pandas, botocore),
imported by the daemon so that every worker it forks starts with them: about 0.35 CPU seconds a
worker otherwise, for the 0.4 the daemon spends once."""
NO_THREADS = {"OPENBLAS_NUM_THREADS": "1", "JE_ARROW_MALLOC_CONF": "background_thread:false"}
"""What keeps those imports from starting threads (numpy's OpenBLAS pool, the background
thread of pyarrow's jemalloc): the daemon forks, and a process with threads must not. Its
workers do no linear algebra, and jemalloc then returns memory as it allocates instead."""


def _zipped_in_installed_pyspark(entry: str) -> bool:
    """Whether a `sys.path` entry is one of the zips of a pip-installed pyspark
    (`.../pyspark/python/lib/*.zip`), whose package holds the same sources, compiled once."""
    path = Path(entry)
    package = path.parent.parent.parent
    return path.suffix == ".zip" and package.name == "pyspark" and (package / "__init__.py").is_file()


if __name__ == "__main__":
    sys.path.sort(key=_zipped_in_installed_pyspark)  # stable: the zips last, the rest in order
    os.environ.update(NO_THREADS)
    for module in PRELOADED:
        importlib.import_module(module)
    from pyspark.daemon import manager

    manager()
