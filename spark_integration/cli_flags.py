"""The command-line flags the Spark jobs share: where the manifest is, and how errors are shown."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from typing import Any

from py4j.protocol import Py4JJavaError
from pyspark.errors import AnalysisException, PySparkException

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
    """Run a job's main body; a bad flag, config or input, or a Spark job that failed on its input
    (a corrupt gzip file, an unreadable file), is one line on stderr and exit 1."""
    try:
        return job()
    except ManifestError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
    except AnalysisException as e:
        print(f"{prog}: error: {str(e).splitlines()[0]}", file=sys.stderr)
    except (Py4JJavaError, PySparkException) as e:
        print(f"{prog}: error: {spark_failure(e)}; nothing was written", file=sys.stderr)
    return 1


def _last_words(text: str) -> str:
    """The line that says what went wrong: a Python worker's exception (its traceback's last
    line), else the first line."""
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("SQLSTATE")]
    if "Traceback (most recent call last)" in text and lines:
        return lines[-1]
    return lines[0] if lines else text


def spark_failure(error: Exception) -> str:
    """What a failed Spark job says in one line: the file it was reading, if any, and the root
    cause of the JVM's chain of exceptions."""
    texts = []
    java: Any = getattr(error, "java_exception", None) or getattr(error, "_origin", None)
    while java is not None:
        texts.append(f"{java.getClass().getSimpleName()}: {java.getMessage()}")
        java = java.getCause()
    if not texts:
        texts = [line for line in str(error).splitlines() if line.strip()][:1] or [type(error).__name__]
    reading = next((text for text in texts if "reading file" in text), None)
    root = _last_words(texts[-1])
    if reading is None:
        return f"a Spark job failed: {root}"
    match = re.search(r"reading file (\S+?)\.?( |$)", reading)
    return f"input file {match.group(1) if match else '?'} could not be read ({root})"
