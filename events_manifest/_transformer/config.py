"""The transformer's configuration: its command line's values (base64 or a file path) and its HOCON
config, defaults merged under the user's as the reference merges them, each key checked with the
reference's message (docs/transformer.md lists them)."""

from __future__ import annotations

import copy
import functools
import os
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
from dateutil.relativedelta import relativedelta
from pyhocon import ConfigFactory, ConfigTree, HOCONConverter
from pyhocon.config_parser import ConfigParser
from pyhocon.exceptions import ConfigException
from pyparsing import ParseBaseException

from events_manifest import _redact as redact
from events_manifest._aws import known_regions
from events_manifest._documents import base64_text
from events_manifest._transformer.decode.event import parse_instant
from events_manifest._transformer.monitoring import (
    DEFAULT_PERIOD,
    DEFAULT_PREFIX,
    DURATION_METRIC,
    CloudWatch,
    Monitoring,
    Periodic,
)
from events_manifest._transformer.output.formats import Criterion, Formats, Routing, Shred, WideRowJson, WideRowParquet
from events_manifest.errors import ManifestConfigError


class TransformerConfigError(ManifestConfigError):
    """The command line or the config is not one the transformer runs with (exit 2, nothing written)."""


DEFAULTS = """
license { accept = false, accept = ${?ACCEPT_LIMITED_USE_LICENSE} }
output {
  compression = GZIP
  maxRecordsPerFile = 10000
  maxBadBufferSize = 1000
  bad {
    type = file
    recordLimit = 500
    byteLimit = 5242880
    backoffPolicy { minBackoff = 100 milliseconds, maxBackoff = 10 seconds, maxRetries = 10 }
    throttledBackoffPolicy { minBackoff = 100 milliseconds, maxBackoff = 1 second }
  }
}
formats { default = TSV, json = [], tsv = [], skip = [], fileFormat = json }
skipSchemas = []
deduplication { synthetic { type = BROADCAST, cardinality = 1 }, natural = true }
featureFlags { legacyMessageFormat = false, enableMaxRecordsPerFile = false, truncateAtomicFields = false }
"""
"""The reference's defaults (its application.conf), under the user's config."""


def decode_value(value: str, flag: str = "the value") -> str:
    """A command-line value as the reference reads it: base64 of the text when it decodes as
    standard base64 and UTF-8, and parses as HOCON; else the path of a file holding it. A value
    that decodes as base64 text but is no HOCON and no file is said to be so, never shown: it may
    hold credentials."""
    decoded = base64_text(value, lenient=False)
    if decoded is not None:
        try:
            parse_hocon(decoded, flag)
            return decoded
        except (TransformerConfigError, ValueError):
            pass
    if "\x00" in value:
        raise TransformerConfigError(f"Value of {flag} cannot be parsed as Base64 hocon neither as FS path")
    path = Path(value).absolute()
    try:
        with path.open("rb") as file:
            held = file.read(LARGEST_CONFIG + 1)
        if len(held) > LARGEST_CONFIG:
            raise TransformerConfigError(
                f"Error reading {path} file from filesystem: it holds more than {LARGEST_CONFIG >> 20} MiB, which no "
                f"config does: give {flag} the config's own file (or its text in base64)"
            )
        return held.decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        if decoded is not None and len(value) >= _SHORTEST_SHOWN_BASE64:
            raise TransformerConfigError(
                f"Value of {flag} decodes as Base64 but is not valid HOCON ({_hocon_problem(decoded)}), and is no "
                "file either: check the encoded text"
            ) from None
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise TransformerConfigError(f"Error reading {path} file from filesystem: {reason}") from None


LARGEST_CONFIG = 10 << 20
"""A file given as a config past this size is refused unread (a device such as /dev/zero never ends)."""
_SHORTEST_SHOWN_BASE64 = 24
"""Below this, a value that happens to decode as Base64 (`conf`, `abcd`) is taken for the file name
it more likely is, in the message."""


def _hocon_problem(text: str) -> str:
    try:
        parse_hocon(text, "it")
    except TransformerConfigError as e:
        return str(e).rsplit(": ", 1)[-1]
    return "unreadable"


