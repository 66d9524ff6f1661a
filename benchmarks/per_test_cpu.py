"""A pytest plugin (`-p per_test_cpu`, with `benchmarks/` on `PYTHONPATH`) that writes each test's
CPU seconds to `$PER_TEST_CPU/<pid>.jsonl`: those of its test process and of every process under it
(its Spark session's JVM and Python workers, its local servers, the commands it starts), read
from /proc before and after the test. A test process's servers and JVM serve whichever test runs,
so a test carries what they do meanwhile: the first Spark test of a process its session's start
and the JIT's warm-up, a test after a stream the stream's last moments. With them, the Spark jobs
its process's session started meanwhile: a count the machine's load does not move, as it moves
the seconds. `suite_cpu.py --tests` sums them."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Generator
from pathlib import Path
from typing import Any

import process_cpu
import pytest


def spark_jobs() -> int:
    """The jobs this process's Spark session has started so far; 0 without a session (none yet, or
    stopped: the test that stops it is not counted its jobs)."""
    pyspark = sys.modules.get("pyspark")
    context = pyspark.SparkContext._active_spark_context if pyspark else None
    return 0 if context is None else int(context._jsc.sc().dagScheduler().nextJobId())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, Any, None]:
    """The test's setup, call and teardown, with the tree's CPU seconds and the session's jobs read
    before and after."""
    before, jobs = process_cpu.tree_seconds(os.getpid()), spark_jobs()
    yield
    cpu = process_cpu.tree_seconds(os.getpid()) - before
    jobs = max(0, spark_jobs() - jobs)
    with (Path(os.environ["PER_TEST_CPU"]) / f"{os.getpid()}.jsonl").open("a") as out:
        out.write(json.dumps({"test": item.nodeid, "cpu": round(cpu, 2), "jobs": jobs}) + "\n")
