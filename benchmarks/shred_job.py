"""The shred job against what a user would write instead, side by side in one Spark session.

    python benchmarks/shred_job.py --events 300000

(a) the shred job with the SQLite manifest: validation, JSON entities, natural/cross-batch/
    synthetic dedup, atomic + shredded + bad outputs, summary;
(b) the baseline: read the same text, split, `dropDuplicates(event_id, fingerprint)`, write text.
Input: N generated events, about 1% of the lines duplicated. After a warm-up on a quarter of the
input, runs (a) and (b) alternately, twice: the first round is the job's first full-size run in
the session, the second is warm. Prints wall times, events/s and the ratio (a)/(b) of each round.

With `--processes`, each run is a whole process instead, as a user runs the job: (a) the command
`python -m spark_integration.shredder` with a fresh SQLite manifest, (b) a process that starts a
session and runs the baseline; interleaved, `--rounds` rounds, medians; each side pays for its
JVM's start and its first run's compilation, as it does on a cluster.

With `--profile DIR`, one more warm run of (a) under the JVM's flight recorder (`jcmd`, in the
JDK) and, if `py-spy` is installed, py-spy on the Python workers; the hottest frames of each go to
DIR (`jvm-self.txt`, `jvm-inclusive.txt`, `python-self.txt`, `python-inclusive.txt`) and the top
of each to stdout: where the job's CPU goes, for whoever makes it faster next.
"""

from __future__ import annotations

import argparse
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import process_cpu  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from events_manifest._snowplow.generator import BatchSpec, Generator, to_lines  # noqa: E402
from spark_integration import local_session, shred  # noqa: E402


def generate(folder: Path, events: int, files: int = 4) -> int:
    spec = BatchSpec(
        events=events,
        natural_share=0.004,
        synthetic_share=0.001,
        legacy_share=0.01,
        missing_fingerprint_share=0.005,
        bad_share=0.0005,
        redelivered_share=0.0,
        bot_copies=0,
    )
    lines, _ = to_lines(Generator(7), datetime(2026, 11, 1, 6, 0), spec, ())
    folder.mkdir(parents=True)
    size = len(lines) // files + 1
    for n in range(files):
        with open(folder / f"part-{n:05d}.tsv", "w", encoding="utf-8") as out:
            out.writelines(line + "\n" for line in lines[n * size : (n + 1) * size])
    return len(lines)


def baseline(spark, source: str, target: str) -> None:  # type: ignore[no-untyped-def]
    fields = F.split("value", "\t", -1)
    lines = (
        spark.read.text(source).withColumn("event_id", F.get(fields, 6)).withColumn("fingerprint", F.get(fields, 129))
    )
    lines.dropDuplicates(["event_id", "fingerprint"]).select("value").write.text(target)


