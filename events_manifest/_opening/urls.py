"""Opening a manifest from a URL or a config: each built-in scheme one entry (`Scheme`) with its
own rules (how it opens, the local files it keeps, how Spark's workers reach it, which flags it
takes beside it); third-party backends plug in by URL scheme."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import timedelta
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, parse_qsl, urlencode, urlsplit, urlunsplit

import attrs

from events_manifest import _redact as redact
from events_manifest._aws import check_region_name
from events_manifest._backends.dynamodb import ClientOptions, DynamoDbManifest, check_table, create_table
from events_manifest._backends.dynamodb.client import (
    DEFAULT_CONCURRENCY,
    DEFAULT_MAX_ATTEMPTS,
    admin_options,
    make_client,
)
from events_manifest._backends.dynamodb.config_document import DynamoDbConfig, parse_config
from events_manifest._backends.memory import InMemoryManifest
from events_manifest._backends.sqlite import SqliteManifest
from events_manifest._manifest.contract import DuplicateStorage
from events_manifest.errors import ManifestConfigError
from events_manifest.model import DEFAULT_TTL, check_table_name

ENTRY_POINT_GROUP = "events_manifest.backends"
"""Entry-point group where a package registers `scheme = "module:factory"`, factory(url) -> manifest."""

BackendFactory = Callable[[str], DuplicateStorage]

_DURATION = re.compile(r"(\d+)\s*(s|m|h|d|w)?")
_UNITS = {None: 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def _named(url: str) -> str:
    """A manifest URL as a message names it: the user information of any URL in it hidden (an
    endpoint's password)."""
    return f"manifest URL [{redact.text(url)}]"


def parse_duration(text: str, what: str = "duration") -> timedelta:
    """`90`, `90s`, `15m`, `12h`, `180d` or `2w` as a timedelta."""
    match = _DURATION.fullmatch(text.strip())
    if not match or int(match.group(1)) == 0:
        raise ManifestConfigError(f"{what} [{text}] is not a positive duration such as 3600, 15m, 12h or 180d")
    seconds = int(match.group(1)) * _UNITS[match.group(2)]
    if seconds > LONGEST_DURATION.total_seconds():
        raise ManifestConfigError(f"{what} [{text}] is longer than {LONGEST_DURATION.days}d (a hundred years)")
    return timedelta(seconds=seconds)


LONGEST_DURATION = timedelta(days=36500)
"""The longest `ttl` (or other duration) a URL takes: an entry's expiry stays a date any store can hold."""


def manifest_from_url(url: str, *, read_only: bool = False) -> DuplicateStorage:
    """Open the manifest a URL names.

    - `memory://`
    - `sqlite:///abs/path.db` (or `sqlite://relative/path.db`)
    - `dynamodb://TABLE?region=R&endpoint=http://127.0.0.1:PORT&create=true&concurrency=32`

    Every scheme takes `ttl=180d`. Other schemes come from the `ENTRY_POINT_GROUP`
    (`events_manifest.backends`) entry-point group. `read_only` opens it to look, never to
    create: a SQLite file that is not there, or a DynamoDB table, is an error rather than made.
    """
    scheme = urlsplit(url).scheme
    if not scheme:
        raise ManifestConfigError(f"{_named(url)} has no scheme: use {', '.join(known_schemes())}")
    if scheme in _BUILTIN:
        return _BUILTIN[scheme].open(url, read_only)
    return _plugin(scheme)(url)


def known_schemes() -> list[str]:
    return sorted({*_BUILTIN, *(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))})


def init_storage(
    config: DynamoDbConfig | Mapping[str, Any] | str,
    *,
    endpoint_url: str | None = None,
    create_if_missing: bool = False,
    ttl: timedelta = DEFAULT_TTL,
    concurrency: int = DEFAULT_CONCURRENCY,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
) -> DynamoDbManifest:
    """The DynamoDB manifest a config describes, its table checked (or created) before use."""
    if not isinstance(config, DynamoDbConfig):
        config = parse_config(config)
    options = ClientOptions(
        region=config.region,
        credentials=config.credentials,
        endpoint_url=endpoint_url,
        max_attempts=max_attempts,
        max_pool_connections=concurrency,
    )
    return _open_dynamodb(options, config.table, create_if_missing, ttl=ttl, concurrency=concurrency)