_QUOTED_OR_SKIPPED = re.compile(r'"""[\s\S]*?"*"""|"(?:[^"\\\n]|\\.)*"|(?:#|//)[^\n]*')
"""A triple-quoted string or a comment (left as written), or a quoted string (its escapes read)."""
_UNICODE_ESCAPE = re.compile(r"\\\\|\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})|\\u([0-9a-f]{4})", re.IGNORECASE)
_KEPT_ESCAPED = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r"}


def _unicode_escapes(text: str) -> str:
    """`text` with the `\\uXXXX` escapes of its quoted strings read (a surrogate pair as its one
    character), as JSON and HOCON read them and pyhocon does not; an escaped backslash stays one."""

    def character(match: re.Match[str]) -> str:
        if match.group(0) == "\\\\":
            return match.group(0)
        if match.group(1):
            high, low = int(match.group(1), 16), int(match.group(2), 16)
            found = chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
        else:
            found = chr(int(match.group(3), 16))
            if 0xD800 <= ord(found) <= 0xDFFF:
                return match.group(0)  # half a pair: no character, left as written
        return _KEPT_ESCAPED.get(found, found)

    def quoted(match: re.Match[str]) -> str:
        found = match.group(0)
        return _UNICODE_ESCAPE.sub(character, found) if found.startswith('"') and not found.startswith('"""') else found

    return _QUOTED_OR_SKIPPED.sub(quoted, text)


def parse_hocon(text: str, what: str) -> ConfigTree:
    """HOCON (or JSON) text, substitutions resolved, as an editor may have saved it (a UTF-8 byte
    order mark, CRLF line ends). A syntax error names its line and column, never the text there (a
    config holds credentials)."""
    try:
        return ConfigFactory.parse_string(_unicode_escapes(text.removeprefix("\ufeff")))
    except ParseBaseException as e:
        where = f"line {e.lineno}, column {e.col}"
    except (ConfigException, ValueError) as e:  # its words quote the values: not shown
        where = f"{type(e).__name__}, at no position pyhocon tells"
    except RecursionError:
        where = "nested too deeply"
    raise TransformerConfigError(f"Cannot resolve config: {what} is not valid HOCON: {where}") from None


def hocon_to_json(text: str) -> str:
    """The iglu and dedup configs, HOCON resolved to JSON without defaults."""
    try:
        converted: str = HOCONConverter.to_json(parse_hocon(text, "the value"))
    except RecursionError:
        raise TransformerConfigError("Cannot resolve config: the value is not valid HOCON: nested too deeply") from None
    return converted


def _line(error: BaseException) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def _error(message: str) -> TransformerConfigError:
    return TransformerConfigError(f"Cannot resolve config: {message}")


_RUN_TIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})-(\d{2})-(\d{2})-(\d{2})")


def run_time(text: str) -> datetime | None:
    """A `yyyy-MM-dd-HH-mm-ss` time (UTC), as run folders are named; None if `text` is not one."""
    match = _RUN_TIME.fullmatch(text)
    if match is None:
        return None
    try:
        year, month, day, hour, minute, second = map(int, match.groups())
        return datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError:
        return None


_DURATION_UNITS = {
    "d": 86400.0, "day": 86400.0, "days": 86400.0,
    "h": 3600.0, "hour": 3600.0, "hours": 3600.0,
    "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0,
    "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0,
    "ms": 1e-3, "milli": 1e-3, "millis": 1e-3, "millisecond": 1e-3, "milliseconds": 1e-3,
    "us": 1e-6, "micro": 1e-6, "micros": 1e-6, "microsecond": 1e-6, "microseconds": 1e-6,
    "ns": 1e-9, "nano": 1e-9, "nanos": 1e-9, "nanosecond": 1e-9, "nanoseconds": 1e-9,
}  # fmt: skip
_DURATION = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]+)\s*")


