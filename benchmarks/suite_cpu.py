"""Where a test run's CPU goes: the README's suite by default, run as `nox -s tests` runs it.

    python benchmarks/suite_cpu.py                      # the README's suite (.nox/tests must exist)
    python benchmarks/suite_cpu.py -- tests/spark/shred # any pytest arguments instead
    python benchmarks/suite_cpu.py --tests 30           # and the 30 tests and files that cost most

Samples /proc every half second while pytest runs (Linux only): each process of its tree by kind
(the Spark sessions' JVMs, the other JVMs, Spark's Python workers, the local servers, the test
processes), each Spark JVM's threads by role (`process_cpu.THREAD_ROLES`: the driver's answers to
py4j calls, the tasks, the JIT, the collector, the scheduling), and the machine's busy and idle
seconds from /proc/stat, whose difference with the tree is what ran outside it (kernel threads).
A process that ends between two samples counts up to its last one. The suite on two cores is
CPU-bound: its time is its CPU over two, and this says whose CPU it is (docs/development.md).
With `--tests`, each test's CPU too, that of its process's tree while it ran, and the Spark jobs it
started (`per_test_cpu.py`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
"""benchmarks/: where `process_cpu` is, and put on the tests' path for `per_test_cpu.py`."""
sys.path.insert(0, str(HERE))

import process_cpu  # noqa: E402

ROOT = HERE.parent
SUITE = ["-q", "-n", "3", "--dist", "load", "--ignore=tests/integration"]
"""The README's suite as `noxfile.SUITE` runs it, less its list of the slowest tests."""
KINDS = (
    ("Spark sessions' JVMs", ("SparkSubmit",)),
    ("other JVMs (the Pub/Sub emulator)", ("java ",)),
    ("Spark's Python workers", process_cpu.DAEMONS),
    ("data sources' Python processes", ("-m pyspark.sql.",)),
    ("moto's servers", ("testing._moto_server",)),
    ("dynalite", ("dynalite",)),
    ("test processes (pytest and its workers)", ("bin/pytest", "exec(eval(sys.stdin.readline()))")),
    ("the project's commands run as processes", ("-m events_manifest", "-m spark_integration", "events-manifest")),
)
"""A process's kind by its command line, else `the rest`."""


def kind(command: str) -> str:
    found = (name for name, marks in KINDS if any(mark in command for mark in marks))
    return next(found, "the rest")


def machine() -> tuple[float, float]:
    """The machine's busy and idle CPU seconds so far (/proc/stat's first line)."""
    ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    per_second = os.sysconf("SC_CLK_TCK")
    idle = ticks[3] + ticks[4]
    return (sum(ticks[:8]) - idle) / per_second, idle / per_second


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pytest", nargs="*", help="pytest's arguments (default: the README's suite)")
    parser.add_argument("--tests", type=int, default=0, metavar="N", help="print the N tests and files that cost most")
    args = parser.parse_args()
    pytest = ROOT / ".nox" / "tests" / "bin" / "pytest"
    if not pytest.exists():
        sys.exit(f"no {pytest}: run `python -m nox -s tests` once first")
    environment = {**os.environ, "VIRTUAL_ENV": str(pytest.parent.parent)}  # as nox runs it: its commands first
    environment["PATH"] = os.pathsep.join([str(pytest.parent), environment.get("PATH", "")])
    command = [str(pytest), *(args.pytest or SUITE)]
    with tempfile.TemporaryDirectory() as per_test:
        if args.tests:
            environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), environment.get("PYTHONPATH")]))
            environment["PER_TEST_CPU"] = per_test
            command += ["-p", "per_test_cpu"]
        busy, idle = machine()
        began = time.monotonic()
        run = process_cpu.sampled(command, ROOT, environment, every=0.5)
        wall = time.monotonic() - began
        tests, jobs = read_per_test(Path(per_test))
    busy, idle = (now - before for now, before in zip(machine(), (busy, idle), strict=True))
    said = run.done.stdout.strip().splitlines()
    print(*(line for line in said if line.startswith(("FAILED", "ERROR"))), said[-1], sep="\n")
    by_kind: defaultdict[str, float] = defaultdict(float)
    by_role: defaultdict[str, float] = defaultdict(float)
    for found in run.processes.values():
        by_kind[kind(found.command)] += found.cpu
    spark = {pid for pid, found in run.processes.items() if kind(found.command) == KINDS[0][0]}
    for (pid, _), (role, cpu) in run.threads.items():
        if pid in spark:
            by_role[role] += cpu
    inside = sum(by_kind.values())
    print(f"machine: {busy:.0f} CPU s busy, {idle:.0f} idle, in {wall:.0f} s")
    print(f"the run's processes: {inside:.0f} CPU s; outside them (kernel threads, the rest): {busy - inside:.0f}")
    for name, cpu in sorted(by_kind.items(), key=lambda item: -item[1]):
        print(f"  {cpu:6.0f}  {name}")
    print("the Spark sessions' JVMs, by thread:")
    for role, cpu in sorted(by_role.items(), key=lambda item: -item[1]):
        print(f"  {cpu:6.0f}  {role}")
    if args.tests:
        print_tests(tests, jobs, args.tests)
    sys.exit(run.done.returncode)


def read_per_test(folder: Path) -> tuple[Counter[str], Counter[str]]:
    """Each test's CPU seconds and Spark jobs, as `per_test_cpu.py` wrote them in `folder` (none
    without `--tests`)."""
    tests: Counter[str] = Counter()
    jobs: Counter[str] = Counter()
    for path in folder.glob("*.jsonl"):
        for line in path.read_text().splitlines():
            found = json.loads(line)
            tests[found["test"]] += found["cpu"]
            jobs[found["test"]] += found["jobs"]
    return tests, jobs


def print_tests(tests: Counter[str], jobs: Counter[str], count: int) -> None:
    """The `count` tests, and files of tests, whose process trees spent the most CPU while they ran,
    with the Spark jobs each started."""
    files: Counter[str] = Counter()
    file_jobs: Counter[str] = Counter()
    for test, cpu in tests.items():
        file = test.split("::")[0]
        files[file] += cpu
        file_jobs[file] += jobs[test]
    print(
        f"the tests' process trees while each ran: {sum(tests.values()):.0f} CPU s, "
        f"{sum(jobs.values())} Spark jobs; by file (CPU s, jobs):"
    )
    for name, cpu in files.most_common(count):
        print(f"  {cpu:6.1f}  {file_jobs[name]:4}  {name}")
    print("by test:")
    for name, cpu in tests.most_common(count):
        print(f"  {cpu:6.1f}  {jobs[name]:4}  {name}")


if __name__ == "__main__":
    main()
