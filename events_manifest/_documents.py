"""A value the user gives as base64 or a file: the one base64 reading (`base64_text`, strict or
lenient as each reference reads it), and a JSON document given as itself, a file's path or base64
(the DynamoDB config, the Iglu resolver config)."""

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

_SPACE = re.compile(r"\s+")
_URL_SAFE = str.maketrans("-_", "+/")
_STANDARD = re.compile(r"[A-Za-z0-9+/]*={0,2}")


def base64_text(value: str, *, lenient: bool) -> str | None:
    """The UTF-8 text `value` is base64 of, or None. Strict, as Java's decoder reads it (the
    reference transformer's command line): the standard alphabet, padding optional. `lenient`, as
    Apache Commons Codec reads it (the manifest's configs): the URL-safe alphabet too, whitespace
    and line breaks ignored."""
    if lenient:
        value = _SPACE.sub("", value).translate(_URL_SAFE)
    elif not (value and _STANDARD.fullmatch(value)):
        return None
    compact = value.rstrip("=")
    try:
        return base64.b64decode(compact + "=" * (-len(compact) % 4), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):  # a UnicodeDecodeError is a ValueError
        return None


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
    decoded = base64_text(stripped, lenient=True)
    if decoded is None:
        raise ManifestConfigError(
            f"the {what} is neither JSON, an existing file nor valid base64: pass the JSON, its path, "
            "or `base64 -w0 config.json`"
        )
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
