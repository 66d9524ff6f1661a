"""The command-line flags the Spark jobs share: where the manifest is, and how errors are shown."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from pyspark.errors import AnalysisException

from events_manifest import DuplicateStorage, ManifestConfigError, ManifestError, init_storage, parse_config


def add_manifest_flags(parser: argparse.ArgumentParser, *, required: bool) -> None:
    """`--manifest URL` or `--duplicate-storage-config BASE64` (+ `--dynamodb-endpoint`, `--create-table`)."""
    store = parser.add_mutually_exclusive_group(required=required)
    store.add_argument("--manifest", help="manifest URL: sqlite:///abs/path.db or dynamodb://TABLE?region=R")
    store.add_argument("--duplicate-storage-config", metavar="BASE64", help="base64 amazon_dynamodb_config JSON")
    parser.add_argument("--dynamodb-endpoint", metavar="URL", help="endpoint of a DynamoDB-compatible server")
    parser.add_argument("--create-table", action="store_true", help="create the DynamoDB table if missing")


def manifest_of(args: argparse.Namespace) -> str | DuplicateStorage | None:
    """The manifest the flags name, or None when neither flag was given."""
    if args.duplicate_storage_config:
        config = parse_config(args.duplicate_storage_config)
        return init_storage(config, endpoint_url=args.dynamodb_endpoint, create_if_missing=args.create_table)
    if args.dynamodb_endpoint:
        raise ManifestConfigError("--dynamodb-endpoint goes with --duplicate-storage-config")
    manifest: str | None = args.manifest
    return manifest


def run_job(prog: str, job: Callable[[], int]) -> int:
    """Run a job's main body; a bad flag, config or input path is one line on stderr and exit 1."""
    try:
        return job()
    except ManifestError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
    except AnalysisException as e:
        print(f"{prog}: error: {str(e).splitlines()[0]}", file=sys.stderr)
    return 1
