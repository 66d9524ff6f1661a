"""Nothing lost, whatever is typed: the command lines run as a user types them (in this process,
on the suite's Spark session; a process of its own where the process is the point), then the files
on disk checked: nothing deleted that was not the job's, nothing doubled, nothing lost."""

from __future__ import annotations

import gzip
import json
import os
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from events_manifest._backends.dynamodb.client import ClientOptions, make_client
from events_manifest.testing import LocalServer
from tests.backends import unique_table
from tests.commands import dead_pid, error_line, events_manifest, shredder, told
from tests.shred_helpers import contexts, line, read_bad, read_output, sdj, write_input

A = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"
B = "d7f5fa2f-3b3a-4c97-a030-8e05d9f40b0a"


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def batch(tmp_path: Path) -> Path:
    """A small batch, in `tmp_path/in`, with a good shred output of it beside, in `out` and `bad`."""
    write_input(tmp_path / "in", [line(A, "FP"), line(A, "FP"), line(B, "FP2"), "broken"])
    done = shredder(tmp_path, "--input-folder", "in", "--output-folder", "out", "--bad-folder", "bad")
    assert done.returncode == 0, told(done.stderr)
    return tmp_path


@pytest.fixture(autouse=True)
def _session(spark: Any) -> None:
    """The shred job's command line runs on the suite's Spark session."""


def test_no_flag_combination_deletes_what_is_not_the_jobs(batch: Path) -> None:
    before = snapshot(batch)
    refused = {
        "output is the input": (
            ["--output-folder", "in", "--bad-folder", "b2"],
            "output folder [in] is inside the input",
        ),
        "output is .": (
            ["--output-folder", ".", "--bad-folder", "b2"],
            "is the current folder or one of its ancestors",
        ),
        "bad inside output": (["--output-folder", "out", "--bad-folder", "out/atomic-events"], "is inside the output"),
        "bad is output": (["--output-folder", "out", "--bad-folder", "out"], "are the same [out]"),
        "bad is the input": (["--output-folder", "out", "--bad-folder", "in"], "bad folder [in] is inside the input"),
    }
    for case, (flags, message) in refused.items():
        done = shredder(batch, "--input-folder", "in", *flags, "--overwrite")
        assert message in error_line(done), case
        assert snapshot(batch) == before, case
    file = "in/part-00000.tsv"
    holds = shredder(batch, "--input-folder", file, "--output-folder", "in", "--bad-folder", "b2", "--overwrite")
    assert f"output folder [in] holds the input [{file}]" in error_line(holds)
    assert snapshot(batch) == before
    typo = shredder(batch, "--input-folder", "inn", "--output-folder", "out", "--bad-folder", "bad", "--overwrite")
    assert "input [inn] does not exist" in error_line(typo)
    assert snapshot(batch) == before, "a typo in the input leaves the previous output whole"
    assert not (batch / "b2").exists()


def test_overwrite_replaces_only_the_jobs_own_output(batch: Path) -> None:
    (batch / "mine").mkdir()
    (batch / "mine" / "notes.txt").write_text("keep me")
    done = shredder(batch, "--input-folder", "in", "--output-folder", "mine", "--bad-folder", "b2", "--overwrite")
    assert "holds files the shred job did not write (notes.txt" in error_line(done)
    assert (batch / "mine" / "notes.txt").read_text() == "keep me" and not (batch / "b2").exists()

    (batch / "out" / "atomic-events" / "extra.txt").write_text("not the job's")
    (batch / "bad" / "mine.txt").write_text("mine")
    done = shredder(batch, "--input-folder", "in", "--output-folder", "out", "--bad-folder", "bad", "--overwrite")
    assert "bad folder [bad] holds files the shred job did not write (mine.txt)" in error_line(done)
    (batch / "bad" / "mine.txt").unlink()
    before = read_output(batch / "out")
    done = shredder(batch, "--input-folder", "in", "--output-folder", "out", "--bad-folder", "bad", "--overwrite")
    assert done.returncode == 0, told(done.stderr)
    assert read_output(batch / "out") == before, "the rerun gives the same output, not doubled"
    assert not (batch / "out" / "atomic-events" / "extra.txt").exists(), "inside the job's own folder: replaced"
    assert [row["line"] for row in read_bad(batch / "bad")] == ["broken"]


def test_a_claim_left_by_a_killed_run_is_taken_over(tmp_path: Path) -> None:
    write_input(tmp_path / "in", [line(A, "FP")])
    (tmp_path / "out").mkdir()
    claim = {"run": "x", "host": os.uname().nodename, "pid": dead_pid(), "since": time.time()}
    (tmp_path / "out" / "_claim.json").write_text(json.dumps(claim))
    done = shredder(tmp_path, "--input-folder", "in", "--output-folder", "out", "--bad-folder", "bad")
    assert done.returncode == 0, told(done.stderr)
    assert len(read_output(tmp_path / "out")["atomic-events"]) == 1


