"""The one place that knows which Spark line is running and picks the API it offers.

The jobs run on pyspark 3.5 and every 4.x (`LOWEST`, `BEYOND`; `check_line` refuses another).
Where lines differ, the choice is made here, from a feature check or the version, and nowhere
else:

- `with_arrow_column`: a column computed from others one Arrow batch at a time, by `arrow_udf`
  (4.1 and newer: only the arguments travel to Python) or by `mapInArrow` (every line: the row
  travels whole and comes back with the column added);
- `to_arrow`: a small result brought to the driver as one Arrow table (`DataFrame.toArrow`, 4.0 and
  newer; the Arrow collect under `toPandas` on 3.5), and `from_arrow`, one made a DataFrame
  (`createDataFrame` takes Arrow in 4.0 and newer; pandas through Arrow on 3.5);
- `spark_schema`: a Spark schema of an Arrow one, with the nullability of list elements and map
  values kept (3.5's `from_arrow_schema` makes every element nullable, which Parquet then writes);
- `observation`: an `Observation` of a name no other has (3.5.0 mixes up the metrics of two
  concurrent queries' observations of one name, SPARK-45656);
- `json_metric`, `metric_value`: an array or struct an `Observation` takes, carried as JSON text
  (3.5 and 4.0 hand such values over as JVM objects; newer lines convert them);
- `thread_target`: a function for a thread of the driver that starts Spark jobs, with the
  caller's local properties (job group, pool) and, from 4.0, its session's tags;
- `scala_suffix`, `package_advice`: the Maven coordinates of a Spark package (Kafka's connector)
  for the Spark that is running, read from its JVM;
- `check_python_streams`: a streaming source written in Python (the Kinesis input) needs the
  Python data source API's stream reader, which 4.0 and newer have; refused on 3.5 in one line.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa
import pyspark
from pyspark import inheritable_thread_target
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import from_arrow_type, to_arrow_schema

from events_manifest.errors import ManifestConfigError
from spark_integration._spark.conf import settings_during

if TYPE_CHECKING:
    from pyspark.sql._typing import UserDefinedFunctionLike

T_ = TypeVar("T_")

LOWEST, BEYOND = (3, 5), (5, 0)
"""The supported lines, as `pyproject.toml` bounds pyspark (`>=3.5,<5`): from the lowest (major,
minor) line up to, not including, the one beyond. The suite proves 3.5, 4.0 and the newest 4.x."""
SUPPORTED_TEXT = "pyspark 3.5 and 4.x"


def line(version: str) -> tuple[int, int]:
    """The (major, minor) line of a Spark version text (`3.5.6`, `4.1.0-preview2`, `3.5.2-amzn-1`)."""
    found = re.match(r"(\d+)\.(\d+)", version)
    if found is None:
        raise ManifestConfigError(f"Spark version [{version}] is not a version: the jobs need {SUPPORTED_TEXT}")
    return int(found[1]), int(found[2])


def check_line(version: str | None = None) -> None:
    """Refuse, in one line that names the supported lines, a Spark (the installed pyspark's
    `version` unless given) the jobs are not built for."""
    version = pyspark.__version__ if version is None else version
    if not LOWEST <= line(version) < BEYOND:
        raise ManifestConfigError(
            f"pyspark {version} is not supported: the jobs run on {SUPPORTED_TEXT}; "
            'install one of them: pip install "events-manifest[spark]" "pyspark>=3.5,<5"'
        )


_arrow_udf: Callable[..., UserDefinedFunctionLike] | None
try:
    from pyspark.sql.pandas.functions import arrow_udf as _arrow_udf
except ImportError:  # before 4.1
    _arrow_udf = None

ARROW_UDF = _arrow_udf is not None
"""Whether this Spark has `arrow_udf` (4.1 and newer): the faster path of `with_arrow_column`."""
ARROW_TABLES = hasattr(DataFrame, "toArrow")
"""Whether this Spark takes and gives Arrow tables (`toArrow`, `createDataFrame` of one: 4.0 and newer)."""
SESSION_TAGS = line(pyspark.__version__) >= (4, 0)
"""Whether `inheritable_thread_target` takes a session, whose tags a thread then inherits (4.0 and newer)."""

Compute = Callable[..., pa.Array]
"""A column of a batch from the batch's argument columns, as many values as rows: a function whose
parameters and result are hinted `pa.Array` (`arrow_udf` reads the hints)."""


def with_arrow_column(
    df: DataFrame,
    name: str,
    compute: Compute,
    arguments: Sequence[str],
    data_type: T.DataType,
    *,
    deterministic: bool = True,
    use_arrow_udf: bool = ARROW_UDF,
) -> DataFrame:
    """`df` with a column `name` of `data_type`: `compute` of the `arguments` columns, a batch at a
    time. A `deterministic=False` column (a manifest put) is never computed twice for a row by the
    plan: `mapInArrow` is a node of its own, and a non-deterministic UDF is not duplicated."""
    if use_arrow_udf:
        assert _arrow_udf is not None
        udf: UserDefinedFunctionLike = _arrow_udf(compute, data_type)
        udf = udf if deterministic else udf.asNondeterministic()
        return df.withColumn(name, udf(*(F.col(argument) for argument in arguments)))
    added = T.StructField(name, data_type)
    fields = [added if field.name == name else field for field in df.schema.fields]
    schema = T.StructType(fields if name in df.columns else [*fields, added])
    arrow_type = to_arrow_schema(T.StructType([added])).field(0).type

    def batches(read: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in read:
            column = compute(*(batch.column(argument) for argument in arguments)).cast(arrow_type)
            columns = [column if field.name == name else batch.column(field.name) for field in schema.fields]
            yield pa.RecordBatch.from_arrays(columns, names=schema.names)

    return df.mapInArrow(batches, schema)


def to_arrow(df: DataFrame) -> pa.Table:
    """`df`'s rows on the driver as one Arrow table (for small results: shared ids)."""
    if ARROW_TABLES:
        table: pa.Table = df.toArrow()
        return table
    schema = to_arrow_schema(df.schema)
    return pa.Table.from_batches(df._collect_as_arrow(), schema=schema)  # type: ignore[operator]  # 3.5's


