"""Bad rows: the message for each way a line can fail, worded as the reference words them, and the
JSON document a bad row is written as (see docs/shred-job.md).

Every message quotes the whole offending value (`null` when the field is empty), never a cut.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

INVALID_UTF8 = "Line is not valid UTF-8 (its invalid bytes are shown here as U+FFFD)"


def without_messages(errors: pa.Array) -> np.ndarray:
    """Which lines are valid: those with no message (`errors`, a list of messages per line)."""
    valid: np.ndarray = pc.equal(pc.list_value_length(errors), 0).to_numpy(zero_copy_only=False)
    return valid


def quoted(value: str) -> str:
    """A field's value as messages show it: whole, `null` when empty."""
    return value if value else "null"


def too_few_fields(found: int) -> str:
    return f"Line does not match Snowplow enriched event (expected 108+ fields; found {found})"


def too_many_fields(found: int) -> str:
    return f"Line does not match Snowplow enriched event (expected at most 131 fields; found {found})"


def not_a_uuid(value: str) -> str:
    return f"Field [event_id]: [{quoted(value)}] is not a valid UUID"


def not_a_timestamp(field: str, value: str) -> str:
    return f"Field [{field}]: [{quoted(value)}] is not in the expected Redshift/Postgres timestamp format"


JSON_FIELD_NAMES = {"unstruct_event": "ue_properties", "contexts": "context", "derived_contexts": "derived_contexts"}
"""How the reference's messages name the JSON columns: by its own event's fields, not the TSV's."""


def invalid_json(column: str, text: str, reason: str) -> str:
    """A JSON column that is not JSON at all (`reason`: the parser's message)."""
    return f"Field [{JSON_FIELD_NAMES[column]}]: invalid JSON [{text}] with parsing error: {reason}"


def not_self_describing(column: str, text: str, reason: str) -> str:
    """A JSON column that is JSON, but not of the self-describing shape its field needs."""
    return f"Field [{JSON_FIELD_NAMES[column]}]: [{text}] is not self-describing JSON of the expected shape: {reason}"


def manifest_failure(error: Exception) -> str:
    """A valid event whose put failed on its own (after the manifest's retries)."""
    return f"Cross-batch deduplication unexpected failure: {error}"


def unexpected_error(error: Exception) -> str:
    """A line whose checks failed in a way no rule foresaw: the error, its type and message (the
    reference writes the Java exception's message; Python's cannot match it)."""
    return f"Unexpected error while processing the line: {type(error).__name__}: {error}"


def failure_tstamp(moment: datetime) -> str:
    """A bad row's `failure_tstamp`: UTC, milliseconds, `Z` (`2026-11-01T06:00:00.000Z`)."""
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)  # naive means UTC
    return aware.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def bad_row(line: bytes, messages: list[str], failure_tstamp: str) -> str:
    """`{"line":...,"errors":[{"level":"error","message":...}],"failure_tstamp":...}`: the line
    untouched but for invalid UTF-8, shown as U+FFFD."""
    document = {
        "line": line.decode("utf-8", "replace"),
        "errors": [{"level": "error", "message": message} for message in messages],
        "failure_tstamp": failure_tstamp,
    }
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    return _CONTROL_ESCAPE.sub(lambda m: m[1] + m[2].upper(), text) if "\\u00" in text else text


_CONTROL_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*\\u00)([0-9a-f]{2})")
"""A control character's escape, which Spark's JSON writer (Jackson) spells in upper case."""
