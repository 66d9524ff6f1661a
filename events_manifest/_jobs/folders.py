"""A job's output folders: checked before anything is written, claimed while a run writes them,
and replaced (with overwrite) only where the job itself wrote them.

Every check here runs before the first deletion or manifest put (with `places.check_places`, the
output rule): a folder another run is writing, a folder holding what the job did not write. What
is the job's own is said by its `Layout`: its marker's name, and the children a folder of each
role gets from it.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from events_manifest._jobs.storage import Storage, join, local_path
from events_manifest._manifest import liveness
from events_manifest.errors import ManifestConfigError

CLAIM = "_claim.json"
"""Held by the run writing a folder (created exclusively), removed when it ends."""
STAGING_PREFIX = ".staging-"
"""Where a run stages what it writes, inside its output folder; left by a killed run, it is the job's."""
SEALED = "_sealed.json"
"""In a staging folder: the run that staged it is sealed, to be delivered as it is (`staging`)."""


class OutputExistsError(ManifestConfigError):
    """The output or bad folder holds files: choose an empty one, or pass overwrite for the job's own."""


class FolderClaimedError(ManifestConfigError):
    """Another run is writing the output or bad folder."""


class InputMissingError(ManifestConfigError):
    """The input names no file."""


def _hadoop_name(child: str) -> str:
    """A child's own name: Hadoop's local file system adds a hidden `.NAME.crc` beside each file."""
    return child.removeprefix(".").removesuffix(".crc") if child.endswith(".crc") else child


@attrs.frozen
class Layout:
    """What a job writes into its folders."""

    job: str
    """How the job names itself in its marker, e.g. `events-manifest shred job`."""
    marker: str
    """The file every run writes into each of its folders: what the job may replace there."""
    owned: Callable[[str, str], bool]
    """Whether a child of this name (a file or folder) in a folder of this role is the job's."""
    legacy_markers: Mapping[str, str] = attrs.field(factory=dict)
    """Per role, a file that says the job wrote the folder before markers existed."""

    def owns(self, role: str, child: str) -> bool:
        name = _hadoop_name(child)
        return name == self.marker or self.owned(role, name)


@attrs.define
class Folder:
    """One of a run's folders, claimed by it."""

    storage: Storage
    path: str
    shown: str
    role: str
    created: bool
    run_id: str = ""
    replaced: list[str] = attrs.field(factory=list)
    sealed: list[str] = attrs.field(factory=list)
    """The staging folders here of runs killed once sealed (`check_contents`), by name."""

    def replace_old(self) -> None:
        """Delete what an earlier run of the job wrote here (found by `check_contents`)."""
        for child in self.replaced:
            self.storage.delete(join(self.path, child))

    def release(self) -> None:
        """Remove this run's claim (not one another run wrote over it, where create is not
        exclusive), and the folder if the run made it and left it empty."""
        target = join(self.path, CLAIM)
        held = _read_claim(self.storage, target)
        if held is None or held.get("run") == self.run_id:
            self.storage.delete(target)
        if self.created and not self.storage.children(self.path):
            self.storage.delete(self.path)


def check_contents(storage: Storage, layout: Layout, folder: Folder, overwrite: bool) -> None:
    """Refuse a folder that holds files, unless `overwrite` and every one of them is the job's
    (a marker says the job wrote there); what is to be replaced goes into `folder.replaced`. A
    staging folder a killed run left is deleted, unless the run sealed it (`folder.sealed`)."""
    children = []
    for child in storage.children(folder.path):
        if child.startswith(STAGING_PREFIX):  # left by a run that was killed: ours now
            if storage.exists(join(folder.path, child, SEALED)):
                folder.sealed.append(child)
            else:
                storage.delete(join(folder.path, child))
        elif child != CLAIM:
            children.append(child)
    if not children:
        return
    what = f"{folder.role} folder [{folder.shown}]"
    shown = ", ".join(children[:3]) + ("..." if len(children) > 3 else "")
    if not overwrite:
        raise OutputExistsError(f"{what} is not empty ({shown}): choose an empty folder or pass --overwrite")
    markers = {layout.marker, layout.legacy_markers.get(folder.role, layout.marker)}
    if not markers & set(children):
        raise OutputExistsError(
            f"{what} holds files the {layout.job} did not write ({shown}; no {layout.marker}): --overwrite replaces "
            "only the job's own output. Choose another folder, or empty this one yourself"
        )
    foreign = [child for child in children if not layout.owns(folder.role, child)]
    if foreign:
        raise OutputExistsError(
            f"{what} holds files the {layout.job} did not write ({', '.join(foreign[:3])}): move them away first; "
            "--overwrite replaces only the job's own output"
        )
    folder.replaced = [child for child in children if child != layout.marker]


Judge = Callable[[dict[str, Any]], bool]
"""Whether the run that holds a claim written on another host is dead (this host cannot see it)."""


def _alive(claim: dict[str, Any], dead_elsewhere: Judge | None = None) -> bool:
    """Whether the run that holds a claim may still be running: on this host, whether its process
    is; on another, unless `dead_elsewhere` says it is dead (by its sign of life in a run ledger)."""
    gone = liveness.gone(owner(claim))
    if gone is None:
        return dead_elsewhere is None or not dead_elsewhere(claim)
    return not gone


