"""The shred job's Spark plan: every line checked, decided and turned into output lines by the
core's engine (`events_manifest._snowplow.batch.Shred`) on two paths, written by two concurrent
Spark jobs under a staging folder, the counts observed on the way."""

from __future__ import annotations

import functools
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from datetime import datetime
from typing import Any

import attrs
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from events_manifest._jobs.face import Staging
from events_manifest._opening.face import ManifestHandle
from events_manifest._snowplow.face import PARTITIONS, Dedup, Shred, Staged, shred_output
from events_manifest.errors import from_record
from events_manifest.iglu import ResolverConfig
from events_manifest.model import to_epoch_seconds
from spark_integration._spark import enriched, udfs
from spark_integration._spark.api import json_metric, metric_value, observation, thread_target


@attrs.frozen
class LinePlan:
    """How a run turns the lines of a batch into output lines (see `output_lines`): one `Shred`
    (checks, decisions, output lines) on two paths."""

    lines: DataFrame
    """The batch's lines (`enriched.load_enriched`): every path reads the files listed once."""
    shred: Shred

    def unshared(self, shared_keys: DataFrame) -> DataFrame:
        """Output lines (`shred_output.LINES_SCHEMA`) of the lines whose id is on no other line (not among
        `shared_keys`, see `BatchScan`): each batch decided where it is read, no shuffle."""
        return udfs.shred_lines(enriched.with_keys(self.lines, shared_keys, among=False), self.shred)

    def shuffled(self, shared_keys: DataFrame | None) -> DataFrame:
        """Output lines of the lines whose id is among `shared_keys` (every line without): brought
        together by id in one shuffle, each id's lines decided in one call."""
        lines = self.lines
        keyed = enriched.keyed(lines) if shared_keys is None else enriched.with_keys(lines, shared_keys, among=True)
        return udfs.shred_grouped(keyed, self.shred)


def line_plan(
    lines: DataFrame,
    etl_time: datetime,
    manifest: ManifestHandle | None,
    failure_tstamp: str,
    *,
    synthetic: bool = True,
    random_ids: bool = False,
    cross_batch_synthetic: bool = False,
    iglu: ResolverConfig | None = None,
) -> LinePlan:
    decide = Dedup(manifest, to_epoch_seconds(etl_time), synthetic, random_ids, cross_batch_synthetic)
    return LinePlan(lines, Shred(decide, failure_tstamp, iglu))


def output_lines(
    lines: DataFrame,
    etl_time: datetime,
    manifest: ManifestHandle | None,
    failure_tstamp: str,
    *,
    shared_keys: DataFrame | None = None,
    synthetic: bool = True,
    random_ids: bool = False,
    cross_batch_synthetic: bool = False,
) -> DataFrame:
    """Every line a run writes of `lines` (`enriched.load_enriched`), and a row per batch's counts:
    `shred_output.LINES_SCHEMA`.

    With `shared_keys` (see `BatchScan`), a line whose id is on no other line is decided where it
    is read, and only the others are shuffled; without, every line is shuffled. Both give the
    same lines: the second path only brings an id's lines together for the same `Shred`.
    """
    plan = line_plan(
        lines,
        etl_time,
        manifest,
        failure_tstamp,
        synthetic=synthetic,
        random_ids=random_ids,
        cross_batch_synthetic=cross_batch_synthetic,
    )
    if shared_keys is None:
        return plan.shuffled(None)
    return plan.unshared(shared_keys).unionByName(plan.shuffled(shared_keys))


def write_lines(spark: SparkSession, staging: Staging, parts: dict[str, Callable[[], DataFrame]]) -> Staged:
    """Write the output lines of each part (a function that plans them) under the staging folder,
    each in a Spark job of its own, all at once: a part is planned while the others run (the
    shuffled part's plan costs the driver about half a second). Returns where they went and their
    counts. The first failure (or an interrupt) stops the other jobs, and is raised once every one
    has ended; a batch the manifest failed (`shred_output.failed`) raises that manifest error."""
    context, tag = spark.sparkContext, f"shred-{uuid.uuid4().hex[:12]}"
    stopped = threading.Event()

    def write(name: str, plan: Callable[[], DataFrame]) -> tuple[str, dict[str, Any]]:
        context.addJobTag(tag)  # this thread's jobs, to cancel them with their running tasks
        context.setInterruptOnCancel(True)
        try:
            tally = observation(f"shred counts: {name}")
            rows = plan().observe(tally, *_counts())
            if stopped.is_set():
                raise RuntimeError(f"shred job: the {name} lines were not written, another part failed")
            return write_outputs(rows, staging.path(name)), tally.get
        finally:
            context.removeJobTag(tag)

    # each with its own copy of the caller's local properties (job group, pool) and tags
    writes = [thread_target(spark, functools.partial(write, *part)) for part in parts.items()]
    with ThreadPoolExecutor(len(parts), thread_name_prefix="shred-write") as pool:
        futures = [pool.submit(run) for run in writes]
        first_failure = None
        try:
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            first_failure = next((f.exception() for f in done if f.exception() is not None), None)
        finally:  # a part failed, or the caller was interrupted: stop the others
            if not all(f.done() and f.exception() is None for f in futures):
                stopped.set()
                while not all(f.done() for f in futures):  # a job may start after a cancel
                    context.cancelJobsWithTag(tag)
                    wait(futures, timeout=0.2)
    if first_failure is not None:  # not the others' interruption it caused
        raise first_failure
    results = [future.result() for future in futures]
    failure = next((c["failure"] for _, c in results if c["failure"] is not None), None)
    if failure is not None:
        raise from_record(failure)
    counts = {name: sum(int(c[name] or 0) for _, c in results) for name in shred_output.COUNTS}  # a sum of none: null
    entities: dict[str, int] = {}
    for group in (group for _, c in results for group in metric_value(c["entities"]) or ()):
        entities[group["type"]] = entities.get(group["type"], 0) + group["lines"]
    return Staged([path for path, _ in results], counts, dict(sorted(entities.items())))


def _counts() -> list[Column]:
    """The summary's counts, taken by Spark while the outputs are written (no pass of their own):
    the sums of the batches' count rows, the lines of each shredded type, and a failure if any."""
    shredded = F.struct("type", "lines")
    entities = json_metric(F.collect_list(F.when(F.col("kind") == shred_output.SHREDDED_KIND, shredded)))
    return [
        *(F.sum(name).alias(name) for name in shred_output.COUNTS),
        entities.alias("entities"),
        F.max("failure").alias("failure"),
    ]


def write_outputs(rows: DataFrame, path: str) -> str:
    """Write output lines (`shred_output.LINES_SCHEMA`) to `path`, partitioned by kind and type
    (`shred_output.staged` finds them), in one job; returns `path`."""
    written = rows.filter(F.col("value").isNotNull()).select(*PARTITIONS, "value")
    written.write.partitionBy(*PARTITIONS).text(path)
    return path
