"""The shred job of an earlier revision against the working tree's, alternately in one Spark session.

    python benchmarks/shred_ab.py --old HEAD~1 --events 300000 --rounds 3

On a shared, noisy machine separate benchmark runs of two versions cannot resolve a change worth
10 to 20%; alternating them in one session, with the baseline of `shred_job.py` between, can.
The old revision's two packages are exported with `git archive` as `spark_integration_old` and
`events_manifest_old` (the engine is in the core, the glue in the Spark package). Prints
each run's wall and CPU seconds (the JVM and its Python workers), then medians and ratios.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from statistics import median
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OLD = "spark_integration_old"
PACKAGES = {"spark_integration": OLD, "events_manifest": "events_manifest_old"}


def export(revision: str, into: Path) -> None:
    """Both packages at `revision`, importable as `PACKAGES` names them: their imports of each
    other and the core's package resources renamed (not its SQL tables' names)."""
    git = ["git", "-C", str(ROOT), "archive", revision, *PACKAGES]
    archive = subprocess.run(git, check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    for package, renamed in PACKAGES.items():
        (into / package).rename(into / renamed)
    for source in (into / name for name in PACKAGES.values()):
        for module in source.rglob("*.py"):
            text = re.sub(r"\bspark_integration\b", OLD, module.read_text())
            text = re.sub(r"\b(from|import) events_manifest\b", r"\1 events_manifest_old", text)
            module.write_text(text.replace('"events_manifest.', '"events_manifest_old.'))


def tree_cpu(pid: int) -> float:
    """CPU seconds of a process and all its descendants (Spark's Python workers)."""
    pids, todo = [str(pid)], [str(pid)]
    while todo:
        children = subprocess.run(["pgrep", "-P", todo.pop()], capture_output=True, text=True).stdout.split()
        pids += children
        todo += children
    ticks = 0
    for p in pids:
        with contextlib.suppress(OSError):  # ended meanwhile
            ticks += sum(int(x) for x in Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[11:15])
    return ticks / os.sysconf("SC_CLK_TCK")


def alternate(  # type: ignore[no-untyped-def]
    spark, run: Callable[[str], None], order: list[str], rounds: int
) -> dict[str, list[tuple[float, float]]]:
    """`run` each name of `order` once to warm up, then `rounds` times, forwards then backwards:
    the (wall, CPU) seconds of each run, CPU being the JVM's and its Python workers'."""
    jvm = spark._jvm.java.lang.ProcessHandle.current().pid()

    def timed(name: str) -> tuple[float, float]:
        cpu, started = tree_cpu(jvm), time.monotonic()
        run(name)
        return time.monotonic() - started, tree_cpu(jvm) - cpu

    for name in order:
        timed(name)  # warm-up, full size
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in order}
    for n in range(rounds):
        for name in order if n % 2 == 0 else order[::-1]:
            wall, cpu = timed(name)
            results[name].append((wall, cpu))
            print(f"round {n + 1} {name:<13} {wall:5.1f} s wall {cpu:6.1f} s CPU")
    return results


def measure(
    prefix: str,
    events: int,
    rounds: int,
    label: str,
    runner: Callable[[Any, Path], tuple[Callable[[str], None], list[str]]],
) -> None:
    """Generate `events` into a temporary folder, start a local session, `alternate` the runs
    `runner(spark, folder)` returns (a function of a name, and the names) and print their medians."""
    import shred_job

    from spark_integration import local_session

    work = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        print(f"input: {shred_job.generate(work / 'in', events):,} lines")
        spark = local_session("local[2]")
        run, order = runner(spark, work)
        results = alternate(spark, run, order, rounds)
        print(f"{label:<17} {'wall':>6} {'CPU':>6}  (medians, seconds)")
        for name, rs in results.items():
            print(f"{name:<17} {median(r[0] for r in rs):6.2f} {median(r[1] for r in rs):6.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", default="HEAD", help="git revision to compare the working tree with")
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="shred-ab-"))
    try:
        export(args.old, work)
        os.environ["PYTHONPATH"] = os.pathsep.join([str(work), str(ROOT), os.environ.get("PYTHONPATH", "")])
        sys.path[:0] = [str(work), str(ROOT), str(ROOT / "benchmarks")]
        import shred_job

        from spark_integration import local_session, shred

        old_shred = __import__(OLD).shred
        lines = shred_job.generate(work / "in", args.events)
        print(f"input: {lines:,} lines; old = {args.old}, new = the working tree")
        spark = local_session("local[2]")
        runs = 0

        def run(name: str) -> None:
            nonlocal runs
            runs += 1
            out = work / f"out-{runs}"
            if name == "baseline":
                shred_job.baseline(spark, str(work / "in"), str(out))
            else:
                job = shred if name == "new" else old_shred
                job(spark, str(work / "in"), str(out), str(work / f"bad-{runs}"), manifest=f"sqlite:///{out}.db")
            shutil.rmtree(out, ignore_errors=True)

        results = alternate(spark, run, ["old", "baseline", "new"], args.rounds)
        walls = {name: median(r[0] for r in rs) for name, rs in results.items()}
        for name, rs in results.items():
            cpus, all_walls = median(r[1] for r in rs), sorted(round(r[0], 1) for r in rs)
            print(f"{name:<8} wall {all_walls} median {walls[name]:.1f} s, CPU median {cpus:.1f} s")
        print(
            f"median ratios to the baseline: old {walls['old'] / walls['baseline']:.2f}x, "
            f"new {walls['new'] / walls['baseline']:.2f}x; new/old {walls['new'] / walls['old']:.2f}"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
