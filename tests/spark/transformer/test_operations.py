"""The transformer on an operator's day, through its command line: the runs an archive really
holds (empty ones, odd names, sub-folders), a run stopped anywhere in its commit and finished by
the next invocation, a queue that refuses or does not answer, an interruption, a held claim's and
a delivered run's advice followed to the end (the ledger's other refusals, each followed, without
Spark: tests/core/transformer/run/test_run_flow.py), and flags that are used or refused, never
ignored."""

from __future__ import annotations

import gzip
import json
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from events_manifest import SqliteManifest
from events_manifest._jobs import steps
from events_manifest._transformer.run import queue as queues
from events_manifest.testing._servers import LocalServer
from tests.commands import told
from tests.monitors import SentryServer
from tests.shred_helpers import contexts, sdj, unstruct
from tests.spark.transformer.test_command import (
    A,
    B,
    C,
    D,
    aws,
    outputs,
    queue_config,
    read_lines,
    run,
    transformer,
    write_run,
)
from tests.transformer_helpers import FIFO, RESOLVER, b64, config, dynamodb_config, event

__all__ = ["aws"]  # the fixture, used here

EMPTY_MESSAGE_COUNT = {"good": 0, "bad": 0}


def flags(tmp: Path, extra: str = "", *more: str) -> list[str]:
    """The command line of a transformer in `tmp` reading `in/` into `out/`, its config a file."""
    (tmp / "iglu.json").write_text(json.dumps(RESOLVER))
    (tmp / "c.hocon").write_text(config("in", "out", extra))
    return ["--iglu-config", "iglu.json", "--config", "c.hocon", *more]


def good_ids(base: Path) -> list[str]:
    return sorted(row["event_id"] for row in outputs(base)[0])


def test_the_runs_an_archive_really_holds(tmp_path: Path, spark: Any) -> None:
    """Empty runs of every kind are committed as runs of 0 lines and the runs after them go on;
    files are read whatever their names, and a file beside the runs is said not read. A run folder
    holding a sub-folder, whose files a run does not read (the reference's read fails on it), stops
    the job at that run in one line; its advice followed (the files moved up, or the folder out of
    the input), the next invocation reads them."""
    write_run(tmp_path, "run=1")
    hidden = write_run(tmp_path, "run=2")
    (hidden / "_SUCCESS").touch()
    (hidden / "._SUCCESS.crc").write_bytes(b"crc")
    (write_run(tmp_path, "run=3") / "part-0.tsv").touch()
    (write_run(tmp_path, "run=4") / "part-0.tsv.gz").write_bytes(gzip.compress(b""))
    nested = write_run(tmp_path, "run=5") / "sub"
    nested.mkdir()
    (nested / "part-0.tsv").write_text(event(A) + "\n")
    odd = write_run(tmp_path, "run=6 copy")
    (odd / "part 1%[x]{y}.tsv").write_text(event(B) + "\n")
    (odd / "part 2%20.tsv.gz").write_bytes(gzip.compress((event(C) + "\n").encode()))
    (odd / "sub").mkdir()
    (odd / "sub" / "part-0.tsv").write_text(event(D) + "\n")
    (tmp_path / "in/part-0.tsv").write_text(event(D) + "\n")  # beside the runs: in none of them
    stopped = run(tmp_path, '"output": {"path": "out", "compression": "NONE"}')
    assert stopped.returncode == 1 and sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "run=1",
        "run=2",
        "run=3",
        "run=4",
    ]
    assert stopped.stderr.strip().splitlines()[-1] == (
        f"transformer: error: input folder file:{nested} is inside a folder the run reads, which reads the files "
        "directly in it, not those of its sub-folders: its files would never be read. Move them up into "
        f"file:{nested.parent}, or the folder out of the input, then run again; 4 runs committed before (the last "
        "three: run=2, run=3, run=4); run=5: nothing of it was committed, and the next invocation finishes it"
    )
    for name in ("run=1", "run=2", "run=3", "run=4"):
        base = tmp_path / "out" / name
        good, bad, message = outputs(base)
        assert (good, bad) == ([], []) and message["data"]["count"] == EMPTY_MESSAGE_COUNT
        assert message["data"]["timestamps"]["min"] is None and message["data"]["timestamps"]["max"] is None
        assert (base / "output=good/_SUCCESS").exists() and (base / "output=bad/_SUCCESS").exists()
        assert f"{name}: 0 lines, 0 good, 0 bad" in stopped.stdout
    (nested / "part-0.tsv").rename(nested.parent / "part-0.tsv")  # the advice followed: moved up,
    nested.rmdir()
    (odd / "sub").rename(tmp_path / "elsewhere")  # or out of the input
    done = run(tmp_path, '"output": {"path": "out", "compression": "NONE"}')
    assert done.returncode == 0, told(done.stderr)
    assert f"file:{tmp_path}/in/ holds files outside any run folder (part-0.tsv): a run is a folder" in done.stderr
    assert [json.loads(text)["event_id"] for text in read_lines(tmp_path / "out/run=5/output=good")] == [A]
    odd_out = tmp_path / "out/run=6 copy"
    kept_ids = sorted(json.loads(text)["event_id"] for text in read_lines(odd_out / "output=good"))
    assert kept_ids == sorted([B, C]), "every file of the run"
    message = json.loads((odd_out / "shredding_complete.json").read_text())
    assert message["data"]["base"] == f"file:{odd_out}/", "named as it is, for the loader to find its files"
    assert done.stdout.index("run=5: 1 lines") < done.stdout.index("processing file:" + str(tmp_path / "in/run=6"))


