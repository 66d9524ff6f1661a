"""The command-line flags the Spark jobs share: where the manifest is, and how errors are shown."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import re
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import attrs
from py4j.protocol import Py4JJavaError
from pyspark.errors import AnalysisException, PySparkException

from events_manifest import DuplicateStorage, ManifestConfigError, ManifestError, init_storage, parse_config
from events_manifest import _redact as redact
from events_manifest._backends.dynamodb.config_document import DynamoDbConfig
from events_manifest._jobs.run import NOTHING_WRITTEN, one_line
from events_manifest._opening.urls import with_dynamodb_flags
from events_manifest._transformer.config import TransformerConfigError, decode_value, hocon_to_json
from events_manifest.iglu import ResolverConfig


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
            return cls(with_dynamodb_flags(args.manifest, endpoint=args.dynamodb_endpoint, create=create))
        if args.dynamodb_endpoint or create:
            both = hasattr(args, "create_table")
            raise ManifestConfigError(
                f"{'--dynamodb-endpoint and --create-table go' if both else '--dynamodb-endpoint goes'} with a "
                "DynamoDB manifest: --duplicate-storage-config or --manifest dynamodb://TABLE"
            )
        return cls()


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


_ALREADY_SAID = re.compile(r"[;:,]? ?nothing was written\.?$")


def refused(error: ManifestConfigError) -> int:
    """A config refused before anything was read or written: its one line (secrets hidden) on
    stderr, exit 2, as the reference's config errors."""
    print(redact.text(str(error)), file=sys.stderr)
    return 2


def run_job(
    prog: str,
    job: Callable[[], int],
    *,
    verbose: bool = False,
    interrupted: Callable[[], str] = lambda: f"interrupted; {NOTHING_WRITTEN}",
    failed: Callable[[], str] = lambda: NOTHING_WRITTEN,
    on_interrupt: Callable[[], None] | None = None,
    at_once: str = "stopped at once: run it again to finish what it was doing",
    on_error: Callable[[BaseException], None] | None = None,
) -> int:
    """Run a job's main body: any error (a bad flag, config or input, a Spark job that failed on
    its input, one this code did not foresee) is one line on stderr and exit 1, and with `verbose`
    the stack trace before it. The line ends with what `failed` says the job left (what it
    committed before, if anything); `on_error` is told the error first (Sentry). An interruption
    (Ctrl-C) says what `interrupted` says, exit 130; see `_interruptions` for a second one."""
    with _interruptions(prog, verbose, on_interrupt, at_once) as seen:
        try:
            return job()
        except KeyboardInterrupt:
            print(f"{prog}: {interrupted()}", file=sys.stderr)
            return 130
        except Exception as e:
            if verbose:
                traceback.print_exc()
            if on_error is not None and not seen:
                on_error(e)  # Sentry's, before the job's line (the reference's order)
            if seen and on_interrupt is None:  # a call into the JVM the interruption cut, failing after it
                print(f"{prog}: {interrupted()}", file=sys.stderr)
                return 130
            print(f"{prog}: error: {redact.text(_one_line(e, failed()))}", file=sys.stderr)
        return 1


@contextlib.contextmanager
def _interruptions(
    prog: str, verbose: bool, on_interrupt: Callable[[], None] | None, at_once: str
) -> Iterator[list[int]]:
    """Ctrl-C during a command: the first calls `on_interrupt` (a graceful stop), or raises
    KeyboardInterrupt in Python while Spark's jobs are cancelled from a thread of their own (Spark's
    own handler cancels them from inside the signal handler: a reentrant call that breaks py4j's
    connection). A second ends the process at once, exit 130, saying `at_once`. py4j's report of a
    call it interrupted (a traceback) is shown with `verbose` only. Yields the interruptions seen."""
    seen: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield seen
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        if seen:
            print(f"{prog}: {at_once}", file=sys.stderr, flush=True)
            _kill_local_jvm()
            os._exit(130)  # a KeyboardInterrupt now would land inside a call to the JVM and break it
        seen.append(signum)
        if on_interrupt is not None:
            on_interrupt()
            return
        threading.Thread(target=_cancel_spark_jobs, daemon=True).start()
        raise KeyboardInterrupt

    def not_py4j_interrupted(record: logging.LogRecord) -> bool:
        """py4j logs a call cut by an interruption (on the root logger), and once interrupted the
        connection it could not close (on its own), each with its traceback."""
        message = record.getMessage()
        return message not in PY4J_INTERRUPTED and not (seen and message == PY4J_NOT_CLOSED)

    previous = signal.signal(signal.SIGINT, interrupt)
    loggers = [logging.getLogger(), logging.getLogger("py4j.clientserver")]
    for logger in loggers if not verbose else []:
        logger.addFilter(not_py4j_interrupted)
    try:
        yield seen
    finally:
        # Once interrupted, the process is ending: a press during its last steps (the interpreter gives
        # SIGINT back its default as it finalizes) must not end it by the signal, with another status.
        signal.signal(signal.SIGINT, signal.SIG_IGN if seen else previous)
        for logger in loggers:
            logger.removeFilter(not_py4j_interrupted)


