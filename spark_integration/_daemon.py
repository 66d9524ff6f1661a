"""Spark's Python daemon for a local session: the same daemon, importing pyspark from the
installed package rather than from the copy of its sources Spark zips inside it."""

from __future__ import annotations

import sys
from pathlib import Path


def _zipped_in_installed_pyspark(entry: str) -> bool:
    """Whether a `sys.path` entry is one of the zips of a pip-installed pyspark
    (`.../pyspark/python/lib/*.zip`), whose package holds the same sources, compiled once."""
    path = Path(entry)
    package = path.parent.parent.parent
    return path.suffix == ".zip" and package.name == "pyspark" and (package / "__init__.py").is_file()


if __name__ == "__main__":
    sys.path.sort(key=_zipped_in_installed_pyspark)  # stable: the zips last, the rest in order
    from pyspark.daemon import manager

    manager()
