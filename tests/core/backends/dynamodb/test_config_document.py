"""Self-describing configs (docs/configuration.md): every accepted form, every rejected one, no secret in sight."""

from __future__ import annotations

import base64
import copy
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from events_manifest import DynamoDbConfig, ManifestConfigError, parse_config
from events_manifest._backends.dynamodb.config_document import SUPPORTED_SCHEMAS

SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"
V2, V1 = SUPPORTED_SCHEMAS
CONFIG_ID = "56799a26-980c-4148-8bd9-c021b988c669"
V2_CONFIG: dict[str, Any] = {
    "schema": V2,
    "data": {
        "name": "AWS DynamoDB duplicates storage",
        "auth": {"accessKeyId": "AKIAEXAMPLE", "secretAccessKey": SECRET},
        "awsRegion": "eu-west-1",
        "dynamodbTable": "snowplow-manifest",
        "id": CONFIG_ID,
        "purpose": "EVENTS_MANIFEST",
    },
}
V1_CONFIG: dict[str, Any] = {
    "schema": V1,
    "data": {
        "name": "legacy",
        "accessKeyId": "AKIAEXAMPLE",
        "secretAccessKey": SECRET,
        "awsRegion": "us-east-1",
        "dynamodbTable": "dups",
        "purpose": "DUPLICATE_TRACKING",
    },
}


def with_data(config: dict[str, Any], **changes: Any) -> dict[str, Any]:
    changed = copy.deepcopy(config)
    changed["data"].update(changes)
    return changed


def without(config: dict[str, Any], field: str) -> dict[str, Any]:
    changed = copy.deepcopy(config)
    del changed["data"][field]
    return changed


def rejected(source: Any) -> str:
    with pytest.raises(ManifestConfigError) as raised:
        parse_config(source)
    message = str(raised.value)
    assert SECRET not in message
    return message


def test_v2_config_is_parsed() -> None:
    config = parse_config(V2_CONFIG)
    assert config == DynamoDbConfig(
        schema=V2,
        name="AWS DynamoDB duplicates storage",
        credentials=config.credentials,
        region="eu-west-1",
        table="snowplow-manifest",
        purpose="EVENTS_MANIFEST",
        id=uuid.UUID(CONFIG_ID),
    )
    assert config.credentials is not None
    assert (config.credentials.access_key_id, config.credentials.secret_access_key) == ("AKIAEXAMPLE", SECRET)
    assert config.version == "2-0-0"


def test_v2_null_auth_means_the_default_chain() -> None:
    assert parse_config(with_data(V2_CONFIG, auth=None)).credentials is None


def test_v1_config_is_parsed() -> None:
    config = parse_config(V1_CONFIG)
    assert (config.version, config.table, config.region, config.id) == ("1-0-0", "dups", "us-east-1", None)
    assert config.credentials is not None and config.credentials.secret_access_key == SECRET


def test_every_source_form_gives_the_same_config(tmp_path: Path) -> None:
    text = json.dumps(V2_CONFIG, indent=2)
    path = tmp_path / "manifest.json"
    path.write_text(text)
    expected = parse_config(V2_CONFIG)
    encoded = base64.b64encode(text.encode()).decode()
    for source in (text, text.encode(), encoded, str(path), path):
        assert parse_config(source) == expected, type(source)


@pytest.mark.parametrize("field", list(V2_CONFIG["data"]))
def test_v2_each_missing_field_is_named(field: str) -> None:
    message = rejected(without(V2_CONFIG, field))
    assert message == f"invalid config for {V2}: field [data.{field}] is missing"


@pytest.mark.parametrize("field", list(V1_CONFIG["data"]))
def test_v1_each_missing_field_is_named(field: str) -> None:
    assert rejected(without(V1_CONFIG, field)) == f"invalid config for {V1}: field [data.{field}] is missing"


def test_extra_properties_are_refused() -> None:
    assert "field [data.endpoint] is not allowed" in rejected(with_data(V2_CONFIG, endpoint="x"))
    auth = {"accessKeyId": "A", "secretAccessKey": SECRET, "sessionToken": "t"}
    assert "field [data.auth.sessionToken] is not allowed" in rejected(with_data(V2_CONFIG, auth=auth))
    assert "field [data.id] is not allowed" in rejected(with_data(V1_CONFIG, id=CONFIG_ID))


