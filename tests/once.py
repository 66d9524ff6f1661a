"""What the suite's test processes make once between them, one at a time: pytest-xdist gives each
process its own module- and session-scoped fixtures, so a module whose tests land in two processes
would make its fixture's folder twice (the Spark runs of `tests/spark/shred/test_fidelity.py`, 30
jobs)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


def made_once(factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]) -> Path:
    """The folder `name`, filled by `make` in the first test process that asks for it (under a lock
    in the run's temporary folder, which every process of the run shares); the others wait for it
    and read it. Without xdist, a folder of this process's own."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        root = factory.mktemp(name)
        make(root)
        return root
    shared = factory.getbasetemp().parent  # pytest-N: this run's, above each process's popen-gwK
    root = shared / name
    with exclusive(shared / f"{name}.lock"):
        if not (root / ".made").exists():
            shutil.rmtree(root, ignore_errors=True)  # what a process that failed midway left
            root.mkdir()
            make(root)
            (root / ".made").touch()
    return root


@contextlib.contextmanager
def exclusive(lock: Path) -> Iterator[None]:
    """This process alone among those that ask for the same `lock` file, until the block ends."""
    with lock.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # released as the file closes
        yield
