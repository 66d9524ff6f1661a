"""A warm session's small runs with the jobs' session settings, and with one of them changed.

    python benchmarks/session_settings.py --set spark.python.sql.dataFrameDebugging.enabled=true

`--set` again for each more setting the other side changes (`python -m tests.local_fs` prints the
suite's local file system's as such flags).

Each side is a process of its own (some settings, such as this one, are read once a process):
a local session, two warm-up runs, then `--runs` runs of the job on the bundled sample batches
(the shred job on the first, or `--job transformer` on both, as a micro-batch or a small run
costs). The sides alternate, `--rounds` times each; each prints the medians of its runs: wall,
the driver's CPU, the JVM's and its Python workers' CPU, and the driver's calls to the JVM
(py4j's). Where the figures go: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ("wall", "driver", "jvm", "calls")


def side(job: str, runs: int, settings: dict[str, str]) -> dict[str, float]:
    """One side, in this process: the medians of `runs` warm runs of `job` under `settings`."""
    import py4j.clientserver
    from shred_ab import tree_cpu

    from events_manifest._transformer.config import TransformerConfig
    from events_manifest.snowplow import sample_batches
    from spark_integration import local_session, shred
    from spark_integration.transformer import transform

    spark = local_session("local[2]", "session-settings", verbose=False, **settings)
    jvm = spark._jvm.java.lang.ProcessHandle.current().pid()  # type: ignore[union-attr]
    calls = 0
    send = py4j.clientserver.ClientServerConnection.send_command

    def counted(self: py4j.clientserver.ClientServerConnection, command: str) -> str:
        nonlocal calls
        calls += 1
        return str(send(self, command))

    py4j.clientserver.ClientServerConnection.send_command = counted

    def one(root: Path) -> None:
        if job == "shred":
            shred(spark, str(sample_batches()[0]), f"{root}/out", f"{root}/bad", manifest=f"sqlite:///{root}/m.db")
            return
        for k, batch in enumerate(sample_batches(), start=1):
            shutil.copytree(batch, root / "in" / f"run={k}")
        document = {
            "input": f"{root}/in",
            "output": {"path": f"{root}/out"},
            "formats": {"transformationType": "widerow"},
        }
        config = TransformerConfig.parse(json.dumps(document))
        transform(spark, config, manifest=f"sqlite:///{root}/m.db", report=lambda _: None)

    figures: list[tuple[float, ...]] = []
    for _ in range(2 + runs):
        root = Path(tempfile.mkdtemp(prefix="session-settings-"))
        try:
            calls, cpu, driver, began = 0, tree_cpu(jvm), time.process_time(), time.monotonic()
            one(root)
            figures.append((time.monotonic() - began, time.process_time() - driver, tree_cpu(jvm) - cpu, calls))
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return {name: median(f[i] for f in figures[2:]) for i, name in enumerate(FIGURES)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="a setting the other side changes (repeat)"
    )
    parser.add_argument("--job", choices=("shred", "transformer"), default="shred")
    parser.add_argument("--runs", type=int, default=6, help="warm runs a side's process measures")
    parser.add_argument("--rounds", type=int, default=2, help="processes of each side, alternated")
    parser.add_argument("--side", help=argparse.SUPPRESS)  # a side's own process: its settings as JSON
    args = parser.parse_args()
    sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]
    if args.side is not None:
        print(json.dumps(side(args.job, args.runs, json.loads(args.side))))
        return
    if not args.set:
        parser.error("the other side's settings: --set KEY=VALUE, once for each")
    changed = dict(setting.partition("=")[::2] for setting in args.set)
    sides: dict[str, dict[str, str]] = {"the jobs'": {}, " ".join(args.set): changed}
    results: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
    common = [sys.executable, __file__, "--job", args.job, "--runs", str(args.runs)]
    for n in range(args.rounds):
        for name in list(sides) if n % 2 == 0 else list(sides)[::-1]:
            command = [*common, "--side", json.dumps(sides[name])]
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            results[name].append(json.loads(done.stdout.splitlines()[-1]))
            print(f"round {n + 1}  {name:<48} " + "  ".join(shown(f, [results[name][-1]]) for f in FIGURES))
    print(f"{args.job}, medians of {args.runs} warm runs, each process (seconds; calls to the JVM):")
    for name, rounds in results.items():
        print(f"  {name:<48} " + "  ".join(shown(f, rounds) for f in FIGURES))


def shown(figure: str, rounds: list[dict[str, float]]) -> str:
    """A figure of each round: seconds to the millisecond, calls whole."""
    places = 0 if figure == "calls" else 3
    return f"{figure} " + " / ".join(f"{r[figure]:.{places}f}" for r in rounds)


if __name__ == "__main__":
    main()
