"""The Iglu resolver against real repositories on loopback: static HTTP ones (one answering 500s,
one slow, an Iglu Server with an API key) and embedded folders."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from functools import partial
from http.server import BaseHTTPRequestHandler, SimpleHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from events_manifest import ManifestConfigError
from events_manifest.iglu import IgluRepositoryError, Resolver, ResolverConfig, SchemaKey
from events_manifest.testing._servers import serve_http

ACME = "iglu:com.acme/checkout/jsonschema/1-0-0"
ROOT = Path(__file__).resolve().parents[3]


def schema(description: str, required: str = "total") -> dict[str, Any]:
    return {
        "$schema": "http://iglucentral.com/schemas/com.snowplowanalytics.self-desc/schema/jsonschema/1-0-0#",
        "description": description,
        "self": {"vendor": "com.acme", "name": "checkout", "format": "jsonschema", "version": "1-0-0"},
        "type": "object",
        "properties": {"total": {"type": "number", "minimum": 0}, "currency": {"type": "string", "maxLength": 3}},
        "required": [required],
        "additionalProperties": False,
    }


def write_repository(root: Path, schemas: dict[str, dict[str, Any]]) -> Path:
    for uri, body in schemas.items():
        key = SchemaKey.parse(uri)
        assert key is not None
        (root / key.path).parent.mkdir(parents=True, exist_ok=True)
        (root / key.path).write_text(json.dumps(body))
    return root


class Served:
    """An HTTP server on a free loopback port, counting the requests it answered."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], directory: Path | None = None) -> None:
        self.requests = 0
        served = self

        class Counting(handler):  # type: ignore[misc, valid-type]
            def log_message(self, *args: object) -> None:
                pass

            def handle_one_request(self) -> None:
                served.requests += 1
                super().handle_one_request()

        made = Counting if directory is None else partial(Counting, directory=str(directory))
        self.server = serve_http(made, "iglu-repository")
        self.uri = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def static(tmp_path: Path) -> Iterator[Served]:
    root = write_repository(tmp_path / "static", {ACME: schema("static")})
    served = Served(SimpleHTTPRequestHandler, root)
    yield served
    served.close()


