"""The seam between the jobs and the Spark line that runs them (`spark_integration._spark.api`):
each choice gives the same result on every line, and where the running line has both paths, both
are run here."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyspark
import pytest
from pyspark.sql import Observation
from pyspark.sql import functions as F
from pyspark.sql import types as T

from events_manifest import ManifestConfigError
from spark_integration._spark import api
from spark_integration.transformer import main as transformer_main
from tests.commands import in_process
from tests.transformer_helpers import RESOLVER

pytestmark = pytest.mark.every_line


@pytest.mark.parametrize("version", ["3.5.0", "3.5.6", "3.5.2-amzn-1", "4.0.0", "4.0.1", "4.1.0-preview2", "4.9.9"])
def test_the_supported_lines_are_accepted(version: str) -> None:
    api.check_line(version)


@pytest.mark.parametrize("version", ["3.4.4", "3.3.0", "2.4.8", "5.0.0", "unknown"])
def test_a_spark_outside_the_lines_is_refused_in_one_line_naming_them(version: str) -> None:
    with pytest.raises(ManifestConfigError) as refused:
        api.check_line(version)
    message = str(refused.value)
    assert "\n" not in message and version in message and "pyspark 3.5 and 4.x" in message


def test_the_running_spark_is_supported() -> None:
    api.check_line()
    assert api.LOWEST <= api.line(pyspark.__version__) < api.BEYOND


def test_a_job_on_an_unsupported_spark_stops_before_its_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From the command line: one line on stderr, exit 1, nothing written."""
    (tmp_path / "in").mkdir()
    config = {"input": str(tmp_path / "in"), "output": {"path": str(tmp_path / "out")}}
    (tmp_path / "c.hocon").write_text(json.dumps({**config, "formats": {"transformationType": "widerow"}}))
    (tmp_path / "iglu.json").write_text(json.dumps(RESOLVER))
    monkeypatch.setattr(pyspark, "__version__", "3.4.4")
    done = in_process(transformer_main, tmp_path, "--iglu-config", "iglu.json", "--config", "c.hocon")
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1 and "pyspark 3.4.4 is not supported" in done.stderr, done.stderr
    assert 'pip install "events-manifest[spark]" "pyspark>=3.5,<5"' in done.stderr
    assert not (tmp_path / "out").exists()


def test_the_package_refuses_its_first_use_on_an_unsupported_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    import spark_integration

    monkeypatch.setattr(pyspark, "__version__", "3.4.4")
    with pytest.raises(ManifestConfigError, match=r"pyspark 3\.4\.4 is not supported"):
        spark_integration.transform  # noqa: B018


def _lengths(texts: pa.Array) -> pa.Array:
    return pa.StructArray.from_arrays(
        [pa.compute.utf8_length(texts), pa.compute.utf8_upper(texts)], names=["length", "upper"]
    )


OUT = T.StructType([T.StructField("length", T.IntegerType()), T.StructField("upper", T.StringType())])


@pytest.mark.parametrize("use_arrow_udf", [False, pytest.param(True, id="arrow_udf")])
def test_a_column_of_arrow_batches_is_the_same_by_either_path(spark: Any, use_arrow_udf: bool) -> None:
    """`arrow_udf` (4.1 and newer) and `mapInArrow` (every line) give the same rows, the other
    columns kept in their order; a column of the same name is replaced."""
    if use_arrow_udf and not api.ARROW_UDF:
        pytest.skip(f"pyspark {pyspark.__version__} has no arrow_udf: its lines run the mapInArrow path only")
    rows = [(i, None if i % 5 else "old", f"word{i}" * (i % 4)) for i in range(500)]
    df = spark.createDataFrame(rows, "n int, out string, text string").repartition(2)
    done = api.with_arrow_column(df, "out", _lengths, ["text"], OUT, use_arrow_udf=use_arrow_udf)
    assert done.columns == ["n", "out", "text"]
    assert done.schema["out"].dataType == OUT
    found = {row.n: (row.out.length, row.out.upper, row.text) for row in done.collect()}
    assert found == {n: (len(text), text.upper(), text) for n, _, text in rows}
    added = api.with_arrow_column(df, "more", _lengths, ["text"], OUT, use_arrow_udf=use_arrow_udf)
    assert added.columns == ["n", "out", "text", "more"] and added.count() == len(rows)


def test_a_non_deterministic_column_is_computed_once_a_row(spark: Any) -> None:
    """A put is not repeated by the plan: each row reaches the computation once, even when the
    column is read twice."""
    seen = spark.sparkContext.accumulator(0)

    def count(values: pa.Array) -> pa.Array:
        seen.add(len(values))
        return values

    df = spark.range(1_000).select(F.col("id").alias("n"))
    done = api.with_arrow_column(df, "m", count, ["n"], T.LongType(), deterministic=False)
    assert done.select((F.col("m") + F.col("m")).alias("twice")).filter("twice >= 0").count() == 1_000
    assert seen.value == 1_000


