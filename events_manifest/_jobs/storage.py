"""Where a job reads and writes: the few file operations its checks, claims, markers and commits
need, behind one interface. `LocalStorage` is this machine's file system; another layer may add
one over another file system (the Spark glue's: Hadoop's, for local, HDFS, S3A, ...).

Paths are qualified before they are compared: `file:/abs/path` locally, `scheme://host/path`
elsewhere, never with a trailing slash.
"""

from __future__ import annotations

import abc
import glob
import hashlib
import os
import stat
import uuid
from collections.abc import Callable, Iterable, Mapping

import attrs

from events_manifest.errors import InputNotWholeError

FILE, FOLDER = "file", "folder"
"""What `Storage.kind` finds at a path; anything else is named (a FIFO, a device, a socket)."""


COPYING = "._COPYING_"
"""The end of a file's name while Hadoop copies it (`hadoop fs -put`, `-cp`, DistCp's
`-direct` aside): renamed to its own name once the copy ends. Spark's readers leave it out."""


def hidden(path: str) -> bool:
    """Whether Hadoop's readers leave a file or folder out by its name (`_*`, `.*`)."""
    return path.rsplit("/", 1)[-1].startswith(("_", "."))


def being_copied(path: str) -> bool:
    """Whether a file's path names one Hadoop is still copying (`COPYING`), not hidden."""
    return path.endswith(COPYING) and not hidden(path)