def owner(claim: dict[str, Any]) -> str:
    """The process that wrote a claim, as the run ledger names owners (`host:pid`)."""
    return f"{claim.get('host')}:{claim.get('pid')}"


def claim(
    storage: Storage, path: str, shown: str, role: str, run_id: str, *, dead_elsewhere: Judge | None = None
) -> Folder:
    """Claim a folder for this run (made if missing): a second run into it is refused at once; a
    claim left by a killed run is taken over (on this host when its process is gone, on another
    when `dead_elsewhere` says so)."""
    created = not storage.exists(path)
    target = join(path, CLAIM)
    host, _, pid = liveness.this_process().rpartition(":")
    text = json.dumps({"run": run_id, "host": host, "pid": int(pid), "since": time.time()})
    for _ in range(2):
        if storage.create_new(target, text + "\n"):
            return Folder(storage, path, shown, role, created, run_id)
        held = _read_claim(storage, target)
        if held is not None and _alive(held, dead_elsewhere):
            since = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(float(held.get("since", 0))))
            raise FolderClaimedError(
                f"{role} folder [{shown}] is being written by another run (process {held.get('pid')} on "
                f"{held.get('host')}, since {since} UTC): wait for it to end. If no run is writing there, "
                f"delete {local_path(target) or target}"
            )
        storage.delete(target)  # the run that held it was killed
    raise FolderClaimedError(f"{role} folder [{shown}]: another run took it at the same moment; retry")


def drop_dead_claim(storage: Storage, path: str, dead_elsewhere: Judge | None = None) -> bool:
    """Remove the claim a killed run left in a folder (see `claim`); whether no live claim is left
    there."""
    target = join(path, CLAIM)
    held = _read_claim(storage, target)
    if held is not None and _alive(held, dead_elsewhere):
        return False
    storage.delete(target)
    return True


def _read_claim(storage: Storage, target: str) -> dict[str, Any] | None:
    try:
        held = json.loads(storage.read_text(target))
    except Exception:  # written half-way, or removed meanwhile
        return None
    return held if isinstance(held, dict) else None


@attrs.define
class JobFolders:
    """The folders of one run, claimed (see `claim_all`)."""

    storage: Storage
    layout: Layout
    folders: list[Folder]

    @classmethod
    def claim_all(
        cls, storage: Storage, layout: Layout, folders: Sequence[tuple[str, str]], *, overwrite: bool
    ) -> JobFolders:
        """Claim each (path as given, role) folder, then check what it holds (`check_contents`);
        the claims are released again if any is refused."""
        run_id = uuid.uuid4().hex
        taken = cls(storage, layout, [])
        try:
            for shown, role in folders:
                taken.folders.append(claim(storage, storage.qualify(shown), shown, role, run_id))
                check_contents(storage, layout, taken.folders[-1], overwrite)
        except BaseException:
            taken.release()
            raise
        return taken

    def folder(self, role: str) -> Folder:
        """The folder of this role."""
        return next(folder for folder in self.folders if folder.role == role)

    def commit(self, etl_time: str, *, replace: bool = True) -> None:
        """Mark each folder as the job's, then delete what an earlier run wrote there (unless not
        `replace`)."""
        for folder in self.folders:
            if self.layout.marker:  # else a job whose folders hold only what it delivers
                marker = {"written_by": f"events-manifest {self.layout.job}", "role": folder.role, "etl_time": etl_time}
                self.storage.write_text(join(folder.path, self.layout.marker), json.dumps(marker) + "\n")
            if replace:
                folder.replace_old()

    def release(self) -> None:
        for folder in self.folders:
            folder.release()


BEAT_PREFIX = "_alive-"
"""A long-running holder's sign of life beside its claim: `_alive-<epoch seconds>`, a new file each
time (the older ones deleted after), so a reader never finds none while the holder lives."""


def beat(storage: Storage, path: str, now: float) -> None:
    """Leave a sign of life in the claimed folder `path`, then remove the older ones."""
    name = f"{BEAT_PREFIX}{int(now)}"
    storage.create_new(join(path, name), "")
    quiet(storage, path, keep=name)


def quiet(storage: Storage, path: str, keep: str = "") -> None:
    """Remove a holder's signs of life from `path` (but `keep`), before it releases its claim there."""
    for child in storage.children(path):
        if child.startswith(BEAT_PREFIX) and child != keep:
            storage.delete(join(path, child))


def silent_for(storage: Storage, path: str, seconds: float, now: Callable[[], float] = time.time) -> Judge:
    """Whether the holder of the claim on `path` is dead: no sign of life (`beat`, or the claim's
    own time when it left none) for `seconds`."""

    def judge(held: dict[str, Any]) -> bool:
        beats = [
            int(child.removeprefix(BEAT_PREFIX))
            for child in storage.children(path)
            if child.startswith(BEAT_PREFIX) and child.removeprefix(BEAT_PREFIX).isdigit()
        ]
        last = max([*beats, float(held.get("since", 0))])
        return now() - last > seconds

    return judge
