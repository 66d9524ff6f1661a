"""The `events-manifest` command line: validate configs, administer tables, put events, dedup records."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from events_manifest import _redact as redact
from events_manifest._backends.dynamodb import ClientOptions, OnDemand, Provisioned, check_table, create_table
from events_manifest._backends.dynamodb.client import admin_options, make_client
from events_manifest._backends.dynamodb.config_document import DynamoDbConfig, parse_config
from events_manifest._manifest import ledger
from events_manifest._opening.urls import manifest_from_url, parse_duration
from events_manifest.errors import ManifestConfigError, ManifestError
from events_manifest.iglu import Resolver
from events_manifest.model import parse_timestamp, to_epoch_seconds

PROG = "events-manifest"


def _config_summary(config: DynamoDbConfig) -> str:
    auth = "static credentials" if config.credentials else "the default AWS credential chain"
    return f"{config.version} config {config.name!r}: table {config.table} in {config.region}, using {auth}"


def _client(args: argparse.Namespace, config: DynamoDbConfig):  # type: ignore[no-untyped-def]
    options = ClientOptions(region=config.region, credentials=config.credentials, endpoint_url=args.endpoint)
    return make_client(admin_options(options))


def _config_validate(args: argparse.Namespace) -> int:
    print("valid: " + _config_summary(parse_config(args.file)))
    return 0


def _table_create(args: argparse.Namespace) -> int:
    config = parse_config(args.config)
    billing = OnDemand() if args.provisioned is None else Provisioned(*args.provisioned)
    create_table(_client(args, config), config.table, billing=billing)
    print(f"ready: table {config.table} is ACTIVE with TTL on attribute ttl")
    return 0


def _table_check(args: argparse.Namespace) -> int:
    config = parse_config(args.config)
    check_table(_client(args, config), config.table, timeout=args.timeout)
    print(f"ok: table {config.table} is ACTIVE with the manifest's keys")
    return 0


def _put(args: argparse.Namespace) -> int:
    etl_time = parse_timestamp(args.etl_tstamp)
    with manifest_from_url(args.manifest) as manifest:
        print("new" if manifest.put(args.event_id, args.fingerprint, etl_time) else "duplicate")
    return 0


def _field_list(text: str) -> list[str]:
    fields = [f.strip() for f in text.split(",")]
    if not all(fields):
        raise argparse.ArgumentTypeError(f"[{text}] is not a comma-separated list of field names")
    return fields


def _runs(args: argparse.Namespace) -> int:
    with manifest_from_url(args.manifest, read_only=True) as manifest:
        found = manifest.runs()
    if not found:
        print("no runs recorded")
    for run in found:
        ended = f", finished {ledger.text(run.finished_seconds)}" if run.finished_seconds is not None else ""
        started = ledger.text(run.started_seconds)
        print(f"{ledger.text(run.etl_seconds)}  {run.state:<8}  started {started}{ended}  {run.item}")
    return 0


def _clean(args: argparse.Namespace) -> int:
    etl_time = parse_timestamp(args.etl_time)
    etl = to_epoch_seconds(etl_time)
    with manifest_from_url(args.manifest) as manifest:
        known = [run for run in manifest.runs() if run.etl_seconds == etl]
        removed = manifest.clean(etl_time, force=args.force)
    what = known[0].describe() if known else f"etl time {ledger.text(etl)}"
    print(f"removed {removed:,} entries of the {what}; its events count as new again")
    return 0


def _processing_list(args: argparse.Namespace) -> int:
    with manifest_from_url(args.manifest, read_only=True) as manifest:
        found = manifest.processing_manifest(args.table, create=False).items()
    if not found:
        print(f"no items in processing table {args.table}")
    for record in found:
        detail = f"  ({record.detail})" if record.detail else ""
        print(f"{ledger.text(record.updated_seconds)}  {record.state:<10}  {record.item}{detail}")
    return 0


def _processing_release(args: argparse.Namespace) -> int:
    with manifest_from_url(args.manifest) as manifest:
        released = manifest.processing_manifest(args.table, create=False).release(args.item)
    if released is None:
        raise ManifestConfigError(f"processing table {args.table} holds no item [{args.item}]: nothing was released")
    print(f"released: {released.describe()}; a run may take it again")
    return 0


def _dedup(args: argparse.Namespace) -> int:
    from events_manifest._dedup.engine import Expiry, Outcome
    from events_manifest._dedup.ndjson import check_paths, run

    if (args.expiry_field is None) != (args.expiry_period is None):
        raise ManifestConfigError("--expiry-field and --expiry-period go together")
    expiry = (
        Expiry(args.expiry_field, parse_duration(args.expiry_period, "--expiry-period")) if args.expiry_field else None
    )
    outputs = {
        Outcome.UNIQUE: args.unique,
        Outcome.DUPLICATE: args.duplicates,
        Outcome.EXPIRED: args.expired,
        Outcome.ERROR: args.errors,
    }
    check_paths(args.input, outputs, args.manifest)  # before the manifest is opened (a new SQLite file is a write)
    resolver = Resolver.parse(args.iglu_config) if args.iglu_config else None
    if resolver is not None:
        resolver.check_reachable()  # an unreachable repository stops the run before it starts
    with manifest_from_url(args.manifest) as manifest:
        counts, etl_time = run(
            manifest,
            args.input,
            outputs,
            key=args.key,
            fingerprint=args.fingerprint,
            expiry=expiry,
            etl_time=parse_timestamp(args.etl_time) if args.etl_time else None,
            progress=sys.stderr,
            chunk_size=args.chunk_size,
            resolver=resolver,
            item=args.item_id,
            rerun=args.rerun,
        )
    width = max(len(f"{n:,}") for n in counts.values())
    lines = [f"etl time {etl_time:%Y-%m-%d %H:%M:%S}"]
    for outcome, path in outputs.items():
        lines.append(f"{outcome.value:<10} {counts[outcome]:>{width},}  -> {path or '(not written)'}")
    print("\n".join(lines), file=sys.stderr if args.unique == "-" else sys.stdout)
    return 0


def _capacity(text: str) -> tuple[int, int]:
    try:
        read, write = (int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"[{text}] is not READ,WRITE capacity units such as 20,100") from None
    return read, write


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="Events manifest: deduplicate events across batches.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what is done")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    config = commands.add_parser("config", help="work with manifest configs").add_subparsers(
        dest="action", required=True, metavar="ACTION"
    )
    validate = config.add_parser("validate", help="check a self-describing DynamoDB config")
    validate.add_argument("file", help="config file (JSON), or the JSON or base64 text itself")
    validate.set_defaults(run=_config_validate)

    table = commands.add_parser("table", help="administer the DynamoDB table").add_subparsers(
        dest="action", required=True, metavar="ACTION"
    )
    for name, run, text in (
        ("create", _table_create, "create the table (if missing), wait until ACTIVE, enable TTL"),
        ("check", _table_check, "check that the table exists, is ACTIVE and has the manifest's keys"),
    ):
        sub = table.add_parser(name, help=text)
        sub.add_argument("--config", required=True, help="config file, JSON or base64")
        sub.add_argument("--endpoint", help="endpoint URL of a DynamoDB-compatible server")
        sub.set_defaults(run=run)
        if name == "create":
            sub.add_argument("--provisioned", type=_capacity, metavar="READ,WRITE", help="provisioned billing")
        else:
            sub.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for ACTIVE")

    put = commands.add_parser("put", help="put one event; prints new or duplicate")
    put.add_argument("event_id")
    put.add_argument("fingerprint")
    put.add_argument("etl_tstamp", help="e.g. '2017-01-26 00:01:25.292' (UTC)")
    put.add_argument("--manifest", required=True, help="memory://, sqlite:///path.db or dynamodb://TABLE?region=R")
    put.set_defaults(run=_put)

    dedup = commands.add_parser(
        "dedup",
        help="sort NDJSON records into unique, duplicates, expired and errors",
        description="Stream NDJSON records through the manifest: each lands in exactly one output.",
    )
    dedup.add_argument("input", help="NDJSON file (.gz too), or - for stdin")
    dedup.add_argument("--key", type=_field_list, required=True, metavar="F[,F]", help="fields that identify a record")
    dedup.add_argument(
        "--fingerprint", type=_field_list, metavar="F[,F]", help="fields that tell copies apart (default: whole record)"
    )
    dedup.add_argument("--expiry-field", metavar="F", help="timestamp field (ISO 8601 or epoch seconds)")
    dedup.add_argument("--expiry-period", metavar="DURATION", help="e.g. 1d: older than latest minus this is expired")
    dedup.add_argument("--manifest", required=True, help="memory://, sqlite:///path.db or dynamodb://TABLE?region=R")
    dedup.add_argument("--etl-time", help="the run's etl time (default: a second of its own, from now on)")
    dedup.add_argument(
        "--item-id", help="what this run processes, for the run ledger (default: the input file's real path)"
    )
    dedup.add_argument(
        "--rerun",
        action="store_true",
        help="run an item the ledger says was delivered again, on purpose: its records come out again",
    )
    dedup.add_argument(
        "--iglu-config",
        metavar="FILE|JSON|BASE64",
        help="Iglu resolver config: every record must be self-describing and valid against its schema",
    )
    dedup.add_argument("--chunk-size", type=int, default=10_000, metavar="N", help="records per manifest call")
    dedup.add_argument("--unique", default="-", metavar="OUT", help="unique records (default: stdout)")
    dedup.add_argument("--duplicates", metavar="OUT", help="duplicate records")
    dedup.add_argument("--expired", metavar="OUT", help="expired records")
    dedup.add_argument("--errors", metavar="OUT", help='{"line": ..., "reason": ...} per record that failed')
    dedup.set_defaults(run=_dedup)

    listed = commands.add_parser("runs", help="list the runs the manifest's ledger holds")
    listed.add_argument("--manifest", required=True, help="memory://, sqlite:///path.db or dynamodb://TABLE?region=R")
    listed.set_defaults(run=_runs)

    clean = commands.add_parser(
        "clean",
        help="remove the entries of one run, whose output was thrown away",
        description="Remove every entry stored with one etl time, and that run's ledger record: its events "
        "count as new again. For a run whose output was thrown away downstream.",
    )
    clean.add_argument("--etl-time", required=True, help="the run's etl time, as `events-manifest runs` shows it")
    clean.add_argument("--manifest", required=True, help="memory://, sqlite:///path.db or dynamodb://TABLE?region=R")
    clean.add_argument(
        "--force", action="store_true", help="clean even an etl time of no known run, or of a run taken for running"
    )
    clean.set_defaults(run=_clean)

    processing = commands.add_parser(
        "processing", help="list or release the items of a processing table (--processing-manifest-table)"
    ).add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, run, text in (
        ("list", _processing_list, "list the items and their state"),
        ("release", _processing_release, "forget an item (a killed run's, or to process it again)"),
    ):
        sub = processing.add_parser(name, help=text)
        if name == "release":
            sub.add_argument("item", help="the item, as `events-manifest processing list` shows it")
        sub.add_argument("--table", required=True, help="the processing table's name")
        sub.add_argument("--manifest", required=True, help="sqlite:///path.db or dynamodb://TABLE?region=R")
        sub.set_defaults(run=run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(message)s")
    try:
        code: int = args.run(args)
    except ManifestError as e:
        print(f"{PROG}: error: {redact.text(str(e))}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"{PROG}: error: {e.strerror or e}{f': {e.filename}' if e.filename else ''}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
