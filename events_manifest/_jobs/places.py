"""The one output rule of every writer (the shred job, the transformer, `events-manifest dedup`,
reports and summaries), checked before the first put or deletion.

An output is absent or of the kind it is written as: a regular file (never a FIFO, a device, a
socket or a folder), or a folder. It is not, does not resolve to (through symbolic or hard links)
and does not lie inside an input, the manifest's file, another output or the bad folder; an output
folder does not hold any of them, and is not the current folder or one of its ancestors. The
manifest's file does not lie inside an input either (its files would be read as input lines).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import attrs

from events_manifest._jobs.storage import FILE, FOLDER, Storage, inside, literal_root, local_path
from events_manifest.errors import ManifestConfigError

INPUT, MANIFEST = "input", "manifest file"
"""The roles of the places a run must leave alone; a manifest is never inside an input either."""


@attrs.frozen
class Place:
    """A path as the user named it (`shown`), in a `role` (`input`, `output folder`, `--unique`,
    `manifest file`, ...); `folder` when it is written (or read) as a folder."""

    role: str
    shown: str
    folder: bool = False


def _real(storage: Storage, place: Place) -> str:
    """Where a place is, qualified, links of its local path resolved; an input glob: its literal
    root (what it can match). Only an input is read as a glob: the rest are written where named."""
    qualified = storage.qualify(place.shown)
    local = local_path(qualified)
    if local is not None:
        qualified = storage.qualify(os.path.realpath(local))
    return literal_root(qualified) if place.role == INPUT else qualified


def check_places(storage: Storage, outputs: Sequence[Place], protected: Sequence[Place]) -> None:
    """Refuse outputs that would overwrite, destroy or read each other or what the run must leave
    alone (`protected`: its inputs, the manifest's files). See the module's docstring."""
    real = {place: _real(storage, place) for place in (*outputs, *protected)}
    same_file = {place: storage.identity(place.shown) for place in (*outputs, *protected)}
    working = set(storage.working_folders())
    for out in outputs:
        _check_kind(storage, out)
        if out.folder and real[out] in working:
            raise ManifestConfigError(
                f"{out.role} [{out.shown}] is the current folder or one of its ancestors: give a folder of its own"
            )
    pairs = [(out, other) for out in outputs for other in (*outputs, *protected) if other is not out]
    for out, other in pairs:
        identical = real[out] == real[other] or (same_file[out] is not None and same_file[out] == same_file[other])
        if identical and other in outputs:
            if out.folder or other.folder:
                raise ManifestConfigError(f"{out.role} and {other.role} are the same [{out.shown}]: give two folders")
            raise ManifestConfigError(
                f"{out.role} [{out.shown}] is also the {other.role} output: give each output a file of its own"
            )
        if identical and not out.folder:
            raise ManifestConfigError(
                f"{out.role} [{out.shown}] is also the {other.role}: give each output a file of its own"
            )
        if identical or inside(real[out], real[other]):
            what = "a folder" if out.folder else "a file"
            raise ManifestConfigError(
                f"{out.role} [{out.shown}] is inside the {other.role} [{other.shown}]: give {what} apart from it"
            )
    for out, other in pairs:
        if out.folder and inside(real[other], real[out]):
            raise ManifestConfigError(
                f"{out.role} [{out.shown}] holds the {other.role} [{other.shown}]: give a folder apart from it"
            )
    for out in outputs:
        if not out.folder and storage.kind(out.shown) is None:
            _check_folder_of(storage, out)
    for kept in protected:
        for source in protected:
            if kept.role == MANIFEST and source.role == INPUT and inside(real[kept], real[source]):
                raise ManifestConfigError(
                    f"{kept.role} [{kept.shown}] is inside the {source.role} [{source.shown}]: its files would be read "
                    "as input lines. Keep the manifest apart from the input"
                )


def _check_kind(storage: Storage, out: Place) -> None:
    found = storage.kind(out.shown)
    if found is None or found == (FOLDER if out.folder else FILE):
        return
    if out.folder:
        raise ManifestConfigError(f"{out.role} [{out.shown}] is a {found}, not a folder: give a folder")
    if found == FOLDER:
        raise ManifestConfigError(f"{out.role} [{out.shown}] is a folder: give a file name")
    raise ManifestConfigError(
        f"{out.role} [{out.shown}] is a {found}, not a regular file: it would be replaced by one. Give a regular "
        "file or a new name; nothing was written"
    )


def _check_folder_of(storage: Storage, out: Place) -> None:
    """A new file's folder must be there to write it into (locally: and writable)."""
    local = local_path(storage.qualify(out.shown))
    if local is None:
        return
    folder = os.path.dirname(local)
    shown = os.path.dirname(out.shown) or "."
    if not os.path.isdir(folder):
        raise ManifestConfigError(f"{out.role} [{out.shown}]: folder {shown} does not exist, create it first")
    if not os.access(folder, os.W_OK):
        raise ManifestConfigError(f"{out.role} [{out.shown}]: folder {shown} is not writable")
