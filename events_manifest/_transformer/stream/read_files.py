"""The files the stream's file source has read, the ones that changed after it read them, and the
sub-folders of its input whose files it does not read (docs/stream-transformer.md, "Guarantees").

Spark's file source takes a file once, by its name, as it was when listed: a file that grows after
that (still being written) or is replaced under the same name is not read again. Which files it
took, and the modification time each had then, is in its own log under the checkpoint
(`sources/0`: a line `v1`, then one JSON object a file, `{"path", "timestamp", "batchId"}`,
compacted every few batches into `<batch>.compact`). Compared with the input folder as it is now,
it names every file that changed after it was read, so that nothing is skipped silently.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from urllib.parse import unquote, urlsplit

import attrs

from events_manifest._jobs.storage import Storage, unread

LOG_VERSION = "v1"
_LOG_FILE = re.compile(r"^(\d+)(\.compact)?$")


def changed_message(path: str, read_ms: int, now_ms: int) -> str:
    """The line that names a file changed after it was read, and what to do about it."""
    return (
        f"input file [{path}] changed after it was read (modified {_time(read_ms)} when read, now {_time(now_ms)}): "
        "a file is read once, as it was when listed, so what changed is not read. To read it, put what was not "
        "read into input.dir under a new name; put files there whole (write them elsewhere, then move them in)"
    )


def nested_message(folder: str) -> str:
    """The line that names a sub-folder of the input whose files the file source does not read."""
    return (
        f"input folder [{folder}] is inside input.dir, whose files the file source reads, not those of its "
        "sub-folders: its files are not read. To read them, move them up into input.dir (under new names if "
        "they clash)"
    )


def path_of(uri: str) -> str:
    """The path a URI of the log names, as a listing gives it (`file:///in/a%201.tsv` is
    `file:/in/a 1.tsv`, Hadoop's form)."""
    parts = urlsplit(uri)
    authority = f"//{parts.netloc}" if parts.netloc else ""
    return f"{parts.scheme}:{authority}{unquote(parts.path)}"


def _time(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


@attrs.define
class ReadFiles:
    """The files of Spark's file source log in `log` (its `sources/0` folder), read as it grows:
    `changed` names those whose modification time differs now."""

    storage: Storage
    log: str
    _read: dict[str, int] = attrs.field(factory=dict, init=False)
    """Each file read: its modification time when listed (milliseconds since the epoch)."""
    _next: int = attrs.field(default=0, init=False)
    """The first batch of the log not read yet."""
    _said: set[tuple[str, int]] = attrs.field(factory=set, init=False)
    _said_nested: set[str] = attrs.field(factory=set, init=False)

    def update(self) -> None:
        """Read the batches the log gained since the last update (from its newest compaction
        that holds them, when the batches before it are compacted away)."""
        if not self.storage.exists(self.log):
            return
        found: dict[int, str] = {}
        for name in self.storage.children(self.log):
            if match := _LOG_FILE.match(name):
                found[int(match.group(1))] = name
        if not found or max(found) < self._next:
            return
        compacted = [batch for batch, name in found.items() if name.endswith(".compact") and batch >= self._next]
        first = max(compacted) if compacted else self._next
        for batch in sorted(b for b in found if b >= first):
            self._take(self.storage.read_text(f"{self.log}/{found[batch]}"), found[batch])
        self._next = max(found) + 1

    def _take(self, text: str, name: str) -> None:
        lines = text.splitlines()
        if not lines or lines[0].strip() != LOG_VERSION:
            raise ValueError(f"{self.log}/{name}: not a file source log of version {LOG_VERSION}")
        for line in lines[1:]:
            if line.strip():
                entry = json.loads(line)
                self._read[path_of(str(entry["path"]))] = int(entry["timestamp"])

    def changed(self, now: Mapping[str, int]) -> list[str]:
        """The lines naming each file read whose modification time in `now` (path: milliseconds)
        differs from when it was read, each change said once."""
        lines = []
        for path, modified in sorted(now.items()):
            read = self._read.get(path)
            if read is not None and read != modified and (path, modified) not in self._said:
                self._said.add((path, modified))
                lines.append(changed_message(path, read, modified))
        return lines

    def nested(self, entries: Mapping[str, int | None]) -> list[str]:
        """The lines naming each sub-folder among what the input folder holds (`entries`: a file's
        size, None for a sub-folder) none of whose files was read (`unread`), each said once; but a
        `column=value` one, which the file source reads as a partition (maybe in a batch to come)."""
        nested = [name for name in unread(entries, self._read)[1] if "=" not in name.rsplit("/", 1)[-1]]
        lines = [nested_message(folder) for folder in nested if folder not in self._said_nested]
        self._said_nested.update(nested)
        return lines

    def folders(self) -> set[str]:
        """The folders of the files read (to list when looking for changes)."""
        return {path.rsplit("/", 1)[0] for path in self._read}