def unread(
    entries: Mapping[str, int | None], read: Iterable[str], named: Iterable[str] | None = None
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What a read of folders leaves out that may hold events, from what the folders hold (`entries`,
    by qualified path: a file's size, None for a sub-folder) and the files it reads: the files still
    being copied, and the visible sub-folders none of whose files it reads (`Listing.copying`,
    `Listing.nested`). Given the folders and files an input names, only what lies in them: a file
    named alone says nothing of the others beside it."""
    holding: set[str] = set()  # every folder that holds a file read, at any depth
    for folder in {file.rsplit("/", 1)[0] for file in read}:
        while folder not in holding and "/" in folder:
            holding.add(folder)
            folder = folder.rsplit("/", 1)[0]
    roots = None if named is None else set(named)

    def left_out(name: str, size: int | None) -> bool:
        return being_copied(name) if size is not None else not hidden(name) and name not in holding

    found = [name for name, size in entries.items() if left_out(name, size)]
    if roots is not None:
        found = [name for name in found if any(inside(name, root) for root in roots)]
    copying = sorted(name for name in found if entries[name] is not None)
    return tuple(copying), tuple(sorted(name for name in found if entries[name] is None))


def join(folder: str, *names: str) -> str:
    return "/".join([folder.rstrip("/"), *names])


def no_slash(path: str) -> str:
    return path if path.endswith(":/") else path.rstrip("/")


def inside(path: str, folder: str) -> bool:
    """Whether `path` is `folder` or lies below it (both qualified, no trailing slash)."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def local_path(qualified: str) -> str | None:
    """The path on this machine of a qualified `file:` path (`file:/a`, `file:///a`), else None. A
    qualified path is Hadoop's, not a URI: a `#` or `?` in it is part of a name."""
    if not qualified.startswith("file:"):
        return None
    path = qualified.removeprefix("file:")
    if path.startswith("//"):  # an authority, empty in `file:///a`
        path = path[path.find("/", 2) :] if path.find("/", 2) >= 0 else ""
    return path or "/"


def _os_kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return FILE
    if stat.S_ISDIR(mode):
        return FOLDER
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "special file"


@attrs.frozen
class Listing:
    """The files a read of an input takes: their qualified names and sizes."""

    files: tuple[tuple[str, int], ...]
    records: bool = False
    """Whether the files hold whole records (Parquet, a binary column `value`, a record a row), as
    the stream stages them, rather than text, a line a record."""
    folders: tuple[str, ...] = ()
    """The qualified folders these files are all of, when they are their every visible file and none
    holds a sub-folder: a reader may list each folder once rather than look for each file by its name."""

    copying: tuple[str, ...] = ()
    """The files still being copied into these folders (`COPYING`), not read: the input is not whole."""
    nested: tuple[str, ...] = ()
    """The visible sub-folders of these folders whose files are not read (`unread`)."""

    @property
    def bytes(self) -> int:
        return sum(size for _, size in self.files)

    def check_whole(self) -> None:
        """Refuse an input part of which a run would never read: a file a copy is still writing
        (it gets its own name once the run is done), a sub-folder whose files the read leaves out."""
        for names, said in ((self.copying, _COPYING_SAID), (self.nested, _NESTED_SAID)):
            if names:
                first, more = names[0], len(names) - 1
                others = f" (and {more} more)" if more else ""
                raise InputNotWholeError(said.format(first=first, others=others, folder=first.rsplit("/", 1)[0]))

    def identity(self) -> str:
        """What the run ledger records of an input, to tell a rerun of it from another input: the
        count of files and bytes and a digest of every file's name (not its folder: a copy of the
        input elsewhere is the same input) and size."""
        named = sorted((name.rsplit("/", 1)[-1], size) for name, size in self.files)
        digest = hashlib.sha256("".join(f"{name}\t{size}\n" for name, size in named).encode())
        return f"{len(self.files)} files, {self.bytes} bytes, sha256 {digest.hexdigest()[:16]}"


_COPYING_SAID = (
    "input file {first}{others} is still being copied (Hadoop names a file *" + COPYING + " until its copy ends), "
    "and a run now would never read it: run again once the copy ends; if no copy is running, it failed: delete "
    "{first}, or copy the file again"
)
_NESTED_SAID = (
    "input folder {first}{others} is inside a folder the run reads, which reads the files directly in it, not "
    "those of its sub-folders: its files would never be read. Move them up into {folder}, or the folder out of "
    "the input, then run again"
)


class Storage(abc.ABC):
    """A file system as a job uses it. Paths may be relative (to the current folder), absolute or
    qualified; every method accepts any of them."""

    @abc.abstractmethod
    def qualify(self, path: str) -> str:
        """The path with its file system and absolute (`file:/abs/out`), without a trailing slash."""

    @abc.abstractmethod
    def kind(self, path: str) -> str | None:
        """`FILE`, `FOLDER`, another kind's name (`FIFO`, ...), or None when nothing is there."""

    @abc.abstractmethod
    def matches(self, path: str) -> bool:
        """Whether a path (or glob) names at least one file or folder."""

    @abc.abstractmethod
    def children(self, path: str) -> list[str]:
        """The names in a folder, sorted; none when it does not exist."""

    @abc.abstractmethod
    def working_folders(self) -> list[str]:
        """The current folder and its ancestors, qualified."""

    @abc.abstractmethod
    def create_new(self, path: str, text: str) -> bool:
        """Create a file that must not exist yet, atomically where the file system can; False if
        it exists."""

    @abc.abstractmethod
    def read_text(self, path: str) -> str: ...

    @abc.abstractmethod
    def write_text(self, path: str, text: str) -> None:
        """Write a whole file, replacing it: through a temporary file and a rename where the file
        system can, so a reader sees the old or the new text, never a part."""

    @abc.abstractmethod
    def delete(self, path: str) -> None:
        """Delete a file, or a folder and all it holds; nothing when absent."""

    @abc.abstractmethod
    def mkdirs(self, path: str) -> None: ...

    @abc.abstractmethod
    def move(self, source: str, target: str) -> None:
        """Rename (or copy and delete across file systems); makes the target's folder."""

    @abc.abstractmethod
    def files(self, path: str) -> list[str]:
        """Every file below a folder, as paths relative to it (`a/b.txt`), sorted; none when it
        does not exist."""

    def move_file(self, source: str, target: str) -> None:
        """Move one file to `target`, replacing a file there: what a move stopped half-way left
        (on an object store, a copy whose source was not deleted yet) is moved again."""
        if self.exists(target):
            self.delete(target)
        self.move(source, target)

    def record_once(self, path: str, text: str) -> str:
        """A record written once and never replaced (a stream's micro-batch, a position pinned at
        the first start): `text` if this call created it, else what the first writer left, which
        a replay after a crash, or a racing writer, takes as its own."""
        return text if self.create_new(path, text) else self.read_text(path)

    def move_tree(self, source: str, target: str, moved: Callable[[str], None] = lambda name: None) -> None:
        """Move every file below `source` to the same place below `target`, one file at a time
        (`moved` told of each), merging into what is there: repeatable after a kill at any file."""
        for name in self.files(source):
            self.move_file(join(source, name), join(target, name))
            moved(name)

    def exists(self, path: str) -> bool:
        return self.kind(path) is not None

    def subfolders(self, path: str) -> list[str]:
        """The names of the folders in a folder, sorted; none when it does not exist."""
        return [name for name in self.children(path) if self.is_folder(join(path, name))]

    def is_folder(self, path: str) -> bool:
        return self.kind(path) == FOLDER

    def merge(self, source: str, target: str) -> None:
        """`move`, but a folder whose target exists already is merged into it, child by child, and
        a file replaces one there (`move_file`: what a merge stopped half-way left is moved again)."""
        if not self.is_folder(source):
            self.move_file(source, target)
        elif self.exists(target):
            for child in self.children(source):
                self.merge(join(source, child), join(target, child))
        else:
            self.move(source, target)

    def identity(self, path: str) -> tuple[int, int] | None:
        """Device and inode of what is at a local path (through links), for telling two names of
        one file apart from two files; None elsewhere or when nothing is there."""
        local = local_path(self.qualify(path))
        if local is None:
            return None
        try:
            found = os.stat(local)
        except OSError:
            return None
        return found.st_dev, found.st_ino


class LocalStorage(Storage):
    """This machine's file system."""

    def qualify(self, path: str) -> str:
        local = local_path(path) if path.startswith("file:") else path
        return no_slash("file:" + os.path.abspath(local or "."))

    def _os(self, path: str) -> str:
        return local_path(self.qualify(path)) or "/"

    def kind(self, path: str) -> str | None:
        try:
            return _os_kind(os.stat(self._os(path)).st_mode)
        except OSError:
            return None

    def matches(self, path: str) -> bool:
        return bool(glob.glob(self._os(path)))

    def children(self, path: str) -> list[str]:
        try:
            return sorted(os.listdir(self._os(path)))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def working_folders(self) -> list[str]:
        folders, at = [], os.getcwd()
        while True:
            folders.append(self.qualify(at))
            parent = os.path.dirname(at)
            if parent == at:
                return folders
            at = parent

    def create_new(self, path: str, text: str) -> bool:
        target = self._os(path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        try:
            handle = os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        return True

    def read_text(self, path: str) -> str:
        with open(self._os(path), encoding="utf-8") as file:
            return file.read()

    def write_text(self, path: str, text: str) -> None:
        target = self._os(path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        temporary = os.path.join(os.path.dirname(target), f".{os.path.basename(target)}.{uuid.uuid4().hex}.tmp")
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask's mode
        try:
            with os.fdopen(handle, "w", encoding="utf-8", newline="") as file:
                file.write(text)
            os.replace(temporary, target)
        except BaseException:
            if os.path.exists(temporary):
                os.unlink(temporary)
            raise

    def delete(self, path: str) -> None:
        target = self._os(path)
        if os.path.isdir(target) and not os.path.islink(target):
            for root, folders, files in os.walk(target, topdown=False):
                for name in files:
                    os.unlink(os.path.join(root, name))
                for name in folders:
                    full = os.path.join(root, name)
                    os.unlink(full) if os.path.islink(full) else os.rmdir(full)
            os.rmdir(target)
        elif os.path.lexists(target):
            os.unlink(target)

    def mkdirs(self, path: str) -> None:
        os.makedirs(self._os(path), exist_ok=True)

    def files(self, path: str) -> list[str]:
        root = self._os(path)
        found = []
        for folder, _, names in os.walk(root):
            relative = os.path.relpath(folder, root)
            found += [name if relative == "." else f"{relative}/{name}" for name in names]
        return sorted(found)

    def move(self, source: str, target: str) -> None:
        destination = self._os(target)
        os.makedirs(os.path.dirname(destination), exist_ok=True)
        os.rename(self._os(source), destination)

    def move_file(self, source: str, target: str) -> None:
        self.move(source, target)  # a rename replaces a file at the target, atomically


def literal_root(path: str) -> str:
    """The part of a path before its first glob character's folder: what it can match below."""
    parts = path.split("/")
    for n, part in enumerate(parts):
        if set("*?[]{}") & set(part):
            return "/".join(parts[:n]) or "/"
    return path
