"""Whether the process that holds something (a run, a folder) may still be running.

On the same host the operating system knows; on another host only a sign of life can tell, so
the holders renew theirs (see `events_manifest._manifest.ledger.Heartbeat`) and callers judge by its age.
"""

from __future__ import annotations

import os
import socket


def this_process() -> str:
    """This process as an owner: `host:pid`."""
    return f"{socket.gethostname()}:{os.getpid()}"


def describe(owner: str) -> str:
    host, _, pid = owner.rpartition(":")
    return f"process {pid} on {host}" if host else "an unknown process"


def gone(owner: str) -> bool | None:
    """True when `owner` ran on this host and its process has ended, False when it is running
    here, None when this host cannot tell (another host, or no owner recorded)."""
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return None
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError):
        return False
    return _zombie(pid)


def _zombie(pid: str) -> bool:
    """A process that ended but that no parent reaped yet (its parent killed first, as a job's
    Python driver under a killed spark-submit JVM): gone, though the system still lists it."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as file:
            return file.read().rsplit(")", 1)[-1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def holders(*paths: str) -> list[str]:
    """The other processes of this host that have any of `paths` open, described (`process 123
    (python -m ...)`); empty where the host does not tell (no `/proc`) or none does."""
    wanted = {os.path.realpath(path) for path in paths}
    found = []
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit() and int(name) != os.getpid()]
    except OSError:
        return []
    for pid in pids:
        try:
            links = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
        except OSError:  # gone meanwhile, or not ours to look at
            continue
        if links & wanted:
            found.append(f"process {pid} ({_command(pid)})")
    return found


def _command(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            words = file.read().split(b"\0")
    except OSError:
        return "?"
    text = " ".join(" ".join(word.decode("utf-8", "replace").split()) for word in words if word)  # one line
    return text if len(text) <= 120 else text[:117] + "..."