def test_a_refused_message_is_sent_by_the_next_invocation(tmp_path: Path, aws: dict[str, Any]) -> None:
    """The queue refuses: the run fails in one line that says what to do, its rows sealed, and the
    next invocation (the queue there now) sends the same message and commits the run. The queue's
    region comes from AWS_REGION, as the AWS SDKs read it."""
    sqs = aws["sqs"]
    url = f"{sqs.meta.endpoint_url}/123456789012/loader-{time.time_ns()}.fifo"
    write_run(tmp_path, "run=1", [event(A)])
    command = flags(tmp_path, '"queue": ' + json.dumps({"type": "sqs", "queueName": url}))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AWS_REGION", "eu-west-1")
        patch.delenv("AWS_DEFAULT_REGION")
        refused = transformer(tmp_path, *command)
        assert refused.returncode == 1 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        assert "Could not send shredded types" in refused.stderr and "run the transformer again" in refused.stderr
        base = tmp_path / "out/run=1"
        [sealed] = base.glob(".staging-*/message.json")
        message_sealed = sealed.read_text()
        assert not (base / "shredding_complete.json").exists()
        sqs.create_queue(QueueName=url.rsplit("/", 1)[1], Attributes=FIFO)
        done = transformer(tmp_path, *command)
    assert done.returncode == 0, told(done.stderr)
    assert "run=1: 1 lines, 1 good" in done.stdout
    [message] = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    assert message["Body"] == (base / "shredding_complete.json").read_text() == message_sealed
    assert sorted(p.name for p in base.iterdir()) == ["output=bad", "output=good", "shredding_complete.json"]
    assert good_ids(base) == [A]


