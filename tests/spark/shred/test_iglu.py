"""The shred job with `--iglu-config`, run as a user types it: every entity validated against its
schema from an embedded repository; failures are bad rows; an unreachable repository stops the
run before anything is written."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.commands import error_line, in_process, shredder, told
from tests.shred_helpers import contexts, line, read_bad, read_output, sdj, unstruct, write_input


@pytest.fixture(autouse=True)
def _session(spark: Any) -> None:
    """The jobs' command lines run on the suite's Spark session."""


A, B, C, D = (f"{n}6ef3124-b53a-4b13-a233-0088f79dcbcb" for n in "abcd")
CHECKOUT = "iglu:com.acme/checkout/jsonschema/1-0-0"
MISSING = "iglu:com.acme/refund/jsonschema/1-0-0"


def resolver(repository: Path, *http: str) -> str:
    embedded = {"name": "local", "priority": 0, "vendorPrefixes": ["com.acme"],
                "connection": {"embedded": {"path": str(repository)}}}  # fmt: skip
    remote = [{"name": f"remote {n}", "priority": 1, "vendorPrefixes": [], "connection": {"http": {"uri": uri}}}
              for n, uri in enumerate(http)]  # fmt: skip
    document = {
        "schema": "iglu:com.snowplowanalytics.iglu/resolver-config/jsonschema/1-0-1",
        "data": {"cacheSize": 500, "repositories": [embedded, *remote]},
    }
    return base64.b64encode(json.dumps(document).encode()).decode()


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    schema: dict[str, Any] = {
        "self": {"vendor": "com.acme", "name": "checkout", "format": "jsonschema", "version": "1-0-0"},
        "type": "object",
        "properties": {"total": {"type": "number", "minimum": 0}},
        "required": ["total"],
    }
    folder = tmp_path / "iglu" / "schemas" / "com.acme" / "checkout" / "jsonschema"
    folder.mkdir(parents=True)
    (folder / "1-0-0").write_text(json.dumps(schema))
    return tmp_path / "iglu"


def test_entities_that_fail_their_schemas_are_bad_rows(tmp_path: Path, repository: Path) -> None:
    valid = line(
        A,
        "FP",
        contexts=contexts(sdj(CHECKOUT, '{"total":1.5}')),
        unstruct_event=unstruct(sdj(CHECKOUT, '{"total":0}')),
    )
    invalid = line(
        B, "FP", "2026-11-01 05:00:00.000", contexts=contexts(sdj(CHECKOUT, '{"total":-1}'), sdj(CHECKOUT, "{}"))
    )
    unknown = line(C, "FP", derived_contexts=contexts(sdj(MISSING, '{"id":1}')))
    plain = line(D, "FP")
    write_input(tmp_path / "in", [valid, invalid, unknown, plain])
    done = shredder(tmp_path, "--input-folder", "in", "--output-folder", "out", "--bad-folder", "bad",
                    "--iglu-config", resolver(repository))  # fmt: skip
    assert done.returncode == 0, told(done.stderr)
    out = read_output(tmp_path / "out")
    assert sorted(row.split("\t")[6] for row in out["atomic-events"]) == [A, D]
    checkout = "shredded-types/vendor=com.acme/name=checkout/format=jsonschema/version=1-0-0"
    assert len(out[checkout]) == 2, "the valid event's two entities"
    assert read_bad(tmp_path / "bad") == sorted(
        [
            {"line": invalid, "errors": [
                {"level": "error", "message": f"{CHECKOUT}: $.total: -1 is less than the minimum of 0"},
                {"level": "error", "message": f'{CHECKOUT}: $: "total" is a required property'},
            ]},
            {"line": unknown, "errors": [
                {"level": "error", "message": f"Schema {MISSING} was not found in any repository (local, "
                 "events-manifest bundled schemas)"},
            ]},
        ],
        key=lambda row: str(row["line"]),
    )  # fmt: skip
    summary = json.loads((tmp_path / "out" / "_summary.json").read_text())
    assert summary["etl_time"].startswith("2026-11-01 06:00:00"), "a line invalid by its schema sets no etl time"


def test_an_unreachable_repository_stops_the_run_before_anything_is_written(tmp_path: Path, repository: Path) -> None:
    write_input(tmp_path / "in", [line(A, "FP", contexts=contexts(sdj(CHECKOUT, '{"total":1}')))])
    db = f"sqlite:///{tmp_path}/m.db"
    done = shredder(tmp_path, "--input-folder", "in", "--output-folder", "out", "--bad-folder", "bad",
                    "--manifest", db, "--iglu-config", resolver(repository, "http://127.0.0.1:1"))  # fmt: skip
    message = error_line(done)
    assert "Iglu repository [remote 0] (http://127.0.0.1:1) could not be read" in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["iglu", "in"], "no output, no manifest"


def test_the_populator_skips_events_whose_entities_fail_as_the_job_does(tmp_path: Path, repository: Path) -> None:
    """`python -m spark_integration.populator --iglu-config`: only the valid event is stored."""
    from events_manifest import SqliteManifest
    from spark_integration.populator import main

    valid = line(A, "FP", contexts=contexts(sdj(CHECKOUT, '{"total":2}')))
    invalid = line(B, "FP", contexts=contexts(sdj(CHECKOUT, '{"total":"two"}')))
    write_input(tmp_path / "archive", [valid, invalid])
    done = in_process(main, tmp_path, "--input-folder", "archive", "--manifest", f"sqlite:///{tmp_path}/m.db",
                      "--iglu-config", resolver(repository))  # fmt: skip
    assert done.returncode == 0, told(done.stderr)
    assert re.search(r"invalid \(skipped\) +1\n", done.stdout), done.stdout
    with SqliteManifest(tmp_path / "m.db") as store:
        assert store.lookup(A, "FP") is not None and store.lookup(B, "FP") is None
