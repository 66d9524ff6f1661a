"""An Iglu resolver: the JSON Schema of a self-describing entity, from the repositories of a
standard resolver configuration, and the entity validated against it.

A schema is looked for in the repositories in the reference's order: those whose vendor prefixes
match the schema's vendor first, then embedded ones before HTTP ones, then by `priority` (lowest
first). A bundled embedded repository holds the schemas this project itself emits (`duplicate`
1-0-0). Schemas and misses are cached (`cacheSize`). A repository that answers 404 (or has no
such file) does not hold the schema, and the next one is asked; one that fails otherwise
(unreachable, 5xx, a timeout) is retried a bounded number of times, then `IgluRepositoryError`
stops the run: a missing schema is the event's problem, an unreachable repository is the run's.
Schemas are compiled once per process with jsonschema-rs (draft 4), the fastest of the three
validators measured (see docs/benchmarks.md).
"""

from __future__ import annotations

import functools
import json
import os
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs
import jsonschema_rs
import urllib3

from events_manifest import _redact as redact
from events_manifest._documents import load_document
from events_manifest._iglu.keys import SchemaKey
from events_manifest._redact import brief
from events_manifest.errors import ManifestConfigError, ManifestUnavailableError

CONFIG_SCHEMA = re.compile(r"iglu:com\.snowplowanalytics\.iglu/resolver-config/jsonschema/1-0-\d+")
BUNDLED = Path(__file__).parent / "bundled"
"""The embedded repository of the schemas the project's jobs emit, asked after every other."""
EMBEDDED, HTTP = 1, 100
"""Class priorities, as the reference's client has them: embedded repositories before HTTP ones."""


class IgluRepositoryError(ManifestUnavailableError):
    """A repository could not be read after every retry: the run stops, naming it."""


@attrs.frozen
class Repository:
    """One repository of a resolver configuration: an HTTP one (`location` a URI, with an
    Iglu Server `apikey` or without) or an embedded one (`location` a folder)."""

    name: str
    priority: int
    vendor_prefixes: tuple[str, ...]
    location: str = attrs.field(repr=lambda location: repr(redact.text(location)))
    embedded: bool
    apikey: str | None = attrs.field(default=None, repr=lambda key: "None" if key is None else "'***'")

    @property
    def shown(self) -> str:
        """The location as messages show it: a URL's password hidden."""
        return redact.text(self.location)

    def order(self, vendor: str) -> tuple[bool, int, int]:
        matched = any(vendor.startswith(prefix) for prefix in self.vendor_prefixes)
        return (not matched, EMBEDDED if self.embedded else HTTP, self.priority)

    def url(self, key: SchemaKey) -> str:
        """Where an HTTP repository serves a schema: a static repository at `URI/schemas/...`, an
        Iglu Server (given an API key) at `URI/api/schemas/...`."""
        return f"{self.location.rstrip('/')}/{'api/' if self.apikey else ''}{key.path}"


@attrs.frozen
class ResolverConfig:
    """A resolver configuration (`iglu:com.snowplowanalytics.iglu/resolver-config/jsonschema/1-0-*`)."""

    cache_size: int
    repositories: tuple[Repository, ...]

    @classmethod
    def parse(cls, source: str | bytes | Mapping[str, Any], *, flag: str = "resolver config") -> ResolverConfig:
        """From JSON text, a file, base64 JSON (as `--iglu-config` takes it) or the parsed document."""
        document = load_document(source, flag)
        schema = document.get("schema") if isinstance(document, Mapping) else None
        if not isinstance(schema, str) or not CONFIG_SCHEMA.fullmatch(schema):
            raise ManifestConfigError(
                f"{flag}: field [schema] is [{brief(schema)}], not "
                "iglu:com.snowplowanalytics.iglu/resolver-config/jsonschema/1-0-*"
            )
        data = _object(document.get("data"), f"{flag}: field [data]")
        cache_size = data.get("cacheSize")
        if not isinstance(cache_size, int) or isinstance(cache_size, bool) or cache_size < 0:
            raise ManifestConfigError(f"{flag}: field [data.cacheSize] must be a count, got [{brief(cache_size)}]")
        listed = data.get("repositories")
        if not isinstance(listed, list):
            raise ManifestConfigError(f"{flag}: field [data.repositories] must be a list, got [{brief(listed)}]")
        where = f"{flag}: field [data.repositories"
        return cls(cache_size, tuple(_repository(item, f"{where}.{n}") for n, item in enumerate(listed)))


