"""`events-manifest dedup`: NDJSON records in, one NDJSON file per outcome out, streaming.

Memory stays constant in the input size: records flow through in chunks, and the run's own pairs
are remembered in a temporary file. Lines are written out exactly as they came in; an error line
is `{"line": ..., "reason": ...}`.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import sys
import time
from collections.abc import Iterator, Mapping
from typing import IO, Any, TextIO

from events_manifest.base import DuplicateStorage
from events_manifest.dedup import Deduplicator, Expiry, Outcome, Unreadable

_PROGRESS_EVERY = 0.5


class _Line(dict[str, Any]):
    """A parsed record that remembers its line, so it is written back byte for byte."""

    text: str


def _open_in(path: str, stack: contextlib.ExitStack) -> IO[str]:
    if path == "-":
        return sys.stdin
    opener = gzip.open if path.endswith(".gz") else open
    return stack.enter_context(opener(path, "rt", encoding="utf-8", newline="\n"))


def _open_out(path: str | None, stack: contextlib.ExitStack) -> TextIO | None:
    if path is None:
        return None
    if path == "-":
        return sys.stdout
    return stack.enter_context(open(path, "w", encoding="utf-8", newline="\n"))


def _parse(lines: IO[str]) -> Iterator[_Line | Unreadable]:
    for number, raw in enumerate(lines, 1):
        text = raw[:-1] if raw.endswith("\n") else raw
        try:
            value = json.loads(text)
        except ValueError as e:
            yield Unreadable(text, f"line {number} is not JSON ({e})")
            continue
        if not isinstance(value, dict):
            yield Unreadable(text, f"line {number} is not a JSON object (got {type(value).__name__})")
            continue
        record = _Line(value)
        record.text = text
        yield record


class _Progress:
    """One self-updating line on a terminal; silent otherwise."""

    def __init__(self, stream: TextIO) -> None:
        self.stream, self.enabled = stream, stream.isatty()
        self.started = self.last = time.monotonic()

    def due(self) -> bool:
        return self.enabled and time.monotonic() - self.last >= _PROGRESS_EVERY

    def update(self, counts: Mapping[Any, int], force: bool = False) -> None:
        if not self.enabled or not (force or self.due()):
            return
        now = self.last = time.monotonic()
        total = sum(counts.values())
        rate = total / max(now - self.started, 1e-9)
        parts = "  ".join(f"{name} {count:,}" for name, count in counts.items())
        self.stream.write(f"\r{total:,} records  {parts}  ({rate:,.0f}/s)\x1b[K")
        self.stream.flush()

    def done(self) -> None:
        if self.enabled:
            self.stream.write("\r\x1b[K")


def run(
    manifest: DuplicateStorage,
    source: str,
    outputs: dict[Outcome, str | None],
    *,
    key: list[str],
    fingerprint: list[str] | None,
    expiry: Expiry | None,
    etl_time: Any,
    progress: TextIO,
    chunk_size: int = 10_000,
) -> tuple[dict[Outcome, int], Any]:
    """Dedup the NDJSON `source` into `outputs`; the count per outcome and the run's etl time."""
    display = _Progress(progress)
    with contextlib.ExitStack() as stack:
        lines = _open_in(source, stack)
        files = {outcome: _open_out(path, stack) for outcome, path in outputs.items()}
        dedup = stack.enter_context(
            Deduplicator(
                manifest,
                key=key,
                fingerprint=fingerprint,
                expiry=expiry,
                etl_time=etl_time,
                on_disk=True,
                chunk_size=chunk_size,
            )
        )

        for decision in dedup.classify(_parse(lines)):
            out = files.get(decision.outcome)
            if out is not None:
                text = decision.record.text
                if decision.outcome is Outcome.ERROR:
                    text = json.dumps({"line": text, "reason": decision.reason}, ensure_ascii=False)
                out.write(text + "\n")
            if display.due():
                display.update(dedup.counts)
        display.update(dedup.counts, force=True)
        display.done()
        return dedup.counts, dedup.etl_time
