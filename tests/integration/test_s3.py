"""The transformer where its users run it: runs on S3 (moto's server, through the S3A connector),
the manifest on DynamoDB (dynalite), the message on SQS (moto). The same rows, bad rows and counts
as on local folders; a run killed (SIGKILL to the process group, under spark-submit) between the
files of its move, where S3's rename is a copy and a delete, finished by the next invocation (every
other step is killed in the suite's own process: `tests/spark/transformer/test_crashes.py`); two
transformers started together on one output writing each run once; the files a run reads sized
from one listing of their folder, not a HEAD request a file, and a transformer run's read planned
from listings of its folder, not requests a file."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import attrs
import pytest

from events_manifest.snowplow import sample_batches
from events_manifest.testing import LocalServer
from spark_integration import transformer as transformer_module
from tests.commands import killed, told
from tests.integration.conftest import S3, spark_submit, submit_env
from tests.integration.outputs import config, manifest, queue, reference, s3_run
from tests.spark.transformer.test_command import transformer
from tests.transformer_helpers import RESOLVER, same


@pytest.mark.every_line
def test_the_transformer_on_s3_writes_what_it_writes_locally(
    runs: Path, s3: S3, s3_server: LocalServer, dynalite: LocalServer, monkeypatch: pytest.MonkeyPatch, spark: Any
) -> None:
    expected = reference(runs, dynalite)
    sqs, url = queue(s3_server)
    monkeypatch.setenv("AWS_ENDPOINT_URL_SQS", s3_server.endpoint)
    (runs / "s3.hocon").write_text(config(s3.url("in"), s3.url("out"), url))
    done = transformer(runs, "--iglu-config", "iglu.json", "--config", "s3.hocon", "--manifest", manifest(dynalite))
    assert done.returncode == 0, told(done.stderr)
    assert f"Batch Transformer: processing s3://{s3.bucket}/in/run=1/" in done.stdout
    for name in ("run=1", "run=2"):
        found = s3_run(s3, name)
        same(found, expected[name])
        assert found["message"]["data"]["base"] == f"s3://{s3.bucket}/out/{name}/"
        assert {"output=good/_SUCCESS", "output=bad/_SUCCESS", "shredding_complete.json"} <= set(found["names"])
        assert not [n for n in found["names"] if n.startswith((".staging", "_claim"))], "nothing left behind"
    assert expected["run=2"]["message"]["data"]["count"]["good"] < 1058, "run 2's re-delivered events dropped"
    bodies = [m["Body"] for m in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]]
    assert bodies == [s3.read(f"out/run={n}/shredding_complete.json").decode() for n in (1, 2)]


def test_a_run_killed_between_the_files_of_its_move_on_s3_is_finished(
    runs: Path, s3: S3, s3_server: LocalServer, dynalite: LocalServer, spark: Any
) -> None:
    """Killed under spark-submit after run 1's first file moved into place (S3's rename being a copy
    and a delete): the next invocation finishes run 1 (its message sent, the same text), then
    transforms run 2; both as an unbroken transformer writes them."""
    step = "moving"
    expected = reference(runs, dynalite)
    sqs, url = queue(s3_server)
    (runs / "s3.hocon").write_text(config(s3.url("in"), s3.url("out"), url))
    flags = ["--iglu-config", "iglu.json", "--config", "s3.hocon", "--manifest", manifest(dynalite)]
    command = spark_submit(transformer_module.__file__, *flags, server=s3_server)
    killed(command, runs, step, submit_env(AWS_ENDPOINT_URL_SQS=s3_server.endpoint))
    assert "out/run=1/shredding_complete.json" not in s3.keys("out/run=1/")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AWS_ENDPOINT_URL_SQS", s3_server.endpoint)
        done = transformer(runs, *flags)
    assert done.returncode == 0, told(done.stderr)
    for name in ("run=1", "run=2"):
        found = s3_run(s3, name)
        same(found, expected[name])
        assert not [n for n in found["names"] if n.startswith((".staging", "_claim"))], "nothing left behind"
    bodies = [m["Body"] for m in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]]
    committed = [s3.read(f"out/run={n}/shredding_complete.json").decode() for n in (1, 2)]
    assert sorted(set(bodies)) == sorted(committed), "each run's message, the text of its commit"


def test_two_transformers_started_together_on_s3_write_each_run_once(
    runs: Path, s3: S3, s3_server: LocalServer, dynalite: LocalServer, spark: Any
) -> None:
    """Started at the same moment on one output, without a manifest: whichever claims a run first
    writes it (S3's conditional write alone makes the claim exclusive); the other stops there or
    finds it committed. Each run is written once, in order, as one transformer writes it. (With a
    manifest its ledger decides as well: a start that loses the ledger's race,
    tests/core/manifest/test_ledger_flow.py and test_ledger.py on every backend; another
    process's claim judged by the ledger, tests/spark/transformer/test_operations.py.)"""
    expected = reference(runs, dynalite, with_manifest=False)
    (runs / "s3.hocon").write_text(config(s3.url("in"), s3.url("out")))
    flags = ["--iglu-config", "iglu.json", "--config", "s3.hocon"]
    command = spark_submit(transformer_module.__file__, *flags, server=s3_server)
    started = [
        subprocess.Popen(command, cwd=runs, env=submit_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    results = [process.communicate(timeout=600) for process in started]
    codes = [process.returncode for process in started]
    assert 0 in codes and set(codes) <= {0, 1}, results
    for (out, err), code in zip(results, codes, strict=True):
        said = out + err  # spark-submit sends the Python driver's stderr to its stdout
        if code == 1:
            assert "is being written by another run" in said or "is still running" in said, told(said)
    for name in ("run=1", "run=2"):
        found = s3_run(s3, name)
        same(found, expected[name])
    done = transformer(runs, *flags)
    assert done.returncode == 0 and "Batch Transformer: processing" not in done.stdout, "nothing left to do"


def test_the_shred_job_the_populator_and_the_dataframe_dedup_on_s3(
    tmp_path: Path, s3: S3, dynalite: LocalServer, spark: Any
) -> None:
    """The other jobs on `s3a://`, as on local folders: the shred job's outputs and bad rows (its
    claims and commit on S3), the populator's puts, and a DataFrame deduplicated against the
    manifest the populator filled."""
    from spark_integration import deduplicate, populate, shred
    from tests.shred_helpers import read_bad, read_output

    first, second = sample_batches()
    s3.put_folder(first, "in/batch-1")
    for place, source, out, bad in (
        ("local", str(first), str(tmp_path / "local/out"), str(tmp_path / "local/bad")),
        ("s3", s3.url("in/batch-1"), s3.url("shredded"), s3.url("bad")),
    ):
        summary = shred(spark, source, out, bad, manifest=manifest(dynalite))
        assert summary.balanced, place
    s3.download("shredded", tmp_path / "s3/out")
    s3.download("bad", tmp_path / "s3/bad")
    assert read_output(tmp_path / "s3/out") == read_output(tmp_path / "local/out")
    assert read_bad(tmp_path / "s3/bad") == read_bad(tmp_path / "local/bad")
    assert not [key for key in s3.keys("shredded/") if "_claim" in key or ".staging" in key]

    filled = manifest(dynalite)
    counted = populate(spark, s3.url("in/batch-1"), filled)
    local = populate(spark, str(first), manifest(dynalite))
    assert (counted.input_lines, counted.invalid_lines, counted.events, counted.stored) == (
        local.input_lines,
        local.invalid_lines,
        local.events,
        local.stored,
    ) and counted.stored > 900
    s3.put_folder(second, "in/batch-2")
    lines = (
        spark.read.text(s3.url("in/batch-2"))
        .where("size(split(value, '\\t')) = 131")
        .selectExpr("split(value, '\\t')[6] AS event_id", "split(value, '\\t')[129] AS fingerprint")
    )
    with deduplicate(lines.where("length(event_id) = 36"), ["event_id"], ["fingerprint"], manifest=filled) as result:
        assert result.duplicates.count() > 0, "the re-delivered events of batch 1, found through the manifest"
        assert result.unique.count() > 900


@pytest.mark.parametrize("mode", ["parquet", "shred"])
def test_parquet_and_shred_mode_on_s3(tmp_path: Path, s3: S3, spark: Any, mode: str) -> None:
    """The transformer's other outputs on `s3a://`: the same Parquet rows and shredded lines, under
    the same partitions, as on local folders."""
    import pyarrow.parquet as pq

    from tests.shred_helpers import contexts, sdj, unstruct
    from tests.spark.transformer.test_command import read_tree, write_run
    from tests.transformer_helpers import event

    page = sdj("iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0", '{"id":"p1"}')
    click = sdj(
        "iglu:com.snowplowanalytics.snowplow/link_click/jsonschema/1-0-1", '{"targetUrl":"https://x/","elementId":"b"}'
    )
    ids = ["c6ef3124-b53a-4b13-a233-0088f79dcbcb", "d7f5fa2f-3b3a-4c97-a030-8e05d9f40b0a"]
    run = write_run(
        tmp_path,
        "run=1",
        [event(ids[0], "f", contexts=contexts(page)), event(ids[1], "g", unstruct_event=unstruct(click)), "bad"],
    )
    s3.put_folder(run, "in/run=1")
    (tmp_path / "iglu.json").write_text(json.dumps(RESOLVER))
    formats = {"transformationType": "widerow", "fileFormat": "parquet"} if mode == "parquet" else {
        "transformationType": "shred", "default": "TSV"
    }  # fmt: skip
    for name, source, target in (("local", "in", "local"), ("s3", s3.url("in"), s3.url("out"))):
        (tmp_path / f"{name}.hocon").write_text(
            json.dumps({"input": source, "output": {"path": target, "compression": "NONE"}, "formats": formats})
        )
        done = transformer(tmp_path, "--iglu-config", "iglu.json", "--config", f"{name}.hocon")
        assert done.returncode == 0, told(done.stderr)
    s3.download("out/run=1", tmp_path / "s3")
    local, remote = tmp_path / "local/run=1", tmp_path / "s3"
    if mode == "parquet":
        rows = [
            sorted(pq.read_table(base / "output=good").to_pylist(), key=lambda row: row["event_id"])
            for base in (local, remote)
        ]
        assert rows[0] == rows[1] and len(rows[0]) == 2
    else:
        assert read_tree(local / "output=good") == read_tree(remote / "output=good")
        assert len(read_tree(remote / "output=good")) == 3, "atomic, web_page, link_click"
    assert read_tree(local / "output=bad") == read_tree(remote / "output=bad")
    message = json.loads((remote / "shredding_complete.json").read_text())
    assert message["data"]["count"] == json.loads((local / "shredding_complete.json").read_text())["data"]["count"]


@pytest.mark.every_line
def test_the_files_a_run_reads_on_s3_are_listed_a_folder_at_a_time(s3: S3, spark: Any) -> None:
    """The sizes of the files a run reads (what its ledger record holds of them) from one listing of
    their folder, not a HEAD request a file: forty files in a folder, and one alone in another (its
    folder listed too, for a file still being copied beside it)."""
    from spark_integration._spark.storage import HadoopStorage

    for n in range(40):
        s3.client.put_object(Bucket=s3.bucket, Key=f"in/part-{n:02d}", Body=b"x" * n + b"\n")
    s3.client.put_object(Bucket=s3.bucket, Key="alone/part-0", Body=b"abc\n")
    frame = spark.read.text([s3.url("in"), s3.url("alone/part-0")])
    path = getattr(spark._jvm, "org.apache.hadoop.fs.Path")(s3.url())
    statistics = path.getFileSystem(spark._jsc.hadoopConfiguration()).getStorageStatistics()
    kinds = ("object_metadata_request", "object_list_request")
    before = [statistics.getLong(kind) for kind in kinds]
    listing = HadoopStorage(spark).files_of(frame)
    heads, lists = (statistics.getLong(kind) - count for kind, count in zip(kinds, before, strict=True))
    expected = [(s3.url("alone/part-0"), 4), *((s3.url(f"in/part-{n:02d}"), n + 1) for n in range(40))]
    assert list(listing.files) == expected
    assert heads <= 2 and lists <= 2, f"{heads} HEAD and {lists} LIST requests for 41 files in 2 folders"


@pytest.mark.every_line
def test_a_transformer_run_s_files_on_s3_are_found_from_one_listing_of_its_folder(s3: S3, spark: Any) -> None:
    """A transformer run's files (what its ledger record holds of them, then the DataFrame that reads
    them) from listings of the run's folder, not two or three requests a file: forty files; and a
    stream window's records from a listing of each micro-batch's folder."""
    from spark_integration._spark.storage import HadoopStorage

    for n in range(40):
        s3.client.put_object(Bucket=s3.bucket, Key=f"run=1/part-{n:02d}.tsv", Body=f"line {n}\n".encode())
    path = getattr(spark._jvm, "org.apache.hadoop.fs.Path")(s3.url())
    statistics = path.getFileSystem(spark._jsc.hadoopConfiguration()).getStorageStatistics()
    kinds = ("object_metadata_request", "object_list_request")
    before = [statistics.getLong(kind) for kind in kinds]
    storage = HadoopStorage(spark)
    frame = storage.frame_of(storage.folder_files(s3.url("run=1")))
    heads, lists = (statistics.getLong(kind) - count for kind, count in zip(kinds, before, strict=True))
    assert heads + lists < 20, f"{heads} HEAD and {lists} LIST requests for a run of 40 files"
    assert sorted(row.value for row in frame.collect()) == sorted(f"line {n}" for n in range(40))

    # a stream's window: its records staged as Parquet, a folder a micro-batch
    batches = [s3.url(f"window/batch={batch}") for batch in range(3)]
    for batch, folder in enumerate(batches):
        records = spark.createDataFrame([(f"record {batch} {n}".encode(),) for n in range(40)], "value binary")
        records.repartition(8).write.parquet(folder)
    before = [statistics.getLong(kind) for kind in kinds]
    frame = storage.frame_of(attrs.evolve(storage.folder_files(*batches), records=True))
    heads, lists = (statistics.getLong(kind) - count for kind, count in zip(kinds, before, strict=True))
    assert heads + lists < 30, f"{heads} HEAD and {lists} LIST requests for a window of 3 batches, 24 files"
    assert frame.count() == 120