def _object(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ManifestConfigError(f"{where} must be an object, got [{brief(value)}]")
    return value


def _repository(item: object, where: str) -> Repository:
    data = _object(item, where + "]")
    name, priority, prefixes = data.get("name"), data.get("priority"), data.get("vendorPrefixes", [])
    if not isinstance(name, str):
        raise ManifestConfigError(f"{where}.name] must be a string, got [{brief(name)}]")
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise ManifestConfigError(f"{where}.priority] must be an integer, got [{brief(priority)}]")
    if not isinstance(prefixes, list) or not all(isinstance(p, str) for p in prefixes):
        raise ManifestConfigError(f"{where}.vendorPrefixes] must be a list of strings, got [{brief(prefixes)}]")
    connection = _object(data.get("connection"), where + ".connection]")
    if "http" in connection:
        http = _object(connection["http"], where + ".connection.http]")
        uri, apikey = http.get("uri"), http.get("apikey")
        if not isinstance(uri, str) or not uri.startswith(("http://", "https://")):
            raise ManifestConfigError(f"{where}.connection.http.uri] must be an http(s) URI, got [{brief(uri)}]")
        if apikey is not None and not isinstance(apikey, str):
            raise ManifestConfigError(f"{where}.connection.http.apikey] must be a string")
        return Repository(name, priority, tuple(prefixes), uri, False, apikey)
    if "embedded" in connection:
        path = _object(connection["embedded"], where + ".connection.embedded]").get("path")
        if not isinstance(path, str):
            raise ManifestConfigError(f"{where}.connection.embedded.path] must be a string, got [{brief(path)}]")
        return Repository(name, priority, tuple(prefixes), path, True)
    raise ManifestConfigError(f"{where}.connection] must hold http or embedded, got {sorted(connection)}")


DEADLINE_SECONDS = float(os.environ.get("EVENTS_MANIFEST_IGLU_DEADLINE_SECONDS", 10.0))
"""How long one lookup in one HTTP repository may take, every attempt, pause and byte included (10 s
unless the environment variable `EVENTS_MANIFEST_IGLU_DEADLINE_SECONDS` says otherwise)."""
MAX_SCHEMA_BYTES = int(os.environ.get("EVENTS_MANIFEST_IGLU_MAX_SCHEMA_BYTES", 1024 * 1024))
"""The largest schema a repository may answer (1 MiB unless the environment variable
`EVENTS_MANIFEST_IGLU_MAX_SCHEMA_BYTES` says otherwise)."""
_REDIRECTS = urllib3.Retry(
    total=None,
    connect=0,
    read=0,
    status=0,
    other=0,
    redirect=3,
    remove_headers_on_redirect=urllib3.Retry.DEFAULT_REMOVE_HEADERS_ON_REDIRECT | {"apikey"},
)
"""Up to 3 redirects, the `apikey` header dropped on a redirect to another host; every other retry
is the resolver's own, within its deadline."""


class Resolver:
    """Schemas by key from a configuration's repositories (plus the bundled one), cached.

    Thread-safe. A lookup in an HTTP repository makes at most `attempts` requests of at most
    `timeout` seconds each (a doubling pause from `backoff` seconds between), and ends within
    `deadline` seconds whatever the server does (a slow drip of bytes included); then
    `IgluRepositoryError`. A schema larger than `max_schema_bytes` is refused. Only `iglu:`
    references (`$ref`) are followed, through the same repositories: no other URL or file is read.
    """

    def __init__(
        self,
        config: ResolverConfig,
        *,
        attempts: int = 3,
        timeout: float = 5.0,
        backoff: float = 0.2,
        deadline: float = DEADLINE_SECONDS,
        max_schema_bytes: int = MAX_SCHEMA_BYTES,
    ) -> None:
        self.config = config
        self.bundled = Repository("events-manifest bundled schemas", 0, (), str(BUNDLED), True)
        self.attempts, self.timeout, self.backoff = max(1, attempts), timeout, backoff
        self.deadline, self.max_schema_bytes = deadline, max_schema_bytes
        self._cache: OrderedDict[SchemaKey, dict[str, Any] | None] = OrderedDict()
        self._validators: dict[SchemaKey, jsonschema_rs.Draft4Validator | str] = {}
        self._lock = threading.Lock()
        self._http = urllib3.PoolManager(retries=_REDIRECTS, headers={"Accept": "application/json"})

    @classmethod
    def parse(cls, text: str | bytes | Mapping[str, Any], **options: Any) -> Resolver:
        return cls(ResolverConfig.parse(text, flag="--iglu-config"), **options)

    def __repr__(self) -> str:
        return f"Resolver({[r.name for r in self.config.repositories]}, cache_size={self.config.cache_size})"

    def ordered(self, vendor: str) -> list[Repository]:
        """The repositories in the order a schema of `vendor` is looked for: the configuration's,
        then the bundled one (so a configuration can hold its own copy of the job's schemas)."""
        return [*sorted(self.config.repositories, key=lambda repository: repository.order(vendor)), self.bundled]

    def lookup(self, key: SchemaKey) -> dict[str, Any] | None:
        """The schema, or None when no repository holds it (both cached)."""
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        found = None
        for repository in self.ordered(key.vendor):
            found = self._fetch(repository, key)
            if found is not None:
                break
        with self._lock:
            self._cache[key] = found
            while len(self._cache) > max(self.config.cache_size, 1):
                self._cache.popitem(last=False)
        return found

    def validate(self, entity: object) -> list[str]:
        """What is wrong with a self-describing entity `{"schema": URI, "data": ...}` against its
        schema: one message per failure, none when it is valid."""
        uri = entity.get("schema") if isinstance(entity, dict) else None
        key = SchemaKey.parse(uri) if isinstance(uri, str) else None
        if key is None:
            return [f"[{uri}] is not an Iglu schema URI (iglu:vendor/name/format/M-R-A)"]
        return self.validate_data(key, entity["data"] if isinstance(entity, dict) else None)

    def validate_data(self, key: SchemaKey, data: object) -> list[str]:
        """`validate` for an entity already split into its key and data."""
        validator = self._validator(key)
        if isinstance(validator, str):
            return [validator]
        return [
            f"{key.uri}: {_json_path(error.instance_path)}: {error.message}"
            for error in sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.instance_path])
        ]

    def _validator(self, key: SchemaKey) -> jsonschema_rs.Draft4Validator | str:
        """The compiled schema of `key` (once per process), or why there is none."""
        with self._lock:
            validator = self._validators.get(key)
        if validator is None:
            schema = self.lookup(key)
            if schema is None:
                names = ", ".join(r.name for r in self.ordered(key.vendor))
                validator = f"Schema {key.uri} was not found in any repository ({names})"
            else:
                refused: list[str] = []
                try:
                    validator = jsonschema_rs.Draft4Validator(schema, retriever=self._referenced(refused))
                except (jsonschema_rs.ValidationError, ValueError) as e:
                    validator = (
                        f"Schema {key.uri} refers to [{refused[0]}], which is not read: only iglu: references are "
                        "followed, through the configured repositories"
                        if refused
                        else f"Schema {key.uri} is not a valid JSON Schema: {str(e).splitlines()[0]}"
                    )
            with self._lock:
                self._validators[key] = validator
        return validator

    def _referenced(self, refused: list[str]) -> Callable[[str], Any]:
        """What the validator calls for a `$ref` it cannot resolve inside the schema: an `iglu:`
        key is looked up here; anything else (a URL, a file) is refused, never read."""

        def retrieve(uri: str) -> Any:
            key = SchemaKey.parse(uri.split("#", 1)[0])
            if key is None:
                refused.append(uri)
                raise ValueError(f"{uri}: only iglu: references are followed")
            found = self.lookup(key)
            if found is None:
                raise ValueError(f"{uri} was not found in any repository")
            return found

        return retrieve

    def check_reachable(self) -> None:
        """Ask every HTTP repository for a schema no one has: a 404 is an answer, anything else
        after every retry is `IgluRepositoryError`; an embedded repository must be a folder. For a
        run to fail before it writes anything."""
        probe = SchemaKey("events-manifest.probe", "reachable", "jsonschema", "1-0-0")
        for repository in self.config.repositories:
            if repository.embedded and not Path(repository.location).is_dir():
                raise IgluRepositoryError(
                    f"Iglu repository [{repository.name}]: embedded path {repository.location} is not a folder: "
                    "check --iglu-config; nothing was written"
                )
            if not repository.embedded:
                self._fetch(repository, probe)

    def _fetch(self, repository: Repository, key: SchemaKey) -> dict[str, Any] | None:
        if not key.path_safe:
            return None  # a vendor `.` or `..` names no file of any repository
        if repository.embedded:
            return self._embedded(repository, key)
        headers = {"apikey": repository.apikey} if repository.apikey else {}
        url = urllib3.util.parse_url(repository.url(key))
        if url.auth:  # user information in the URI: HTTP basic authentication, kept out of the URL
            headers.update(urllib3.make_headers(basic_auth=url.auth))
            url = url._replace(auth=None)
        deadline = time.monotonic() + self.deadline
        failure, attempt = "", 0
        for attempt in range(1, self.attempts + 1):
            if attempt > 1:
                time.sleep(min(self.backoff * 2 ** (attempt - 2), max(deadline - time.monotonic(), 0)))
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                failure = f"no answer within the lookup deadline of {self.deadline:g} s"
                break
            limit = urllib3.Timeout(connect=min(self.timeout, remaining), read=min(self.timeout, remaining))
            try:
                response = self._http.request("GET", url.url, headers=headers, timeout=limit, preload_content=False)
                try:
                    if response.status == 404:
                        return None
                    if response.status >= 400:
                        failure = f"HTTP {response.status}"
                        if response.status < 500 and response.status != 429:
                            break
                        continue
                    return _schema(self._body(response, deadline, repository, key), repository, key)
                finally:
                    response.release_conn()
            except (urllib3.exceptions.HTTPError, OSError) as e:
                failure = redact.text(_failure(e))
        raise IgluRepositoryError(
            f"Iglu repository [{repository.name}] ({repository.shown}) could not be read for {key.uri} "
            f"after {attempt} attempts ({failure}): check it is reachable from here, or remove it from "
            "--iglu-config; nothing was written"
        )

    def _body(
        self, response: urllib3.BaseHTTPResponse, deadline: float, repository: Repository, key: SchemaKey
    ) -> bytes:
        """The answer's bytes, read until the lookup's deadline and up to the size limit."""
        body = bytearray()
        while chunk := response.read1(64 * 1024):
            body += chunk
            if len(body) > self.max_schema_bytes:
                raise _too_large(repository, key, self.max_schema_bytes)
            if time.monotonic() > deadline:
                raise TimeoutError(f"the answer did not end within the lookup deadline of {self.deadline:g} s")
        return bytes(body)

    def _embedded(self, repository: Repository, key: SchemaKey) -> dict[str, Any] | None:
        root = Path(repository.location).resolve()
        file = (root / key.path).resolve()
        if not file.is_relative_to(root) or not file.is_file():
            return None
        if file.stat().st_size > self.max_schema_bytes:
            raise _too_large(repository, key, self.max_schema_bytes)
        return _schema(file.read_bytes(), repository, key)


