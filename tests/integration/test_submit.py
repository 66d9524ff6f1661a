"""The shred job under `spark-submit` with a local master, as a user submits it on one machine:
spark-submit brings the session and its settings; the job's flags are the same and Spark's log is
at WARN from the session's start. In the integration session (a process of its own, a whole JVM,
which the main suite keeps few of); the transformer on a cluster in `test_cluster.py`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pyspark

from events_manifest._snowplow.summary import ShredSummary
from events_manifest.snowplow import sample_batches
from spark_integration import shredder
from tests.commands import told


def test_the_shred_job_runs_under_spark_submit(tmp_path: Path) -> None:
    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    args = [str(submit), "--master", "local[2]", shredder.__file__, "--input-folder", str(sample_batches()[0])]
    args += ["--output-folder", str(tmp_path / "out"), "--bad-folder", str(tmp_path / "bad")]
    args += ["--manifest", f"sqlite:///{tmp_path}/m.db"]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, told(done.stderr)
    assert re.search(r"kept events +\d", done.stdout)
    info = [line for line in done.stderr.splitlines() if " INFO " in line]
    assert len(info) <= 5 and len(done.stderr.splitlines()) <= 20, "Spark's log at WARN from the session's start"
    summary = ShredSummary.from_json((tmp_path / "out" / "_summary.json").read_text())
    assert summary.balanced and summary.kept_events > 900
    assert (tmp_path / "out" / "atomic-events").is_dir() and list((tmp_path / "bad").glob("part-*"))