def test_wrong_purpose_names_the_value() -> None:
    message = rejected(with_data(V2_CONFIG, purpose="DUPLICATE_TRACKING"))
    assert 'field [data.purpose] must be one of EVENTS_MANIFEST, not "DUPLICATE_TRACKING"' in message
    assert V2 in message


def test_wrong_types_and_ids() -> None:
    assert 'field [data.id] must be a UUID, not "42"' in rejected(with_data(V2_CONFIG, id="42"))
    assert "field [data.auth] must be object or null, not string" in rejected(with_data(V2_CONFIG, auth="x"))
    message = rejected(with_data(V2_CONFIG, auth={"accessKeyId": "A", "secretAccessKey": 12345}))
    assert "field [data.auth.secretAccessKey] must be string, not number" in message
    assert "12345" not in message


def test_table_and_region_values_are_checked() -> None:
    assert "[../etc] is not a valid DynamoDB table name" in rejected(with_data(V2_CONFIG, dynamodbTable="../etc"))
    assert "[Europe] is not an AWS region name" in rejected(with_data(V2_CONFIG, awsRegion="Europe"))


def test_unknown_schema_lists_the_supported_ones() -> None:
    config = dict(V2_CONFIG, schema="iglu:com.acme/amazon_dynamodb_config/jsonschema/3-0-0")
    message = rejected(config)
    assert message.startswith("unsupported config schema [iglu:com.acme/amazon_dynamodb_config/jsonschema/3-0-0]")
    assert V1.replace("1-0-0", "1-0-*") in message and V2.replace("2-0-0", "2-0-*") in message


@pytest.mark.parametrize("version", ["1-0-1", "1-0-12", "2-0-3", "1-1-0", "2-1-0", "3-0-0", "2-0-01"])
def test_later_additions_are_read_as_their_model(version: str) -> None:
    config = copy.deepcopy(V2_CONFIG if version.startswith("2") else V1_CONFIG)
    config["schema"] = config["schema"][:-5] + version
    if version in ("1-0-1", "1-0-12", "2-0-3"):
        assert parse_config(config).version == version[0] + "-0-0"
    else:
        with pytest.raises(ManifestConfigError, match=r"unsupported config schema .* supported are .*2-0-\*"):
            parse_config(config)


@pytest.mark.parametrize(
    "encode",
    [
        lambda raw: base64.b64encode(raw).decode(),
        lambda raw: base64.urlsafe_b64encode(raw).decode(),
        lambda raw: base64.urlsafe_b64encode(raw).decode().rstrip("="),
        lambda raw: "\n".join(base64.b64encode(raw).decode()[i : i + 76] for i in range(0, 800, 76)) + "\r\n",
    ],
    ids=["standard", "url-safe", "unpadded", "line breaks"],
)
def test_base64_is_read_leniently(encode: Any) -> None:
    config = with_data(V2_CONFIG, name="dups ÿ?~")
    raw = json.dumps(config).encode()
    standard = base64.b64encode(raw).decode()
    assert "+" in standard and standard.endswith("="), "the alphabets and the padding differ"
    assert parse_config(encode(raw)) == parse_config(config)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("not base64 at all!", "neither JSON, an existing file nor valid base64"),
        (base64.b64encode(b"no json here").decode(), "base64 config is not valid JSON"),
        ('{"schema": ', "config text is not valid JSON"),
        ({"schema": V2}, "with exactly those two fields"),
        ([1, 2], "neither JSON"),
    ],
)
def test_unreadable_configs(source: Any, message: str) -> None:
    if isinstance(source, list):
        source = json.dumps(source)
    assert message in rejected(source)


def test_non_json_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(f"secretAccessKey = {SECRET}\n")
    message = rejected(path)
    assert f"config file [{path}] is not valid JSON" in message


def test_secret_stays_out_of_repr_and_str() -> None:
    config = parse_config(V2_CONFIG)
    for text in (repr(config), str(config), repr(config.credentials), str(config.credentials)):
        assert SECRET not in text
        assert "***" in text