class Failing(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_error(500)


class Slow(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        time.sleep(2)  # the behaviour: a server slower than the client's timeout
        with contextlib.suppress(OSError):  # the client gave up long ago
            self.send_error(404)


def config(*repositories: dict[str, Any], cache_size: int = 500) -> dict[str, Any]:
    return {
        "schema": "iglu:com.snowplowanalytics.iglu/resolver-config/jsonschema/1-0-3",
        "data": {"cacheSize": cache_size, "cacheTtl": 600, "repositories": list(repositories)},
    }


def http(name: str, uri: str, priority: int = 0, prefixes: tuple[str, ...] = (), **extra: str) -> dict[str, Any]:
    connection = {"http": {"uri": uri, **extra}}
    return {"name": name, "priority": priority, "vendorPrefixes": list(prefixes), "connection": connection}


def embedded(name: str, path: Path, priority: int = 0, prefixes: tuple[str, ...] = ()) -> dict[str, Any]:
    connection = {"embedded": {"path": str(path)}}
    return {"name": name, "priority": priority, "vendorPrefixes": list(prefixes), "connection": connection}


def test_valid_invalid_and_missing_entities_with_a_cache(static: Served) -> None:
    resolver = Resolver.parse(json.dumps(config(http("static", static.uri))))
    assert resolver.validate({"schema": ACME, "data": {"total": 12.5, "currency": "EUR"}}) == []
    assert resolver.validate({"schema": ACME, "data": {"total": -1, "currency": "EURO", "x": 1}}) == [
        "iglu:com.acme/checkout/jsonschema/1-0-0: $: Additional properties are not allowed ('x' was unexpected)",
        'iglu:com.acme/checkout/jsonschema/1-0-0: $.currency: "EURO" is longer than 3 characters',
        "iglu:com.acme/checkout/jsonschema/1-0-0: $.total: -1 is less than the minimum of 0",
    ]
    missing = "iglu:com.acme/refund/jsonschema/1-0-0"
    assert resolver.validate({"schema": missing, "data": {}}) == [
        f"Schema {missing} was not found in any repository (static, events-manifest bundled schemas)"
    ]
    asked = static.requests
    for _ in range(3):
        resolver.validate({"schema": ACME, "data": {"total": 1}})
        resolver.validate({"schema": missing, "data": {}})
    assert static.requests == asked == 2, "schemas and misses are cached: one request each"
    assert resolver.validate({"schema": "not-a-uri", "data": {}}) == [
        "[not-a-uri] is not an Iglu schema URI (iglu:vendor/name/format/M-R-A)"
    ]


def test_vendor_prefixes_then_embedded_then_priority(static: Served, tmp_path: Path) -> None:
    folder = write_repository(tmp_path / "embedded", {ACME: schema("embedded")})
    other = write_repository(tmp_path / "other", {ACME: schema("other embedded")})
    both = config(
        http("static", static.uri, priority=0, prefixes=("com.acme",)),
        embedded("embedded", folder, priority=0),
        embedded("other", other, priority=5),
    )
    key = SchemaKey.parse(ACME)
    assert key is not None
    resolver = Resolver.parse(json.dumps(both))
    assert [r.name for r in resolver.ordered("com.acme")][:3] == ["static", "embedded", "other"]
    assert resolver.lookup(key)["description"] == "static"  # type: ignore[index]
    without_prefix = config(http("static", static.uri), embedded("other", other, 5), embedded("embedded", folder, 1))
    assert Resolver.parse(json.dumps(without_prefix)).lookup(key)["description"] == "embedded"  # type: ignore[index]


def test_the_bundled_repository_holds_the_jobs_own_schemas() -> None:
    resolver = Resolver.parse(json.dumps(config()))
    duplicate = "iglu:com.snowplowanalytics.snowplow/duplicate/jsonschema/1-0-0"
    original = {"originalEventId": "c6ef3124-b53a-4b13-a233-0088f79dcbcb"}
    assert resolver.validate({"schema": duplicate, "data": original}) == []
    assert resolver.validate({"schema": duplicate, "data": {}}) == [
        f'{duplicate}: $: "originalEventId" is a required property'
    ]


def test_an_iglu_server_is_asked_with_its_api_key(tmp_path: Path) -> None:
    root = write_repository(tmp_path / "server" / "api", {ACME: schema("server")})

    class IgluServer(SimpleHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.headers.get("apikey") != "s3cret":
                self.send_error(401)
                return
            super().do_GET()

    served = Served(IgluServer, root.parent)
    try:
        good = Resolver.parse(json.dumps(config(http("server", served.uri, apikey="s3cret"))))
        assert good.validate({"schema": ACME, "data": {"total": 3}}) == []
        assert "s3cret" not in repr(good.config), "the API key stays out of reprs"
        bad = Resolver.parse(json.dumps(config(http("server", served.uri, apikey="wrong"))), attempts=2, backoff=0)
        with pytest.raises(IgluRepositoryError, match=r"\[server\] .* after 1 attempts \(HTTP 401\)"):
            bad.validate({"schema": ACME, "data": {}})
    finally:
        served.close()


def test_failing_and_slow_repositories_fail_the_run_after_bounded_retries(static: Served) -> None:
    failing, slow = Served(Failing), Served(Slow)
    try:
        resolver = Resolver.parse(json.dumps(config(http("broken", failing.uri))), attempts=3, backoff=0.01)
        with pytest.raises(IgluRepositoryError, match=r"Iglu repository \[broken\] .* after 3 attempts \(HTTP 500\)"):
            resolver.validate({"schema": ACME, "data": {}})
        assert failing.requests == 3
        started = time.monotonic()
        late = Resolver.parse(json.dumps(config(http("slow", slow.uri))), attempts=2, timeout=0.2, backoff=0.01)
        with pytest.raises(IgluRepositoryError, match=r"\[slow\] .* after 2 attempts \(timed out\)"):
            late.validate({"schema": ACME, "data": {}})
        assert time.monotonic() - started < 1.5, "bounded by attempts x timeout"
        first = config(http("static", static.uri, priority=0), http("broken", failing.uri, priority=1))
        assert Resolver.parse(json.dumps(first)).validate({"schema": ACME, "data": {"total": 1}}) == [], (
            "a later repository is not asked when an earlier one has the schema"
        )
    finally:
        failing.close()
        slow.close()
    unreachable = Resolver.parse(json.dumps(config(http("gone", "http://127.0.0.1:1"))), attempts=2, backoff=0)
    with pytest.raises(IgluRepositoryError, match=r"\[gone\] \(http://127.0.0.1:1\)"):
        unreachable.validate({"schema": ACME, "data": {}})


def test_the_configuration_is_checked_field_by_field() -> None:
    encoded = base64.b64encode(json.dumps(config(cache_size=5)).encode()).decode()
    assert ResolverConfig.parse(encoded).cache_size == 5, "base64, as --iglu-config takes it"
    cases = [
        ({**config(), "schema": "iglu:com.acme/x/jsonschema/1-0-0"}, "field [schema] is [iglu:com.acme/x/"),
        ({**config(), "data": {"repositories": []}}, "field [data.cacheSize] must be a count, got [null]"),
        (config({"name": "x", "priority": "high", "connection": {}}), "[data.repositories.0.priority] must be an"),
        (config({"name": "x", "priority": 0, "connection": {"ftp": {}}}), "[data.repositories.0.connection] must"),
        (config(http("x", "iglucentral.com")), "connection.http.uri] must be an http(s) URI, got [iglucentral.com]"),
    ]
    for document, message in cases:
        with pytest.raises(ManifestConfigError) as refused:
            ResolverConfig.parse(json.dumps(document))
        assert message in str(refused.value)


def test_dedup_validates_self_describing_records(static: Served, tmp_path: Path) -> None:
    """`events-manifest dedup --iglu-config`, as a user runs it: invalid and unknown records are
    error records with what failed; an unreachable repository fails the run, replacing no file."""
    records = [
        {"schema": ACME, "data": {"total": 1}},
        {"schema": ACME, "data": {"total": 1}},
        {"schema": ACME, "data": {"total": "one"}},
        {"schema": "iglu:com.acme/refund/jsonschema/1-0-0", "data": {}},
        {"total": 2},
    ]
    (tmp_path / "in.ndjson").write_text("".join(json.dumps(r) + "\n" for r in records))
    (tmp_path / "resolver.json").write_text(json.dumps(config(http("static", static.uri))))
    flags = ["--key", "schema", "--manifest", f"sqlite:///{tmp_path}/m.db", "--unique", "u", "--errors", "e"]
    done = _cli(tmp_path, "dedup", "in.ndjson", *flags, "--duplicates", "d", "--iglu-config", "resolver.json")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "u").read_text().splitlines() == [json.dumps(records[0])]
    assert (tmp_path / "d").read_text().splitlines() == [json.dumps(records[1])]
    reasons = [json.loads(x)["reason"] for x in (tmp_path / "e").read_text().splitlines()]
    assert reasons == [
        f'line 3 does not validate: {ACME}: $.total: "one" is not of type "number"',
        "line 4 does not validate: Schema iglu:com.acme/refund/jsonschema/1-0-0 was not found in any repository "
        "(static, events-manifest bundled schemas)",
        'line 5 is not a self-describing record {"schema": ..., "data": ...}',
    ]
    before = {name: (tmp_path / name).read_bytes() for name in ("u", "d", "e")}
    gone = base64.b64encode(json.dumps(config(http("gone", "http://127.0.0.1:1"))).encode()).decode()
    failed = _cli(tmp_path, "dedup", "in.ndjson", *flags, "--duplicates", "d", "--iglu-config", gone)
    assert failed.returncode == 1 and "Iglu repository [gone] (http://127.0.0.1:1) could not be read" in failed.stderr
    assert {name: (tmp_path / name).read_bytes() for name in before} == before, "no output file was replaced"


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    command = [sys.executable, "-m", "events_manifest", *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False)
