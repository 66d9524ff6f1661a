"""Where a test run's CPU goes: the README's suite by default, run as `nox -s tests` runs it.

    python benchmarks/suite_cpu.py                      # the README's suite (.nox/tests must exist)
    python benchmarks/suite_cpu.py -- tests/spark/shred # any pytest arguments instead

Samples /proc every half second while pytest runs (Linux only): each process of its tree by kind
(the Spark sessions' JVMs, the other JVMs, Spark's Python workers, the local servers, the test
processes), each Spark JVM's threads by role (`process_cpu.THREAD_ROLES`: the driver's answers to
py4j calls, the tasks, the JIT, the collector, the scheduling), and the machine's busy and idle
seconds from /proc/stat, whose difference with the tree is what ran outside it (kernel threads).
A process that ends between two samples counts up to its last one. The suite on two cores is
CPU-bound: its time is its CPU over two, and this says whose CPU it is (docs/development.md).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import attrs

sys.path.insert(0, str(Path(__file__).resolve().parent))

import process_cpu

ROOT = Path(__file__).resolve().parent.parent
SUITE = ["-q", "-n", "3", "--dist", "load", "--ignore=tests/integration"]
"""The README's suite as `noxfile.SUITE` runs it, less its list of the slowest tests."""
KINDS = (
    ("Spark sessions' JVMs", ("SparkSubmit",)),
    ("other JVMs (the Pub/Sub emulator)", ("java ",)),
    ("Spark's Python workers", process_cpu.DAEMONS),
    ("data sources' Python processes", ("-m pyspark.sql.",)),
    ("moto's servers", ("testing._moto_server",)),
    ("dynalite", ("dynalite",)),
)
"""A process's kind by its command line, else `test processes and the rest`."""


def kind(command: str) -> str:
    found = (name for name, marks in KINDS if any(mark in command for mark in marks))
    return next(found, "test processes and the rest")


def machine() -> tuple[float, float]:
    """The machine's busy and idle CPU seconds so far (/proc/stat's first line)."""
    ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    per_second = os.sysconf("SC_CLK_TCK")
    idle = ticks[3] + ticks[4]
    return (sum(ticks[:8]) - idle) / per_second, idle / per_second


@attrs.frozen
class Measured:
    """A run's output lines and CPU: each process's kind and seconds, each Spark JVM thread's role
    and seconds, and the machine's busy and idle seconds over its `wall` seconds."""

    said: list[str]
    returncode: int
    processes: dict[int, tuple[str, float]]
    threads: dict[tuple[int, str], tuple[str, float]]
    wall: float
    busy: float
    idle: float


def measure(command: list[str], environment: dict[str, str]) -> Measured:
    """Run `command` in the project, sampling its process tree every half second."""
    processes: dict[int, tuple[str, float]] = {}
    threads: dict[tuple[int, str], tuple[str, float]] = {}
    busy0, idle0 = machine()
    began = time.monotonic()
    with tempfile.TemporaryFile("w+") as output:  # not a pipe: a suite's failures fill one and stop it
        process = subprocess.Popen(command, cwd=ROOT, env=environment, stdout=output, text=True)
        while process.poll() is None:
            for pid in process_cpu.tree(process.pid):
                fields = process_cpu.stat(process_cpu.PROC / str(pid) / "stat")
                try:
                    started = (process_cpu.PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                except OSError:
                    continue
                if fields is not None:
                    processes[pid] = kind(started), process_cpu.seconds(fields)
                    if processes[pid][0] == KINDS[0][0]:
                        threads.update(process_cpu.jvm_threads(pid))
            time.sleep(0.5)
        output.seek(0)
        said = output.read().strip().splitlines()
    busy, idle = machine()
    return Measured(said, process.returncode, processes, threads, time.monotonic() - began, busy - busy0, idle - idle0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pytest", nargs="*", help="pytest's arguments (default: the README's suite)")
    args = parser.parse_args()
    pytest = ROOT / ".nox" / "tests" / "bin" / "pytest"
    if not pytest.exists():
        sys.exit(f"no {pytest}: run `python -m nox -s tests` once first")
    environment = {**os.environ, "VIRTUAL_ENV": str(pytest.parent.parent)}  # as nox runs it: its commands first
    environment["PATH"] = os.pathsep.join([str(pytest.parent), environment.get("PATH", "")])
    run = measure([str(pytest), *(args.pytest or SUITE)], environment)
    print(*(line for line in run.said if line.startswith(("FAILED", "ERROR"))), run.said[-1], sep="\n")
    by_kind: defaultdict[str, float] = defaultdict(float)
    by_role: defaultdict[str, float] = defaultdict(float)
    for name, cpu in run.processes.values():
        by_kind[name] += cpu
    for role, cpu in run.threads.values():
        by_role[role] += cpu
    inside = sum(by_kind.values())
    print(f"machine: {run.busy:.0f} CPU s busy, {run.idle:.0f} idle, in {run.wall:.0f} s")
    print(f"the run's processes: {inside:.0f} CPU s; outside them (kernel threads, the rest): {run.busy - inside:.0f}")
    for name, cpu in sorted(by_kind.items(), key=lambda item: -item[1]):
        print(f"  {cpu:6.0f}  {name}")
    print("the Spark sessions' JVMs, by thread:")
    for role, cpu in sorted(by_role.items(), key=lambda item: -item[1]):
        print(f"  {cpu:6.0f}  {role}")
    sys.exit(run.returncode)


if __name__ == "__main__":
    main()
