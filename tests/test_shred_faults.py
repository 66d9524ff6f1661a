"""The shred job under injected faults and hostile input: the output is still exactly right."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest

from events_manifest.testing import FaultProxy, LocalServer
from spark_integration import shred
from tests.conftest import unique_table
from tests.shred_helpers import contexts, line, read_bad, read_output, sdj, write_input

pytestmark = pytest.mark.spark

IDS = [f"{n:08x}-4b13-4a23-8088-f79dcbcb{n:04x}" for n in range(1, 41)]


def test_throttled_run_gives_the_unthrottled_output(spark: Any, tmp_path: Path, dynalite: LocalServer) -> None:
    lines = [line(i, f"FP{n % 3}") for n, i in enumerate(IDS)] + [line(IDS[0], "FP0"), line(IDS[1], "other")]
    source = str(write_input(tmp_path / "in", lines))

    def run(endpoint: str, name: str) -> tuple[Any, dict[str, list[str]]]:
        url = f"dynamodb://{unique_table()}?region=us-east-1&endpoint={endpoint}&create=true&max_attempts=20"
        summary = shred(spark, source, str(tmp_path / name), str(tmp_path / f"{name}-bad"), manifest=url)
        return summary, read_output(tmp_path / name)

    calm_summary, calm = run(dynalite.endpoint, "calm")
    with FaultProxy(dynalite.endpoint, throttle_rate=0.3, seed=11) as proxy:
        stormy_summary, stormy = run(proxy.endpoint, "stormy")
        assert proxy.throttled > 0
    assert stormy == calm
    same_places = {"output_path": stormy_summary.output_path, "bad_path": stormy_summary.bad_path}
    assert stormy_summary == attrs.evolve(calm_summary, manifest=stormy_summary.manifest, **same_places)


def test_hostile_schema_names_stay_inside_the_output(spark: Any, tmp_path: Path) -> None:
    hostile = [
        "iglu:../../../../tmp/evil/jsonschema/1-0-0",
        "iglu:com.acme/../jsonschema/1-0-0",
        "iglu:com.acme/x\\/y/jsonschema/1-0-0",
        "iglu:com.acme/name/jsonschema/1-0-0/../..",
        "iglu:com.acme/na%2Fme/jsonschema/1-0-0",
    ]
    lines = [line(IDS[n], f"FP{n}", contexts=contexts(sdj(uri, "{}"))) for n, uri in enumerate(hostile)]
    dots = line(IDS[10], "FPX", contexts=contexts(sdj("iglu:../name/jsonschema/1-0-0", '{"a":1}')))
    summary, out = (
        shred(spark, str(write_input(tmp_path / "in", [*lines, dots])), str(tmp_path / "out"), str(tmp_path / "bad")),
        read_output(tmp_path / "out"),
    )
    assert summary.bad_rows == len(hostile)
    assert all("is not an Iglu URI" in row["errors"][0]["message"] for row in read_bad(tmp_path / "bad"))
    assert list(out) == ["atomic-events", "shredded-types/vendor=../name=name/format=jsonschema/version=1-0-0"]
    produced = {p.relative_to(tmp_path).parts[0] for p in tmp_path.rglob("*") if p.is_file()}
    assert produced == {"in", "out", "bad"}
    assert not Path("/tmp/evil").exists()
