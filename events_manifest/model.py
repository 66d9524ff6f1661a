"""Values of the manifest contract: normalised put requests and stored entries (docs/manifest.md)."""

from __future__ import annotations

import calendar
import operator
import re
import reprlib
import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

import attrs

from events_manifest.errors import ManifestConfigError

_TABLE_NAME = re.compile(r"[a-zA-Z0-9_.-]{3,255}")

__all__ = [
    "DEFAULT_TTL",
    "ManifestEntry",
    "PutBatch",
    "accepts",
    "normalize_event_id",
]

DEFAULT_TTL = timedelta(days=180)
"""How long an entry protects against duplicates: 180 days, as in the reference system."""

MAX_FINGERPRINT_BYTES = 1024
"""DynamoDB's limit on a sort key; enforced everywhere so that every backend accepts the same input."""

EventId = uuid.UUID | str
PutItem = tuple[EventId, str, datetime]

UUID_TEXT = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)
"""UUID text in the 8-4-4-4-12 form, any case: what an event id may be."""
_FIRST, _SECOND, _THIRD = operator.itemgetter(0), operator.itemgetter(1), operator.itemgetter(2)
_KEY = operator.itemgetter(0, 1)


@attrs.frozen
class ManifestEntry:
    """What the manifest holds for one (event id, fingerprint) pair."""

    event_id: str
    fingerprint: str
    etl_seconds: int
    ttl_seconds: int

    @property
    def etl_time(self) -> datetime:
        return from_epoch_seconds(self.etl_seconds)


def entries_by_id(event_ids: list[str], entries: Iterable[ManifestEntry]) -> dict[str, list[ManifestEntry]]:
    """Entries grouped under each of `event_ids` (an id with none gets an empty list)."""
    found: dict[str, list[ManifestEntry]] = {event_id: [] for event_id in event_ids}
    for entry in entries:
        found[entry.event_id].append(entry)
    return found


def ttl_seconds(ttl: timedelta) -> int:
    """Validate a ttl option and return it in whole seconds."""
    if not isinstance(ttl, timedelta) or ttl.total_seconds() < 1:
        raise ManifestConfigError(f"ttl must be a timedelta of at least one second, got {ttl!r}")
    return int(ttl.total_seconds())


def to_epoch_seconds(etl_time: datetime) -> int:
    """Whole epoch seconds of an etl time, sub-second part truncated; a naive datetime is UTC."""
    if not isinstance(etl_time, datetime):
        raise ManifestConfigError(
            f"etl_time must be a datetime (naive means UTC), got {type(etl_time).__name__} {echo(etl_time)}"
        )
    return calendar.timegm(etl_time.utctimetuple())


def parse_timestamp(text: str) -> datetime:
    """A timestamp given on a command line, as `2017-01-26 00:01:25.292` or ISO 8601; naive means UTC."""
    try:
        return datetime.fromisoformat(text.strip())
    except ValueError:
        raise ManifestConfigError(
            f"timestamp [{text}] is not of the form 2017-01-26 00:01:25.292 (UTC) or ISO 8601"
        ) from None


def from_epoch_seconds(seconds: int) -> datetime:
    """The naive UTC datetime of whole epoch seconds."""
    return datetime(1970, 1, 1) + timedelta(seconds=seconds)


_ECHO = reprlib.Repr()
_ECHO.maxstring = _ECHO.maxother = 80
echo = _ECHO.repr
"""A value as an error message shows it: its repr, cut to about 80 characters (an id or item of
megabytes is not repeated whole)."""


def normalize_event_id(event_id: EventId) -> str:
    """The canonical lowercase text of an event id, or a ManifestConfigError naming the value."""
    if isinstance(event_id, uuid.UUID):
        return str(event_id)
    if isinstance(event_id, str) and UUID_TEXT.fullmatch(event_id):
        return event_id.lower()
    raise ManifestConfigError(
        f"event_id [{echo(event_id)}] is not a UUID: "
        "pass a uuid.UUID or its canonical text (8-4-4-4-12 hexadecimal digits)"
    )


def check_fingerprint(fingerprint: str) -> str:
    if not isinstance(fingerprint, str) or not fingerprint:
        raise ManifestConfigError(
            f"fingerprint [{echo(fingerprint)}] must be a non-empty string "
            "(replace a missing fingerprint with a random UUID before the put)"
        )
    try:
        encoded = fingerprint.encode()
    except UnicodeEncodeError as e:
        raise ManifestConfigError(
            f"fingerprint [{echo(fingerprint)}] holds half a UTF-16 surrogate pair at character {e.start}, which no "
            "backend can store: make it of Unicode text (a hash's hex digits)"
        ) from None
    if len(encoded) > MAX_FINGERPRINT_BYTES:
        raise ManifestConfigError(
            f"fingerprint [{fingerprint[:40]}...] is longer than {MAX_FINGERPRINT_BYTES} bytes: hash it first"
        )
    return fingerprint


