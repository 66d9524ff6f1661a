"""How a Spark command runs: any error is one line on stderr (a config refused: exit 2; anything
else: exit 1, with what the job left), Ctrl-C a graceful stop or an interruption (exit 130), a
second Ctrl-C out at once. What a failed Spark job says is `_spark.failures`'."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from types import FrameType

from py4j.protocol import Py4JJavaError
from pyspark.errors import AnalysisException, PySparkException

from events_manifest import ManifestConfigError, ManifestError
from events_manifest._jobs.face import NOTHING_WRITTEN, one_line, redact
from spark_integration._spark.failures import captured

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
        said = captured(error).said
    else:
        return f"{one_line(error)} (an unexpected error: --verbose shows where it happened)"
    if left == NOTHING_WRITTEN and not isinstance(error, Py4JJavaError | PySparkException):
        return said
    return f"{_ALREADY_SAID.sub('', said)}; {left}"