@functools.cache
def resolver_for(config: ResolverConfig) -> Resolver:
    """One resolver per configuration and process: a Spark worker compiles each schema once."""
    return Resolver(config)


def _json_path(parts: list[str | int]) -> str:
    """`$.items[1].sku`: where in the data a failure is."""
    return "$" + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in parts)


def _schema(body: bytes, repository: Repository, key: SchemaKey) -> dict[str, Any]:
    reason = "something that is not a JSON Schema"
    try:
        schema = json.loads(body)
    except ValueError:
        schema = None
    except RecursionError:
        schema, reason = None, "JSON nested too deeply to be read"
    if not isinstance(schema, dict):
        raise IgluRepositoryError(
            f"Iglu repository [{repository.name}] answered {key.uri} with {reason}: fix that schema in the "
            "repository, or take the repository out of the resolver config"
        )
    return schema


def _failure(error: Exception) -> str:
    """What went wrong with a request, in a few words."""
    cause: Any = getattr(error, "reason", None) or error
    if isinstance(cause, TimeoutError):
        return str(cause)
    if isinstance(cause, urllib3.exceptions.TimeoutError):
        return "timed out"
    if isinstance(cause, urllib3.exceptions.NewConnectionError):
        return str(cause).rsplit("new connection: ", 1)[-1]
    return str(cause)


def _too_large(repository: Repository, key: SchemaKey, limit: int) -> IgluRepositoryError:
    return IgluRepositoryError(
        f"Iglu repository [{repository.name}] holds {key.uri} in more than {limit:,} bytes, the limit for a schema "
        "(EVENTS_MANIFEST_IGLU_MAX_SCHEMA_BYTES raises it): nothing was written"
    )