def _open_dynamodb(
    options: ClientOptions, table: str, create: bool, *, ttl: timedelta, concurrency: int
) -> DynamoDbManifest:
    admin = make_client(admin_options(options))  # an unreachable endpoint fails here, in seconds
    try:
        if create:
            create_table(admin, table)
        else:
            check_table(admin, table)
    finally:
        admin.close()
    return DynamoDbManifest.from_options(options, table, ttl=ttl, concurrency=concurrency)


class _Query:
    """The query parameters of a manifest URL; unknown ones are an error, not ignored."""

    def __init__(self, url: str, allowed: set[str]) -> None:
        self.url = url
        self.params = dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))
        unknown = sorted(set(self.params) - allowed - {"ttl"})
        if unknown:
            raise ManifestConfigError(
                f"{_named(url)}: unknown parameter(s) {', '.join(unknown)}; "
                f"allowed: {', '.join(sorted(allowed | {'ttl'}))}"
            )

    def ttl(self) -> timedelta:
        return parse_duration(self.params["ttl"], "ttl") if "ttl" in self.params else DEFAULT_TTL

    def integer(self, name: str, default: int) -> int:
        value = self.params.get(name)
        if value is None:
            return default
        if not value.isdigit() or int(value) < 1:
            raise ManifestConfigError(f"{_named(self.url)}: {name} [{value}] must be a positive integer")
        return int(value)

    def flag(self, name: str) -> bool:
        value = self.params.get(name, "false").lower()
        if value not in {"true", "false", "1", "0", "yes", "no"}:
            raise ManifestConfigError(f"{_named(self.url)}: {name} [{value}] must be true or false")
        return value in {"true", "1", "yes"}


def _memory(url: str, read_only: bool) -> DuplicateStorage:
    return InMemoryManifest(ttl=_Query(url, set()).ttl())


def _sqlite_path(url: str) -> str:
    parts = urlsplit(url)
    path = parts.netloc + parts.path
    if not path:
        raise ManifestConfigError(f"{_named(url)} names no file: use sqlite:///abs/path.db")
    return "/" + path.lstrip("/") if path.startswith("//") else path  # sqlite:////abs: the file /abs


def with_dynamodb_flags(url: str, *, endpoint: str | None = None, create: bool = False) -> str:
    """A manifest URL with what a command line gives beside it, `--dynamodb-endpoint` and
    `--create-table`: used for a DynamoDB URL, refused for any other (a flag is used or refused,
    never ignored), refused when the URL says otherwise."""
    wanted = {"endpoint": endpoint, "create": "true" if create else None}
    flags = {"endpoint": "--dynamodb-endpoint", "create": "--create-table"}
    given = {name: value for name, value in wanted.items() if value is not None}
    if not given:
        return url
    parts = urlsplit(url)
    scheme = _BUILTIN.get(parts.scheme)
    if scheme is None or not scheme.flags:
        named = " and ".join(flags[name] for name in given)
        raise ManifestConfigError(f"{named} is for a DynamoDB manifest, and [{url}] is not one: leave it out")
    query = parse_qs(parts.query)
    for name, value in given.items():
        if name in query and query[name] != [value]:
            raise ManifestConfigError(
                f"{flags[name]} and the manifest URL's {name}={query[name][0]} differ: give it once, in one place"
            )
    added = urlencode({name: value for name, value in given.items() if name not in query})
    joined = "&".join(part for part in (parts.query, added) if part)
    return urlunsplit(parts._replace(query=joined))


def manifest_files(manifest: str | DuplicateStorage | None) -> list[str]:
    """The local files a manifest keeps its entries in (a SQLite file and its journal files),
    which the output rule keeps every output away from (`places.check_places`)."""
    if isinstance(manifest, SqliteManifest):
        return _journaled(str(manifest.path))
    if isinstance(manifest, str) and (scheme := _BUILTIN.get(urlsplit(manifest).scheme)) is not None:
        return scheme.files(manifest)
    return []


def _journaled(path: str) -> list[str]:
    return [path, *(path + suffix for suffix in ("-wal", "-shm", "-journal"))]