def from_arrow(spark: SparkSession, table: pa.Table) -> DataFrame:
    """A DataFrame of an Arrow table that the driver holds (shared ids)."""
    if ARROW_TABLES:
        return spark.createDataFrame(table)
    with settings_during(spark, {"spark.sql.execution.arrow.pyspark.enabled": "true"}):
        return spark.createDataFrame(table.to_pandas(), spark_schema(table.schema))


def spark_schema(schema: pa.Schema) -> T.StructType:
    """The Spark schema of an Arrow `schema`, every nullability kept, on every line."""
    return T.StructType([T.StructField(field.name, spark_type(field.type), field.nullable) for field in schema])


def spark_type(arrow: pa.DataType) -> T.DataType:
    """The Spark type of an Arrow type, the nullability of nested fields, elements and values kept."""
    if pa.types.is_struct(arrow):
        return spark_schema(pa.schema(list(arrow)))
    if pa.types.is_list(arrow) or pa.types.is_large_list(arrow):
        return T.ArrayType(spark_type(arrow.value_type), arrow.value_field.nullable)
    if pa.types.is_map(arrow):
        return T.MapType(spark_type(arrow.key_type), spark_type(arrow.item_type), arrow.item_field.nullable)
    return from_arrow_type(arrow)


def observation(name: str) -> Observation:
    """An `Observation` named `name` and a number no other of this process has: two jobs of one
    session (threads) observe their own metrics on every line."""
    return Observation(f"{name} {next(_OBSERVATIONS)}")


_OBSERVATIONS = itertools.count(1)


def json_metric(aggregate: Column) -> Column:
    """An array or struct `aggregate` of an `Observation`, as JSON text: 3.5 and 4.0 hand such
    values over as JVM objects (newer lines as Python values), text is the same on every line."""
    return F.to_json(aggregate)


def metric_value(text: str | None) -> Any:
    """The value of a `json_metric` (None for a null aggregate)."""
    return None if text is None else json.loads(text)


def thread_target(spark: SparkSession, target: Callable[[], T_]) -> Callable[[], T_]:
    """`target` to run in another thread with this thread's local properties and tags."""
    wrapped: Callable[[], T_] = (
        inheritable_thread_target(spark)(target) if SESSION_TAGS else inheritable_thread_target(target)
    )
    return wrapped


def scala_suffix(spark: SparkSession) -> str:
    """The Scala binary version the running Spark is built for (`2.12`, `2.13`), as its JVM says."""
    full: str = spark.sparkContext._jvm.scala.util.Properties.versionNumberString()  # type: ignore[union-attr]
    return ".".join(full.split(".")[:2])


def package_advice(spark: SparkSession, artifact: str) -> str:
    """The `--packages` coordinates of Spark's own `artifact` (`spark-sql-kafka-0-10`) for the
    running Spark: its Scala suffix and its version."""
    return f"org.apache.spark:{artifact}_{scala_suffix(spark)}:{spark.version}"


PYTHON_STREAMS = (4, 0)
"""The first line whose Python data source API reads streams."""


def check_python_streams(spark: SparkSession, what: str) -> None:
    """Refuse, naming `what` needs it, a Python stream source on a line before 4.0."""
    if line(spark.version) < PYTHON_STREAMS:
        raise ManifestConfigError(
            f"{what} needs Spark 4.0 or newer (the Python data source API reads streams from 4.0); this is Spark "
            f'{spark.version}: run on pyspark 4.x (pip install "pyspark>=4.0,<5")'
        )
