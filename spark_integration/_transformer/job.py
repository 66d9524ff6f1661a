"""The transformer's job with Spark's session (`Job`): what every run of one invocation shares is
the core's (`TransformerJob`: its config, manifest, senders, and what tells the ledger and the
output apart from other transformers'); the glue adds the session its runs are read and written
with, and lists a run's input as Spark's text reader takes it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
from pyspark.sql import SparkSession

from events_manifest import DuplicateStorage
from events_manifest._jobs.face import Listing, join
from events_manifest._transformer.face import TransformerConfig, TransformerJob
from events_manifest.iglu import ResolverConfig
from spark_integration._spark.storage import HadoopStorage


@attrs.frozen
class Job(TransformerJob[HadoopStorage]):
    """What every run of one `transform` call shares, with the session it runs on."""

    spark: SparkSession = attrs.field(kw_only=True)

    @classmethod
    def on(
        cls,
        spark: SparkSession,
        storage: HadoopStorage,
        config: TransformerConfig,
        iglu: ResolverConfig | None,
        manifest: str | DuplicateStorage | None,
        *,
        lister: Callable[[str], Listing] | None = None,
        **options: Any,
    ) -> Job:
        """The job of `config` on `spark` (see `TransformerJob.create`); a run's input, unless
        `lister` gives it, is the files directly in its folder that a text read takes."""
        files = lister or (lambda name: storage.folder_files(join(config.input, name)))
        return cls.create(storage, config, iglu, manifest, lister=files, spark=spark, **options)
