"""`events-manifest dedup`: NDJSON records in, one NDJSON file per outcome out, streaming.

Memory stays constant in the input size: records flow through in chunks, and the run's own pairs
are remembered in a temporary file. Lines are written out exactly as they came in; an error line
is `{"line": ..., "reason": ...}`. Every path is checked before the run starts, and each output
file is written beside its place and moved there only when the whole input is done: a failed run
leaves the files of an earlier one as they were.
"""

from __future__ import annotations

import contextlib
import glob
import gzip
import json
import os
import sys
import time
import uuid
import zlib
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import IO, Any, TextIO

from events_manifest._dedup.engine import Deduplicator, Expiry, Outcome, Unreadable
from events_manifest._iglu.resolver import Resolver
from events_manifest._jobs.places import INPUT, MANIFEST, Place, check_places
from events_manifest._jobs.storage import Listing, LocalStorage
from events_manifest._manifest import ledger, liveness
from events_manifest._manifest.contract import DuplicateStorage
from events_manifest._opening.urls import manifest_files
from events_manifest.errors import ManifestConfigError, ManifestError

_PROGRESS_EVERY = 0.5
FLAGS = {
    Outcome.UNIQUE: "--unique",
    Outcome.DUPLICATE: "--duplicates",
    Outcome.EXPIRED: "--expired",
    Outcome.ERROR: "--errors",
}
"""The command-line flag of each outcome's output file."""


class _Line(dict[str, Any]):
    """A parsed record that remembers its line, so it is written back byte for byte."""

    text: str


def check_paths(
    source: str, outputs: Mapping[Outcome, str | None], manifest: str | DuplicateStorage | None = None
) -> None:
    """Refuse, before anything is read or written, an input that cannot be read, and outputs the
    output rule refuses (`places.check_places`): one that is not a regular file (a FIFO, a device,
    a folder), or is (or is a link to) the input, the manifest's file or another output."""
    if source != "-":
        if not os.path.exists(source):
            raise ManifestConfigError(f"input [{source}] does not exist")
        if os.path.isdir(source):
            raise ManifestConfigError(f"input [{source}] is a folder: give an NDJSON file (or - for stdin)")
        if not os.access(source, os.R_OK):
            raise ManifestConfigError(f"input [{source}] cannot be read (permissions)")
    written = [Place(FLAGS[outcome], path) for outcome, path in outputs.items() if path is not None and path != "-"]
    protected = [Place(MANIFEST, path) for path in manifest_files(manifest)]
    if source != "-":
        protected.append(Place(INPUT, source))
    check_places(LocalStorage(), written, protected)


def source_identity(source: str) -> str:
    """What the run ledger keeps of the input (its name and size), to refuse another input under
    the same item; nothing for stdin."""
    return "" if source == "-" else Listing(((source, os.path.getsize(source)),)).identity()


def _written_to(outputs: Mapping[Outcome, str | None]) -> str:
    """Where a run delivers, for the ledger: its unique records' file (stdout: nothing to name)."""
    unique = outputs.get(Outcome.UNIQUE)
    return os.path.realpath(unique) if unique is not None and unique != "-" else ""


PARTIAL = ".partial"


def remove_stale_partials(outputs: Mapping[Outcome, str | None]) -> list[str]:
    """Remove the temporary files a killed run left beside these outputs (their writer, named in
    the file's name, is gone); the ones removed."""
    removed = []
    for path in outputs.values():
        if path is None or path == "-":
            continue
        folder, name = os.path.split(os.path.abspath(path))
        for found in glob.glob(os.path.join(glob.escape(folder), f".{glob.escape(name)}.*{PARTIAL}")):
            owner = os.path.basename(found)[len(name) + 2 : -len(PARTIAL)].rsplit(".", 1)[0].replace("@", ":")
            if liveness.gone(owner) is True:
                os.unlink(found)
                removed.append(found)
    return removed


def _open_in(path: str, stack: contextlib.ExitStack) -> IO[bytes]:
    if path == "-":
        return sys.stdin.buffer
    opener: Any = gzip.open if path.endswith(".gz") else open
    return stack.enter_context(opener(path, "rb"))