@pytest.fixture
def silent_queue(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """An endpoint that takes connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    taken: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                taken.append(server.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    monkeypatch.setattr(queues, "CONNECT_TIMEOUT", 0.5)
    monkeypatch.setattr(queues, "READ_TIMEOUT", 0.5)
    monkeypatch.setattr(queues, "ATTEMPTS", 2)
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    for connection in taken:
        connection.close()
    server.close()


def test_a_queue_that_does_not_answer_fails_the_run_within_its_deadline(
    tmp_path: Path, silent_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_SQS", silent_queue)
    write_run(tmp_path, "run=1", [event(A)])
    command = flags(tmp_path, queue_config("sqs", "queueName", f"{silent_queue}/1/q.fifo"))
    started = time.monotonic()
    done = transformer(tmp_path, *command)
    assert done.returncode == 1 and time.monotonic() - started < 60
    [said] = done.stderr.strip().splitlines()
    assert said.startswith("transformer: error: Could not send shredded types {") and "Read timeout" in said
    assert any((tmp_path / "out/run=1").glob(".staging-*/message.json")), "sealed, for the next invocation"


def test_an_interruption_after_a_commit_says_what_was_committed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C once run 2's commit file is written: both runs' counts were printed as they were
    committed, the line says where it stopped, and the next invocation has nothing to redo."""
    write_run(tmp_path, "run=1", [event(A)])
    write_run(tmp_path, "run=2", [event(B)])
    write_run(tmp_path, "run=3", [event(C)])
    command = flags(tmp_path, "", "--manifest", "sqlite://m.db")
    reached = steps.reached
    seen: list[str] = []

    def interrupt(step: str) -> None:
        seen.append(step)
        if step == "committed" and seen.count("committed") == 2:
            raise KeyboardInterrupt
        reached(step)

    with monkeypatch.context() as patch:
        patch.setattr(steps, "reached", interrupt)
        stopped = transformer(tmp_path, *command)
    assert stopped.returncode == 130 and "run=1: 1 lines, 1 good" in stopped.stdout
    assert stopped.stderr.strip() == (
        "transformer: interrupted during run=2: 1 run committed before (run=1); its rows are sealed, and the "
        "next invocation finishes it"
    )
    done = transformer(tmp_path, *command)
    assert done.returncode == 0, told(done.stderr)
    assert "processing file:" + str(tmp_path / "in/run=2") not in done.stdout and "run=3: 1 lines" in done.stdout
    assert [good_ids(tmp_path / f"out/run={n}") for n in (1, 2, 3)] == [[A], [B], [C]]
    with SqliteManifest(tmp_path / "m.db") as manifest:
        assert [record.state for record in manifest.runs()] == ["finished"] * 3


def test_a_held_claim_and_a_delivered_run_s_advice_followed_works(tmp_path: Path) -> None:
    """Through the command line, each refusal's advice followed to a committed run: a run another
    transformer holds (wait, or delete the claim it names); a delivered run whose output was deleted
    (`--rerun`). The ledger's other refusals in the transformer's words, each followed, without
    Spark: tests/core/transformer/run/test_run_flow.py."""
    write_run(tmp_path, "run=1", [event(A)])
    command = flags(tmp_path, "", "--manifest", "sqlite://m.db")
    claim = tmp_path / "out/run=1/_claim.json"
    claim.parent.mkdir(parents=True)
    claim.write_text(json.dumps({"run": "other", "host": socket.gethostname(), "pid": 1, "since": time.time()}))
    held = transformer(tmp_path, *command)
    assert held.returncode == 1 and f"If no run is writing there, delete {claim}" in held.stderr
    assert "it and the runs after it are left to it" in held.stderr
    claim.unlink()
    assert transformer(tmp_path, *command).returncode == 0 and good_ids(tmp_path / "out/run=1") == [A]
    shutil.rmtree(tmp_path / "out/run=1")
    delivered = transformer(tmp_path, *command)
    assert delivered.returncode == 1 and "pass --rerun" in delivered.stderr, delivered.stderr
    assert transformer(tmp_path, *command, "--rerun").returncode == 0 and good_ids(tmp_path / "out/run=1") == [A]


def test_flags_are_used_or_refused_and_a_manifest_is_never_inside_an_input(
    tmp_path: Path, dynalite: LocalServer
) -> None:
    write_run(tmp_path, "run=1", [event(A, "f")])
    table = f"transformer-endpoint-{time.time_ns()}"
    url = f"dynamodb://{table}?region=us-east-1&create=true"
    done = transformer(tmp_path, *flags(tmp_path, "", "--manifest", url, "--dynamodb-endpoint", dynalite.endpoint))
    assert done.returncode == 0, told(done.stderr)
    made = boto3.client("dynamodb", region_name="us-east-1", endpoint_url=dynalite.endpoint).describe_table(
        TableName=table
    )  # not list_tables: a page holds 100 of the suite's tables
    assert made["Table"]["TableStatus"] == "ACTIVE", "the endpoint given is the one used"
    refused = transformer(tmp_path, *flags(tmp_path, "", "--manifest", "sqlite://m.db", "--dynamodb-endpoint", "x"))
    assert refused.returncode == 2 and "--dynamodb-endpoint is for a DynamoDB manifest" in refused.stderr
    write_run(tmp_path, "run=2", [event(B)])
    inside = transformer(tmp_path, *flags(tmp_path, "", "--manifest", "sqlite://in/run=2/m.db"))
    assert inside.returncode == 2 and "is inside the input" in inside.stderr, inside.stderr
    assert sorted(p.name for p in (tmp_path / "in/run=2").iterdir()) == ["part-0.tsv"]
    assert not (tmp_path / "out/run=2").exists()
    nested = transformer(tmp_path, "--iglu-config", "iglu.json", "--config", b64(config("in", "in/run=1/out")))
    assert nested.returncode == 2 and nested.stderr.strip().startswith("output folder [in/run=1/out] is inside")


@pytest.mark.usefixtures("sdk_pauses_cut")
def test_an_unreachable_or_locked_manifest_is_one_line(tmp_path: Path) -> None:
    """An endpoint that does not answer (`--dynamodb-endpoint` with user information: the SDK's
    message names the URL, without its password) and a SQLite file another process locks: one
    line each, exit 1, nothing written."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    write_run(tmp_path, "run=1", [event(A)])
    dedup = dynamodb_config("unreachable")
    (tmp_path / "dedup.json").write_text(json.dumps(dedup))
    endpoint = f"http://user:{SECRET}@127.0.0.1:{port}"
    unreachable = ["--duplicate-storage-config", "dedup.json", "--dynamodb-endpoint", endpoint]
    done = transformer(tmp_path, *flags(tmp_path, "", *unreachable))
    assert done.returncode == 1 and SECRET not in done.stdout + done.stderr
    assert done.stderr.strip() == (
        "transformer: error: DynamoDB table [unreachable] is unreachable: Could not connect to the endpoint URL: "
        f'"http://user:***@127.0.0.1:{port}/"'
    )
    assert not (tmp_path / "out/run=1").exists()
    with SqliteManifest(tmp_path / "m.db") as manifest:
        connection = manifest._connection()  # the file's own lock, held
        connection.execute("BEGIN EXCLUSIVE")
        locked = transformer(tmp_path, *flags(tmp_path, "", "--manifest", "sqlite://m.db?busy_timeout=1"))
        connection.execute("ROLLBACK")
    assert locked.returncode == 1 and "Traceback" not in locked.stderr
    assert "is locked by another process: it held the lock for over 1 s" in locked.stderr
    assert "choose another path" not in locked.stderr and not (tmp_path / "out/run=1").exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            '"runInterval": {"sinceAge": "999999 days"}',
            "Cannot resolve config: DecodingFailure at .runInterval.sinceAge: Duration is limited to +-(2^63-1)ns "
            "(ca. 292 years), got 999999 days",
        ),
        (
            '"runInterval": {"sinceAge": 99999999999 days}, "windowing": 99999999999 days',
            "Cannot resolve config: DecodingFailure at .runInterval.sinceAge: Duration is limited to +-(2^63-1)ns "
            "(ca. 292 years), got 99999999999 days",
        ),
        (
            '"deduplication": {"synthetic": {"type": "broadcast", "cardinality": 0}}',
            "Cannot resolve config: DecodingFailure at .deduplication.synthetic.cardinality: 0 is out of range, it "
            "must be at least 1",
        ),
        (
            '"skipSchemas": "iglu:com.acme/x/jsonschema/1-*-*"',
            "Cannot resolve config: DecodingFailure at .skipSchemas: Got value '\"iglu:com.acme/x/jsonschema/1-*-*\"' "
            "with wrong type, expecting array",
        ),
        (
            '"input": ["in"]',
            "Cannot resolve config: DecodingFailure at .input: Got value '[\"in\"]' with wrong type, expecting string",
        ),
        (
            '"queue": {"type": "sqs", "queueName": "q", "region": "unknown-region-1"}',
            "Cannot resolve config: DecodingFailure at .queue.region: Region unknown-region-1 is unknown, choose "
            "from [af-",
        ),
        (
            '"formats": {"transformationType": "shred", "json": ["iglu:com.acme/x/jsonschema/1-*-*"], '
            '"skip": ["iglu:com.acme/x/jsonschema/1-0-*"]}',
            "Following schema criterions overlap in different groups (TSV, JSON, skip): "
            "iglu:com.acme/x/jsonschema/1-*-*, iglu:com.acme/x/jsonschema/1-0-*. Make sure every schema can have only "
            "one format",
        ),
    ],
)
def test_config_values_the_reference_refuses_exit_2(tmp_path: Path, extra: str, message: str) -> None:
    write_run(tmp_path, "run=1", [event(A)])
    text = (
        config("in", "out", extra)
        if '"input"' not in extra
        else config("in", "out")[:1]
        + extra
        + ', "output": {"path": "out"}, "formats": {"transformationType": "widerow"}}'
    )
    done = transformer(tmp_path, "--iglu-config", b64(json.dumps(RESOLVER)), "--config", b64(text))
    assert done.returncode == 2 and done.stderr.strip().startswith(message), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


SECRET = "Pl4nted-S3cret"


def test_no_refusal_shows_a_secret(tmp_path: Path, spark: Any) -> None:
    """Secrets planted wherever a value can be echoed: in the Iglu config, the config, the manifest's
    config, an Iglu repository's URL; every refusal is one line that says what is wrong without them."""
    iglu = json.loads(json.dumps(RESOLVER))
    dedup = {
        "schema": "iglu:com.snowplowanalytics.snowplow.storage/amazon_dynamodb_config/jsonschema/2-0-0",
        "data": {"name": "m", "auth": {"accessKeyId": "AKIA", "secretAccessKey": SECRET}, "awsRegion": "nowhere"},
    }
    listed = {"name": "r", "priority": 0, "connection": {"http": {"uri": "https://x/", "apikey": SECRET}}}
    cases = [
        ({**iglu, "data": {**iglu["data"], "repositories": listed}}, config("in", "out"), None),
        (
            {
                **iglu,
                "data": {
                    **iglu["data"],
                    "repositories": [{**listed, "connection": {"http": {"uri": f"ftp://u:{SECRET}@x/"}}}],
                },
            },
            config("in", "out"),
            None,
        ),
        (iglu, config("in", "out")[:-1] + f', "x": {{"password": {SECRET} }}', None),
        (iglu, config("in", "out")[:-1] + f', "input": {{"password": "{SECRET}"}}}}', None),
        (iglu, config("in", "out", f'"deduplication": {{"natural": "https://key:{SECRET}@host/"}}'), None),
        (iglu, config("in", "out"), dedup),
    ]
    write_run(tmp_path, "run=1", [event(A)])
    for resolver, text, storage in cases:
        more = ["--duplicate-storage-config", b64(json.dumps(storage))] if storage else []
        done = transformer(tmp_path, "--iglu-config", b64(json.dumps(resolver)), "--config", b64(text), *more)
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert SECRET not in done.stdout + done.stderr, done.stderr
    (tmp_path / "c.hocon").write_text(
        config("in", "out", '"formats": {"transformationType": "widerow", "fileFormat": "parquet"}')
    )
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    remote = {
        "name": "remote",
        "priority": 0,
        "connection": {"http": {"uri": f"http://user:{SECRET}@127.0.0.1:{port}/"}},
    }
    resolver = {**iglu, "data": {**iglu["data"], "repositories": [*iglu["data"]["repositories"], remote]}}
    write_run(
        tmp_path,
        "run=2",
        [
            event(
                B,
                contexts='{"schema":"iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/1-0-0","data":[{"schema":"iglu:com.acme/gone/jsonschema/1-0-0","data":{}}]}',
            )
        ],
    )
    failed = transformer(tmp_path, "--iglu-config", b64(json.dumps(resolver)), "--config", "c.hocon")
    assert failed.returncode == 1 and "remote" in failed.stderr and f"user:***@127.0.0.1:{port}" in failed.stderr
    assert SECRET not in failed.stdout + failed.stderr
    hocon = b64(f'{{"input": "in", "password": "{SECRET}" ]')
    said = transformer(tmp_path, "--iglu-config", "nope.json", "--config", hocon)
    assert (
        said.returncode == 2 and SECRET not in said.stderr and "decodes as Base64 but is not valid HOCON" in said.stderr
    )


def test_a_failure_says_once_what_was_written_and_what_was_committed(tmp_path: Path, spark: Any) -> None:
    """An Iglu repository unreachable in shred mode: `nothing was written` once when nothing was;
    after a committed run, the runs committed before and the state of the failed one instead."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    remote = {"name": "remote", "priority": 0, "connection": {"http": {"uri": f"http://127.0.0.1:{port}/"}}}
    resolver = {**RESOLVER, "data": {**RESOLVER["data"], "repositories": [*RESOLVER["data"]["repositories"], remote]}}
    gone = contexts(sdj("iglu:com.acme/gone/jsonschema/1-0-0", "{}"))
    said = {}
    for case, runs in {"nothing": ["run=2"], "one": ["run=1", "run=2"]}.items():
        for name in runs:
            write_run(tmp_path / case, name, [event(A, contexts=gone) if name == "run=2" else event(B)])
        text = json.dumps({"input": "in", "output": {"path": "out"}, "formats": {"transformationType": "shred"}})
        done = transformer(tmp_path / case, "--iglu-config", b64(json.dumps(resolver)), "--config", b64(text))
        assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
        said[case] = done.stderr.strip()
    assert "remote" in said["nothing"] and said["nothing"].endswith("; nothing was written"), said["nothing"]
    assert said["nothing"].count("nothing was written") == 1, said["nothing"]
    assert "nothing was written" not in said["one"] and said["one"].endswith(
        "; 1 run committed before (run=1); run=2: nothing of it was committed, and the next invocation finishes it"
    ), said["one"]
    assert (tmp_path / "one/out/run=1/shredding_complete.json").exists()
    assert not (tmp_path / "one/out/run=2/shredding_complete.json").exists()


def test_an_output_folder_named_like_a_glob_beside_an_input_with_a_space(tmp_path: Path, spark: Any) -> None:
    """`out[x]` beside `my input`: written where it is named, committed as any output."""
    folder = tmp_path / "my input" / "run=1"
    folder.mkdir(parents=True)
    (folder / "part-0.tsv").write_text(event(A) + "\n")
    (tmp_path / "c.hocon").write_text(config("my input", "out[x]"))
    done = transformer(tmp_path, "--iglu-config", b64(json.dumps(RESOLVER)), "--config", "c.hocon")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out[x]/run=1/shredding_complete.json").exists()
    assert len(read_lines(tmp_path / "out[x]/run=1/output=good")) == 1


def test_an_input_file_with_a_colon_is_named_and_the_advice_works(tmp_path: Path, spark: Any) -> None:
    """An ISO timestamp as a file name: Hadoop's local paths cannot hold ':'. One line that names
    the file and a name to give it; renamed so, the next invocation commits the run."""
    folder = write_run(tmp_path, "run=1", [event(A)], gz=True)
    (folder / "part-0.tsv.gz").rename(folder / "2026-11-01T06:00:00.tsv.gz")
    (tmp_path / "c.hocon").write_text(config("in", "out"))
    flags = ["--iglu-config", b64(json.dumps(RESOLVER)), "--config", "c.hocon"]
    done = transformer(tmp_path, *flags)
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stderr.strip() == (
        "transformer: error: input file [2026-11-01T06:00:00.tsv.gz] has ':' in its name, which Hadoop's paths "
        "cannot hold: rename it without ':' (such as 2026-11-01T06-00-00.tsv.gz); nothing was written"
    )
    (folder / "2026-11-01T06:00:00.tsv.gz").rename(folder / "2026-11-01T06-00-00.tsv.gz")
    again = transformer(tmp_path, *flags)
    assert again.returncode == 0, again.stderr
    assert len(read_lines(tmp_path / "out/run=1/output=good")) == 1


def test_the_reference_s_extended_config_sends_bad_rows_to_kinesis_and_its_metric_to_cloudwatch(
    tmp_path: Path, moto_server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every section of the reference's extended example, its Kinesis bad-row sink included: the
    bad rows (more than one `PutRecords` call of them) reach the stream whole though it throttles,
    and no `output=bad/` is written; its `monitoring` section sends the run's duration datum to
    CloudWatch (moto's) with its dimensions, said on stdout, and nothing to Sentry (nothing failed)."""
    from events_manifest.testing import FaultProxy

    region: dict[str, Any] = {"region_name": "eu-west-1", "endpoint_url": moto_server.endpoint}
    kinesis = boto3.client("kinesis", **region)
    stream = f"bad-rows-{time.time_ns()}"
    kinesis.create_stream(StreamName=stream, ShardCount=1)
    sqs = boto3.client("sqs", **region)
    url = sqs.create_queue(QueueName=f"extended-{time.time_ns()}.fifo", Attributes=FIFO)["QueueUrl"]
    now = time.gmtime(time.time() - 86400)
    name = "run=" + time.strftime("%Y-%m-%d-%H-%M-%S", now)
    bad = [f"not an event {n}" for n in range(620)]
    write_run(tmp_path, name, [event(A, "f"), event(B, "f"), *bad])
    text = (Path(__file__).parents[2] / "data/transformer.extended.hocon").read_text()
    sentry = SentryServer()
    text = text.replace('"http://sentry.acme.com"', json.dumps(sentry.dsn()))  # the reference's placeholder
    namespace = f"snowplow/transformer_batch_{time.time_ns()}"
    text = text.replace('"snowplow/transformer_batch"', json.dumps(namespace))
    (tmp_path / "iglu.json").write_text(json.dumps(RESOLVER))
    monkeypatch.setenv("AWS_ENDPOINT_URL_SQS", moto_server.endpoint)
    monkeypatch.setenv("AWS_ENDPOINT_URL_CLOUDWATCH", moto_server.endpoint)
    with FaultProxy(moto_server.endpoint, throttle_rate=0.5, operations=frozenset({"PutRecords"}), seed=1) as proxy:
        for key, value in {"INPUT": "in", "OUTPUT": "out", "QUEUE_URL": url, "STREAM": stream,
                           "BAD_ENDPOINT": proxy.endpoint,  # output.bad.customEndpoint: no environment variable
                           "SINCE": "2020-01-01-00-00-00", "UNTIL": "2099-01-01-00-00-00"}.items():  # fmt: skip
            text = text.replace(f'"{key}"', json.dumps(value))
        (tmp_path / "extended.hocon").write_text(text)
        done = transformer(tmp_path, "--iglu-config", "iglu.json", "--config", "extended.hocon")
    assert done.returncode == 0, told(done.stderr)
    assert proxy.throttled > 0, "the stream throttled"
    base = tmp_path / "out" / name
    assert sorted(p.name for p in base.iterdir()) == ["output=good", "shredding_complete.json"]
    shard = kinesis.describe_stream(StreamName=stream)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = kinesis.get_shard_iterator(StreamName=stream, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    records, position = [], iterator["ShardIterator"]
    while position:
        answer = kinesis.get_records(ShardIterator=position, Limit=1000)
        records += [json.loads(r["Data"]) for r in answer["Records"]]
        position = answer.get("NextShardIterator") if answer["Records"] else None
    assert sorted(r["data"]["payload"] for r in records) == sorted(bad), "each bad row once, none lost"
    message = json.loads((base / "shredding_complete.json").read_text())
    assert message["data"]["count"] == {"good": 2, "bad": len(bad)}
    [sent] = [line for line in done.stdout.splitlines() if line.startswith("transform_duration with value ")]
    assert sent.endswith(f" successfully sent to namespace {namespace}")
    cloudwatch = boto3.client("cloudwatch", endpoint_url=moto_server.endpoint)  # the default region, as the job
    found = {m["MetricName"]: m["Dimensions"] for m in cloudwatch.list_metrics(Namespace=namespace)["Metrics"]}
    assert (
        found["transform_duration"] == [{"Name": "app", "Value": "transformer"}] and "cross_batch_duplicates" in found
    )
    sentry.close()
    assert sentry.events == []


def test_a_failed_run_s_exception_goes_to_sentry_and_the_run_fails_as_before(tmp_path: Path) -> None:
    """`monitoring.sentry.dsn` (a loopback server taking the SDK's envelopes): the error that ends
    the job is sent, then the job fails with its one line, exit 1; the DSN's key is never shown, and
    what is sent holds neither of the command line's base64 configs."""
    from spark_integration.demo import EMPTY_RESOLVER

    sentry = SentryServer()
    click = sdj("iglu:com.snowplowanalytics.snowplow/link_click/jsonschema/1-0-1", '{"targetUrl":"https://x/"}')
    write_run(tmp_path, "run=1", [event(A, unstruct_event=unstruct(click))])
    parquet = '"formats": {"transformationType": "widerow", "fileFormat": "parquet"}'
    monitoring = json.dumps({"sentry": {"dsn": sentry.dsn("SECRETKEY")}})
    text = json.dumps({"input": "in", "output": {"path": "out"}})[:-1] + f', {parquet}, "monitoring": {monitoring}}}'
    configs = [b64(json.dumps(EMPTY_RESOLVER)), b64(text)]
    done = transformer(tmp_path, "--iglu-config", configs[0], "--config", configs[1])
    sentry.close()
    assert done.returncode == 1, told(done.stderr)
    [line] = [x for x in done.stderr.splitlines() if x.startswith("transformer: error: ")]
    assert "link_click" in line and "SECRETKEY" not in done.stdout + done.stderr
    [reported] = sentry.events
    [exception] = reported["exception"]["values"]
    assert "link_click" in exception["value"]
    assert not [value for value in configs if value in json.dumps(reported)], "the frames' variables are not sent"


def test_the_reference_s_placeholder_sentry_dsn_is_said_once_and_the_job_goes_on(tmp_path: Path) -> None:
    """The reference's extended example's `dsn = "http://sentry.acme.com"` (no key) is read, as the
    reference reads it: one warning at the start, then the job runs."""
    (tmp_path / "in").mkdir()
    config = {"input": "in", "output": {"path": "out"}, "formats": {"transformationType": "widerow"}}
    config["monitoring"] = {"sentry": {"dsn": "http://sentry.acme.com"}}
    done = transformer(tmp_path, "--iglu-config", b64(json.dumps(RESOLVER)), "--config", b64(json.dumps(config)))
    assert done.returncode == 0, told(done.stderr)
    assert done.stderr.splitlines() == [
        "transformer: warning: monitoring.sentry.dsn cannot be used (not a Sentry DSN, such as "
        "https://KEY@o1.ingest.sentry.io/1): failures go unreported"
    ]
    assert "No incomplete folders were discovered" in done.stdout


def test_a_config_as_an_editor_saves_it_is_read_and_a_device_is_refused(tmp_path: Path) -> None:
    """A config saved by a Windows editor (a UTF-8 byte order mark, CRLF line ends) as `json.dumps`
    writes it (`\\u00fc` for `ü`): read as written, the folder named in another script found. A
    device given as the config (`/dev/zero`) is refused in one line, unread past a config's size."""
    (tmp_path / "in-ü").mkdir()
    config = {"input": "in-ü", "output": {"path": "out"}, "formats": {"transformationType": "widerow"}}
    text = json.dumps(config, indent=2).replace("\n", "\r\n")
    assert "in-\\u00fc" in text
    (tmp_path / "windows.hocon").write_bytes(b"\xef\xbb\xbf" + text.encode())
    (tmp_path / "iglu.json").write_text(json.dumps(RESOLVER))
    done = transformer(tmp_path, "--iglu-config", "iglu.json", "--config", "windows.hocon")
    assert done.returncode == 0 and "No incomplete folders were discovered" in done.stdout, told(done.stderr)
    device = transformer(tmp_path, "--iglu-config", "iglu.json", "--config", "/dev/zero")
    assert device.returncode == 2 and device.stderr.splitlines() == [
        "Error reading /dev/zero file from filesystem: it holds more than 10 MiB, which no config does: give "
        "--config the config's own file (or its text in base64)"
    ]


def test_a_claim_from_another_host_is_judged_by_the_ledger(tmp_path: Path) -> None:
    """A claim written on another host (a cluster since terminated, say) holds the run while its
    writer may be alive; with a manifest, once the ledger shows no sign of life from it for the
    lease (no record, and the claim older than that), the next invocation takes the run over."""
    from events_manifest._manifest.ledger import LEASE_SECONDS

    write_run(tmp_path, "run=1", [event(A)])
    command = flags(tmp_path, "", "--manifest", "sqlite://m.db")
    claim = tmp_path / "out/run=1/_claim.json"
    claim.parent.mkdir(parents=True)
    recent = {"run": "r", "host": "ip-10-0-0-9.ec2.internal", "pid": 4242, "since": time.time() - 60}
    claim.write_text(json.dumps(recent))
    held = transformer(tmp_path, *command)
    assert held.returncode == 1 and "process 4242 on ip-10-0-0-9.ec2.internal" in held.stderr
    claim.write_text(json.dumps({**recent, "since": time.time() - LEASE_SECONDS - 60}))
    done = transformer(tmp_path, *command)
    assert done.returncode == 0, told(done.stderr)
    assert good_ids(tmp_path / "out/run=1") == [A] and not claim.exists()
