"""Ctrl-C as a terminal sends it (SIGINT to the command's whole process group), once or twice half
a second apart, while a job is inside a Spark job or a stream is staging a micro-batch: one line of
the command's own, no traceback, the exit status the docs give; and the next run commits what
was left, once."""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from events_manifest.snowplow import sample_batches
from tests.commands import env, signalled, told
from tests.spark.transformer.test_command import transformer
from tests.transformer_helpers import RESOLVER


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "iglu.json").write_text(json.dumps(RESOLVER))
    return tmp_path


def driver_jvm_in(folder: Path) -> bool:
    """Whether a driver JVM runs in `folder` (spark-submit's, which a local session launches)."""
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            driver = b"org.apache.spark.deploy.SparkSubmit" in (entry / "cmdline").read_bytes()
            if driver and (entry / "cwd").resolve() == folder.resolve():
                return True
    return False


@pytest.mark.parametrize(
    ("module", "stop", "said"),
    [
        ("transformer", signal.SIGINT, "transformer: interrupted; nothing was written"),
        ("stream_transformer", signal.SIGTERM, "stream transformer: interrupted; nothing was written"),
    ],
)
def test_a_stop_while_the_jvm_starts_is_one_line_and_leaves_no_process(
    folder: Path, module: str, stop: int, said: str
) -> None:
    """Ctrl-C or SIGTERM to the command's group once its JVM is launched, before its driver has
    reached it: the line of a stop before anything was read, exit 130, and every process gone (the
    JVM held the command's stdout: before, it ran on, its driver gone, under 25 lines of its trace;
    a SIGTERM was lost and the stream ran on). No line of the JVM's own (`session.JVM_NOTICE`)."""
    config = {"input": "in", "output": {"path": "out"}, "formats": {"transformationType": "widerow"}}
    if module == "stream_transformer":
        config = {"input": {"type": "file", "dir": "in"}, "output": {"path": "out"}}
    (folder / "in").mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    command = [sys.executable, "-m", f"spark_integration.{module}", "--iglu-config", "iglu.json", "-c", "config.json"]
    done = signalled(command, folder, env(), [stop], ready=lambda: driver_jvm_in(folder), timeout=60)
    assert (done.returncode, done.stderr.splitlines()) == (130, [said]), told(done.stderr)
    assert not (folder / "out").exists() or not list((folder / "out").rglob("shredding_complete.json"))


@pytest.mark.parametrize("presses", [1, 2])
def test_ctrl_c_inside_a_spark_job_of_the_batch_transformer(folder: Path, presses: int, spark: Any) -> None:
    for n, batch in enumerate(sample_batches(), start=1):
        shutil.copytree(batch, folder / "in" / f"run={n}")
    config = {"input": "in", "output": {"path": "out"}, "formats": {"transformationType": "widerow"}}
    (folder / "config.json").write_text(json.dumps(config))
    flags = ["--iglu-config", "iglu.json", "--config", "config.json", "--manifest", "sqlite://m.db"]
    command = [sys.executable, "-m", "spark_integration.transformer", *flags]
    done = signalled(command, folder, env(), [signal.SIGINT] * presses, step="puts")  # a task storing its puts
    assert done.returncode == 130, told(done.stderr)
    interrupted = (
        "transformer: interrupted during run=1: nothing of it was committed, and the next invocation finishes it"
    )
    at_once = "transformer: stopped at once: run it again to finish what it was doing"
    if presses == 1:
        assert done.stderr.splitlines() == [interrupted]
    else:  # the process may end before the second press, or the second come before the first is reported
        assert done.stderr.splitlines() in ([interrupted], [interrupted, at_once], [at_once]), told(done.stderr)
    again = transformer(folder, *flags)  # here, on the session of the tests: the interruption was the process's
    assert again.returncode == 0, told(again.stderr)
    assert sorted(p.parent.name for p in (folder / "out").glob("run=*/shredding_complete.json")) == ["run=1", "run=2"]


def test_the_stream_stops_gracefully_on_sigterm_or_ctrl_c_to_its_group_and_at_once_on_a_second(folder: Path) -> None:
    """A second Ctrl-C while a micro-batch is being staged (the graceful stop waits for it): out at
    once, exit 130. SIGTERM to the whole group (systemd, `kill -- -PGID`) or one Ctrl-C: the JVM
    outlives the graceful stop, which commits what was staged and the window left before, exit 0,
    and nothing else beside the windows; a second start on the same output while one runs is
    refused."""
    (folder / "stream").mkdir()
    config = {"input": {"type": "file", "dir": "stream"}, "output": {"path": "out"}, "trigger": "1 second"}
    (folder / "stream.hocon").write_text(json.dumps(config))
    flags = ["--iglu-config", "iglu.json", "--config", "stream.hocon", "--manifest", "sqlite://m.db"]
    command = [sys.executable, "-m", "spark_integration.stream_transformer", *flags]
    part = sorted(next(iter(sample_batches())).glob("part-*"))[0]

    def arrive(name: str) -> None:
        (folder / "stream" / name).write_bytes(part.read_bytes())

    twice = signalled(
        command, folder, env(), [signal.SIGINT] * 2, step="batch-written", meanwhile=lambda: arrive("a.tsv.gz")
    )
    assert twice.returncode == 130, told(twice.stderr)
    assert twice.stderr.splitlines() == [
        "stream transformer: stopped at once: the next start on the same checkpoint commits what was left"
    ]
    assert not list((folder / "out").glob("run=*/shredding_complete.json"))
    second: list[subprocess.CompletedProcess[str]] = []
    for n, stop in enumerate((signal.SIGTERM, signal.SIGINT), start=1):
        arrive(f"{'bc'[n - 1]}.tsv.gz")
        staged = folder / f"out/_checkpoint/book/batch-{n}.staged"  # each file in a batch of its own

        def staged_and_a_second_start_refused(staged: Path = staged) -> bool:
            """Once the batch is staged: a second start on the same output, refused while this one runs."""
            if staged.exists() and not second:
                again = [*command, "--available-now"]
                second.append(subprocess.run(again, cwd=folder, env=env(), capture_output=True, text=True, timeout=300))
            return staged.exists()

        done = signalled(command, folder, env(), [stop], ready=staged_and_a_second_start_refused)
        assert done.returncode == 0, told(done.stderr)
        assert done.stderr.splitlines() == [], done.stderr
        assert all(": 1174 lines, " in line for line in done.stdout.splitlines() if line.startswith("run=")), (
            done.stdout
        )
    [refused] = second
    [line] = refused.stderr.splitlines()
    assert refused.returncode == 1 and line.startswith(
        "stream transformer: error: stream transformer's output folder [out] is being written by another run"
    ), refused.stderr
    windows = sorted((folder / "out").glob("run=*"))
    assert len(windows) == 3, "a (left by the first start), b and c: each file in one window"
    for window in windows:
        assert sorted(p.name for p in window.iterdir()) == ["output=bad", "output=good", "shredding_complete.json"]
    assert sorted(p.name for p in (folder / "out").iterdir()) == ["_checkpoint", *(w.name for w in windows)]
