"""A run's outputs written under a hidden folder of its output folder (`folders.STAGING_PREFIX`),
then moved into place together: a failed run leaves no partial output, on any storage
(`storage.Storage`: a local disk, or Hadoop's file systems through the glue). The shred job's
outputs are moved by `Staging.commit`; a transformer run's are sealed, then delivered
(`_transformer.run.commit`)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence

from events_manifest._jobs.folders import STAGING_PREFIX
from events_manifest._jobs.storage import Storage, join

Move = tuple[str, str, Callable[[str], str] | None]
"""A staged folder, where it goes, and where each of its children goes (see `Staging.commit`)."""


class Staging:
    """Outputs written under a hidden folder of the output folder, then moved into place together."""

    def __init__(self, storage: Storage, folder: str) -> None:
        """A staging folder of its own under `folder` (an absolute path of `storage`)."""
        self.storage = storage
        self.root = join(folder, f"{STAGING_PREFIX}{uuid.uuid4().hex[:12]}")

    def path(self, name: str) -> str:
        return join(self.root, name)

    def commit(self, moves: Sequence[Move]) -> None:
        """Move each staged (source, target, place): the folder itself, or with `place` each of its
        children to `target/place(child)`; several sources merge into one target, and a source
        that was never written adds nothing. Each target gets a `_SUCCESS` marker; then the
        staging folder goes."""
        for source, target, place in moves:
            if not self.storage.exists(source):
                continue
            if place is None:
                self.storage.merge(source, target)
            else:
                for child in self.storage.children(source):
                    self.storage.merge(join(source, child), join(target, place(child)))
        for target in dict.fromkeys(target for _, target, _ in moves):
            self.storage.mkdirs(target)
            self.storage.write_text(join(target, "_SUCCESS"), "")
        self.storage.delete(self.root)

    def abort(self) -> None:
        self.storage.delete(self.root)