def interleaved(commands: dict[str, Callable[[int], list[str]]], rounds: int) -> dict[str, list[float]] | None:
    """Each named command of round `n` (`commands[name](n)`) run as a process from the project's
    folder, in turn, the order reversed every other round: the wall seconds of each, or None
    (its error printed) when one fails. Its CPU seconds by process (`process_cpu`) and the last
    line it prints, if any, are shown beside it."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for n in range(rounds):
        for name in list(commands) if n % 2 == 0 else list(commands)[::-1]:
            started = time.monotonic()
            done, cpu = process_cpu.run(commands[name](n), ROOT)
            seconds = time.monotonic() - started
            if done.returncode != 0:
                print(done.stderr[-3000:], *done.stdout.splitlines()[-3:], sep="\n")  # spark-submit's driver: stdout
                return None
            times[name].append(seconds)
            print(
                f"round {n + 1} {name:<11} {seconds:6.1f} s",
                process_cpu.text(cpu),
                *done.stdout.splitlines()[-1:],
                sep="  ",
            )
    return times


def compared(times: dict[str, list[float]] | None, lines: int) -> int:
    """Print the medians of the two commands `interleaved` timed, the first's ratio to the second
    and its lines per second per core (`local[2]`); the exit status (1: a command failed)."""
    if times is None:
        return 1
    (first, first_times), (second, second_times) = times.items()
    a, b = median(first_times), median(second_times)
    print(
        f"median: {first} {a:.1f} s, {second} {b:.1f} s, ratio {a / b:.2f}x "
        f"({lines / a / 2:,.0f} lines/s per core for {first})"
    )
    return 0


def whole_processes(work: Path, lines: int, rounds: int) -> int:
    """The job and the baseline, each a whole process (see `--processes`)."""
    source = str(work / "in")

    def job(n: int) -> list[str]:
        folders = ["--output-folder", str(work / f"out-{n}"), "--bad-folder", str(work / f"bad-{n}")]
        manifest = ["--manifest", f"sqlite:///{work}/manifest-{n}.db"]
        return [sys.executable, "-m", "spark_integration.shredder", "--input-folder", source, *folders, *manifest]

    def base(n: int) -> list[str]:
        return [sys.executable, __file__, "--baseline", source, str(work / f"base-{n}")]

    times = interleaved({"shred job": job, "baseline": base}, rounds)
    if times is None:
        return 1
    a, b = median(times["shred job"]), median(times["baseline"])
    print(
        f"headline (whole processes): shred job with SQLite manifest {a:.1f} s = {a / b:.2f}x the baseline "
        f"({b:.1f} s), medians of {rounds} rounds; {lines / a:,.0f} events/s on local[2]"
    )
    return 0


def profile(spark, run, folder: Path) -> None:  # type: ignore[no-untyped-def]
    """`run()` once under JFR (the driver JVM: every task in local mode) and py-spy (the workers)."""
    folder.mkdir(parents=True, exist_ok=True)
    jvm = spark._jvm.java.lang.ProcessHandle.current().pid()
    recording = folder / "jvm.jfr"
    jcmd = ["jcmd", str(jvm)]
    subprocess.run([*jcmd, "JFR.start", "name=shred", "settings=profile"], check=True, capture_output=True)
    pgrep = ["pgrep", "-P", str(jvm), "-f", "|".join(process_cpu.DAEMONS)]
    daemons = subprocess.run(pgrep, capture_output=True, text=True).stdout.split()
    spy = None
    if shutil.which("py-spy") and daemons:
        spy_command = ["py-spy", "record", "--subprocesses", "--nonblocking", "-r", "100", "-f", "raw"]
        spy_command += ["-p", daemons[0], "-o", str(folder / "python.raw")]
        spy = subprocess.Popen(spy_command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    else:
        print("py-spy not installed or no Python worker yet: JVM profile only")
    try:
        run()
    finally:
        subprocess.run([*jcmd, "JFR.stop", "name=shred", f"filename={recording}"], check=True, capture_output=True)
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            spy.wait()
    samples = subprocess.run(
        ["jfr", "print", "--events", "jdk.ExecutionSample", str(recording)], check=True, capture_output=True, text=True
    ).stdout.split("jdk.ExecutionSample")[1:]
    jvm_stacks = (re.findall(r"^\s+([\w$.<>]+)\(", sample, re.MULTILINE) for sample in samples)
    _hottest("jvm", [(frames, 1) for frames in jvm_stacks if frames], folder)
    if spy is not None and (folder / "python.raw").exists():
        lines = (folder / "python.raw").read_text().splitlines()
        python = [(stack.split(";")[::-1], int(n)) for stack, n in (line.rsplit(" ", 1) for line in lines)]
        _hottest("python", python, folder)


def _hottest(name: str, stacks: list[tuple[list[str], int]], folder: Path) -> None:
    """Frames by share of samples: on top of the stack (self) and anywhere in it (inclusive)."""
    own, anywhere = Counter[str](), Counter[str]()
    for frames, n in stacks:  # innermost frame first
        own[frames[0]] += n
        for frame in set(frames):
            anywhere[frame] += n
    total = sum(n for _, n in stacks)
    for kind, counts in (("self", own), ("inclusive", anywhere)):
        table = [f"{c / total:6.1%}  {frame}" for frame, c in counts.most_common(60)]
        (folder / f"{name}-{kind}.txt").write_text("\n".join(table) + "\n")
        if kind == "self":
            print(f"{name}: {total:,} samples; hottest frames (self):", *table[:15], sep="\n  ")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=2, help="rounds of (a) and (b), the first cold (>= 2)")
    parser.add_argument("--profile", metavar="DIR", type=Path, help="also profile one warm run into DIR")
    parser.add_argument("--processes", action="store_true", help="each run a whole process (see above)")
    parser.add_argument("--baseline", nargs=2, metavar=("SOURCE", "TARGET"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.baseline:
        baseline(local_session("local[2]"), *args.baseline)
        return 0
    work = Path(tempfile.mkdtemp(prefix="shred-bench-"))
    try:
        started = time.perf_counter()
        lines = generate(work / "in", args.events)
        size = sum(p.stat().st_size for p in (work / "in").iterdir())
        print(f"input: {lines:,} lines, {size / 2**20:,.0f} MiB, generated in {time.perf_counter() - started:.0f} s")
        if args.processes:
            return whole_processes(work, lines, args.rounds)
        spark = local_session("local[2]")
        source = str(work / "in")
        # warm up both paths (JVM, Python workers) on a small slice
        warm = work / "warm"
        warm.mkdir()
        shutil.copy(work / "in" / "part-00000.tsv", warm / "part.tsv")
        baseline(spark, str(warm), str(work / "warm-base"))
        shred(spark, str(warm), str(work / "warm-out"), str(work / "warm-bad"))

        times: dict[str, list[float]] = {"baseline": [], "shred": []}
        for round_ in range(1, max(args.rounds, 2) + 1):  # round 1: the job's first full-size run (cold code)
            started = time.perf_counter()
            baseline(spark, source, str(work / f"base-{round_}"))
            times["baseline"].append(time.perf_counter() - started)
            started = time.perf_counter()
            manifest = f"sqlite://{work}/manifest-{round_}.db"
            summary = shred(spark, source, str(work / f"out-{round_}"), str(work / f"bad-{round_}"), manifest=manifest)
            times["shred"].append(time.perf_counter() - started)
        print(summary.table())
        for name, runs in times.items():
            print(f"{name:<10}" + "".join(f"{s:>8.1f} s {lines / s:>10,.0f} lines/s" for s in runs))
        picks: tuple[tuple[str, Callable[[list[float]], float]], ...] = (
            ("first run", lambda runs: runs[0]),
            ("warm", lambda runs: median(runs[1:])),
        )
        for label, pick in picks:
            shred_s, base_s = pick(times["shred"]), pick(times["baseline"])
            print(
                f"headline ({label}): shred job with SQLite manifest {shred_s:.1f} s = {shred_s / base_s:.2f}x the "
                f"baseline ({base_s:.1f} s); {lines / shred_s:,.0f} events/s on local[2]"
            )
        if args.profile:
            out, bad, manifest = str(work / "out-p"), str(work / "bad-p"), f"sqlite://{work}/manifest-p.db"
            profile(spark, lambda: shred(spark, source, out, bad, manifest=manifest), args.profile)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
