"""Spark's Python daemon for a local session: the same daemon, importing pyspark from the
installed package rather than from the copy of its sources Spark zips inside it, and with the
jobs' engines imported once and frozen out of the garbage collector's walks, before it forks its
workers."""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import sys
from collections.abc import Iterable, MutableMapping
from pathlib import Path

PRELOADED = (
    "events_manifest._snowplow.face",
    "events_manifest._transformer.face",
    "events_manifest._dedup.face",
)
"""The engines the jobs' tasks call (and what they import: pyarrow, numpy, pandas, botocore),
imported by the daemon so that every worker it forks starts with them: about 0.35 CPU seconds a
worker otherwise, for the 0.4 the daemon spends once."""


QUIET = "EVENTS_MANIFEST_QUIET_WORKERS"
"""Set (by `local_session`, unless verbose) in the daemon's environment: its stderr and its workers'
go nowhere. A task cancelled (Ctrl-C) leaves each of its workers a broken pipe whose traceback Spark's
daemon prints after the job's own line; a worker's failure reaches the job through Spark anyway."""


def without_threads(environ: MutableMapping[str, str]) -> None:
    """Set what keeps those imports from starting threads: numpy's OpenBLAS pool (Spark itself
    holds a worker to its task's cores) and the background thread of pyarrow's jemalloc, which
    then returns memory as it allocates, after any setting of the user's. The daemon forks, and
    a process with threads must not."""
    environ["OPENBLAS_NUM_THREADS"] = "1"
    jemalloc = environ.get("JE_ARROW_MALLOC_CONF")
    environ["JE_ARROW_MALLOC_CONF"] = f"{jemalloc + ',' if jemalloc else ''}background_thread:false"


def preload(modules: Iterable[str]) -> None:
    """Import each of `modules` that this interpreter has, and each name it offers (a face imports
    a name's module at its first use): workers on an interpreter of the user's choosing without
    them get Spark's daemon as it is."""
    for name in modules:
        with contextlib.suppress(ImportError):
            module = importlib.import_module(name)
            for offered in getattr(module, "__all__", ()):
                getattr(module, offered)


def freeze() -> None:
    """Move every object the daemon holds (pyspark, the engines and what they import) out of the
    garbage collector's sight, once the imports' garbage is collected: a worker Spark's daemon
    forks collects in full after each task, and walked them every time (docs/development.md)."""
    gc.collect()
    gc.freeze()


def _zipped_in_installed_pyspark(entry: str) -> bool:
    """Whether a `sys.path` entry is one of the zips of a pip-installed pyspark
    (`.../pyspark/python/lib/*.zip`), whose package holds the same sources, compiled once."""
    path = Path(entry)
    package = path.parent.parent.parent
    return path.suffix == ".zip" and package.name == "pyspark" and (package / "__init__.py").is_file()


if __name__ == "__main__":
    if os.environ.get(QUIET) == "1":
        os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
    sys.path.sort(key=_zipped_in_installed_pyspark)  # stable: the zips last, the rest in order
    without_threads(os.environ)
    preload(PRELOADED)
    from pyspark.daemon import manager

    freeze()
    manager()
