"""The `events-manifest` command line, run as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from events_manifest.testing import LocalServer
from events_manifest.testing._servers import free_port
from tests.backends import unique_table
from tests.core.backends.dynamodb.test_config_document import SECRET, V2_CONFIG, with_data

ID = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "events_manifest", *args], capture_output=True, text=True, timeout=120)


def assert_clean_error(result: subprocess.CompletedProcess[str], message: str) -> None:
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("events-manifest: error: ")
    assert message in lines[0]
    assert "Traceback" not in result.stderr
    assert SECRET not in result.stderr


def test_put_prints_new_then_duplicate(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path}/m.db"
    assert run("put", ID, "FP", "2017-01-26 00:01:25.292", "--manifest", url).stdout == "new\n"
    assert run("put", ID, "FP", "2017-01-26T00:01:25Z", "--manifest", url).stdout == "new\n"
    assert run("put", ID, "FP", "2017-01-26 00:02:25.292", "--manifest", url).stdout == "duplicate\n"


def test_put_errors_are_one_line(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path}/m.db"
    assert_clean_error(run("put", "nope", "FP", "2017-01-26 00:01:25", "--manifest", url), "['nope'] is not a UUID")
    assert_clean_error(run("put", ID, "FP", "yesterday", "--manifest", url), "timestamp [yesterday]")
    assert_clean_error(run("put", ID, "FP", "2017-01-26", "--manifest", "redis://x"), "URL scheme [redis]")


def test_config_validate(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps(V2_CONFIG))
    result = run("config", "validate", str(good))
    assert result.returncode == 0
    assert result.stdout.startswith("valid: 2-0-0 config 'AWS DynamoDB duplicates storage': table snowplow-manifest")
    assert SECRET not in result.stdout
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(with_data(V2_CONFIG, purpose="NOPE")))
    assert_clean_error(run("config", "validate", str(bad)), "field [data.purpose] must be one of EVENTS_MANIFEST")


def test_table_create_and_check(tmp_path: Path, dynalite: LocalServer) -> None:
    table = unique_table()
    path = tmp_path / "config.json"
    path.write_text(json.dumps(with_data(V2_CONFIG, dynamodbTable=table, awsRegion="us-east-1")))
    assert_clean_error(
        run("table", "check", "--config", str(path), "--endpoint", dynalite.endpoint), f"[{table}] does not exist"
    )
    created = run("table", "create", "--config", str(path), "--endpoint", dynalite.endpoint, "--provisioned", "5,10")
    assert created.returncode == 0, created.stderr
    assert f"table {table} is ACTIVE" in created.stdout
    checked = run("table", "check", "--config", str(path), "--endpoint", dynalite.endpoint)
    assert (checked.returncode, checked.stdout) == (0, f"ok: table {table} is ACTIVE with the manifest's keys\n")
    url = f"dynamodb://{table}?region=us-east-1&endpoint={dynalite.endpoint}"
    event = str(uuid.uuid4())
    assert run("put", event, "FP", "2020-01-01 00:00:00", "--manifest", url).stdout == "new\n"
    assert run("put", event, "FP", "2020-01-02 00:00:00", "--manifest", url).stdout == "duplicate\n"


def test_aws_settings_errors_are_one_line_and_quick(tmp_path: Path) -> None:
    no_region = {k: v for k, v in os.environ.items() if k not in {"AWS_DEFAULT_REGION", "AWS_REGION"}}
    no_region["AWS_CONFIG_FILE"] = str(tmp_path / "no-config")
    result = subprocess.run(
        [sys.executable, "-m", "events_manifest", "put", ID, "FP", "2020-01-01", "--manifest", "dynamodb://events"],
        capture_output=True,
        text=True,
        timeout=120,
        env=no_region,
    )
    assert_clean_error(result, "no AWS region given: set awsRegion in the config, region= in the URL, or AWS_REGION")
    endpoint = f"http://127.0.0.1:{free_port()}"
    started = time.monotonic()
    refused = run(
        "put", ID, "FP", "2020-01-01", "--manifest", f"dynamodb://events?region=us-east-1&endpoint={endpoint}"
    )
    assert_clean_error(refused, endpoint)
    # a guard against the unbounded connect retries of before (one to three minutes), not a benchmark
    assert time.monotonic() - started < 30


def test_usage_errors_exit_2() -> None:
    result = run("table", "create")
    assert result.returncode == 2
    assert "--config" in result.stderr


@pytest.mark.parametrize("args", [["--help"], ["put", "--help"]])
def test_console_script_is_installed(args: list[str]) -> None:
    result = subprocess.run(["events-manifest", *args], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    assert "usage: events-manifest" in result.stdout
