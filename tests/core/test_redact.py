"""Secrets hidden in what the library prints: the values of keys that name one, at any depth, and
the user information of every URL in a text; long values cut."""

from __future__ import annotations

from events_manifest import _redact as redact


def test_a_url_s_password_or_key_is_hidden_and_its_user_kept() -> None:
    assert redact.text("dynamodb://t?endpoint=https://alice:s3cret@host:8000/x") == (
        "dynamodb://t?endpoint=https://alice:***@host:8000/x"
    )
    assert redact.text("https://0123abcd@o1.ingest.sentry.io/42") == "https://***@o1.ingest.sentry.io/42"
    assert redact.text("no url here: user@host") == "no url here: user@host"


def test_the_values_of_secret_keys_are_hidden_at_any_depth() -> None:
    config = {
        "aws": {"accessKeyId": "AKIA", "secretAccessKey": "shh"},
        "auth": {"type": "basic"},
        "repositories": [{"connection": {"http": {"uri": "https://u:p@repo", "apikey": "k"}}}],
        "token": 1,
        "count": 2,
    }
    assert redact.value(config) == {
        "aws": {"accessKeyId": "AKIA", "secretAccessKey": "***"},
        "auth": "***",
        "repositories": [{"connection": {"http": {"uri": "https://u:***@repo", "apikey": "***"}}}],
        "token": "***",
        "count": 2,
    }
    assert config["aws"] == {"accessKeyId": "AKIA", "secretAccessKey": "shh"}, "the value itself is left as it was"
    assert all(map(redact.secret_key, ["password", "PASSWD", "private_key", "Authorization", "dsn", "basic_auth"]))
    assert not any(map(redact.secret_key, ["author", "name", "region", 7]))


def test_a_shown_value_is_compact_redacted_json_cut_to_its_limit() -> None:
    assert redact.shown({"password": "x", "n": [1, "é"]}) == '{"password":"***","n":[1,"é"]}'
    assert redact.shown("x" * 400, limit=20) == '"' + "x" * 16 + "..."
    assert redact.brief("https://a:b@h/" + "y" * 10) == "https://a:***@h/yyyyyyyyyy"
    assert redact.brief("z" * 50, limit=10) == "zzzzzzz..."
    assert redact.brief({"apikey": "k"}) == '{"apikey":"***"}'
