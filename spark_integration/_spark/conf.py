"""Session settings changed for the time of a block, the user's own put back after it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping

from pyspark.sql import SparkSession


@contextlib.contextmanager
def settings_during(spark: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """The session's `settings` for the time of the block, the user's own put back after it."""
    before: dict[str, str | None] = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, old in before.items():
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)
