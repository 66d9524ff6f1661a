"""Secrets kept out of everything the library prints: a value echoed in an error message is shown
redacted, as the AWS SDKs and the Iglu client show theirs. Redacted are the values of keys that
name a secret (`apikey`, `secretAccessKey`, `password`, `token`, a Sentry `dsn`, ...) and the
user information of a URL (`https://user:***@host/`).
"""

from __future__ import annotations

import json
import re
from typing import Any

HIDDEN = "***"
_SECRET_KEY = re.compile(
    r"secret|passw(or)?d|passphrase|api_?key|token|credential|authori[sz]ation|private_?key|signature|dsn|auth$",
    re.IGNORECASE,
)
_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<user>[^/\s@:\"'\[\]]*)(?::[^/\s@\"']*)?@")


def secret_key(key: object) -> bool:
    """Whether a key names a secret (its value is never shown)."""
    return isinstance(key, str) and _SECRET_KEY.search(key) is not None


def text(value: str) -> str:
    """`value` with the user information of every URL in it hidden: `https://user:***@host`, or
    `https://***@host` when only a user (a key, as in a Sentry DSN) is given."""

    def hide(match: re.Match[str]) -> str:
        user = match.group("user")
        has_password = ":" in match.group(0)[len(match.group("scheme")) + len(user) :]
        return f"{match.group('scheme')}{user}:{HIDDEN}@" if has_password else f"{match.group('scheme')}{HIDDEN}@"

    return _USERINFO.sub(hide, value)


def value(found: Any) -> Any:
    """A JSON-like value with the values of secret keys hidden and URLs' user information hidden,
    at any depth; the value itself is left as it was."""
    if isinstance(found, dict):
        return {key: HIDDEN if secret_key(key) else value(item) for key, item in found.items()}
    if isinstance(found, list | tuple):
        return [value(item) for item in found]
    if isinstance(found, str):
        return text(found)
    return found


def shown(found: Any, limit: int = 300) -> str:
    """A value as an error message shows it: redacted (`value`), compact JSON, at most `limit`
    characters."""
    try:
        rendered = json.dumps(value(found), ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError, RecursionError):
        rendered = text(str(found))
    return rendered if len(rendered) <= limit else rendered[: limit - 3] + "..."


def brief(found: Any, limit: int = 300) -> str:
    """`shown`, but a string as its redacted text, without quotes."""
    if isinstance(found, str):
        redacted = text(found)
        return redacted if len(redacted) <= limit else redacted[: limit - 3] + "..."
    return shown(found, limit)