def _sqlite(url: str, read_only: bool) -> SqliteManifest:
    path = _sqlite_path(url)
    query = _Query(url, {"cache_mib", "durable", "busy_timeout"})
    return SqliteManifest(
        Path(path),
        ttl=query.ttl(),
        busy_timeout=timedelta(seconds=query.integer("busy_timeout", 60)),
        cache_mib=query.integer("cache_mib", 64),
        durable=query.flag("durable"),
        read_only=read_only,
    )


def dynamodb_url_parts(url: str) -> tuple[str, ClientOptions, bool, timedelta, int]:
    """The table, client options, create flag, ttl and concurrency a dynamodb:// URL names."""
    parts = urlsplit(url)
    query = _Query(url, {"region", "endpoint", "create", "concurrency", "max_attempts"})
    table = check_table_name(parts.netloc + parts.path.rstrip("/"), f"{_named(url)}: table")
    region = query.params.get("region")
    endpoint = query.params.get("endpoint")
    if endpoint is not None and urlsplit(endpoint).scheme not in {"http", "https"}:
        raise ManifestConfigError(f"{_named(url)}: endpoint [{redact.text(endpoint)}] must be an http(s) URL")
    concurrency = query.integer("concurrency", DEFAULT_CONCURRENCY)
    options = ClientOptions(
        region=check_region_name(region) if region else None,
        endpoint_url=endpoint,
        max_attempts=query.integer("max_attempts", DEFAULT_MAX_ATTEMPTS),
        max_pool_connections=concurrency,
    )
    return table, options, query.flag("create"), query.ttl(), concurrency


def _dynamodb(url: str, read_only: bool) -> DuplicateStorage:
    table, options, create, ttl, concurrency = dynamodb_url_parts(url)
    return _open_dynamodb(options, table, create and not read_only, ttl=ttl, concurrency=concurrency)


@attrs.frozen
class Scheme:
    """A built-in URL scheme and its rules."""

    open: Callable[[str, bool], DuplicateStorage]
    """The manifest a URL names, opened (read-only: to look, never to create)."""
    files: Callable[[str], list[str]] = lambda url: []
    """The local files it keeps its entries in, which no output may overwrite."""
    for_workers: Callable[[str], str] | None = lambda url: url
    """The URL Spark's Python workers open it by; None: they cannot share it."""
    flags: bool = False
    """Whether `--dynamodb-endpoint` and `--create-table` go with it."""


def _sqlite_for_workers(url: str) -> str:
    """A SQLite URL with its path resolved here: the workers' working folder is not the driver's."""
    opened = _sqlite(url, False)
    try:
        return opened.url
    finally:
        opened.close()


_BUILTIN: dict[str, Scheme] = {
    "memory": Scheme(_memory, for_workers=None),
    "sqlite": Scheme(_sqlite, files=lambda url: _journaled(_sqlite_path(url)), for_workers=_sqlite_for_workers),
    "dynamodb": Scheme(_dynamodb, flags=True),
}


def shared_by_workers(url: str) -> bool:
    """Whether Spark's workers can share the manifest of `url` (not an in-memory one), told without
    opening it."""
    scheme = _BUILTIN.get(urlsplit(url).scheme)
    return scheme is None or scheme.for_workers is not None


def worker_url(url: str) -> str:
    """The URL Spark's workers open the manifest of `url` by (a plugin's as it is), for a URL they
    can share (`shared_by_workers`, which the caller checks first)."""
    scheme = _BUILTIN.get(urlsplit(url).scheme)
    if scheme is None:
        return url
    if scheme.for_workers is None:
        raise ValueError(f"no URL for Spark's workers: {urlsplit(url).scheme}:// is not shared by them")
    return scheme.for_workers(url)


def _plugin(scheme: str) -> BackendFactory:
    for ep in entry_points(group=ENTRY_POINT_GROUP, name=scheme):
        factory: BackendFactory = ep.load()
        return factory
    raise ManifestConfigError(
        f"no manifest backend for URL scheme [{scheme}]: known are {', '.join(known_schemes())}; "
        f"a package adds one through the {ENTRY_POINT_GROUP!r} entry-point group"
    )