def _kill_local_jvm() -> None:
    """The JVM this process started (a local session's), killed with it: left to find its driver
    gone, it prints the traces of the threads that lost it. Under spark-submit the JVM is the
    parent, and ends on its own."""
    from pyspark import SparkContext

    process = getattr(getattr(SparkContext, "_gateway", None), "proc", None)
    if process is not None:
        with contextlib.suppress(OSError):
            process.kill()


PY4J_INTERRUPTED = frozenset({"KeyboardInterrupt while sending command.", "Exception while sending command."})
PY4J_NOT_CLOSED = "Exception occurred while shutting down connection"


def _cancel_spark_jobs() -> None:
    """Cancel the jobs running: at best, as the process ends, on a connection py4j may be closing."""
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    with contextlib.suppress(Exception):
        if context is not None:
            context.cancelAllJobs()


def _one_line(error: Exception, left: str) -> str:
    """The error in one line, then what the job `left` where that is news: after a Spark job's
    failure, or once something was committed (a message that says nothing was written says it once)."""
    if isinstance(error, ManifestError):
        said = str(error)
    elif isinstance(error, AnalysisException):
        said = str(error).splitlines()[0]
    elif isinstance(error, Py4JJavaError | PySparkException):
        said = spark_failure(error)
    else:
        return f"{one_line(error)} (an unexpected error: --verbose shows where it happened)"
    if left == NOTHING_WRITTEN and not isinstance(error, Py4JJavaError | PySparkException):
        return said
    return f"{_ALREADY_SAID.sub('', said)}; {left}"


def last_words(text: str) -> str:
    """The line that says what went wrong: a Python worker's exception (its traceback's last
    line), else the first line."""
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("SQLSTATE")]
    if "Traceback (most recent call last)" in text and lines:
        return lines[-1]
    return lines[0] if lines else text


SHIP_ENVIRONMENT = (
    "give the executors an environment that holds events-manifest (venv-pack a virtual environment where it "
    "is installed, then spark-submit --archives env.tar.gz#environment "
    "--conf spark.pyspark.python=./environment/bin/python)"
)


def executors_environment(text: str) -> str | None:
    """What a failure says about the Python environment of the executors, if it is one: a module
    their Python cannot import, a Python they cannot start, an archive Spark cannot unpack."""
    if match := re.search(r"No module named '([^']+)'", text):
        return f"the executors' Python cannot import {match.group(1)}: {SHIP_ENVIRONMENT}"
    if match := re.search(r'Cannot run program "([^"]+)"', text):
        return f"the executors cannot start Python {match.group(1)} (spark.pyspark.python): {SHIP_ENVIRONMENT}"
    if text.startswith("ExitCodeException") and (match := re.search(r"([^\s/]+): not in gzip format|tar: (.+)", text)):
        return f"Spark could not unpack an archive of --archives ({match.group(0).strip()}): {SHIP_ENVIRONMENT}"
    return None


_NO_COLON = re.compile(r"Relative path in absolute URI: \.?(\S*?:\S*?)(?:\.crc)?(?=$|\s)", re.MULTILINE)


def unreadable_name(text: str) -> str | None:
    """What a failure says about an input file's name Hadoop cannot take as a path, if it is one:
    a ':' (an ISO timestamp), which Hadoop's paths read as a scheme."""
    if match := _NO_COLON.search(text):
        name = match.group(1)
        return (
            f"input file [{name}] has ':' in its name, which Hadoop's paths cannot hold: rename it without ':' "
            f"(such as {name.replace(':', '-')})"
        )
    return None


def spark_failure(error: Exception) -> str:
    """What a failed Spark job says in one line: the file it was reading, if any, and the root
    cause of the JVM's chain of exceptions."""
    texts = []
    java: Any = getattr(error, "java_exception", None) or getattr(error, "_origin", None)
    while java is not None:
        texts.append(f"{java.getClass().getSimpleName()}: {java.getMessage()}")
        java = java.getCause()
    if not texts:  # a Python worker's failure on 3.5 has no JVM chain: its message holds the traceback
        texts = [str(error).strip() or type(error).__name__]
    said = executors_environment("\n".join(texts)) or unreadable_name("\n".join(texts))
    if said is not None:
        return said
    reading = next((match for text in texts if (match := _READING.search(text))), None)
    root = last_words(texts[-1])
    if reading is None:
        return f"a Spark job failed: {root}"
    return f"input file {reading.group(1)} could not be read ({root})"


_READING = re.compile(r"reading file (\S+?)\.?(?= |$)", re.MULTILINE)
_CAUSE = re.compile(r"^\s*Caused by: (?:[\w$]+\.)*([\w$]+: \S.*)$", re.MULTILINE)


def unreadable_file(text: str) -> tuple[str, str] | None:
    """The input file a failed query could not read and the root cause, from its failure's text
    (a stream's failure is text, without the JVM chain a job's has)."""
    reading = _READING.search(text)
    if reading is None:
        return None
    causes = _CAUSE.findall(text)
    return reading.group(1), causes[-1].strip() if causes else "see --verbose"
