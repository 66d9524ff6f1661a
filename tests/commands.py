"""The project's commands run as a user types them: in this process, on the suite's one Spark
session, where the rule is the point (which flags are refused, what a rerun writes, which line is
a bad row); as a process of their own where the process is (a kill, a race, an interpreter).

Both return what the user sees (exit status, stdout, stderr) and run in a given folder, so that
relative paths mean what they mean on a command line.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from events_manifest._jobs import steps

ROOT = Path(__file__).resolve().parent.parent


def env() -> dict[str, str]:
    """This environment, with the project importable by a child process."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def in_process(main: Callable[[Sequence[str]], int], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`main(args)` run in `cwd`, its exit status and what it printed."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as e:  # argparse's usage errors
            code = e.code if isinstance(e.code, int) else 2
    return subprocess.CompletedProcess(["main", *args], code, out.getvalue(), err.getvalue())


def process(module: str, cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`python -m module args` in `cwd`, a process of its own."""
    command = [sys.executable, "-m", module, *args]
    return subprocess.run(command, cwd=cwd, env=env(), capture_output=True, text=True, timeout=timeout, check=False)


def dead_pid() -> int:
    """The pid of a process of this host that has ended: an owner no one holds any more."""
    return int(
        subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True).stdout
    )


def shredder(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The shred job's command line, in this process (the `spark` fixture must be active)."""
    from spark_integration.shredder import main

    return in_process(main, cwd, *args)


def events_manifest(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The `events-manifest` command line, in this process."""
    from events_manifest._cli import main

    return in_process(main, cwd, *args)


def told(*printed: str) -> str:
    """What a process printed (its stdout, its stderr), for a failed assertion's message: the last
    Python error first (a log shown in part keeps it), then the last 3,000 characters of each once
    the JVM's stack frames are dropped, so that the traceback and the error they follow show."""
    tails = ["\n".join(filter(_not_a_frame, text.splitlines()))[-3000:] for text in printed]
    errors = [line for text in printed for line in _python_errors(text.splitlines())]
    return "\n".join([f"the last Python error: {errors[-1]}" if errors else "no Python traceback", *tails])


def _not_a_frame(line: str) -> bool:
    return not line.startswith("\tat ") and not (line.startswith("\t... ") and line.endswith(" more"))


def _python_errors(lines: list[str]) -> Iterator[str]:
    """The line that ends each Python traceback in `lines`: the first one not indented after it."""
    for n, line in enumerate(lines):
        if line.endswith("Traceback (most recent call last):"):
            yield next((after for after in lines[n + 1 :] if after and not after[0].isspace()), "")


def error_line(done: subprocess.CompletedProcess[str], prog: str = "shredder") -> str:
    """The one line a refused run prints (Spark's own start-up warnings aside)."""
    assert done.returncode == 1, told(done.stdout, done.stderr)
    ours = [x for x in done.stderr.splitlines() if x.startswith(f"{prog}: error:")]
    assert len(ours) == 1, told(done.stderr)
    assert "Traceback" not in done.stderr
    return ours[0]


def wait_for(reached: Callable[[], bool], what: str, process: subprocess.Popen[Any] | None = None) -> None:
    """Wait until `reached()`: an event another process or thread signals (a file it writes). Fails
    naming `what` if `process` ends first (with the end of its stderr) or after three minutes."""
    deadline = time.monotonic() + 180
    while not reached():
        if process is not None and process.poll() is not None:
            said = told(process.stderr.read()) if process.stderr else ""
            raise AssertionError(f"{what}: the process ended first. {said}")
        assert time.monotonic() < deadline, f"{what}: not within three minutes"
        time.sleep(0.05)


def scratch(folder: Path) -> dict[str, str]:
    """Environment that keeps a Spark process's scratch folders (its `spark-*`, `blockmgr-*` and
    `artifacts-*`) in `folder`: a killed JVM never deletes them, and in /tmp they pile up run after run."""
    where = folder / "spark-scratch"
    where.mkdir(exist_ok=True)
    options = " ".join(filter(None, [os.environ.get("SPARK_SUBMIT_OPTS"), f"-Djava.io.tmpdir={where}"]))
    return {"SPARK_LOCAL_DIRS": str(where), "SPARK_SUBMIT_OPTS": options}  # the suite's JVM options kept


def killed_at(step: str, cwd: Path, *args: str, module: str = "spark_integration.shredder") -> None:
    """Run a job (the shred job by default) as a process of its own, killed at `step`."""
    killed([sys.executable, "-m", module, *args], cwd, step, env())


def killed(
    command: list[str], cwd: Path, step: str, child: dict[str, str], meanwhile: Callable[[], None] = lambda: None
) -> None:
    """`command` run in `cwd` with the environment `child`, stopped at `step` (it signals through a
    file), `meanwhile()` done while it runs, then its whole process group killed (SIGKILL): the JVM
    and its Python workers too."""
    signalled(command, cwd, child, [signal.SIGKILL], step=step, meanwhile=meanwhile)


def signalled(
    command: list[str],
    cwd: Path,
    child: dict[str, str],
    signals: Sequence[int],
    *,
    step: str | None = None,
    ready: Callable[[], bool] = lambda: True,
    meanwhile: Callable[[], None] = lambda: None,
    apart: float = 0.5,
    timeout: float = 180,
) -> subprocess.CompletedProcess[str]:
    """`command` run in `cwd` with the environment `child` until `ready()` (or stopped at `step`,
    which it signals through a file), `meanwhile()` done while it runs; then sent `signals`, `apart`
    seconds from one another, as a terminal sends Ctrl-C: to its whole process group. What it printed
    and its exit status once it ends, with every process it started (SIGKILL, and TimeoutExpired, if it
    has not within `timeout` seconds)."""
    child = {**child, **scratch(cwd)}
    if step is not None:
        signal_file = cwd / f"reached-{step}"
        child.update({steps.STOP_AT: step, steps.SIGNAL: str(signal_file)})
        ready = signal_file.exists  # there, it waits for the signals
    process = subprocess.Popen(
        command, cwd=cwd, env=child, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        meanwhile()
        wait_for(ready, f"the run reaching {step or 'the point of the test'}", process)
        for n, number in enumerate(signals):
            if n:
                time.sleep(apart)
            with contextlib.suppress(ProcessLookupError):  # it may have ended already
                os.killpg(process.pid, number)
        out, err = process.communicate(timeout=timeout)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # the JVM and the workers, whatever happened
        process.wait()
        shutil.rmtree(child["SPARK_LOCAL_DIRS"], ignore_errors=True)  # a killed JVM's pyspark copies: 185 MB
    return subprocess.CompletedProcess(command, process.returncode, out, err)
