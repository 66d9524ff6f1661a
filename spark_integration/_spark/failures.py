"""A failed Spark job or stream, typed once where it comes out of the JVM: the commands word what
each kind means for their user (the batch job in one line, the stream with how to go on), and
their tests take the same types.

A job's failure comes as an exception with the JVM's chain of causes (`captured`); a stream's as
the text of its query's failure (`of_query`), without the chain. Both are read by the same rules:
the executors' Python environment, an input file's name Hadoop cannot take, a file that could not
be read, the Kinesis input's own error, else the root cause."""

from __future__ import annotations

import re
from typing import Any

import attrs
from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException

from events_manifest._transformer.face import KinesisInputError, KinesisStreamMissing

__all__ = [
    "ExecutorsEnvironment",
    "Failure",
    "JobFailed",
    "KinesisStopped",
    "UnreadableFile",
    "UnreadableName",
    "captured",
    "last_words",
    "of_query",
]

SHIP_ENVIRONMENT = (
    "give the executors an environment that holds events-manifest (venv-pack a virtual environment where it "
    "is installed, then spark-submit --archives env.tar.gz#environment "
    "--conf spark.pyspark.python=./environment/bin/python)"
)
QUERY_STATE = "\n=== Streaming Query ==="
"""Where Spark's text of a failed query turns from its cause to the query's state."""


@attrs.frozen
class ExecutorsEnvironment:
    """The executors' Python cannot run the job: a module it cannot import, a Python it cannot
    start, an archive of `--archives` Spark cannot unpack."""

    said: str


@attrs.frozen
class UnreadableName:
    """An input file whose name Hadoop's paths cannot hold: a ':' (an ISO timestamp), read as a scheme."""

    name: str

    @property
    def said(self) -> str:
        return (
            f"input file [{self.name}] has ':' in its name, which Hadoop's paths cannot hold: rename it without ':' "
            f"(such as {self.name.replace(':', '-')})"
        )


@attrs.frozen
class UnreadableFile:
    """An input file a task could not read (truncated, not of its compression), and why."""

    file: str
    cause: str

    @property
    def said(self) -> str:
        return f"input file {self.file} could not be read ({self.cause})"


@attrs.frozen
class KinesisStopped:
    """The Kinesis input's own error, which stopped the stream (the stream deleted while read)."""

    said: str


@attrs.frozen
class JobFailed:
    """Any other failure: its root cause."""

    cause: str

    @property
    def said(self) -> str:
        return f"a Spark job failed: {self.cause}"


Failure = ExecutorsEnvironment | UnreadableName | UnreadableFile | KinesisStopped | JobFailed


def captured(error: Py4JJavaError | PySparkException) -> Failure:
    """A failed job's exception (py4j's, or pyspark's), by the JVM's chain of causes: the first
    that names the file it was reading, and the last, the root."""
    texts = []
    java: Any = getattr(error, "java_exception", None) or getattr(error, "_origin", None)
    while java is not None:
        texts.append(f"{java.getClass().getSimpleName()}: {java.getMessage()}")
        java = java.getCause()
    if not texts:  # a Python worker's failure on 3.5 has no JVM chain: its message holds the traceback
        texts = [str(error).strip() or type(error).__name__]
    whole = "\n".join(texts)
    found = _environment(whole) or _name(whole)
    if found is not None:
        return found
    root = last_words(texts[-1])
    reading = next((match for text in texts if (match := _READING.search(text))), None)
    return JobFailed(root) if reading is None else UnreadableFile(reading.group(1), root)


def of_query(text: str) -> Failure:
    """A failed stream's query, by the text of its failure: the Kinesis input's error, a name, a
    file it was reading (its last `Caused by`), else the first words of the failure."""
    if kinesis := _KINESIS.search(text):
        return KinesisStopped(kinesis.group(1))
    if (name := _name(text)) is not None:
        return name
    if reading := _READING.search(text):
        causes = _CAUSE.findall(text)
        return UnreadableFile(reading.group(1), causes[-1].strip() if causes else "see --verbose")
    return JobFailed(last_words(text.split(QUERY_STATE)[0]))


def last_words(text: str) -> str:
    """The line that says what went wrong: a Python worker's exception (its traceback's last
    line), else the first line."""
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("SQLSTATE")]
    if "Traceback (most recent call last)" in text and lines:
        return lines[-1]
    return lines[0] if lines else text


def _environment(text: str) -> ExecutorsEnvironment | None:
    if match := re.search(r"No module named '([^']+)'", text):
        return ExecutorsEnvironment(f"the executors' Python cannot import {match.group(1)}: {SHIP_ENVIRONMENT}")
    if match := re.search(r'Cannot run program "([^"]+)"', text):
        return ExecutorsEnvironment(
            f"the executors cannot start Python {match.group(1)} (spark.pyspark.python): {SHIP_ENVIRONMENT}"
        )
    if text.startswith("ExitCodeException") and (match := re.search(r"([^\s/]+): not in gzip format|tar: (.+)", text)):
        return ExecutorsEnvironment(
            f"Spark could not unpack an archive of --archives ({match.group(0).strip()}): {SHIP_ENVIRONMENT}"
        )
    return None


def _name(text: str) -> UnreadableName | None:
    match = _NO_COLON.search(text)
    return None if match is None else UnreadableName(match.group(1))


_NO_COLON = re.compile(r"Relative path in absolute URI: \.?(\S*?:\S*?)(?:\.crc)?(?=$|\s)", re.MULTILINE)
_READING = re.compile(r"reading file (\S+?)\.?(?= |$)", re.MULTILINE)
_CAUSE = re.compile(r"^\s*Caused by: (?:[\w$]+\.)*([\w$]+: \S.*)$", re.MULTILINE)
_KINESIS = re.compile(rf"(?:{KinesisInputError.__name__}|{KinesisStreamMissing.__name__}): (.+)$", re.MULTILINE)
"""The Kinesis input's own error, in the text of a query it stopped."""