def check_table_name(name: str, where: str = "DynamoDB table name") -> str:
    """DynamoDB's rule for table names: 3 to 255 of a-z A-Z 0-9 _ . -"""
    if not isinstance(name, str) or not _TABLE_NAME.fullmatch(name):
        raise ManifestConfigError(
            f"{where}: [{name}] is not a valid DynamoDB table name (3 to 255 of a-z A-Z 0-9 _ . -)"
        )
    return name


def unicode_text(text: str) -> bool:
    """Whether `text` is Unicode text: no half of a UTF-16 surrogate pair, which a Python string may
    hold and no UTF-8 form can (checked at C speed)."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


_HEX_AS_X = bytes.maketrans(b"0123456789abcdef", b"x" * 16)
_CANONICAL = b"xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx\n"


def all_canonical(event_ids: list[str]) -> bool:
    """Whether every id is canonical lowercase UUID text, checked on the joined bytes at C speed."""
    try:
        joined = "\n".join(event_ids).encode("ascii")
    except (TypeError, UnicodeEncodeError):
        return False
    return joined.translate(_HEX_AS_X) + b"\n" == _CANONICAL * len(event_ids)


@attrs.frozen
class PutBatch:
    """A validated batch of puts: (event id, fingerprint) keys and etl seconds, in input order.

    The one input every backend works from.
    """

    keys: Sequence[tuple[str, str]]
    etl_seconds: Sequence[int]

    def __len__(self) -> int:
        return len(self.keys)

    @classmethod
    def of(cls, items: Iterable[PutItem]) -> PutBatch:
        """Validate and normalise (event id, fingerprint, etl time) triples, keeping their order.

        Whole columns are checked at C speed first; only a batch with an unusual value (an
        upper-case id, a `uuid.UUID`, a bad item) goes item by item, which names the culprit.
        """
        rows = items if isinstance(items, list) else list(items)
        try:
            if rows and set(map(len, rows)) != {3}:
                raise TypeError
            keys = list(map(_KEY, rows))
            times = list(map(_THIRD, rows))
            seconds = {t: to_epoch_seconds(t) for t in set(times)}
        except (TypeError, ManifestConfigError):
            return cls._one_by_one(rows)
        fingerprints = list(map(_SECOND, keys))
        if not (
            all_canonical(list(map(_FIRST, keys)))
            and set(map(type, fingerprints)) == {str}
            and all(fingerprints)
            and max(map(len, fingerprints)) <= MAX_FINGERPRINT_BYTES // 4
            and unicode_text("".join(fingerprints))
        ):
            return cls._one_by_one(rows)
        return cls(keys, list(map(seconds.__getitem__, times)))

    @classmethod
    def _one_by_one(cls, rows: Iterable[Any]) -> PutBatch:
        keys: list[tuple[str, str]] = []
        etls: list[int] = []
        for item in rows:
            try:
                event_id, fingerprint, etl_time = item
            except (TypeError, ValueError):
                raise ManifestConfigError(
                    f"each item must be an (event_id, fingerprint, etl_time) triple, got {echo(item)}"
                ) from None
            keys.append((normalize_event_id(event_id), check_fingerprint(fingerprint)))
            etls.append(to_epoch_seconds(etl_time))
        return cls(keys, etls)

    @property
    def event_ids(self) -> list[str]:
        return list(map(_FIRST, self.keys))

    @property
    def fingerprints(self) -> list[str]:
        return list(map(_SECOND, self.keys))

    def rows(self) -> Iterable[tuple[str, str, int]]:
        return (
            (event_id, fingerprint, etl)
            for (event_id, fingerprint), etl in zip(self.keys, self.etl_seconds, strict=True)
        )

    def pair_groups(self) -> list[list[int]]:
        """Positions grouped by (event id, fingerprint), in input order within each group.

        Different pairs are independent, so groups may run concurrently while the puts of one
        pair keep their order: the results are those of putting the items one after another.
        """
        groups: dict[tuple[str, str], list[int]] = {}
        for position, key in enumerate(self.keys):
            groups.setdefault(key, []).append(position)
        return list(groups.values())


def accepts(stored: tuple[int, int] | None, etl_seconds: int) -> bool:
    """The contract in one line: accept when absent, same etl (a rerun), or expired relative to this etl."""
    return stored is None or stored[0] == etl_seconds or stored[1] <= etl_seconds
