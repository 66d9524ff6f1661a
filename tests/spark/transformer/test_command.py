"""The transformer (wide-row JSON) through its command line, in this process on the suite's Spark
session: runs, every kind of bad row, natural, synthetic and cross-batch dedup (SQLite and
dynalite), the message on SQS and SNS (moto's server), gzip, skipSchemas, a failing run, a kill
and its rerun. Good rows are compared as parsed JSON; every bad row and message is checked
against its Iglu Central schema."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import boto3
import pytest

from events_manifest.testing._servers import LocalServer
from tests.commands import env, in_process, told
from tests.shred_helpers import contexts, sdj, unstruct
from tests.transformer_helpers import RESOLVER, b64, config, dynamodb_config, event, schema_errors

A = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"
B = "d7f5fa2f-3b3a-4c97-a030-8e05d9f40b0a"
C = "0f4a8c9e-1b2d-4e3f-8a5b-6c7d8e9f0a1b"
D = "5b0c7a3e-9d8f-4a1b-b2c3-d4e5f6a7b8c9"
PRODUCT = "iglu:com.acme/product/jsonschema/1-0-0"
CLICK = "iglu:com.acme/click/jsonschema/1-0-0"
DUPLICATE = "iglu:com.snowplowanalytics.snowplow/duplicate/jsonschema/1-0-0"


def transformer(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    from spark_integration.transformer import main

    return in_process(main, cwd, *args)


def write_run(root: Path, name: str, *files: list[str], gz: bool = False) -> Path:
    folder = root / "in" / name
    folder.mkdir(parents=True)
    for i, lines in enumerate(files):
        data = ("\n".join(lines) + "\n").encode()
        if gz:
            (folder / f"part-{i}.tsv.gz").write_bytes(gzip.compress(data))
        else:
            (folder / f"part-{i}.tsv").write_bytes(data)
    return folder


def run(tmp: Path, extra: str = "", *flags: str) -> subprocess.CompletedProcess[str]:
    """The transformer in `tmp`, its config naming `in` and `out` relative to it."""
    (tmp / "iglu.json").write_text(json.dumps(RESOLVER))
    return transformer(
        tmp,
        "--iglu-config",
        b64((tmp / "iglu.json").read_text()),
        "--config",
        b64(config("in", "out", extra)),
        *flags,
    )


def read_lines(folder: Path) -> list[str]:
    lines = []
    for part in sorted(folder.glob("part-*")):
        data = gzip.decompress(part.read_bytes()) if part.suffix == ".gz" else part.read_bytes()
        lines += data.decode().splitlines()
    return lines


def outputs(base: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """A run folder's good rows, bad rows and message, each bad row and the message schema-checked."""
    good = [json.loads(text) for text in read_lines(base / "output=good")]
    bad = [json.loads(text) for text in read_lines(base / "output=bad")]
    message = json.loads((base / "shredding_complete.json").read_text())
    for document in (*bad, message):
        assert schema_errors(document) == [], document
    return good, bad, message


def rows(documents: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(document, sort_keys=True) for document in documents)


