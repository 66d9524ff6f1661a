"""The CPU seconds of a command and every process it starts, by kind: the JVM (its JIT compiler
threads apart), Spark's Python workers, the rest. Read from /proc while the command runs (Linux
only; elsewhere no figures): a whole-process run's profile, which a warm session's cannot show.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

import attrs

PROC = Path("/proc")
DAEMONS = ("pyspark.daemon", "spark_integration._spark.daemon")
"""The modules Spark's Python workers are forked from: Spark's own, and a local session's
(`spark_integration.session.LOCAL_DAEMON`)."""
THREAD_ROLES = (
    ("py4j calls", ("Thread-",)),
    ("tasks", ("Executor task",)),
    ("JIT", ("C1 CompilerThre", "C2 CompilerThre")),
    ("GC", ("VM Thread", "GC Thread", "G1 ")),
    (
        "scheduling",
        ("dag-scheduler", "ResultQueryStag", "shuffle-exchang", "broadcast-excha", "spark-listener", "task-result-get"),
    ),
    ("streams", ("stream executio",)),
)
"""What a JVM's threads do, by the start of their names (Linux keeps 15 characters): for Spark's,
the driver's answers to Python's calls through py4j (`Thread-N`), the executors' tasks, the JIT
compilers, the garbage collector, the scheduling of jobs and stages, the streaming queries."""


@attrs.frozen
class Process:
    """A process of a measured tree as last sampled: its name (`comm`), command line and CPU seconds."""

    name: str
    command: str
    cpu: float


@attrs.frozen
class Sampled:
    """A command run to its end, and what its tree spent: each process (by pid) and each JVM
    thread (by pid and thread id: its role in `THREAD_ROLES`, else `other`, and CPU seconds).
    Empty where /proc is not."""

    done: subprocess.CompletedProcess[str]
    processes: dict[int, Process]
    threads: dict[tuple[int, str], tuple[str, float]]


def sampled(command: list[str], cwd: Path, environment: Mapping[str, str] | None = None, every: float = 0.2) -> Sampled:
    """Run `command` to its end (its output captured) and sample its process tree's CPU every
    `every` seconds: a process that ends between two samples counts up to its last one."""
    process = subprocess.Popen(
        command, cwd=cwd, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    processes: dict[int, Process] = {}
    threads: dict[tuple[int, str], tuple[str, float]] = {}  # threads come and go: each one's last figure
    measured = PROC.is_dir()
    while True:
        if measured:
            for pid in tree(process.pid):
                found = _process(pid)
                if found is not None:
                    processes[pid] = found
                    if found.name == "java":
                        threads.update(jvm_threads(pid))
        try:
            output = process.communicate(timeout=every)  # drains the pipes as it waits
            break
        except subprocess.TimeoutExpired:
            continue
    return Sampled(subprocess.CompletedProcess(command, process.returncode, *output), processes, threads)


def run(command: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, float]]:
    """Run `command` to its end (its output captured) and measure its process tree's CPU seconds
    (`jvm`, `jit`, the part of `jvm` in compiler threads, `python workers`, `other`)."""
    measured = sampled(command, cwd)
    jit = sum(cpu for role, cpu in measured.threads.values() if role == "JIT")
    totals = {"jvm": 0.0, "jit": jit, "python workers": 0.0, "other": 0.0}
    for found in measured.processes.values():
        worker = any(daemon in found.command for daemon in DAEMONS)
        totals["jvm" if found.name == "java" else "python workers" if worker else "other"] += found.cpu
    return measured.done, totals if measured.processes else {}


def text(totals: dict[str, float]) -> str:
    """`jvm 27.0 s (JIT 12.1), python workers 6.7, other 1.0`; empty without figures."""
    if not totals:
        return ""
    return (
        f"cpu: jvm {totals['jvm']:.1f} s (JIT {totals['jit']:.1f}), "
        f"python workers {totals['python workers']:.1f}, other {totals['other']:.1f}"
    )


def tree(root: int) -> list[int]:
    """A process and every process under it, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            fields = _stat(entry / "stat")
            if fields is not None:
                children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def tree_seconds(root: int) -> float:
    """The CPU seconds so far of a process and every process under it: those running, and those
    that ended and were waited for (their parent's children's time, /proc's `cutime` and `cstime`)."""
    found = (_stat(PROC / str(pid) / "stat") for pid in tree(root))
    return sum(_seconds(fields, waited=True) for fields in found if fields is not None)


def _stat(path: Path) -> list[str] | None:
    """The fields of a /proc stat file after the command name (state first), or None once gone."""
    try:
        return path.read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _seconds(fields: list[str], *, waited: bool = False) -> float:
    """utime + stime; with `waited`, cutime + cstime too (the children it waited for)."""
    return sum(int(x) for x in fields[11 : 15 if waited else 13]) / os.sysconf("SC_CLK_TCK")


def _process(pid: int) -> Process | None:
    """A process's name, command line and CPU seconds, or None once it is gone."""
    fields = _stat(PROC / str(pid) / "stat")
    if fields is None:
        return None
    try:
        name = (PROC / str(pid) / "comm").read_text().strip()
        command = (PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return None
    return Process(name, command, _seconds(fields))


def jvm_threads(pid: int) -> dict[tuple[int, str], tuple[str, float]]:
    """Each thread of a JVM: its role (`THREAD_ROLES`, else `other`) and CPU seconds."""
    found: dict[tuple[int, str], tuple[str, float]] = {}
    for thread in (PROC / str(pid) / "task").glob("*"):
        try:
            name = (thread / "comm").read_text()
        except OSError:
            continue
        fields = _stat(thread / "stat")
        if fields is not None:
            role = next((role for role, starts in THREAD_ROLES if name.startswith(starts)), "other")
            found[(pid, thread.name)] = role, _seconds(fields)
    return found
