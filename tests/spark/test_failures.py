"""What a failed Spark job is (`spark_integration._spark.failures.captured`) and says in one line, from a
real failure of a Python worker on the running Spark: 3.5 hands it over with its traceback in the
message, 4.x as a chain of JVM exceptions."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from spark_integration._spark.failures import (
    ExecutorsEnvironment,
    JobFailed,
    KinesisStopped,
    UnreadableFile,
    UnreadableName,
    captured,
    of_query,
)

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
    failure = captured(_failure(spark, ValueError("the batch was wrong")))
    assert failure == JobFailed("ValueError: the batch was wrong")
    assert failure.said == "a Spark job failed: ValueError: the batch was wrong"


def test_a_module_the_workers_cannot_import_is_the_environment_s_advice(spark: Any) -> None:
    failure = captured(_failure(spark, ModuleNotFoundError("No module named 'events_manifest'")))
    assert isinstance(failure, ExecutorsEnvironment)
    said = failure.said
    assert said.startswith("the executors' Python cannot import events_manifest: give the executors an environment")
    assert "--archives env.tar.gz#environment" in said


QUERY = "[STREAM_FAILED] Query [id = 1, runId = 2] terminated with exception: {}\n=== Streaming Query ===\nstate"


def test_a_stream_s_failure_is_typed_by_its_query_s_text() -> None:
    """A stream's failure comes as its query's text, without the JVM's chain: the Kinesis input's
    own error, a name with ':', a file it was reading (its root cause), else the first words."""
    gone = "Kinesis stream s in us-east-1 does not exist (deleted, or never created)"
    assert of_query(QUERY.format(f"x\nKinesisStreamMissing: {gone}\nat y")) == KinesisStopped(gone)
    colon = "java.net.URISyntaxException: Relative path in absolute URI: 2026-11-27T10:00:00.tsv.gz"
    assert of_query(QUERY.format(colon)) == UnreadableName("2026-11-27T10:00:00.tsv.gz")
    torn = "Error while reading file file:/in/half.tsv.gz.\nCaused by: java.io.EOFException: Unexpected end"
    assert of_query(QUERY.format(torn)) == UnreadableFile("file:/in/half.tsv.gz", "EOFException: Unexpected end")
    unsaid = of_query(QUERY.format("Error while reading file file:/in/a.gz. SQLSTATE: 1"))
    assert unsaid == UnreadableFile("file:/in/a.gz", "see --verbose")
    assert of_query(QUERY.format("Job aborted.\nmore")) == JobFailed(
        "[STREAM_FAILED] Query [id = 1, runId = 2] terminated with exception: Job aborted."
    )