MAX_DURATION = timedelta(microseconds=(2**63 - 1) // 1000)
"""Scala's limit of a finite duration: 2^63-1 nanoseconds, about 292 years."""


def duration(value: object, key: str) -> timedelta:
    """A Scala duration (`14 days`, `2 hours`, `100 milliseconds`), quoted or not: finite only,
    within Scala's limit (`MAX_DURATION`)."""
    if isinstance(value, relativedelta | timedelta):  # pyhocon reads an unquoted duration as one
        if isinstance(value, relativedelta) and (value.years or value.months):
            raise _error(f"DecodingFailure at .{key}: {_brief(value)} is not a finite duration, such as 14 days")
        if _seconds(value) > MAX_DURATION.total_seconds():  # before a timedelta overflows
            raise _limit(key, value)
        found = _timedelta(value)
    else:
        match = _DURATION.fullmatch(str(value))
        if not isinstance(value, str) or match is None or match.group(2).lower() not in _DURATION_UNITS:
            raise _error(f"DecodingFailure at .{key}: {_brief(value)} is not a finite duration, such as 14 days")
        seconds = float(match.group(1)) * _DURATION_UNITS[match.group(2).lower()]
        if seconds > MAX_DURATION.total_seconds():
            raise _limit(key, value)
        found = timedelta(seconds=seconds)
    if found > MAX_DURATION:
        raise _limit(key, value)
    return found


def _seconds(value: relativedelta | timedelta) -> float:
    if isinstance(value, timedelta):
        return value.total_seconds()
    return value.days * 86_400 + value.hours * 3_600 + value.minutes * 60 + value.seconds + value.microseconds / 1e6


def _timedelta(value: relativedelta | timedelta) -> timedelta:
    return value if isinstance(value, timedelta) else timedelta(seconds=_seconds(value))


def _limit(key: str, value: object) -> TransformerConfigError:
    return _error(
        f"DecodingFailure at .{key}: Duration is limited to +-(2^63-1)ns (ca. 292 years), got {_brief(value)}"
    )


def _brief(value: object) -> str:
    """A config value as a message shows it: secrets hidden (`redact`)."""
    if isinstance(value, relativedelta) and (value.years or value.months):
        return f"{value.years * 12 + value.months} months"
    if isinstance(value, relativedelta | timedelta):  # as seconds: a huge one is no timedelta
        seconds = _seconds(value)
        return f"{seconds / 86_400:.0f} days" if seconds % 86_400 == 0 else f"{seconds:g} seconds"
    return redact.brief(value, 200)


def _wrong_type(key: str, value: object, expected: str) -> TransformerConfigError:
    """circe's words for a value of the wrong JSON type."""
    return _error(
        f"DecodingFailure at .{key}: Got value '{redact.shown(value, 200)}' with wrong type, expecting {expected}"
    )


def _string(value: object, key: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise _wrong_type(key, value, "string")
    return str(value)


def _strings(value: object, key: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _wrong_type(key, value, "array")
    return [_string(item, f"{key}[{n}]") for n, item in enumerate(value)]


def _enum(value: object, allowed: Mapping[str, str], message: str, *, exact: bool = False) -> str:
    text = str(value)
    found = allowed.get(text if exact else text.lower())
    if found is None:
        raise _error(message.format(_brief(text)))
    return found


def _bool(value: object, key: str) -> bool:
    if isinstance(value, bool):
        return value
    if str(value).lower() in ("true", "yes", "on"):
        return True
    if str(value).lower() in ("false", "no", "off"):
        return False
    raise _error(f"{key}: {_brief(value)} is not a boolean")


def _int(value: object, key: str, *, least: int | None = None, most: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise _error(f"{key}: {_brief(value)} is not an integer")
    try:
        number = int(value)
    except ValueError:
        raise _error(f"{key}: {_brief(value)} is not an integer") from None
    if (least is not None and number < least) or (most is not None and number > most):
        bounds = f"at least {least}" if most is None else f"from {least} to {most}"
        raise _error(f"DecodingFailure at .{key}: {number} is out of range, it must be {bounds}")
    return number


def check_known_region(region: str, key: str | None = None) -> str:
    """An AWS region the SDK knows, or the reference's refusal naming it (`key`: the config's)."""
    if region not in known_regions():
        message = f"Region {_brief(region)} is unknown, choose from [{', '.join(known_regions())}]"
        raise _error(f"DecodingFailure at .{key}: {message}") if key is not None else TransformerConfigError(message)
    return region


@attrs.frozen
class Backoff:
    """How long to wait before retrying a Kinesis write: from `min` to `max` seconds, at most
    `retries` times (None: until it succeeds)."""

    min: float
    max: float
    retries: int | None


@attrs.frozen
class BadSink:
    """Where bad rows go: files under `output=bad/` (`file`), a Kinesis stream (`kinesis`),
    written in `PutRecords` calls of at most `record_limit` records and `byte_limit` bytes, or a
    Pub/Sub topic (`pubsub`)."""

    type: str = "file"
    stream: str = ""
    region: str | None = None
    record_limit: int = 500
    byte_limit: int = 5242880
    backoff: Backoff = Backoff(0.1, 10.0, 10)
    """For failures other than throttling: full jitter."""
    throttled: Backoff = Backoff(0.1, 1.0, None)
    """For throttled records: Fibonacci steps, without end: a throttled stream loses nothing."""
    endpoint: str | None = None
    """`customEndpoint`: the stream's service elsewhere than AWS's own (a VPC endpoint, LocalStack)."""
    topic: str = ""
    """`pubsub`: the topic, `projects/PROJECT/topics/NAME`, published to in batches of at most
    `batch_size` messages and `request_bytes` bytes, or after `delay` seconds."""
    batch_size: int = 1000
    request_bytes: int = 8_000_000
    delay: float = 0.2


@attrs.frozen
class Queue:
    """Where the run's message is sent: an SQS queue (its URL), an SNS topic or a Pub/Sub topic."""

    type: str
    name: str
    region: str | None


@attrs.frozen
class RunInterval:
    since_timestamp: datetime | None = None
    since_age: timedelta | None = None
    until: datetime | None = None

    def bounds(self, now: datetime) -> tuple[datetime | None, datetime | None]:
        """The open interval (since, until) run folders named `run=TIME` must fall into."""
        aged = None if self.since_age is None else now - self.since_age
        since = [t for t in (self.since_timestamp, aged) if t is not None]
        return (max(since) if since else None), self.until


@attrs.frozen
class TransformerConfig:
    """The settings the transformer runs with (docs/transformer.md, the config)."""

    input: str
    output: str
    compression: str = "GZIP"
    formats: Formats = attrs.field(factory=WideRowJson)
    skip_schemas: tuple[Criterion, ...] = ()
    synthetic: str = "broadcast"
    cardinality: int = 1
    natural: bool = True
    run_interval: RunInterval = RunInterval()
    minimum_timestamp: int | None = None
    """validations.minimumTimestamp, in nanoseconds since the epoch."""
    legacy_message: bool = False
    truncate_atomic_fields: bool = False
    enable_max_records_per_file: bool = False
    max_records_per_file: int = 10000
    spark_cache: bool | None = None
    queue: Queue | None = None
    bad: BadSink = BadSink()
    monitoring: Monitoring = attrs.field(factory=Monitoring)

    @property
    def synthetic_threshold(self) -> int | None:
        """Events sharing an id more often than this are synthetic duplicates; None: no synthetic dedup."""
        return {"none": None, "join": 1, "broadcast": self.cardinality}[self.synthetic]

    def check_supported(self, *, manifest: bool, iglu: bool) -> None:
        """Refuse the settings the transformer does not run with (with a manifest or not, an Iglu
        resolver or not), before anything is read."""
        if not (iglu or isinstance(self.formats, WideRowJson)):
            raise TransformerConfigError(
                "shred mode and Parquet need an Iglu resolver config: columns come from schemas"
            )
        if manifest and not self.natural:
            raise TransformerConfigError(
                "Natural deduplication needs to be enabled when cross batch deduplication is enabled"
            )
        if self.legacy_message and not isinstance(self.formats, Shred):
            raise TransformerConfigError("LegacyShreddingComplete message is only supported when shredding")

    @classmethod
    def parse(cls, text: str, environment: Mapping[str, str] | None = None) -> TransformerConfig:
        """The config of HOCON `text` over the defaults (an optional top-level `snowplow` wraps it)."""
        env = os.environ if environment is None else environment
        return cls.of_tree(merged(text, DEFAULTS), env)

    @classmethod
    def of_tree(cls, c: dict[str, Any], env: Mapping[str, str]) -> TransformerConfig:
        """The config of a merged tree (`merged`): the batch job's keys, checked."""

        def get(path: str, required: bool = False) -> Any:
            node: Any = c
            for part in path.split("."):
                if not isinstance(node, dict) or node.get(part) is None:
                    if required:
                        raise _error(f"DecodingFailure at .{path}: Missing required field")
                    return None
                node = node[part]
            return node

        inp, out = _string(get("input", True), "input"), _string(get("output.path", True), "output.path")
        if get("output.region") is not None:
            check_known_region(_string(get("output.region"), "output.region"), "output.region")
        compression = _enum(
            get("output.compression"), {"GZIP": "GZIP", "NONE": "NONE"}, "Unknown Compression [{}]", exact=True
        )
        bad = _bad_sink(get)
        transformation = _enum(
            get("formats.transformationType", True),
            {"shred": "shred", "widerow": "widerow"},
            "Transformation type {} is not supported yet. Supported types: 'shred', 'widerow'",
        )
        file_format = _enum(
            get("formats.fileFormat"),
            {"json": "json", "parquet": "parquet"},
            "Widerow file format type {} is not supported yet. Supported types: 'json'",
        )
        default_format = _enum(
            get("formats.default"),
            {"tsv": "TSV", "json": "JSON"},
            "{} is unexpected format. TSV and JSON are possible options",
        )
        groups = {name: _criteria(get(f"formats.{name}"), f"formats.{name}") for name in ("json", "tsv", "skip")}
        formats: Formats = WideRowParquet() if file_format == "parquet" else WideRowJson()
        if transformation == "shred":
            _check_overlaps(groups)
            formats = Shred(Routing(default_format, groups["json"], groups["tsv"], groups["skip"]))
        synthetic = _enum(
            get("deduplication.synthetic.type"),
            {"none": "none", "join": "join", "broadcast": "broadcast"},
            "Type {} is unknown for synthetic deduplication",
        )
        natural = _bool(get("deduplication.natural"), "deduplication.natural")
        if synthetic != "none" and not natural:
            raise TransformerConfigError(
                "Natural deduplication needs to be enabled when synthetic deduplication is enabled"
            )
        queue = None
        if get("queue") is not None:
            pubsub = get("queue.type") is None and get("queue.topic") is not None  # the GCP transformer's: no type
            kind = (
                "pubsub"
                if pubsub
                else _enum(
                    get("queue.type", True),
                    {"sqs": "sqs", "sns": "sns", "pubsub": "pubsub"},
                    "Queue type {} is not supported yet. Supported types: 'SNS' and 'SQS'",
                )
            )
            if kind == "pubsub":
                name = _pubsub_topic(get("queue.topic", True), "queue.topic")
            else:
                key = "queue.queueName" if kind == "sqs" else "queue.topicArn"
                name = _string(get(key, True), key)
            region = get("queue.region")
            if region is not None:
                check_known_region(_string(region, "queue.region"), "queue.region")
            queue = Queue(kind, name, _optional(region))
        interval = RunInterval(
            _run_time(get("runInterval.sinceTimestamp"), "runInterval.sinceTimestamp"),
            duration(get("runInterval.sinceAge"), "runInterval.sinceAge") if get("runInterval.sinceAge") else None,
            _run_time(get("runInterval.until"), "runInterval.until"),
        )
        minimum = get("validations.minimumTimestamp")
        flags = {
            name: _bool(get(f"featureFlags.{name}") or False, f"featureFlags.{name}")
            for name in ("legacyMessageFormat", "enableMaxRecordsPerFile", "truncateAtomicFields")
        }
        cache = get("featureFlags.sparkCacheEnabled")
        return cls(
            input=inp,
            output=out,
            compression=compression,
            formats=formats,
            skip_schemas=_criteria(get("skipSchemas"), "skipSchemas"),
            synthetic=synthetic,
            cardinality=_int(
                get("deduplication.synthetic.cardinality"),
                "deduplication.synthetic.cardinality",
                least=1 if synthetic == "broadcast" else None,
            ),
            natural=natural,
            run_interval=interval,
            minimum_timestamp=_instant(minimum) if minimum is not None else None,
            legacy_message=flags["legacyMessageFormat"],
            truncate_atomic_fields=flags["truncateAtomicFields"],
            enable_max_records_per_file=flags["enableMaxRecordsPerFile"],
            max_records_per_file=_int(get("output.maxRecordsPerFile") or 0, "output.maxRecordsPerFile", least=0),
            spark_cache=None if cache is None else _bool(cache, "featureFlags.sparkCacheEnabled"),
            queue=queue,
            bad=bad,
            monitoring=_monitoring(get),
        )


def _monitoring(get: Any) -> Monitoring:
    """The `monitoring` section, as the reference reads it (`monitoring.Monitoring`)."""

    def pairs(path: str, statsd: bool = False) -> tuple[tuple[str, str], ...]:
        found = get(path)
        if found is None:
            return ()
        if not isinstance(found, dict):
            raise _wrong_type(path, found, "object")
        named = [(str(key).strip('"'), _string(value, f"{path}.{key}")) for key, value in found.items()]
        for key, value in named if statsd else ():
            _metric_text(key, path)
            _metric_text(value, f"{path}.{key}")
        return tuple(sorted(named))

    def periodic(path: str, statsd: bool, **given: Any) -> Periodic:
        prefix = get(f"{path}.prefix")
        prefix = DEFAULT_PREFIX if prefix is None else _string(prefix, f"{path}.prefix")
        _metric_text(prefix, f"{path}.prefix", statsd)
        seconds = duration(get(f"{path}.period") or DEFAULT_PERIOD, f"{path}.period").total_seconds()
        if seconds < 1:
            raise _error(
                f"DecodingFailure at .{path}.period: {seconds:g} seconds is under a second; "
                f"report at most once a second (the reference's default is {DEFAULT_PERIOD})"
            )
        return Periodic(period=seconds, prefix=prefix, **given)

    dsn, cloudwatch, statsd, stdout = get("monitoring.sentry.dsn"), None, None, None
    if isinstance(get("monitoring.metrics.cloudwatch"), dict):  # the stream reference's is a flag of KCL's
        path = "monitoring.metrics.cloudwatch"
        metric = get(f"{path}.transformDuration")
        cloudwatch = CloudWatch(
            _string(get(f"{path}.namespace", True), f"{path}.namespace"),
            DURATION_METRIC if metric is None else _string(metric, f"{path}.transformDuration"),
            pairs(f"{path}.dimensions"),
        )
    if get("monitoring.metrics.statsd") is not None:
        path = "monitoring.metrics.statsd"
        port = _int(get(f"{path}.port", True), f"{path}.port", least=1, most=65535)
        host = _string(get(f"{path}.hostname", True), f"{path}.hostname")
        statsd = periodic(path, True, hostname=host, port=port, tags=pairs(f"{path}.tags", statsd=True))
    if get("monitoring.metrics.stdout") is not None:
        stdout = periodic("monitoring.metrics.stdout", False)
    return Monitoring(
        sentry_dsn=None if dsn is None else _string(dsn, "monitoring.sentry.dsn"),
        cloudwatch=cloudwatch,
        statsd=statsd,
        stdout=stdout,
    )


_STATSD_FIELDS = re.compile(r"[|:,#\r\n]")
_LINE_END = re.compile(r"[\r\n]")


def _metric_text(value: str, key: str, statsd: bool = True) -> None:
    """A metric's prefix or tag, refused where it would break the line it goes in: a line end in
    any, and in a StatsD datagram also `|`, `:`, `,` and `#`, which end its fields."""
    if (_STATSD_FIELDS if statsd else _LINE_END).search(value):
        said = "'|', ':', ',', '#' or a line end" if statsd else "a line end"
        raise _error(f"DecodingFailure at .{key}: {redact.shown(value)} holds {said}, which would break its lines")


@functools.cache
def _defaults_tree(defaults: str) -> ConfigTree:
    """A defaults text parsed once (substitutions left for each merge to resolve): pyhocon takes
    about 14 ms for either job's defaults, two thirds of loading a config (20 ms), each time."""
    tree: ConfigTree = ConfigFactory.parse_string(defaults, resolve=False)
    return tree


def merged(text: str, defaults: str) -> dict[str, Any]:
    """The user's HOCON `text` over `defaults` (an optional top-level `snowplow` wraps it),
    substitutions resolved, as plain values."""
    user = parse_hocon(text, "the config")
    if "snowplow" in user and isinstance(user.get("snowplow"), ConfigTree):
        user = user.get_config("snowplow")
    tree = ConfigTree.merge_configs(copy.deepcopy(_defaults_tree(defaults)), user)
    try:
        ConfigParser.resolve_substitutions(tree)
    except ConfigException as e:
        raise _error(_line(e)) from None
    plain: dict[str, Any] = _plain(tree)
    return plain


def _bad_sink(get: Any) -> BadSink:
    """`output.bad`: files, or a Kinesis stream with its limits and backoff policies."""
    kind = _enum(
        get("output.bad.type"),
        {"file": "file", "kinesis": "kinesis", "pubsub": "pubsub"},
        "Bad output type '{}' is not supported yet. Supported types: 'kinesis', 'pubsub', 'file'",
    )
    if kind == "file":
        return BadSink()
    if kind == "pubsub":
        default = BadSink()

        def given(key: str, unset: Any, read: Callable[[Any, str], Any]) -> Any:
            value = get(f"output.bad.{key}")
            return unset if value is None else read(value, f"output.bad.{key}")

        return BadSink(
            "pubsub",
            topic=_pubsub_topic(get("output.bad.topic", True), "output.bad.topic"),
            batch_size=given("batchSize", default.batch_size, lambda v, k: _int(v, k, least=1)),
            request_bytes=given("requestByteThreshold", default.request_bytes, lambda v, k: _int(v, k, least=1)),
            delay=given("delayThreshold", default.delay, lambda v, k: duration(v, k).total_seconds()),
        )
    region, endpoint = get("output.bad.region"), get("output.bad.customEndpoint")
    if region is not None:
        check_known_region(_string(region, "output.bad.region"), "output.bad.region")

    def backoff(path: str, retries: bool) -> Backoff:
        least = duration(get(f"{path}.minBackoff"), f"{path}.minBackoff").total_seconds()
        most = duration(get(f"{path}.maxBackoff"), f"{path}.maxBackoff").total_seconds()
        if least > most:
            raise _error(f"DecodingFailure at .{path}: minBackoff is longer than maxBackoff")
        count = get(f"{path}.maxRetries") if retries else None
        return Backoff(least, most, None if count is None else _int(count, f"{path}.maxRetries", least=0))

    return BadSink(
        "kinesis",
        _string(get("output.bad.streamName", True), "output.bad.streamName"),
        None if region is None else str(region),
        _int(get("output.bad.recordLimit"), "output.bad.recordLimit", least=1, most=500),
        _int(get("output.bad.byteLimit"), "output.bad.byteLimit", least=1, most=5242880),
        backoff("output.bad.backoffPolicy", True),
        backoff("output.bad.throttledBackoffPolicy", False),
        None if endpoint is None else _string(endpoint, "output.bad.customEndpoint"),
    )


def pubsub_misnamed(name: str, key: str, kind: str) -> str | None:
    """What is wrong with a Pub/Sub name (`kind`: `topics` or `subscriptions`), or None when it is
    the full `projects/PROJECT/<kind>/NAME`."""
    if re.fullmatch(rf"projects/[^/]+/{kind}/[^/]+", name):
        return None
    return f"DecodingFailure at .{key}: {_brief(name)} is not of the form projects/PROJECT/{kind}/NAME"


def _pubsub_topic(value: object, key: str) -> str:
    topic = _string(value, key)
    if (wrong := pubsub_misnamed(topic, key, "topics")) is not None:
        raise _error(wrong)
    return topic


def _optional(value: object) -> str | None:
    return None if value is None else str(value)


def _plain(tree: Any) -> Any:
    if isinstance(tree, ConfigTree):
        return {key: _plain(tree.get(key)) for key in tree}
    if isinstance(tree, list):
        return [_plain(item) for item in tree]
    return tree


def _run_time(value: object, key: str) -> datetime | None:
    if value is None:
        return None
    parsed = run_time(str(value))
    if parsed is None:
        raise _error(f"{key}: {value} is not a time of the form yyyy-MM-dd-HH-mm-ss")
    return parsed


def _instant(value: object) -> int:
    nanos = parse_instant(str(value))
    if nanos is None:
        raise _error(f"validations.minimumTimestamp: {value} is not an ISO-8601 instant, such as 2021-11-18T11:00:00Z")
    return nanos


def _criteria(value: object, key: str) -> tuple[Criterion, ...]:
    texts = _strings(value, key)
    try:
        return tuple(map(Criterion.parse, texts))
    except ValueError as e:
        raise _error(str(e)) from None


def _check_overlaps(groups: Mapping[str, tuple[Criterion, ...]]) -> None:
    names = list(groups)
    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            for a in groups[first]:
                for b in groups[second]:
                    if a.overlaps(b):
                        raise TransformerConfigError(
                            f"Following schema criterions overlap in different groups (TSV, JSON, skip): {a}, {b}. "
                            "Make sure every schema can have only one format"
                        )
