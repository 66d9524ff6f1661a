"""What the stream tests compare their windows with: the batch job's runs of the same lines."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from events_manifest.snowplow import sample_batches
from tests.commands import told
from tests.once import made_once
from tests.spark.transformer.test_command import transformer
from tests.transformer_helpers import RESOLVER, b64, local_run


@pytest.fixture(scope="session")
def batch_runs(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """What the batch job writes for the two sample batches as two runs, with a manifest: the
    windows every stream of these tests must commit (made once for the suite's processes)."""
    root = made_once(tmp_path_factory, "batch-runs", _run_the_batch_job)
    return [local_run(root / "out" / f"run={n}") for n in (1, 2)]


def _run_the_batch_job(root: Path) -> None:
    for n, batch in enumerate(sample_batches(), start=1):
        shutil.copytree(batch, root / "in" / f"run={n}")
    (root / "iglu.json").write_text(json.dumps(RESOLVER))
    config = {"input": "in", "output": {"path": "out"}, "formats": {"transformationType": "widerow"}}
    done = transformer(
        root, "--iglu-config", "iglu.json", "--config", b64(json.dumps(config)), "--manifest", "sqlite://batch.db"
    )
    assert done.returncode == 0, told(done.stderr)
