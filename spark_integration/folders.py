"""The shred job's folders: checked before anything is written, claimed while a run writes them,
and replaced (with `--overwrite`) only where the job itself wrote them.

Every check here runs before the first deletion or manifest put: an input that does not exist, an
output or bad folder that is the input, holds it, lies inside it or inside the other, the current
folder or one of its ancestors, a folder another run is writing, a folder the job did not write.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from typing import Any

import attrs

from events_manifest import ManifestConfigError, liveness
from spark_integration import output
from spark_integration.output import Storage

MARKER = "_shred.json"
"""Written into the output and bad folders by every run: what the job may replace there."""
CLAIM = "_claim.json"
"""Held by the run writing a folder (created exclusively), removed when it ends."""
LEGACY_MARKER = output.SUMMARY
"""Output folders written before markers existed hold the job's summary instead."""

_GLOB = set("*?[]{}")


class OutputExistsError(ManifestConfigError):
    """The output or bad folder holds files: choose an empty one, or pass overwrite for the job's own."""


class FolderClaimedError(ManifestConfigError):
    """Another run is writing the output or bad folder."""


class InputMissingError(ManifestConfigError):
    """The input names no file."""


def inside(path: str, folder: str) -> bool:
    """Whether `path` is `folder` or lies below it (both qualified, no trailing slash)."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def literal_root(path: str) -> str:
    """The part of an input path before its first glob character's folder: what it can match below."""
    parts = path.split("/")
    for n, part in enumerate(parts):
        if _GLOB & set(part):
            return "/".join(parts[:n]) or "/"
    return path


Named = tuple[str, str]
"""A path as the user gave it (for messages) and qualified by its file system (for comparisons)."""


def check_layout(inputs: Sequence[Named], output_folder: Named, bad_folder: Named, working: Sequence[str]) -> None:
    """Refuse folders that would overwrite or read each other. `working` are the current folder
    and its ancestors (qualified)."""
    named = {"output folder": output_folder, "bad folder": bad_folder}
    if output_folder[1] == bad_folder[1]:
        raise ManifestConfigError(f"output folder and bad folder are the same [{output_folder[0]}]: give two folders")
    for name, (shown, path) in named.items():
        if path in working:
            raise ManifestConfigError(
                f"{name} [{shown}] is the current folder or one of its ancestors: give a folder of its own"
            )
        for source_shown, source in inputs:
            root = literal_root(source)
            if inside(path, root) or inside(root, path):
                where = "is inside" if inside(path, root) else "holds"
                raise ManifestConfigError(
                    f"{name} [{shown}] {where} the input [{source_shown}]: give a folder apart from the input"
                )
    for (name, (shown, path)), (other_name, (other_shown, other)) in (
        (a, b) for a in named.items() for b in named.items() if a != b
    ):
        if inside(path, other):
            raise ManifestConfigError(f"{name} [{shown}] is inside the {other_name} [{other_shown}]: give two apart")


@attrs.define
class Folder:
    """One of the job's folders, claimed by this run."""

    storage: Storage
    path: str
    shown: str
    role: str
    created: bool
    replaced: list[str] = attrs.field(factory=list)

    def replace_old(self) -> None:
        """Delete what an earlier run of the job wrote here (found by `check_contents`)."""
        for child in self.replaced:
            self.storage.delete(output.join(self.path, child))

    def mark(self, etl_time: str) -> None:
        marker = {"written_by": "events-manifest shred job", "role": self.role, "etl_time": etl_time}
        self.storage.write_text(output.join(self.path, MARKER), json.dumps(marker) + "\n")

    def release(self) -> None:
        self.storage.delete(output.join(self.path, CLAIM))
        if self.created and not self.storage.children(self.path):
            self.storage.delete(self.path)


def _owned(role: str, child: str) -> bool:
    """Whether a run of the job writes a child of this name into a folder of this role (Hadoop's
    local file system adds a hidden `.NAME.crc` beside each file)."""
    name = child.removeprefix(".").removesuffix(".crc") if child.endswith(".crc") else child
    if name in {MARKER, output.RUN_MARKER}:
        return True
    if role == "output":
        return name in {output.ATOMIC, output.SHREDDED, output.SUMMARY}
    return name == "_SUCCESS" or name.startswith("part-")


