"""The shred job's command line, its failure modes, its report and the README demo."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest

from events_manifest import (
    ManifestRequestError,
    ManifestThrottledError,
    ManifestUnavailableError,
    RunConflictError,
    SqliteManifest,
)
from events_manifest.model import PutBatch
from events_manifest.snowplow import sample_batches
from events_manifest.testing import FaultProxy, LocalServer
from events_manifest.testing._servers import free_port
from spark_integration import OutputExistsError, demo, shred
from spark_integration.shredder import main
from tests.backends import unique_table
from tests.core.backends.dynamodb.test_config_document import SECRET, V2_CONFIG, with_data
from tests.shred_helpers import line, read_bad, read_output, write_input

A = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"
B = "d7f5fa2f-3b3a-4c97-a030-8e05d9f40b0a"


class RefusingManifest(SqliteManifest):
    """A backend whose store refuses puts of one pair (event id B, fingerprint FP): each such put
    fails on its own."""

    def _put_batch(self, batch: PutBatch) -> list[bool | ManifestRequestError]:
        answers = super()._put_batch(batch)
        return [
            ManifestRequestError(f"item for {e} rejected: ItemCollectionSizeLimitExceededException")
            if (e, f) == (B, "FP")
            else a
            for e, f, a in zip(batch.event_ids, batch.fingerprints, answers, strict=True)
        ]


def test_cli_runs_and_refuses_a_non_empty_output(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_input(tmp_path / "in", [line(A, "FP"), line(A, "FP"), "broken"])
    args = [
        "--input-folder",
        str(source),
        "--output-folder",
        str(tmp_path / "out"),
        "--bad-folder",
        str(tmp_path / "bad"),
    ]
    report = tmp_path / "report.html"
    assert main([*args, "--manifest", f"sqlite://{tmp_path}/m.db", "--report", str(report)]) == 0
    printed = capsys.readouterr().out
    assert re.search(r"natural duplicates dropped in-batch +1\n", printed)
    assert "check: input = kept + bad + dropped duplicates: yes" in printed
    page = report.read_text()
    assert page.startswith("<!doctype html>") and "<svg" in page and "http" not in page.replace("http://www.w3.org", "")
    assert main(args) == 1
    assert (
        capsys.readouterr().err.strip().startswith(f"shredder: error: output folder [{tmp_path / 'out'}] is not empty")
    )
    assert main([*args, "--overwrite", "--etl-time", "2026-11-01 07:00:00"]) == 0
    assert json.loads((tmp_path / "out" / "_summary.json").read_text())["etl_time"] == "2026-11-01 07:00:00"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--duplicate-storage-config", "bm90IGpzb24="], "base64 config is not valid JSON"),
        (["--dynamodb-endpoint", "http://127.0.0.1:1"], "--dynamodb-endpoint and --create-table go with a DynamoDB"),
        (
            ["--manifest", "sqlite:///tmp/never-made.db", "--dynamodb-endpoint", "http://127.0.0.1:1"],
            "--dynamodb-endpoint is for a DynamoDB manifest, and [sqlite:///tmp/never-made.db] is not one",
        ),
        (["--manifest", "sqlite:///tmp/never-made.db", "--create-table"], "--create-table is for a DynamoDB manifest"),
        (["--iglu-config", "%%%"], "the --iglu-config is neither JSON, an existing file nor valid base64"),
        (["--etl-time", "soon"], "timestamp [soon]"),
        (["--manifest", "memory://"], "in-memory manifest would not be shared"),
        (["--cross-batch-synthetic"], "cross-batch synthetic dedup needs a manifest"),
    ],
)
def test_cli_bad_flags_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, extra: list[str], message: str
) -> None:
    """Each is refused in one line before Spark starts (a JVM's start, seconds, for a typo)."""

    def no_spark(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("Spark started before the command line was checked")

    monkeypatch.setattr("spark_integration.shredder.local_session", no_spark)
    args = [
        "--input-folder",
        str(write_input(tmp_path / "in", [line(A)])),
        "--output-folder",
        str(tmp_path / "o"),
        "--bad-folder",
        str(tmp_path / "b"),
    ]
    assert main([*args, *extra]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert message in err


def test_cli_missing_input(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = [
        "--input-folder",
        str(tmp_path / "nope"),
        "--output-folder",
        str(tmp_path / "o"),
        "--bad-folder",
        str(tmp_path / "b"),
    ]
    assert main(args) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "nope" in err


def test_cli_with_a_dynamodb_config(
    spark: Any, tmp_path: Path, dynalite: LocalServer, capsys: pytest.CaptureFixture[str]
) -> None:
    table = unique_table()
    config = with_data(V2_CONFIG, dynamodbTable=table, awsRegion="us-east-1")
    encoded = base64.b64encode(json.dumps(config).encode()).decode()
    source = write_input(tmp_path / "in", [line(A, "FP"), "a bad line"])
    args = [
        "--report",
        str(tmp_path / "o-report.html"),
        "--input-folder",
        str(source),
        "--output-folder",
        str(tmp_path / "o"),
        "--bad-folder",
        str(tmp_path / "b"),
        "--duplicate-storage-config",
        encoded,
        "--dynamodb-endpoint",
        dynalite.endpoint,
    ]
    assert main(args) == 1
    failed = capsys.readouterr()
    assert f"DynamoDB table [{table}] does not exist" in failed.err
    assert main([*args, "--create-table"]) == 0
    done = capsys.readouterr()
    assert re.search(r"kept events +1\n", done.out)
    artifacts = [p for p in tmp_path.rglob("*") if p.is_file() and "in" not in p.relative_to(tmp_path).parts]
    assert {p.name for p in artifacts} >= {"_summary.json", "o-report.html"} and len(artifacts) >= 5
    for text in [failed.out, failed.err, done.out, done.err]:
        assert SECRET not in text
    assert not [p for p in artifacts if SECRET.encode() in p.read_bytes()]


def test_request_errors_become_bad_rows_and_leave_a_sibling_its_id(spark: Any, tmp_path: Path) -> None:
    """A put the store refuses (B/FP) makes its line a bad row that says why; synthetic dedup runs
    over the events whose put succeeded, so that B/FP2 is not made a synthetic duplicate of it."""
    source = write_input(tmp_path / "in", [line(A, "FP"), line(B, "FP"), line(B, "FP2")])
    summary = shred(
        spark, str(source), str(tmp_path / "o"), str(tmp_path / "b"), manifest=RefusingManifest(tmp_path / "m.db")
    )
    assert (summary.kept_events, summary.bad_rows, summary.manifest_errors) == (2, 1, 1)
    assert summary.synthetic_duplicates == 0
    atomic = read_output(tmp_path / "o")["atomic-events"]
    assert sorted(text.split("\t")[6] for text in atomic) == sorted([A, B])
    assert read_bad(tmp_path / "b") == [
        {
            "line": line(B, "FP"),
            "errors": [
                {
                    "level": "error",
                    "message": "Cross-batch deduplication unexpected failure: "
                    f"item for {B} rejected: ItemCollectionSizeLimitExceededException",
                }
            ],
        }
    ]


def test_exhausted_throttling_fails_before_any_output(spark: Any, tmp_path: Path, dynalite: LocalServer) -> None:
    table = unique_table()
    url = f"dynamodb://{table}?region=us-east-1&endpoint={dynalite.endpoint}&create=true"
    shred(
        spark,
        str(write_input(tmp_path / "warm", [line(A, "FP")])),
        str(tmp_path / "w"),
        str(tmp_path / "wb"),
        manifest=url,
    )
    source = write_input(tmp_path / "in", [line(B, "FP")])
    with FaultProxy(dynalite.endpoint, throttle_rate=1.0) as proxy:
        throttled = f"dynamodb://{table}?region=us-east-1&endpoint={proxy.endpoint}&max_attempts=2"
        with pytest.raises(ManifestThrottledError, match=rf"\[{table}\] is still throttling"):
            shred(spark, str(source), str(tmp_path / "o"), str(tmp_path / "b"), manifest=throttled)
    assert not (tmp_path / "o" / "atomic-events").exists()
    assert not list((tmp_path / "b").glob("part-*"))


def test_missing_table_fails_before_any_work(spark: Any, tmp_path: Path, dynalite: LocalServer) -> None:
    url = f"dynamodb://no-such-table?region=us-east-1&endpoint={dynalite.endpoint}"
    with pytest.raises(ManifestUnavailableError, match=r"\[no-such-table\] does not exist"):
        shred(
            spark, str(write_input(tmp_path / "in", [line(A)])), str(tmp_path / "o"), str(tmp_path / "b"), manifest=url
        )
    assert not (tmp_path / "o").exists()


@pytest.mark.usefixtures("sdk_pauses_cut")
def test_unreachable_manifest_fails_before_any_work(spark: Any, tmp_path: Path) -> None:
    endpoint = f"http://127.0.0.1:{free_port()}"
    url = f"dynamodb://events?region=us-east-1&endpoint={endpoint}&max_attempts=2"
    with pytest.raises(ManifestUnavailableError, match=re.escape(endpoint)):
        shred(
            spark, str(write_input(tmp_path / "in", [line(A)])), str(tmp_path / "o"), str(tmp_path / "b"), manifest=url
        )
    assert not (tmp_path / "o").exists()


def test_output_folder_must_be_empty(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "keep.txt").write_text("mine")
    with pytest.raises(OutputExistsError, match=r"keep\.txt"):
        shred(spark, str(write_input(tmp_path / "in", [line(A)])), str(tmp_path / "o"), str(tmp_path / "b"))
    assert (tmp_path / "o" / "keep.txt").read_text() == "mine"


@pytest.mark.every_line
def test_the_readme_demo(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The README's first command, twice: a rerun of a delivered batch over its own output (the demo
    passes --overwrite and --rerun) gives the same bytes and counts, its own events not taken for
    cross-batch duplicates; without --rerun, the overwrite is refused and nothing is replaced."""
    assert demo.main(["--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out

    def summaries() -> list[dict[str, Any]]:
        return [json.loads((tmp_path / b.name / "shredded/_summary.json").read_text()) for b in sample_batches()]

    first, second = summaries()
    assert first["cross_batch_duplicates"] == 0
    assert second["cross_batch_duplicates"] > 0
    assert re.search(rf"natural duplicates dropped cross-batch +{second['cross_batch_duplicates']}\n", printed)
    for summary in (first, second):
        assert summary["bad_rows"] > 0 and summary["in_batch_duplicates"] > 0 and summary["synthetic_duplicates"] > 0
        assert summary["events_per_event_id"][">100"] == 1
    batch = sample_batches()[1]
    out, bad = tmp_path / batch.name / "shredded", tmp_path / batch.name / "bad"
    before = read_output(out), read_bad(bad)
    with pytest.raises(RunConflictError, match=r"was delivered already, by the run with etl time .* pass --rerun"):
        shred(spark, str(batch), str(out), str(bad), manifest=f"sqlite://{tmp_path / 'manifest.db'}", overwrite=True)
    assert (read_output(out), read_bad(bad)) == before, "refused: nothing replaced"
    assert demo.main(["--out", str(tmp_path)]) == 0, "a rerun of the demo"
    assert (read_output(out), read_bad(bad)) == before
    counts = ("input_lines", "kept_events", "bad_rows", "in_batch_duplicates", "cross_batch_duplicates")
    assert [{k: s[k] for k in counts} for s in summaries()] == [{k: s[k] for k in counts} for s in (first, second)]