class _Output:
    """An output file written beside its place and moved there by `publish`; or stdout."""

    def __init__(self, path: str, stack: contextlib.ExitStack) -> None:
        self.path = path
        if path == "-":
            self.stream: TextIO = sys.stdout
            self.temporary: str | None = None
            return
        folder, name = os.path.split(os.path.abspath(path))
        owner = liveness.this_process().replace(":", "@")  # so that a later run knows when it is stale
        self.temporary = os.path.join(folder, f".{name}.{owner}.{uuid.uuid4().hex}{PARTIAL}")
        # os.open with 0o666 gives the file the mode a plain open would (the umask's), unlike mkstemp's 0o600
        handle = os.open(self.temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        self.stream = stack.enter_context(os.fdopen(handle, "w", encoding="utf-8", newline="\n"))
        stack.callback(self.discard)

    def publish(self) -> None:
        if self.temporary is not None:
            self.stream.flush()
            os.fsync(self.stream.fileno())
            self.stream.close()
            os.replace(self.temporary, self.path)
            self.temporary = None

    def discard(self) -> None:
        if self.temporary is not None:
            self.stream.close()
            os.unlink(self.temporary)
            self.temporary = None


def _parse(lines: IO[bytes], resolver: Resolver | None = None) -> Iterator[_Line | Unreadable]:
    for number, raw in enumerate(lines, 1):
        raw = raw[:-1] if raw.endswith(b"\n") else raw
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            shown = raw.decode("utf-8", "backslashreplace")
            yield Unreadable(
                shown, f"line {number} is not UTF-8 ({e.reason} at byte {e.start}; shown with \\x escapes)"
            )
            continue
        try:
            value = json.loads(text)
        except ValueError as e:
            yield Unreadable(text, f"line {number} is not JSON ({e})")
            continue
        except RecursionError:
            yield Unreadable(text, f"line {number} is nested too deeply to be read")
            continue
        if not isinstance(value, dict):
            yield Unreadable(text, f"line {number} is not a JSON object (got {type(value).__name__})")
            continue
        if resolver is not None:
            if set(value) != {"schema", "data"}:
                yield Unreadable(text, f'line {number} is not a self-describing record {{"schema": ..., "data": ...}}')
                continue
            failures = resolver.validate(value)
            if failures:
                yield Unreadable(text, f"line {number} does not validate: {'; '.join(failures)}")
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


class RunFailedError(ManifestError):
    """A dedup run stopped after it started: the manifest holds some of its records under its etl time."""


def run(
    manifest: DuplicateStorage,
    source: str,
    outputs: dict[Outcome, str | None],
    *,
    key: list[str],
    fingerprint: list[str] | None,
    expiry: Expiry | None,
    etl_time: datetime | None,
    progress: TextIO,
    chunk_size: int = 10_000,
    resolver: Resolver | None = None,
    item: str | None = None,
    rerun: bool = False,
) -> tuple[dict[Outcome, int], datetime]:
    """Dedup the NDJSON `source` into `outputs`; the count per outcome and the run's etl time.

    With a `resolver`, every record must be a self-describing JSON that validates against its
    schema; any other is an error record, with what failed.

    The run is recorded in the manifest's ledger under `item` (default: the input's real path), so
    running the same command again after a failure finishes it (same etl time) instead of losing
    its records; a finished item is refused unless `rerun`.
    """
    check_paths(source, outputs, manifest)
    remove_stale_partials(outputs)
    display = _Progress(progress)
    with contextlib.ExitStack() as stack:
        lines = _open_in(source, stack)
        files = {outcome: _Output(path, stack) for outcome, path in outputs.items() if path is not None}
        dedup = Deduplicator(
            manifest,
            key=key,
            fingerprint=fingerprint,
            expiry=expiry,
            item=item or (None if source == "-" else os.path.realpath(source)),
            etl_time=etl_time,
            source=source_identity(source),
            output=_written_to(outputs),
            rerun=rerun,
            on_disk=True,
            chunk_size=chunk_size,
        )
        run = dedup.start()
        try:
            for decision in dedup.classify(_parse(lines, resolver)):
                out = files.get(decision.outcome)
                if out is not None:
                    text = decision.record.text
                    if decision.outcome is Outcome.ERROR:
                        text = json.dumps({"line": text, "reason": decision.reason}, ensure_ascii=False)
                    out.stream.write(text + "\n")
                if display.due():
                    display.update(dedup.counts)
            for out in files.values():
                out.publish()
        except (OSError, EOFError, zlib.error, ManifestError) as e:
            dedup.close(finished=False)
            again = (
                "run the same command again"
                if source != "-" or item
                else f"run it again with --etl-time '{ledger.text(run.etl_seconds)}'"
            )
            reason = " ".join(str(e).split())
            raise RunFailedError(
                f"{reason}. The run stopped after it started (etl time {ledger.text(run.etl_seconds)}) and replaced no "
                f"output file: once the cause is fixed, {again} to finish it"
            ) from e
        except BaseException:
            dedup.close(finished=False)
            raise
        dedup.close()
        display.update(dedup.counts, force=True)
        display.done()
        return dedup.counts, dedup.etl_time
