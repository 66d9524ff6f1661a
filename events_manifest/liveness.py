"""Whether the process that holds something (a run, a folder) may still be running.

On the same host the operating system knows; on another host only a sign of life can tell, so
the holders renew theirs (see `events_manifest.runs.Heartbeat`) and callers judge by its age.
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
    return False
