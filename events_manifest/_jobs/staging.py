"""A run's outputs written under a hidden folder of its output folder (`folders.STAGING_PREFIX`),
sealed, then moved into place together: a failed run leaves no partial output, on any storage
(`storage.Storage`: a local disk, or Hadoop's file systems through the glue), and a run killed once
it sealed is delivered as it was sealed by the next run, not computed again. Every job's run
stages and seals through `Staging.stage_and_seal`, then delivers in its own layout: the shred
job's by `Staging.commit` (below), a transformer run's by `_transformer.run.commit.deliver`.

A shred job's run, in steps (`steps.reached`) that a kill may stop anywhere:

1. every output line written under the staging folder (by the engine);
2. `seal`: what the run is (its item, input and folders), its etl time, what it wrote and its
   summary, in `_sealed.json` inside the staging folder: from here the run is delivered as sealed;
3. the folders marked and, with overwrite, the earlier output deleted (`folders.JobFolders.commit`);
4. `commit`: `_committing` written into the staging folder (the earlier output is gone: not to
   be replaced again), then every staged folder moved into place, each merged into what an earlier
   delivery of the same run moved there, then the staging folder removed.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from events_manifest._jobs import steps
from events_manifest._jobs.folders import SEALED, STAGING_PREFIX
from events_manifest._jobs.storage import Storage, join

Move = tuple[str, str, Callable[[str], str] | None]
"""A staged folder, where it goes, and where each of its children goes (see `Staging.commit`)."""
T = TypeVar("T")
COMMITTING = "_committing"
"""Written into a sealed staging folder once the earlier output is deleted, before the first move."""


class Staging:
    """Outputs written under a hidden folder of the output folder, sealed, then moved into place
    together."""

    def __init__(self, storage: Storage, folder: str, name: str | None = None) -> None:
        """A staging folder of its own under `folder` (an absolute path of `storage`), or the one
        named `name` there, which an earlier run left."""
        self.storage = storage
        self.root = join(folder, name or f"{STAGING_PREFIX}{uuid.uuid4().hex[:12]}")

    def path(self, name: str) -> str:
        return join(self.root, name)

    def name(self, path: str) -> str:
        """The name under the staging folder of `path`, one of its `path`s."""
        if not path.startswith(self.root + "/"):
            raise ValueError(f"internal error: {path} is not in the staging folder {self.root}")
        return path[len(self.root) + 1 :]

    def stage_and_seal(self, stage: Callable[[], T], seal: Callable[[T], None]) -> T:
        """A run's output staged here by `stage`, then sealed by `seal` (each job's record of it):
        every job's run takes these two steps, then delivers. If either fails, the staging folder
        goes and the run is computed again; once sealed, it is delivered as sealed, by this run or,
        after a kill, by the next."""
        try:
            made = stage()
            steps.reached("staged")
            seal(made)
        except BaseException:
            self.abort()
            raise
        return made

    def seal(self, record: Mapping[str, Any]) -> None:
        """Write the run's `record` (JSON) into the staging folder: from now on the run is delivered
        as it was sealed (`sealed`)."""
        self.storage.write_text(self.path(SEALED), json.dumps(record, sort_keys=True) + "\n")
        steps.reached("sealed")

    def sealed(self) -> dict[str, Any] | None:
        """The record `seal` wrote; None when the run never sealed (or its record was cut short)."""
        try:
            found = json.loads(self.storage.read_text(self.path(SEALED)))
        except Exception:
            return None
        return found if isinstance(found, dict) else None

    def committing(self) -> bool:
        """Whether a delivery of this staging folder began: the earlier output it replaces is gone."""
        return self.storage.exists(self.path(COMMITTING))

    def commit(self, moves: Sequence[Move]) -> None:
        """Move each staged (source, target, place): the folder itself, or with `place` each of its
        children to `target/place(child)`; several sources merge into one target, and a source
        that was never written, or is moved already, adds nothing. Each target gets a `_SUCCESS`
        marker; then the staging folder goes. After a kill anywhere, calling it again finishes."""
        self.storage.write_text(self.path(COMMITTING), "")
        for source, target, place in moves:
            if not self.storage.exists(source):
                continue
            if place is None:
                self.storage.merge(source, target)
            else:
                for child in self.storage.children(source):
                    self.storage.merge(join(source, child), join(target, place(child)))
            steps.reached("moving")
        for target in dict.fromkeys(target for _, target, _ in moves):
            self.storage.mkdirs(target)
            self.storage.write_text(join(target, "_SUCCESS"), "")
        self.storage.delete(self.root)

    def abort(self) -> None:
        self.storage.delete(self.root)
