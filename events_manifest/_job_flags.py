"""The command-line flags the Spark jobs share (`spark_integration`'s commands): where the manifest
is, the configs, the Spark master; read without Spark. How a command runs and shows its errors is
the glue's `_spark.running`."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Generic, TypeVar

import attrs

from events_manifest._backends.dynamodb.config_document import DynamoDbConfig, parse_config
from events_manifest._iglu.resolver import ResolverConfig
from events_manifest._manifest.contract import DuplicateStorage
from events_manifest._opening.handle import check_shared
from events_manifest._opening.urls import init_storage, with_dynamodb_flags
from events_manifest._snowplow.dedup import check_options
from events_manifest._snowplow.shred_run import ShredRequest
from events_manifest._transformer.config import TransformerConfig, TransformerConfigError, decode_value, hocon_to_json
from events_manifest._transformer.stream.stream_config import StreamConfig
from events_manifest.errors import ManifestConfigError
from events_manifest.model import parse_timestamp


def add_manifest_flags(parser: argparse.ArgumentParser, *, required: bool) -> None:
    """`--manifest URL` or `--duplicate-storage-config BASE64` (+ `--dynamodb-endpoint`, `--create-table`)."""
    store = parser.add_mutually_exclusive_group(required=required)
    store.add_argument("--manifest", help="manifest URL: sqlite:///abs/path.db or dynamodb://TABLE?region=R")
    store.add_argument("--duplicate-storage-config", metavar="BASE64", help="base64 amazon_dynamodb_config JSON")
    parser.add_argument("--dynamodb-endpoint", metavar="URL", help="endpoint of a DynamoDB-compatible server")
    parser.add_argument("--create-table", action="store_true", help="create the DynamoDB table if missing")


@attrs.frozen
class ManifestFlags:
    """The manifest the command line names: a URL, or a DynamoDB config, opened when the job runs
    (an unreachable table is then one line, exit 1); nothing when no flag names one."""

    url: str | None = None
    config: DynamoDbConfig | None = None
    endpoint: str | None = None
    create: bool = False

    def open(self) -> str | DuplicateStorage | None:
        if self.config is not None:
            return init_storage(self.config, endpoint_url=self.endpoint, create_if_missing=self.create)
        return self.url

    @property
    def named(self) -> object | None:
        """What names the manifest, before it is opened (None: no manifest)."""
        return self.url or self.config

    @classmethod
    def of(cls, args: argparse.Namespace, read_config: Callable[[str], DynamoDbConfig] = parse_config) -> ManifestFlags:
        """The flags of `add_manifest_flags` (or the transformer's), `--duplicate-storage-config`
        read as the command reads it."""
        create = bool(getattr(args, "create_table", False))
        if args.duplicate_storage_config:
            return cls(
                config=read_config(args.duplicate_storage_config), endpoint=args.dynamodb_endpoint, create=create
            )
        if args.manifest:
            url = with_dynamodb_flags(args.manifest, endpoint=args.dynamodb_endpoint, create=create)
            check_shared(url)  # before Spark starts
            return cls(url)
        if args.dynamodb_endpoint or create:
            both = hasattr(args, "create_table")
            raise ManifestConfigError(
                f"{'--dynamodb-endpoint and --create-table go' if both else '--dynamodb-endpoint goes'} with a "
                "DynamoDB manifest: --duplicate-storage-config or --manifest dynamodb://TABLE"
            )
        return cls()


def add_shred_flags(parser: argparse.ArgumentParser) -> None:
    """The shred job's flags: its folders, the manifest, the options of its run (`ShredFlags.of`)."""
    parser.add_argument("--input-folder", required=True, help="enriched TSV folder, file or glob (gzip too)")
    parser.add_argument("--output-folder", required=True, help="receives atomic-events/ and shredded-types/")
    parser.add_argument("--bad-folder", required=True, help="receives the bad rows")
    add_manifest_flags(parser, required=False)
    parser.add_argument(
        "--iglu-config",
        metavar="BASE64",
        help="base64 Iglu resolver config: every entity is validated against its schema (file or JSON too)",
    )
    parser.add_argument("--etl-time", help="override the batch etl time, e.g. '2026-11-01 06:00:00' (UTC)")
    parser.add_argument("--no-synthetic-dedup", action="store_true", help="keep events sharing an id as they are")
    parser.add_argument("--random-synthetic-ids", action="store_true", help="v4 ids for synthetic duplicates")
    parser.add_argument(
        "--cross-batch-synthetic",
        action="store_true",
        help="also re-identify events whose id an earlier batch had with another fingerprint (a query per event)",
    )
    parser.add_argument(
        "--item-id",
        help="what this run processes, for the run ledger and the processing table (default: the input folder)",
    )
    parser.add_argument(
        "--processing-manifest-table",
        metavar="TABLE",
        help="record the item as processing, then processed, in this table of the manifest's store; "
        "refuse an item processed already or in progress",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace what an earlier run of the job wrote in the output and bad folders",
    )
    parser.add_argument(
        "--rerun",
        action="store_true",
        help="run an item the ledger says was delivered again, on purpose: its events come out again",
    )
    parser.add_argument("--report", metavar="FILE.html", help="also write a self-contained HTML report")


@attrs.frozen
class ShredFlags:
    """The shred job's command line read and checked once (`of`), before any JVM starts or any
    manifest opens, so that a mistyped flag costs no Spark start: the run it asks for (its manifest
    given when the job opens it) and the manifest it names."""

    request: ShredRequest
    manifest: ManifestFlags

    @classmethod
    def of(cls, args: argparse.Namespace) -> ShredFlags:
        iglu = ResolverConfig.parse(args.iglu_config, flag="--iglu-config") if args.iglu_config else None
        etl_time = parse_timestamp(args.etl_time) if args.etl_time else None
        manifest = ManifestFlags.of(args)
        check_options(manifest.named, args.cross_batch_synthetic)
        request = ShredRequest(
            (args.input_folder,),
            args.output_folder,
            args.bad_folder,
            etl_time=etl_time,
            item_id=args.item_id,
            processing_table=args.processing_manifest_table,
            iglu=iglu,
            synthetic_dedup=not args.no_synthetic_dedup,
            random_synthetic_ids=args.random_synthetic_ids,
            cross_batch_synthetic=args.cross_batch_synthetic,
            overwrite=args.overwrite,
            rerun=args.rerun,
            report=args.report,
        )
        return cls(request, manifest)


def add_config_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of the transformer's three values: its config, Iglu's, and the manifest's."""
    parser.add_argument("--iglu-config", required=True, metavar="VALUE", help="Iglu resolver config: base64 or a file")
    parser.add_argument("-c", "--config", required=True, metavar="VALUE", help="HOCON config: base64 or a file")
    store = parser.add_mutually_exclusive_group()
    store.add_argument(
        "--duplicate-storage-config",
        metavar="VALUE",
        help="DynamoDB manifest config for cross-batch dedup: base64 or a file",
    )
    store.add_argument(
        "--manifest", metavar="URL", help="manifest URL for cross-batch dedup (sqlite:///abs/path.db, ...)"
    )
    parser.add_argument("--dynamodb-endpoint", metavar="URL", help="endpoint of a DynamoDB-compatible server")


C = TypeVar("C", TransformerConfig, StreamConfig)


@attrs.frozen
class TransformerFlags(Generic[C]):
    """A transformer's command line read and checked once (`of`), before any JVM starts or any
    manifest opens, so that a problem is one line, exit 2, nothing written: its config, Iglu's, and
    the manifest it names. Both transformer commands run what it holds."""

    config: C
    iglu: ResolverConfig
    manifest: ManifestFlags

    @classmethod
    def of(cls, args: argparse.Namespace, parse: Callable[[str], C]) -> TransformerFlags[C]:
        """The three values of `add_config_flags` decoded as the reference decodes them, `--config`
        by `parse`, and checked together (`check_supported`); any problem is a config error."""
        config = parse(decode_value(args.config, "--config"))
        iglu, manifest = read_iglu(args.iglu_config), ManifestFlags.of(args, read_dynamodb_config)
        config.check_supported(manifest=manifest.named is not None, iglu=True)
        return cls(config, iglu, manifest)


def read_iglu(value: str) -> ResolverConfig:
    """`--iglu-config` decoded as the reference decodes it; any problem is a config error."""
    try:
        return ResolverConfig.parse(hocon_to_json(decode_value(value, "--iglu-config")), flag="--iglu-config")
    except TransformerConfigError:
        raise
    except ManifestConfigError as e:
        raise TransformerConfigError(f"Could not parse iglu resolver config: {e}") from None


def read_dynamodb_config(value: str) -> DynamoDbConfig:
    """`--duplicate-storage-config` as the transformer reads it: base64 or a file, of HOCON."""
    return parse_config(json.loads(hocon_to_json(decode_value(value, "--duplicate-storage-config"))))


def add_common_flags(parser: argparse.ArgumentParser) -> None:
    """`--master` and `--verbose`, which every job takes."""
    parser.add_argument("--master", default="local[2]", help="Spark master when not run by spark-submit")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="show Spark's warnings and, on an error, where it happened"
    )