def check_contents(storage: Storage, folder: Folder, overwrite: bool) -> None:
    """Refuse a folder that holds files, unless `overwrite` and every one of them is the job's
    (a marker says the job wrote there); what is to be replaced goes into `folder.replaced`."""
    children = []
    for child in storage.children(folder.path):
        if child.startswith(".staging-"):  # left by a run that was killed while writing: ours now
            storage.delete(output.join(folder.path, child))
        elif child != CLAIM:
            children.append(child)
    if not children:
        return
    what = f"{folder.role} folder [{folder.shown}]"
    shown = ", ".join(children[:3]) + ("..." if len(children) > 3 else "")
    if not overwrite:
        raise OutputExistsError(f"{what} is not empty ({shown}): choose an empty folder or pass --overwrite")
    if not ({MARKER, LEGACY_MARKER if folder.role == "output" else MARKER} & set(children)):
        raise OutputExistsError(
            f"{what} holds files the shred job did not write ({shown}; no {MARKER}): --overwrite replaces only "
            "the job's own output. Choose another folder, or empty this one yourself"
        )
    foreign = [child for child in children if not _owned(folder.role, child)]
    if foreign:
        raise OutputExistsError(
            f"{what} holds files the shred job did not write ({', '.join(foreign[:3])}): move them away first; "
            "--overwrite replaces only the job's own output"
        )
    folder.replaced = [child for child in children if child != MARKER]


def _alive(claim: dict[str, Any]) -> bool:
    """Whether the run that holds a claim may still be running: always, unless it ran on this
    host and its process is gone (a killed run)."""
    return liveness.gone(f"{claim.get('host')}:{claim.get('pid')}") is not True


def claim(storage: Storage, path: str, shown: str, role: str, run_id: str) -> Folder:
    """Claim a folder for this run (made if missing): a second run into it is refused at once; a
    claim left by a killed run on this host is taken over."""
    created = not storage.exists(path)
    target = output.join(path, CLAIM)
    host, _, pid = liveness.this_process().rpartition(":")
    text = json.dumps({"run": run_id, "host": host, "pid": int(pid), "since": time.time()})
    for _ in range(2):
        if storage.create_new(target, text + "\n"):
            return Folder(storage, path, shown, role, created)
        held = _read_claim(storage, target)
        if held is not None and _alive(held):
            since = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(float(held.get("since", 0))))
            raise FolderClaimedError(
                f"{role} folder [{shown}] is being written by another run (process {held.get('pid')} on "
                f"{held.get('host')}, since {since} UTC): wait for it to end. If no run is writing there, "
                f"delete {target}"
            )
        storage.delete(target)  # the run that held it was killed
    raise FolderClaimedError(f"{role} folder [{shown}]: another run took it at the same moment; retry")


def _read_claim(storage: Storage, target: str) -> dict[str, Any] | None:
    try:
        held = json.loads(storage.read_text(target))
    except Exception:  # written half-way, or removed meanwhile
        return None
    return held if isinstance(held, dict) else None


@attrs.define
class JobFolders:
    """The output and bad folders of one run, checked and claimed (see `prepare`)."""

    folders: list[Folder]

    @classmethod
    def prepare(
        cls, storage: Storage, inputs: Sequence[str], output_path: str, bad_path: str, overwrite: bool
    ) -> JobFolders:
        """Every check before anything is written, then the claims: input, layout, contents."""
        sources = [(source, storage.qualify(source)) for source in inputs]
        for shown, source in sources:
            if not storage.matches(source):
                raise InputMissingError(f"input [{shown}] does not exist (or matches no file): nothing was written")
        out, bad = (output_path, storage.qualify(output_path)), (bad_path, storage.qualify(bad_path))
        check_layout(sources, out, bad, storage.working_folders())
        run_id = uuid.uuid4().hex
        taken: list[Folder] = []
        try:
            for (shown, path), role in ((out, "output"), (bad, "bad")):
                taken.append(claim(storage, path, shown, role, run_id))
                check_contents(storage, taken[-1], overwrite)
        except BaseException:
            for folder in taken:
                folder.release()
            raise
        return cls(taken)

    def commit(self, etl_time: str) -> None:
        """Mark each folder as the job's, then delete what an earlier run wrote there."""
        for folder in self.folders:
            folder.mark(etl_time)
            folder.replace_old()

    def release(self) -> None:
        for folder in self.folders:
            folder.release()
