"""Iglu lookups that cannot reach out, run as a user runs them (`events-manifest dedup
--iglu-config`, a process of its own): nothing is read that the configuration does not name, an
API key goes to its own host only, a lookup ends within its deadline, and a schema has a size
limit. Each case is checked by what the servers and the files saw."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from tests.commands import env
from tests.core.iglu.test_resolver import ACME, Served, config, embedded, http, schema, write_repository


def dedup(cwd: Path, resolver: dict[str, Any], records: list[dict[str, Any]], **environment: str) -> Any:
    """`events-manifest dedup` of `records` against `resolver`: its result and the error reasons."""
    (cwd / "in.ndjson").write_text("".join(json.dumps(r) + "\n" for r in records))
    (cwd / "resolver.json").write_text(json.dumps(resolver))
    command = [sys.executable, "-m", "events_manifest", "dedup", "in.ndjson", "--key", "schema", "--manifest"]
    command += [f"sqlite:///{cwd}/m.db", "--unique", "u", "--errors", "e", "--iglu-config", "resolver.json"]
    done = subprocess.run(
        command, cwd=cwd, env={**env(), **environment}, capture_output=True, text=True, timeout=120, check=False
    )
    errors = (cwd / "e").read_text().splitlines() if (cwd / "e").exists() else []
    return done, [json.loads(x)["reason"] for x in errors]


class Recording(BaseHTTPRequestHandler):
    """Answers 404 to everything, keeping each request's path and headers."""

    seen: list[tuple[str, dict[str, str]]]

    def do_GET(self) -> None:
        self.seen.append((self.path, dict(self.headers)))
        self.send_error(404)


@pytest.fixture
def elsewhere() -> Iterator[tuple[Served, list[tuple[str, dict[str, str]]]]]:
    """A server no configuration names, recording what reaches it."""
    seen: list[tuple[str, dict[str, str]]] = []
    served = Served(type("Elsewhere", (Recording,), {"seen": seen}))
    yield served, seen
    served.close()


def test_a_ref_is_followed_only_to_an_iglu_key_of_a_configured_repository(
    tmp_path: Path, elsewhere: tuple[Served, list[Any]]
) -> None:
    server, seen = elsewhere
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"type": "integer"}))
    total = "iglu:com.acme/total/jsonschema/1-0-0"
    schemas = {
        total: {"type": "number", "minimum": 0},
        ACME: {"type": "object", "properties": {"total": {"$ref": total}}},
        "iglu:com.acme/remote/jsonschema/1-0-0": {"properties": {"a": {"$ref": f"{server.uri}/schema.json"}}},
        "iglu:com.acme/local/jsonschema/1-0-0": {"properties": {"a": {"$ref": f"file://{secret}"}}},
    }
    repository = write_repository(tmp_path / "repo", schemas)  # type: ignore[arg-type]  # a $ref of each kind
    records = [
        {"schema": ACME, "data": {"total": 1}},
        {"schema": ACME, "data": {"total": -1}},
        {"schema": "iglu:com.acme/remote/jsonschema/1-0-0", "data": {"a": 1}},
        {"schema": "iglu:com.acme/local/jsonschema/1-0-0", "data": {"a": 1}},
    ]
    done, reasons = dedup(tmp_path, config(embedded("repo", repository)), records)
    assert done.returncode == 0, done.stderr
    assert reasons == [
        f"line 2 does not validate: {ACME}: $.total: -1 is less than the minimum of 0",
        f"line 3 does not validate: Schema iglu:com.acme/remote/jsonschema/1-0-0 refers to [{server.uri}/schema.json], "
        "which is not read: only iglu: references are followed, through the configured repositories",
        f"line 4 does not validate: Schema iglu:com.acme/local/jsonschema/1-0-0 refers to [file://{secret}], "
        "which is not read: only iglu: references are followed, through the configured repositories",
    ]
    assert seen == [], "nothing reached a server the configuration does not name"


