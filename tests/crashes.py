"""Kills at every named step of a run, taken in this process: the run goes on to its end (an
unbroken run), and the first time it reaches each step asked for, the files it works on are copied
as they are there. A kill leaves nothing but files: what lived only in the killed process is gone
with it. A continuation puts one copy back in place and runs the command again on it, as after a
kill at that step (docs/development.md, the test pyramid).

While it records, the run signs its folder claims and ledger records as a process that has ended,
so that a continuation finds them a killed run's. The SQLite manifest is copied by SQLite's backup,
its last committed state (what a killed writer's journal rolls back to), and each continuation
opens its copy under a name of its own: Spark's Python workers keep a manifest open by its URL.

Steps reached in Spark's Python workers (`puts`) are not seen here: those, and one step of each
command, are killed for real (SIGKILL to the process group) in `tests/integration`, which proves
that nothing lives only in the killed process.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import sqlite3
from collections.abc import Collection, Iterator
from pathlib import Path

import attrs
import pytest

from events_manifest._jobs import steps
from events_manifest._manifest import liveness
from tests.commands import dead_pid


def ended_process() -> str:
    """`host:pid` of a process of this host that has ended, as the ledger and claims name owners."""
    return f"{socket.gethostname()}:{dead_pid()}"


@attrs.define
class Crashes:
    """The files under `root` (what the job writes: its outputs, its checkpoint; not its input,
    which outlives a kill) and the SQLite manifest at `manifest`, as a run left them at each step."""

    root: Path
    manifest: Path | None
    into: Path
    taken: list[str] = attrs.field(factory=list)
    """The steps copied, in the order the run reached them."""

    @contextlib.contextmanager
    def recording(self, wanted: Collection[str]) -> Iterator[None]:
        """Copy the files the first time the run reaches each of `wanted`; fail if it reaches
        one of them not at all."""
        reached, owner = steps.reached, ended_process()

        def reach(step: str) -> None:
            if step in wanted and step not in self.taken:
                self._copy(step)
            reached(step)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(steps, "reached", reach)
            patch.setattr(liveness, "this_process", lambda: owner)
            yield
        missing = [step for step in wanted if step not in self.taken]
        assert not missing, f"the run never reached {missing}"

    def _copy(self, step: str) -> None:
        copy = self.into / step
        copy.mkdir(parents=True)
        if self.root.exists():
            shutil.copytree(self.root, copy / "files", symlinks=True)
        if self.manifest is not None and self.manifest.exists():
            _backup(self.manifest, copy / "manifest.db")
        self.taken.append(step)

    def restore(self, step: str) -> str | None:
        """Put back the files as the run left them at `step`; the URL of a copy of the manifest as it
        was then (None without one)."""
        copy = self.into / step
        shutil.rmtree(self.root, ignore_errors=True)
        if (copy / "files").exists():
            shutil.copytree(copy / "files", self.root, symlinks=True)
        if self.manifest is None:
            return None
        continued = self.manifest.with_name(f"{self.manifest.stem}-after-{step}.db")
        if (copy / "manifest.db").exists():
            _backup(copy / "manifest.db", continued)
        return f"sqlite:///{continued}"


def _backup(source: Path, target: Path) -> None:
    with contextlib.closing(sqlite3.connect(source)) as src, contextlib.closing(sqlite3.connect(target)) as dst:
        src.backup(dst)
