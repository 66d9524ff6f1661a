"""A document the user gives in one value: JSON itself, a file's path, or base64 of either (the
DynamoDB config, the Iglu resolver config); base64 read as leniently as the reference reads it."""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from events_manifest.errors import ManifestConfigError

_BASE64_SPACE = re.compile(r"\s+")


def decode_base64(text: str, what: str) -> bytes:
    """Base64 read leniently, as the reference's Apache Commons Codec reads it: the standard or the
    URL-safe alphabet, padding optional, whitespace and line breaks ignored. `what` names the
    input in the error."""
    compact = _BASE64_SPACE.sub("", text).rstrip("=").translate(str.maketrans("-_", "+/"))
    try:
        return base64.b64decode(compact + "=" * (-len(compact) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise ManifestConfigError(
            f"{what} is not valid base64 (standard or URL-safe alphabet): make it with `base64 -w0 file.json`"
        ) from None


def load_document(source: Mapping[str, Any] | str | bytes | os.PathLike[str], what: str = "config") -> Any:
    """A JSON document given as itself, parsed or as text, as a file path, or as base64 JSON;
    `what` names it in errors."""
    if isinstance(source, Mapping):
        return source
    if isinstance(source, os.PathLike):
        return _read_file(Path(source))
    text = source.decode("utf-8", "replace") if isinstance(source, bytes) else source
    stripped = text.strip()
    if stripped.startswith("{"):
        return _json(stripped, f"{what} text")
    if len(stripped) < 4096 and "\n" not in stripped and os.path.isfile(stripped):
        return _read_file(Path(stripped))
    try:
        decoded = decode_base64(stripped, what).decode("utf-8")
    except (ManifestConfigError, UnicodeDecodeError):
        raise ManifestConfigError(
            f"the {what} is neither JSON, an existing file nor valid base64: pass the JSON, its path, "
            "or `base64 -w0 config.json`"
        ) from None
    return _json(decoded, f"base64 {what}")


def _read_file(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ManifestConfigError(f"cannot read config file [{path}]: {e.strerror}") from None
    return _json(text, f"config file [{path}]")


def _json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ManifestConfigError(f"{what} is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
