"""Self-describing manifest configurations (docs/configuration.md): parsing, validation, the typed result."""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

import attrs

from events_manifest._aws import check_region_name
from events_manifest._documents import load_document
from events_manifest.errors import ManifestConfigError
from events_manifest.model import check_table_name

if TYPE_CHECKING:
    import jsonschema

SCHEMA_PREFIX = "iglu:com.snowplowanalytics.snowplow.storage/amazon_dynamodb_config/jsonschema/"
SUPPORTED_SCHEMAS = (SCHEMA_PREFIX + "2-0-0", SCHEMA_PREFIX + "1-0-0")
"""The schemas a config is read as; a later addition (`M-0-A`) is read as its `M-0-0`."""
_SCHEMA = re.compile(re.escape(SCHEMA_PREFIX) + r"(?P<model>[12])-0-(?:0|[1-9][0-9]*)")


@attrs.frozen
class Credentials:
    """Static AWS credentials; the secret never shows in repr, str or logs."""

    access_key_id: str
    secret_access_key: str = attrs.field(repr=lambda _: "'***'")

    def __str__(self) -> str:
        return repr(self)


@attrs.frozen
class DynamoDbConfig:
    """A validated `amazon_dynamodb_config`; `credentials` None means the default AWS chain."""

    schema: str
    name: str
    credentials: Credentials | None
    region: str
    table: str
    purpose: str
    id: uuid.UUID | None = None

    @property
    def version(self) -> str:
        return self.schema.rsplit("/", 1)[-1]


def parse_config(source: Mapping[str, Any] | str | bytes | os.PathLike[str]) -> DynamoDbConfig:
    """Read a manifest config from a dict, JSON text, base64 text or a file path, and validate it.

    Raises `ManifestConfigError` naming the schema and the offending field; secret values are
    never part of a message.
    """
    document = load_document(source)
    if not isinstance(document, Mapping) or set(document) != {"schema", "data"}:
        raise ManifestConfigError(
            'a manifest config is a self-describing JSON object {"schema": "iglu:...", "data": {...}} '
            "with exactly those two fields"
        )
    schema = _supported(document["schema"])
    data = document["data"]
    problems = [_describe(e) for e in _validator(schema).iter_errors(data)]
    if problems:
        raise ManifestConfigError(f"invalid config for {schema}: " + "; ".join(sorted(set(problems))))
    if schema.endswith("2-0-0"):
        auth = data["auth"]
        credentials = None if auth is None else Credentials(auth["accessKeyId"], auth["secretAccessKey"])
        config_id: uuid.UUID | None = uuid.UUID(data["id"])
    else:
        credentials = Credentials(data["accessKeyId"], data["secretAccessKey"])
        config_id = None
    return DynamoDbConfig(
        schema=schema,
        name=data["name"],
        credentials=credentials,
        region=check_region_name(data["awsRegion"], f"{schema}: field [data.awsRegion]"),
        table=check_table_name(data["dynamodbTable"], f"{schema}: field [data.dynamodbTable]"),
        purpose=data["purpose"],
        id=config_id,
    )


def _supported(schema: object) -> str:
    """The supported schema a config's schema is read as: `1-0-*` as 1-0-0, `2-0-*` as 2-0-0."""
    match = _SCHEMA.fullmatch(schema) if isinstance(schema, str) else None
    if match is None:
        supported = ", ".join(s.replace("-0-0", "-0-*") for s in SUPPORTED_SCHEMAS)
        raise ManifestConfigError(f"unsupported config schema [{schema}]: supported are {supported}")
    return f"{SCHEMA_PREFIX}{match['model']}-0-0"


@cache
def _validator(schema: str) -> jsonschema.protocols.Validator:
    import jsonschema  # once a document is read: a command that reads none starts without it

    version = schema.rsplit("/", 1)[-1]
    text = (
        resources.files("events_manifest._backends.dynamodb")
        .joinpath("schemas", f"amazon_dynamodb_config-{version}.json")
        .read_text()
    )
    return jsonschema.Draft4Validator(json.loads(text))


def _describe(error: jsonschema.ValidationError) -> str:
    """One problem as `field [data.x] ...`, showing a value only when it is not a secret."""
    path = ".".join(["data", *(str(p) for p in error.absolute_path)])
    instance: Any = error.instance
    expected: Any = error.validator_value
    schema: Any = error.schema
    if error.validator == "required":
        missing = [k for k in expected if k not in instance]
        return "; ".join(f"field [{path}.{k}] is missing" for k in missing)
    if error.validator == "additionalProperties":
        allowed = schema.get("properties", {})
        extra = sorted(k for k in instance if k not in allowed)
        return "; ".join(f"field [{path}.{k}] is not allowed" for k in extra)
    if error.validator == "type":
        expected = " or ".join(expected) if isinstance(expected, list) else expected
        return f"field [{path}] must be {expected}, not {_json_type(instance)}"
    shown = "***" if "secret" in path.lower() else json.dumps(instance)
    if error.validator == "enum":
        return f"field [{path}] must be one of {', '.join(expected)}, not {shown}"
    if error.validator == "pattern" and path.endswith(".id"):
        return f"field [{path}] must be a UUID, not {shown}"
    return f"field [{path}] {shown} fails {error.validator} {expected}"


def _json_type(value: object) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number"
    )