def test_nested_nullability_is_kept_in_the_spark_schema() -> None:
    """What Parquet writes as `required`: a list's elements, a map's values, a struct's fields."""
    element = pa.struct([pa.field("sku", pa.string(), nullable=False), pa.field("at", pa.timestamp("us", "UTC"))])
    schema = pa.schema(
        [
            pa.field("items", pa.list_(pa.field("element", element, nullable=False))),
            pa.field("tags", pa.map_(pa.string(), pa.field("value", pa.int64(), nullable=False))),
            pa.field("maybe", pa.list_(pa.string()), nullable=False),
        ]
    )
    found = api.spark_schema(schema)
    items = found["items"].dataType
    assert isinstance(items, T.ArrayType) and items.containsNull is False
    assert isinstance(items.elementType, T.StructType) and items.elementType["sku"].nullable is False
    assert items.elementType["at"].dataType == T.TimestampType()
    tags = found["tags"].dataType
    assert isinstance(tags, T.MapType) and tags.valueContainsNull is False
    maybe = found["maybe"].dataType
    assert isinstance(maybe, T.ArrayType) and maybe.containsNull is True and found["maybe"].nullable is False


@pytest.mark.parametrize("rows", [0, 3, 20_000])
def test_arrow_tables_go_to_spark_and_back(spark: Any, rows: int) -> None:
    table = pa.table({"key": pa.array(range(rows), pa.int64()), "name": [f"n{i}" for i in range(rows)]})
    df = api.from_arrow(spark, table)
    assert df.count() == rows
    back = api.to_arrow(df)
    assert back.schema.names == ["key", "name"] and back.column("key").type == pa.int64()
    assert back.sort_by("key").equals(table)


def test_array_and_struct_metrics_are_python_values_on_every_line(spark: Any) -> None:
    taken = Observation("metrics")
    df = spark.createDataFrame([(1, "a", 10), (2, "b", 20), (3, "a", 30)], "n long, kind string, at long")
    observed = df.observe(
        taken,
        F.count(F.lit(1)).alias("count"),
        api.json_metric(F.sort_array(F.collect_set("kind"))).alias("kinds"),
        api.json_metric(F.min(F.struct("at", "n"))).alias("earliest"),
        api.json_metric(F.min(F.when(F.col("n") > 9, F.struct("at")))).alias("none"),
    )
    assert observed.count() == 3
    found = taken.get
    assert found["count"] == 3
    assert api.metric_value(found["kinds"]) == ["a", "b"]
    assert api.metric_value(found["earliest"]) == {"at": 10, "n": 1}
    assert api.metric_value(found["none"]) is None


def test_package_advice_names_the_running_spark(spark: Any) -> None:
    """The Scala suffix the JVM reports is the one of the Spark jars installed."""
    advice = api.package_advice(spark, "spark-sql-kafka-0-10")
    [core] = (Path(pyspark.__file__).parent / "jars").glob("spark-core_*.jar")
    suffix = core.name.removeprefix("spark-core_").split("-")[0]
    assert advice == f"org.apache.spark:spark-sql-kafka-0-10_{suffix}:{spark.version}"
    assert suffix == ("2.12" if api.line(spark.version) < (4, 0) else "2.13")


def test_a_thread_target_inherits_the_local_properties(spark: Any) -> None:
    context = spark.sparkContext
    context.setLocalProperty("events-manifest.test", "inherited")
    try:
        found: list[str | None] = []
        target = api.thread_target(spark, lambda: found.append(context.getLocalProperty("events-manifest.test")))
        context.setLocalProperty("events-manifest.test", "changed after")
        thread = threading.Thread(target=target)
        thread.start()
        thread.join()
        assert found == ["inherited"]
    finally:
        context.setLocalProperty("events-manifest.test", None)


def test_concurrent_observations_of_one_name_keep_their_own_metrics(spark: Any) -> None:
    """Two jobs of one session in threads (two shred jobs at once) each read their own counts."""

    def count(rows: int) -> int:
        taken = api.observation("rows")
        spark.range(rows, numPartitions=2).observe(taken, F.count(F.lit(1)).alias("n")).write.format("noop").mode(
            "overwrite"
        ).save()
        found: int = taken.get["n"]
        return found

    with ThreadPoolExecutor(2) as pool:
        assert list(pool.map(count, [1_000, 2_000] * 4)) == [1_000, 2_000] * 4
