"""What a failed Spark job says in one line (`spark_integration._cli_flags.spark_failure`), from a
real failure of a Python worker on the running Spark: 3.5 hands it over with its traceback in the
message, 4.x as a chain of JVM exceptions."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from spark_integration._cli_flags import spark_failure

pytestmark = pytest.mark.every_line


def _failure(spark: Any, error: Exception) -> Exception:
    def fail(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        raise error
        yield from batches

    with pytest.raises(Exception, match=type(error).__name__) as caught:
        spark.range(3).mapInArrow(fail, "id long").collect()
    assert isinstance(caught.value, Exception)
    return caught.value


def test_a_worker_s_exception_is_its_last_line(spark: Any) -> None:
    said = spark_failure(_failure(spark, ValueError("the batch was wrong")))
    assert said == "a Spark job failed: ValueError: the batch was wrong"


def test_a_module_the_workers_cannot_import_is_the_environment_s_advice(spark: Any) -> None:
    said = spark_failure(_failure(spark, ModuleNotFoundError("No module named 'events_manifest'")))
    assert said.startswith("the executors' Python cannot import events_manifest: give the executors an environment")
    assert "--archives env.tar.gz#environment" in said