def test_the_api_key_is_not_sent_to_another_host_on_a_redirect(
    tmp_path: Path, elsewhere: tuple[Served, list[Any]]
) -> None:
    server, seen = elsewhere
    other_host = server.uri.replace("127.0.0.1", "localhost")

    class Redirecting(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(302)
            self.send_header("Location", other_host + self.path)
            self.end_headers()

    redirecting = Served(Redirecting)
    try:
        done, reasons = dedup(
            tmp_path, config(http("server", redirecting.uri, apikey="s3cret-key")), [{"schema": ACME, "data": {}}]
        )
    finally:
        redirecting.close()
    assert done.returncode == 0, done.stderr
    assert reasons == [
        f"line 1 does not validate: Schema {ACME} was not found in any repository (server, events-manifest bundled "
        "schemas)"
    ]
    assert [path for path, _ in seen][-1] == "/api/schemas/com.acme/checkout/jsonschema/1-0-0", "it was redirected"
    assert all("apikey" not in {name.lower() for name in headers} for _, headers in seen), "without the key"
    assert "s3cret-key" not in done.stderr + done.stdout


class Dripping(BaseHTTPRequestHandler):
    """Sends a 200 and then one byte every 0.2 s, for a minute."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "1000")
        self.end_headers()
        for _ in range(300):
            try:
                self.wfile.write(b" ")
                self.wfile.flush()
            except OSError:
                return
            time.sleep(0.2)  # the behaviour: a server that drips its answer


def test_a_slow_drip_ends_at_the_lookup_deadline(tmp_path: Path) -> None:
    dripping = Served(Dripping)
    try:
        started = time.monotonic()
        done, _ = dedup(
            tmp_path,
            config(http("drip", dripping.uri)),
            [{"schema": ACME, "data": {}}],
            EVENTS_MANIFEST_IGLU_DEADLINE_SECONDS="2",
        )
        elapsed = time.monotonic() - started
    finally:
        dripping.close()
    assert done.returncode == 1
    assert "Iglu repository [drip]" in done.stderr and "the lookup deadline of 2 s" in done.stderr
    assert elapsed < 2 + 5, "the deadline holds, plus the command's own start (the server drips for a minute)"


def test_a_schema_over_the_size_limit_is_refused(tmp_path: Path) -> None:
    big = {**schema("big"), "description": "x" * 5000}
    repository = write_repository(tmp_path / "repo", {ACME: big})
    done, _ = dedup(
        tmp_path,
        config(embedded("repo", repository)),
        [{"schema": ACME, "data": {"total": 1}}],
        EVENTS_MANIFEST_IGLU_MAX_SCHEMA_BYTES="4096",
    )
    assert done.returncode == 1
    assert f"Iglu repository [repo] holds {ACME} in more than 4,096 bytes" in done.stderr
    assert not (tmp_path / "u").exists(), "nothing was written"


def test_keys_outside_the_grammar_or_the_repository_read_nothing(tmp_path: Path) -> None:
    repository = tmp_path / "repo"
    outside = {"type": "object", "properties": {}, "description": "outside the repository"}
    write_repository(tmp_path / "repo", {ACME: schema("inside")})
    (tmp_path / "name" / "jsonschema").mkdir(parents=True)
    (tmp_path / "name" / "jsonschema" / "1-0-0").write_text(json.dumps(outside))  # what `iglu:../name/...` would read
    records = [
        {"schema": "iglu:../name/jsonschema/1-0-0", "data": {}},
        {"schema": "iglu:com.acme/../jsonschema/1-0-0", "data": {}},
        {"schema": "iglu:com.acme/checkout/jsonschema/1-0-0/../..", "data": {}},
    ]
    done, reasons = dedup(tmp_path, config(embedded("repo", repository)), records)
    assert done.returncode == 0, done.stderr
    assert reasons[0].startswith("line 1 does not validate: Schema iglu:../name/jsonschema/1-0-0 was not found")
    assert reasons[1:] == [
        "line 2 does not validate: [iglu:com.acme/../jsonschema/1-0-0] is not an Iglu schema URI "
        "(iglu:vendor/name/format/M-R-A)",
        "line 3 does not validate: [iglu:com.acme/checkout/jsonschema/1-0-0/../..] is not an Iglu schema URI "
        "(iglu:vendor/name/format/M-R-A)",
    ]


def test_a_missing_embedded_repository_or_a_deep_schema_stops_the_run_in_one_line(tmp_path: Path) -> None:
    done, _ = dedup(tmp_path, config(embedded("gone", tmp_path / "nowhere")), [{"schema": ACME, "data": {}}])
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip() == (
        f"events-manifest: error: Iglu repository [gone]: embedded path {tmp_path / 'nowhere'} is not a folder: "
        "check --iglu-config; nothing was written"
    )
    assert not (tmp_path / "u").exists() and not (tmp_path / "m.db").exists()

    repository = tmp_path / "repo"
    (repository / "schemas" / "com.acme" / "checkout" / "jsonschema").mkdir(parents=True)
    deep = '{"properties":' * 20_000 + "{}" + "}" * 20_000
    (repository / "schemas" / "com.acme" / "checkout" / "jsonschema" / "1-0-0").write_text(deep)
    done, _ = dedup(tmp_path, config(embedded("repo", repository)), [{"schema": ACME, "data": {}}])
    assert done.returncode == 1 and "Traceback" not in done.stderr
    [said] = done.stderr.strip().splitlines()
    assert f"Iglu repository [repo] answered {ACME} with JSON nested too deeply to be read: fix that schema" in said
    assert said.endswith("once the cause is fixed, run the same command again to finish it")
    assert ledger(tmp_path) == ["failed"], "never started after it ended"
    (repository / "schemas" / "com.acme" / "checkout" / "jsonschema" / "1-0-0").write_text('{"type": "object"}')
    done, _ = dedup(tmp_path, config(embedded("repo", repository)), [{"schema": ACME, "data": {}}])
    assert done.returncode == 0 and ledger(tmp_path) == ["finished"], "the advice, followed, finishes the run"


def ledger(folder: Path) -> list[str]:
    """The states of the runs in the ledger of the manifest `folder/m.db`, as `events-manifest runs` lists them."""
    runs = subprocess.run(
        [sys.executable, "-m", "events_manifest", "runs", "--manifest", f"sqlite:///{folder}/m.db"],
        env=env(),
        capture_output=True,
        text=True,
        check=False,
    )
    return [line.split()[2] for line in runs.stdout.splitlines()]


def test_a_deeply_nested_record_is_an_error_record(tmp_path: Path) -> None:
    (tmp_path / "in.ndjson").write_text('{"id": 1}\n' + '{"a":' * 20_000 + "1" + "}" * 20_000 + '\n{"id": 2}\n')
    command = [sys.executable, "-m", "events_manifest", "dedup", "in.ndjson", "--key", "id", "--manifest"]
    command += [f"sqlite:///{tmp_path}/m.db", "--unique", "u", "--errors", "e"]
    done = subprocess.run(command, cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert (tmp_path / "u").read_text().splitlines() == ['{"id": 1}', '{"id": 2}']
    [error] = [json.loads(x) for x in (tmp_path / "e").read_text().splitlines()]
    assert error["reason"] == "line 2 is nested too deeply to be read"
    assert os.path.getsize(tmp_path / "e") > 100_000, "the line itself is kept"