def test_weak_spots_are_one_line_and_leave_nothing_behind(tmp_path: Path) -> None:
    write_input(tmp_path / "in", [line(A, "FP")])
    missing = shredder(tmp_path, "--input-folder", "nope", "--output-folder", "out", "--bad-folder", "bad")
    assert "input [nope] does not exist" in error_line(missing)
    report = shredder(tmp_path, "--input-folder", "in", "--output-folder", "out", "--bad-folder", "bad",
                      "--report", "no/such/folder/r.html")  # fmt: skip
    assert "--report [no/such/folder/r.html]: folder no/such/folder does not exist" in error_line(report)
    (tmp_path / "gz").mkdir()
    good = gzip.compress((line(B, "FP") + "\n").encode())
    (tmp_path / "gz" / "part-0.tsv.gz").write_bytes(good[: len(good) // 2])
    corrupt = shredder(tmp_path, "--input-folder", "gz", "--output-folder", "out", "--bad-folder", "bad")
    assert "part-0.tsv.gz could not be read" in error_line(corrupt)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gz", "in"], "no output folder left behind"


def test_a_type_name_too_long_for_a_folder_is_a_bad_row(tmp_path: Path) -> None:
    long_name = "n" * 230
    event = line(A, "FP", contexts=contexts(sdj(f"iglu:com.acme/{long_name}/jsonschema/1-0-0", '{"a":1}')))
    write_input(tmp_path / "in", [event, line(B, "FP")])
    done = shredder(tmp_path, "--input-folder", "in", "--output-folder", "out", "--bad-folder", "bad")
    assert done.returncode == 0, told(done.stderr)
    assert len(read_output(tmp_path / "out")["atomic-events"]) == 1
    [bad] = read_bad(tmp_path / "bad")
    assert "is too long to be written as a folder name" in bad["errors"][0]["message"]


def test_a_table_with_the_right_key_names_but_wrong_types_is_refused(tmp_path: Path, dynalite: LocalServer) -> None:
    table = unique_table()
    client = make_client(ClientOptions(region="us-east-1", endpoint_url=dynalite.endpoint))
    client.create_table(
        TableName=table,
        KeySchema=[
            {"AttributeName": "eventId", "KeyType": "HASH"},
            {"AttributeName": "fingerprint", "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": "eventId", "AttributeType": "S"},
            {"AttributeName": "fingerprint", "AttributeType": "N"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    write_input(tmp_path / "in", [line(A, "FP")])
    done = shredder(tmp_path, "--input-folder", "in", "--output-folder", "out", "--bad-folder", "bad",
                    "--manifest", f"dynamodb://{table}?region=us-east-1&endpoint={dynalite.endpoint}")  # fmt: skip
    message = error_line(done)
    assert f"DynamoDB table [{table}] has keys (eventId HASH S, fingerprint RANGE N)" in message
    assert "choose another table" in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"], "refused before any folder is made"
    waiter: Any = client.get_waiter("table_exists")  # a delay under a second: dynalite is quicker than AWS
    waiter.wait(TableName=table, WaiterConfig={"Delay": 0.1})  # dynalite: CREATING at first
    assert client.scan(TableName=table)["Count"] == 0, "and before any put"


def test_clean_removes_a_thrown_away_run(tmp_path: Path, spark: Any) -> None:
    (tmp_path / "a.ndjson").write_text('{"id": 1}\n')
    db = f"sqlite:///{tmp_path}/m.db"
    first = events_manifest(tmp_path, "dedup", "a.ndjson", "--key", "id", "--manifest", db, "--unique", "u1")
    etl = first.stdout.splitlines()[0].removeprefix("etl time ")
    refused = events_manifest(tmp_path, "clean", "--etl-time", "2001-01-01 00:00:00", "--manifest", db)
    assert refused.returncode == 1 and "holds no run with etl time 2001-01-01 00:00:00" in refused.stderr
    done = events_manifest(tmp_path, "clean", "--etl-time", etl, "--manifest", db)
    assert done.returncode == 0 and done.stdout.startswith("removed 1 entries of the run of ["), done.stderr
    again = events_manifest(tmp_path, "dedup", "a.ndjson", "--key", "id", "--manifest", db, "--unique", "u2")
    assert (tmp_path / "u2").read_text() == '{"id": 1}\n', "its record counts as new again"
    assert again.returncode == 0

    from events_manifest import SqliteManifest

    with SqliteManifest(tmp_path / "m.db") as manifest:  # a run this (live) process holds
        running = manifest.start_run("elsewhere", datetime(2026, 11, 1, 5))
        assert manifest.put(B, "FP", running.etl_time)
        held = events_manifest(tmp_path, "clean", "--etl-time", "2026-11-01 05:00:00", "--manifest", db)
        assert held.returncode == 1 and "run of [elsewhere]" in held.stderr and "is still running" in held.stderr
        assert manifest.lookup(B, "FP") is not None, "nothing removed"
        forced = events_manifest(tmp_path, "clean", "--etl-time", "2026-11-01 05:00:00", "--manifest", db, "--force")
        assert forced.returncode == 0 and manifest.lookup(B, "FP") is None, forced.stderr


def test_the_processing_table_refuses_a_processed_item_and_frees_a_failed_one(tmp_path: Path) -> None:
    write_input(tmp_path / "in", [line(A, "FP"), line(B, "FP")])
    db = f"sqlite:///{tmp_path}/m.db"
    flags = ["--manifest", db, "--processing-manifest-table", "processing", "--bad-folder"]
    first = shredder(tmp_path, "--input-folder", "in", "--output-folder", "out", *flags, "bad")
    assert first.returncode == 0, told(first.stderr)
    listed = events_manifest(tmp_path, "processing", "list", "--table", "processing", "--manifest", db).stdout
    assert "  processed   file:" in listed and listed.rstrip().endswith("/in"), listed
    again = shredder(tmp_path, "--input-folder", "in", "--output-folder", "out2", *flags, "bad2")
    assert "/in] is processed (run " in error_line(again) and "nothing to do" in error_line(again)
    assert not (tmp_path / "out2").exists() and not (tmp_path / "bad2").exists()

    (tmp_path / "gz").mkdir()
    (tmp_path / "gz" / "part-0.tsv.gz").write_bytes(gzip.compress((line(B, "FP") + "\n").encode())[:20])
    broken = shredder(tmp_path, "--input-folder", "gz", "--output-folder", "o", "--item-id", "batch-9", *flags, "b")
    assert "could not be read" in error_line(broken)
    listed = events_manifest(tmp_path, "processing", "list", "--table", "processing", "--manifest", db).stdout
    assert "  failed      batch-9  (" in listed, listed
    (tmp_path / "gz" / "part-0.tsv.gz").write_bytes(gzip.compress((line(B, "FP") + "\n").encode()))
    retried = shredder(tmp_path, "--input-folder", "gz", "--output-folder", "o", "--item-id", "batch-9", *flags, "b")
    assert retried.returncode == 0, told(retried.stderr)
    assert read_output(tmp_path / "o")["atomic-events"] == [], "B was delivered by the first run already"
    released = events_manifest(tmp_path, "processing", "release", "batch-9", "--table", "processing", "--manifest", db)
    assert released.returncode == 0 and released.stdout.startswith("released: [batch-9] is processed"), released


def test_a_dead_run_of_another_item_is_finished_before_other_runs(tmp_path: Path) -> None:
    """A run killed after storing event A, on another input: a run of this input would drop A as a
    duplicate and A would never be delivered. It is refused until the dead run is rerun."""
    from events_manifest import SqliteManifest
    from events_manifest._manifest.ledger import STARTED, Run
    from events_manifest.model import to_epoch_seconds

    etl = datetime(2026, 11, 1, 5)
    with SqliteManifest(tmp_path / "m.db") as manifest:
        owner, now = f"{os.uname().nodename}:{dead_pid()}", int(time.time())
        assert manifest._swap_run(None, Run(to_epoch_seconds(etl), "earlier", STARTED, now, None, owner, now))
        assert manifest.put(A, "FP", etl)
    write_input(tmp_path / "in", [line(A, "FP"), line(B, "FP")])
    db = f"sqlite:///{tmp_path}/m.db"
    refused = shredder(tmp_path, "--input-folder", "in", "--output-folder", "out", "--bad-folder", "bad",
                       "--manifest", db)  # fmt: skip
    message = error_line(refused)
    assert "the run of [earlier] with etl time 2026-11-01 05:00:00 (started) stopped without finishing" in message
    assert "--item-id 'earlier'" in message and not (tmp_path / "out").exists()
    rerun = shredder(tmp_path, "--input-folder", "in", "--output-folder", "out", "--bad-folder", "bad",
                     "--manifest", db, "--item-id", "earlier")  # fmt: skip
    assert rerun.returncode == 0, told(rerun.stderr)
    kept = read_output(tmp_path / "out")["atomic-events"]
    assert sorted(row.split("\t")[6] for row in kept) == sorted([A, B]), "A is delivered, not dropped"
    listed = events_manifest(tmp_path, "runs", "--manifest", db).stdout
    assert listed.startswith("2026-11-01 05:00:00  finished"), listed
