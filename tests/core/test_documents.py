"""A value given as base64 or a file: the one base64 reading, strict as Java's decoder (the
transformer's command line) or lenient as Commons Codec (the manifest's configs); a JSON document
given as itself, a file's path or base64."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from events_manifest._documents import base64_text, load_document
from events_manifest.errors import ManifestConfigError

DOCUMENT: dict[str, object] = {"schema": "iglu:com.acme/x/jsonschema/1-0-0", "data": {"n": "é?>"}}
TEXT = json.dumps(DOCUMENT)


def test_strict_base64_takes_the_standard_alphabet_with_padding_optional() -> None:
    encoded = base64.b64encode(TEXT.encode()).decode()
    assert base64_text(encoded, lenient=False) == TEXT
    assert base64_text(encoded.rstrip("="), lenient=False) == TEXT
    assert base64_text(base64.urlsafe_b64encode(TEXT.encode()).decode(), lenient=False) is None
    assert base64_text(encoded[:20] + "\n" + encoded[20:], lenient=False) is None
    assert base64_text("", lenient=False) is None
    assert base64_text(base64.b64encode(b"\xff\xfe").decode(), lenient=False) is None, "not UTF-8"


def test_lenient_base64_also_takes_the_url_safe_alphabet_and_line_breaks() -> None:
    url_safe = base64.urlsafe_b64encode(TEXT.encode()).decode()
    assert "-" in url_safe or "_" in url_safe
    assert base64_text(url_safe, lenient=True) == TEXT
    assert base64_text(" \n".join([url_safe[:30], url_safe[30:]]), lenient=True) == TEXT
    assert base64_text("not base64!", lenient=True) is None


def test_a_document_as_itself_a_file_or_base64_is_the_same(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(TEXT)
    forms: list[dict[str, object] | str | bytes | Path] = [
        DOCUMENT,
        TEXT,
        f"  {TEXT}\n",
        str(path),
        path,
        base64.b64encode(TEXT.encode()).decode(),
        TEXT.encode(),
    ]
    assert all(load_document(form) == DOCUMENT for form in forms)


def test_what_is_no_document_is_named_never_shown(tmp_path: Path) -> None:
    with pytest.raises(ManifestConfigError, match="the resolver config is neither JSON, an existing file nor valid"):
        load_document("secret-key-123!", "resolver config")
    with pytest.raises(ManifestConfigError, match=r"base64 config is not valid JSON: .* line 1 column 1"):
        load_document(base64.b64encode(b"not json").decode())
    with pytest.raises(ManifestConfigError, match=r"cannot read config file \[.*missing.json\]"):
        load_document(tmp_path / "missing.json")