def types(message: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted((t["schemaKey"], t["snowplowEntity"]) for t in message["data"]["typesInfo"]["types"])


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    """Three runs: bad lines of every kind, natural and synthetic duplicates, entities, gzip."""
    write_run(
        tmp_path,
        "run=2026-11-01-00-00-00",
        [
            event(A, "fa", etl="2026-11-01 06:00:02", app_id="late copy"),
            event(
                A,
                "fa",
                etl="2026-11-01 06:00:01",
                app_id="first",
                contexts=contexts(sdj(PRODUCT, '{"sku":"x","price":1.50}')),
            ),
            event(B, "fb1", unstruct_event=unstruct(sdj(CLICK, '{"target":"buy"}'))),
            event(B, "fb2", collector="2026-11-01 05:00:00.250"),
            "a line without tabs",
            event(C, txn_id="not a number", contexts="&&&"),
            event(D, collector="2026-01-01 00:00:00"),
        ],
        gz=True,
    )
    write_run(
        tmp_path,
        "run=2026-11-02-00-00-00",
        [event(A, "fa", etl="2026-11-02 06:00:00", app_id="redelivered")],
        [event(C)],
    )
    return tmp_path


@pytest.mark.every_line
def test_runs_of_wide_rows_with_every_kind_of_bad_row_and_dedup(runs: Path, spark: Any) -> None:
    """Relative folders in the config (see `run`) mean the current folder's, though the session
    started elsewhere."""
    extra = (
        '"validations": {"minimumTimestamp": "2026-06-01T00:00:00Z"}, '
        '"skipSchemas": ["iglu:com.acme/click/jsonschema/1-*-*"]'
    )
    done = run(runs, extra, "--manifest", "sqlite://m.db")
    assert done.returncode == 0, told(done.stderr)
    assert (
        "Batch Transformer: processing file:" in done.stdout and "No incomplete folders were discovered" in done.stdout
    )
    first, second = runs / "out/run=2026-11-01-00-00-00", runs / "out/run=2026-11-02-00-00-00"
    good, bad, message = outputs(first)
    assert sorted(row["app_id"] for row in good) == ["app", "app", "first"]
    kept = next(row for row in good if row["event_id"] == A)
    assert kept["app_id"] == "first" and kept["contexts_com_acme_product_1"] == [{"sku": "x", "price": 1.5}]
    assert '"price":1.50' in "".join(read_lines(first / "output=good")), "numbers as written"
    renamed = [row for row in good if row["event_id"] != A]
    assert len(renamed) == 2 and B not in {row["event_id"] for row in renamed}
    assert all(
        row["contexts_com_snowplowanalytics_snowplow_duplicate_1"] == [{"originalEventId": B}] for row in renamed
    )
    assert {row.get("unstruct_event_com_acme_click_1", None) is not None for row in renamed} == {True, False}
    assert sorted(b["schema"].split("/")[1] for b in bad) == [
        "generic_error",
        "loader_parsing_error",
        "loader_parsing_error",
    ]
    [decoding] = [b["data"]["failure"] for b in bad if b["data"]["failure"].get("type") == "RowDecodingError"]
    assert [(e["key"], e["message"]) for e in decoding["errors"]] == [
        ("txn_id", "Cannot parse key txn_id into integer"),
        ("contexts", "ParsingFailure: expected json value got '&&&' (line 1, column 1)"),
    ], "the reference parser's words"
    assert types(message) == [(PRODUCT, "CONTEXT"), (DUPLICATE, "CONTEXT")], "the click left out by skipSchemas"
    data = message["data"]
    assert data["count"] == {"good": 3, "bad": 3} and data["compression"] == "GZIP"
    assert data["base"] == f"file:{first}/" and data["timestamps"]["min"] == "2026-11-01T05:00:00.250Z"
    assert all(p.name.endswith(".gz") for p in (first / "output=good").glob("part-*"))
    good2, bad2, message2 = outputs(second)
    assert [row["event_id"] for row in good2] == [C] and bad2 == [], "the redelivered event dropped cross-batch"
    assert message2["data"]["count"] == {"good": 1, "bad": 0}
    assert "run=2026-11-01-00-00-00: 7 lines, 3 good, 3 bad, 1 natural and 0 cross-batch" in done.stdout
    assert "run=2026-11-02-00-00-00: 2 lines, 1 good, 0 bad, 0 natural and 1 cross-batch" in done.stdout
    again = run(runs, extra, "--manifest", "sqlite://m.db")
    assert again.returncode == 0 and "processing" not in again.stdout, "runs present in the output are done"
    (second / "shredding_complete.json").unlink()
    incomplete = run(runs, extra, "--manifest", "sqlite://m.db")
    assert f"{runs}/in/run=2026-11-02-00-00-00/ was not successfully shredded" in incomplete.stderr


def test_config_errors_exit_2_and_write_nothing(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    output = json.dumps({"path": str(tmp_path / "out"), "compression": "zip"})
    cases = {
        f'"output": {output}': "Cannot resolve config: Unknown Compression [zip]",
        '"deduplication": {"natural": false, "synthetic": {"type": "none"}}': (
            "Natural deduplication needs to be enabled when cross batch deduplication is enabled"
        ),
        '"featureFlags": {"legacyMessageFormat": true}': (
            "LegacyShreddingComplete message is only supported when shredding"
        ),
    }
    for extra, message in cases.items():
        text = b64(config(tmp_path / "in", tmp_path / "out", extra))
        done = transformer(
            tmp_path, "--iglu-config", b64(json.dumps(RESOLVER)), "--config", text, "--manifest", "sqlite://m.db"
        )
        assert done.returncode == 2 and done.stderr.strip() == message, done.stderr
    (tmp_path / "in" / "dedup.json").write_text(
        '{"schema": "iglu:com.acme/not_a_manifest_config/jsonschema/1-0-0", "data": {}}'
    )
    flags = ("--duplicate-storage-config", "in/dedup.json", "--config", b64(config(tmp_path / "in", tmp_path / "out")))
    refused = transformer(tmp_path, "--iglu-config", b64(json.dumps(RESOLVER)), *flags)
    assert refused.returncode == 2 and "not_a_manifest_config" in refused.stderr and "Traceback" not in refused.stderr
    (tmp_path / "in" / "dedup.json").unlink()
    command = [sys.executable, "-m", "spark_integration.transformer", "--iglu-config", "nope.json", "--config", "x"]
    missing = subprocess.run(command, cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=120, check=False)
    assert (
        missing.returncode == 2
        and missing.stderr.strip() == f"Error reading {tmp_path}/x file from filesystem: No such file or directory"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]


def test_a_failing_run_leaves_the_runs_before_it_complete(tmp_path: Path) -> None:
    write_run(tmp_path, "run=1", [event(A)])
    write_run(tmp_path, "run=2", [event(B)])
    broken = write_run(tmp_path, "run=3", [event(C)])
    (broken / "part-9.tsv.gz").write_bytes(b"\x1f\x8b not gzip at all")
    write_run(tmp_path, "run=4", [event(D)])
    done = run(tmp_path, '"output": {"path": "%s", "compression": "NONE"}' % (tmp_path / "out"))
    assert done.returncode == 1 and "transformer: error:" in done.stderr
    assert "run=1: 1 lines, 1 good" in done.stdout and "run=2: 1 lines, 1 good" in done.stdout, "printed once committed"
    assert (tmp_path / "out/run=1/shredding_complete.json").exists() and (
        tmp_path / "out/run=2/shredding_complete.json"
    ).exists()
    assert not (tmp_path / "out/run=3").exists() and not (tmp_path / "out/run=4").exists()
    (broken / "part-9.tsv.gz").unlink()
    assert run(tmp_path, '"output": {"path": "%s", "compression": "NONE"}' % (tmp_path / "out")).returncode == 0
    good, _, _ = outputs(tmp_path / "out/run=3")
    assert [row["event_id"] for row in good] == [C] and all(
        p.suffix == ".txt" for p in (tmp_path / "out/run=3/output=good").glob("part-*")
    )


@pytest.fixture
def aws(moto_server: LocalServer, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_ENDPOINT_URL_SQS": moto_server.endpoint,
        "AWS_ENDPOINT_URL_SNS": moto_server.endpoint,
    }.items():
        monkeypatch.setenv(name, value)
    sqs = boto3.client("sqs", region_name="eu-west-1")
    sns = boto3.client("sns", region_name="eu-west-1")
    return {"sqs": sqs, "sns": sns}


def test_the_message_goes_to_sqs_and_sns(tmp_path: Path, aws: dict[str, Any]) -> None:
    sqs, sns = aws["sqs"], aws["sns"]
    queue = sqs.create_queue(
        QueueName=f"loader-{os.getpid()}.fifo", Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"}
    )
    write_run(tmp_path, "run=1", [event(A)])
    done = run(tmp_path, queue_config("sqs", "queueName", queue["QueueUrl"]))
    assert done.returncode == 0, told(done.stderr)
    received = sqs.receive_message(QueueUrl=queue["QueueUrl"], AttributeNames=["MessageGroupId"])["Messages"]
    assert [m["Body"] for m in received] == [(tmp_path / "out/run=1/shredding_complete.json").read_text()]
    assert received[0]["Attributes"]["MessageGroupId"] == "shredding"
    topic = sns.create_topic(
        Name=f"loader-{os.getpid()}.fifo", Attributes={"FifoTopic": "true", "ContentBasedDeduplication": "true"}
    )
    subscriber = sqs.create_queue(
        QueueName=f"sub-{os.getpid()}.fifo", Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"}
    )
    arn = sqs.get_queue_attributes(QueueUrl=subscriber["QueueUrl"], AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    sns.subscribe(TopicArn=topic["TopicArn"], Protocol="sqs", Endpoint=arn, Attributes={"RawMessageDelivery": "true"})
    write_run(tmp_path, "run=2", [event(B)])
    done = run(tmp_path, queue_config("sns", "topicArn", topic["TopicArn"]))
    assert done.returncode == 0, told(done.stderr)
    published = sqs.receive_message(QueueUrl=subscriber["QueueUrl"])["Messages"]
    assert [m["Body"] for m in published] == [(tmp_path / "out/run=2/shredding_complete.json").read_text()]
    refused = write_run(tmp_path, "run=3", [event(C)])
    done = run(tmp_path, queue_config("sqs", "queueName", f"{aws['sqs'].meta.endpoint_url}/missing"))
    assert done.returncode == 1 and "Could not send shredded types" in done.stderr
    assert refused.exists() and not (tmp_path / "out/run=3/shredding_complete.json").exists(), (
        "no commit without the message"
    )


def queue_config(kind: str, key: str, name: str) -> str:
    return '"queue": ' + json.dumps({"type": kind, key: name, "region": "eu-west-1"})


def test_cross_batch_dedup_on_dynamodb(tmp_path: Path, dynalite: LocalServer) -> None:
    table = f"transformer-{os.getpid()}"
    storage = dynamodb_config(table)
    (tmp_path / "dedup.json").write_text(json.dumps(storage))
    from events_manifest import init_storage, parse_config

    init_storage(parse_config(storage), endpoint_url=dynalite.endpoint, create_if_missing=True).close()
    write_run(tmp_path, "run=1", [event(A, "f"), event(B, "f")])
    write_run(tmp_path, "run=2", [event(A, "f", etl="2026-11-02 06:00:00"), event(C, "f")])
    flags = ("--duplicate-storage-config", "dedup.json", "--dynamodb-endpoint", dynalite.endpoint)
    done = run(tmp_path, "", *flags)
    assert done.returncode == 0, told(done.stderr)
    assert sorted(r["event_id"] for r in outputs(tmp_path / "out/run=1")[0]) == sorted([A, B])
    assert [r["event_id"] for r in outputs(tmp_path / "out/run=2")[0]] == [C]


def read_tree(folder: Path) -> dict[str, list[str]]:
    """The lines of each partition folder below `folder`, by its path relative to it."""
    found: dict[str, list[str]] = {}
    for part in sorted(folder.rglob("part-*")):
        found.setdefault(str(part.parent.relative_to(folder)), []).extend(read_lines(part.parent))
    return {place: sorted(set(lines)) for place, lines in found.items()}


def partition_of(vendor: str, name: str, fmt: str, version: str = "1-0-0") -> str:
    model, revision, addition = version.split("-")
    return f"vendor={vendor}/name={name}/format={fmt}/model={model}/revision={revision}/addition={addition}"


@pytest.mark.every_line
def test_shred_mode_writes_each_entity_under_its_partition(tmp_path: Path) -> None:
    acme = tmp_path / "acme" / "schemas/com.acme/order/jsonschema/1-0-0"
    acme.parent.mkdir(parents=True)
    order = {
        "type": "object",
        "properties": {"orderId": {"type": "string"}, "total": {"type": "number"}},
        "required": ["orderId"],
    }
    acme.write_text(json.dumps(order))
    resolver = json.loads(json.dumps(RESOLVER))
    resolver["data"]["repositories"].append(
        {"name": "acme", "priority": 1, "connection": {"embedded": {"path": str(tmp_path / "acme")}}}
    )
    (tmp_path / "iglu.json").write_text(json.dumps(resolver))
    click = sdj(
        "iglu:com.snowplowanalytics.snowplow/link_click/jsonschema/1-0-1", '{"targetUrl":"https://x/","elementId":"b"}'
    )
    page = sdj("iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0", '{"id":"p1"}')
    ordered = sdj("iglu:com.acme/order/jsonschema/1-0-0", '{"orderId":"o-1","total":12.50}')
    gone = sdj("iglu:com.acme/gone/jsonschema/1-0-0", "{}")
    write_run(
        tmp_path,
        "run=1",
        [
            event(A, "f", unstruct_event=unstruct(click), contexts=contexts(page, ordered)),
            event(B, "f1", contexts=contexts(gone)),
            event(C, "c1"),
            event(C, "c2"),
            "bad",
        ],
    )
    pages = "iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-*-*"
    shred = f'"formats": {{"transformationType": "shred", "default": "TSV", "json": ["{pages}"]}}'
    text = json.dumps({"input": str(tmp_path / "in"), "output": {"path": str(tmp_path / "out"), "compression": "NONE"}})
    (tmp_path / "c.hocon").write_text(text[:-1] + ", " + shred + "}")
    done = transformer(tmp_path, "--iglu-config", "iglu.json", "--config", "c.hocon")
    assert done.returncode == 0, told(done.stderr)
    base = tmp_path / "out/run=1"
    good = read_tree(base / "output=good")
    atomic = good[partition_of("com.snowplowanalytics.snowplow", "atomic", "tsv")]
    assert len(atomic) == 3 and all(len(line.split("\t")) == 128 for line in atomic)
    assert {line.split("\t")[6] for line in atomic} >= {A} and B not in {line.split("\t")[6] for line in atomic}
    meta = [A, "2026-11-01 05:59:00.000", "events"]
    assert good[partition_of("com.snowplowanalytics.snowplow", "link_click", "tsv", "1-0-1")] == [
        "\t".join(["com.snowplowanalytics.snowplow", "link_click", "jsonschema", "1-0-1", *meta,
                   '["events","link_click"]', "events", "https://x/", "\\N", "\\N", "b", "\\N"])
    ]  # fmt: skip
    assert good[partition_of("com.acme", "order", "tsv")] == [
        "\t".join(["com.acme", "order", "jsonschema", "1-0-0", *meta, '["events","order"]', "events", "o-1", "12.50"])
    ]
    (page_line,) = good[partition_of("com.snowplowanalytics.snowplow", "web_page", "json")]
    assert json.loads(page_line)["data"] == {"id": "p1"} and json.loads(page_line)["hierarchy"]["rootId"] == A
    duplicates = good[partition_of("com.snowplowanalytics.snowplow", "duplicate", "tsv")]
    assert [line.split("\t")[-1] for line in duplicates] == [C, C]
    bad = read_tree(base / "output=bad")
    (iglu_error,) = bad[partition_of("com.snowplowanalytics.snowplow.badrows", "loader_iglu_error", "json", "2-0-0")]
    assert schema_errors(iglu_error) == [] and json.loads(iglu_error)["data"]["payload"]["event_id"] == B
    assert json.loads(iglu_error)["data"]["failure"][0]["schemaKey"] == "iglu:com.acme/gone/jsonschema/1-0-0"
    assert (
        len(bad[partition_of("com.snowplowanalytics.snowplow.badrows", "loader_parsing_error", "json", "2-0-0")]) == 1
    )
    message = json.loads((base / "shredding_complete.json").read_text())
    assert schema_errors(message) == [] and message["data"]["count"] == {"good": 3, "bad": 2}
    assert {(t["schemaKey"].split("/")[1], t["format"]) for t in message["data"]["typesInfo"]["types"]} == {
        ("link_click", "TSV"), ("web_page", "JSON"), ("order", "TSV"), ("duplicate", "TSV")
    }  # fmt: skip
    legacy = (
        '"formats": {"transformationType": "shred", "default": "JSON", "tsv": ["iglu:com.acme/order/jsonschema/1-*-*"]}'
    )
    text = json.dumps({"input": str(tmp_path / "in"), "output": {"path": str(tmp_path / "legacy")}})
    (tmp_path / "legacy.hocon").write_text(
        text[:-1] + ", " + legacy + ', "featureFlags": {"legacyMessageFormat": true}}'
    )
    assert transformer(tmp_path, "--iglu-config", "iglu.json", "--config", "legacy.hocon").returncode == 0
    message = json.loads((tmp_path / "legacy/run=1/shredding_complete.json").read_text())
    assert message["schema"].endswith("/1-0-1") and schema_errors(message) == []
    assert {(t["schemaKey"].split("/")[1], t["format"]) for t in message["data"]["types"]} == {
        ("link_click", "JSON"), ("web_page", "JSON"), ("order", "TSV"), ("gone", "JSON"), ("duplicate", "JSON")
    }  # fmt: skip


@pytest.mark.every_line
def test_wide_row_parquet_columns_values_and_misfits(tmp_path: Path, spark: Any) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schemas = {
        "signup/jsonschema/1-0-0": {"type": "object", "properties": {"plan": {"type": "string"}}, "required": ["plan"]},
        "signup/jsonschema/1-0-1": {
            "type": "object",
            "properties": {"plan": {"type": "string"}, "trial": {"type": "boolean"}},
        },
        "signup/jsonschema/1-0-2": {"type": "object", "properties": {"plan": {"type": "integer"}}},
        "item/jsonschema/1-0-0": {
            "type": "object",
            "properties": {
                "sku": {"type": "string"},
                "price": {"type": "number", "multipleOf": 0.01, "minimum": 0, "maximum": 10000},
                "at": {"type": "string", "format": "date-time"},
            },
            "required": ["sku"],
        },
    }
    schemas["zeta/jsonschema/1-0-0"] = schemas["../com.acme.sub/alpha/jsonschema/1-0-0"] = {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
    }
    for path, schema in schemas.items():
        file = tmp_path / "acme/schemas/com.acme" / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(json.dumps(schema))
    resolver = json.loads(json.dumps(RESOLVER))
    resolver["data"]["repositories"].append(
        {"name": "acme", "priority": 1, "connection": {"embedded": {"path": str(tmp_path / "acme")}}}
    )
    (tmp_path / "iglu.json").write_text(json.dumps(resolver))
    signup = "iglu:com.acme/signup/jsonschema/"
    item = "iglu:com.acme/item/jsonschema/1-0-0"
    E = "9e8d7c6b-5a49-4382-9716-0a1b2c3d4e5f"
    pro = unstruct(sdj(signup + "1-0-1", '{"plan":"pro","trial":true}'))
    items = contexts(
        sdj(item, '{"sku":"a","price":9.99,"at":"2026-11-01T06:00:00.123456789+01:00"}'),
        sdj(item, '{"sku":"b"}'),
        sdj("iglu:com.acme.sub/alpha/jsonschema/1-0-0", '{"n":1}'),
        sdj("iglu:com.acme/zeta/jsonschema/1-0-0", '{"n":2}'),
    )
    write_run(
        tmp_path,
        "run=1",
        [
            event(A, "f", tr_total="12.5", unstruct_event=pro, contexts=items),
            event(B, "f", unstruct_event=unstruct(sdj(signup + "1-0-2", '{"plan":3}'))),
            event(C, "f", contexts=contexts(sdj(item, '{"sku":"c","price":1.005}'))),
            event(D, "d1"),
            event(D, "d2"),
            event(E, "f", tr_total="1.005"),
        ],
    )  # fmt: skip
    text = json.dumps({"input": str(tmp_path / "in"), "output": {"path": str(tmp_path / "out")}})
    (tmp_path / "c.hocon").write_text(
        text[:-1] + ', "formats": {"transformationType": "widerow", "fileFormat": "parquet"}}'
    )
    done = transformer(tmp_path, "--iglu-config", "iglu.json", "--config", "c.hocon")
    assert done.returncode == 0, told(done.stderr)
    base = tmp_path / "out/run=1"
    table = pq.read_table(base / "output=good")
    schema = table.schema
    names = schema.names
    assert len(names) == 128 + 6 and names[:3] == ["app_id", "platform", "etl_tstamp"]
    recovered = names[-1]
    assert names[128:-1] == [
        "contexts_com_acme_item_1",
        "contexts_com_acme_zeta_1",
        "contexts_com_acme_sub_alpha_1",
        "contexts_com_snowplowanalytics_snowplow_duplicate_1",
        "unstruct_event_com_acme_signup_1",
    ], "by schema key (vendor com.acme before com.acme.sub), contexts before the unstruct event, as the reference"
    assert re.fullmatch(r"unstruct_event_com_acme_signup_1_recovered_1_0_2_\d+", recovered)
    assert schema.field("tr_total").type == pa.decimal128(18, 2) and schema.field("txn_id").type == pa.int32()
    assert (
        schema.field("collector_tstamp").type == pa.timestamp("us", tz="UTC")
        and not schema.field("collector_tstamp").nullable
    )
    assert not schema.field("event_id").nullable and schema.field("app_id").nullable
    item_type = schema.field("contexts_com_acme_item_1").type
    assert item_type.value_field.nullable is False
    assert [(f.name, f.type, f.nullable) for f in item_type.value_type] == [
        ("at", pa.timestamp("us", tz="UTC"), True), ("price", pa.decimal128(9, 2), True), ("sku", pa.string(), False)
    ]  # fmt: skip
    signup_type = schema.field("unstruct_event_com_acme_signup_1").type
    assert [(f.name, f.nullable) for f in signup_type] == [("plan", True), ("trial", True)], "1-0-1 left plan optional"
    rows = {row["event_id"]: row for row in table.to_pylist()}
    assert len(rows) == 4 and {A, B} <= set(rows)
    stored = pq.ParquetFile(next((base / "output=good").glob("part-*.parquet"))).schema
    columns = {stored.column(i).path: stored.column(i) for i in range(len(stored))}
    assert (
        columns["collector_tstamp"].physical_type == "INT64" and columns["collector_tstamp"].max_definition_level == 0
    )
    assert "Timestamp(isAdjustedToUTC=true, timeUnit=microseconds" in str(columns["collector_tstamp"].logical_type)
    assert columns["tr_total"].physical_type == "INT64" and "Decimal(precision=18, scale=2)" in str(
        columns["tr_total"].logical_type
    )
    assert "contexts_com_acme_item_1.list.element.sku" in columns, "lists as the standard three-level LIST"
    a = rows[A]
    assert str(a["tr_total"]) == "12.50" and a["unstruct_event_com_acme_signup_1"] == {"plan": "pro", "trial": True}
    assert [i["sku"] for i in a["contexts_com_acme_item_1"]] == ["a", "b"]
    assert str(a["contexts_com_acme_item_1"][0]["price"]) == "9.99"
    assert a["contexts_com_acme_item_1"][0]["at"].isoformat() == "2026-11-01T05:00:00.123456+00:00"
    assert rows[B][recovered] == {"plan": 3} and rows[B]["unstruct_event_com_acme_signup_1"] is None
    renamed = [row for row in rows.values() if row["contexts_com_snowplowanalytics_snowplow_duplicate_1"]]
    assert [r["contexts_com_snowplowanalytics_snowplow_duplicate_1"] for r in renamed] == [
        [{"original_event_id": D}]
    ] * 2
    bad = [json.loads(line) for line in read_lines(base / "output=bad")]
    assert all(schema_errors(row) == [] for row in bad) and len(bad) == 2
    failures = {row["data"]["payload"]["event_id"]: row["data"]["failure"] for row in bad}
    assert failures[C] == [{"schemaKey": item, "value": 1.005, "expected": "Decimal(Digits9,2)"}]
    assert failures[E] == [
        {
            "schemaKey": "iglu:com.snowplowanalytics.snowplow/atomic/jsonschema/1-0-0",
            "value": 1.005,
            "expected": "Decimal(Digits18,2)",
        }
    ]
    message = json.loads((base / "shredding_complete.json").read_text())
    assert schema_errors(message) == [] and message["data"]["typesInfo"]["fileFormat"] == "PARQUET"
    assert message["data"]["count"] == {"good": 4, "bad": 2}
    assert spark.read.parquet(str(base / "output=good")).count() == 4
    write_run(tmp_path, "run=2", [event(A, contexts=contexts(sdj("iglu:com.acme/gone/jsonschema/1-0-0", "{}")))])
    failed = transformer(tmp_path, "--iglu-config", "iglu.json", "--config", "c.hocon")
    assert (
        failed.returncode == 1
        and "Error while building non-atomic DDL fields. Schema iglu:com.acme/gone/jsonschema/1-0-0" in failed.stderr
    )
    assert not (tmp_path / "out/run=2").exists()
