"""How the JVM renders what the transformer writes: Java's `Double.toString` and `Instant.toString`,
`String.hashCode`, the order in which a Scala 2.12 immutable `HashMap` gives its keys (the
order of a wide-row JSON line's keys), and Scala's MurmurHash3 of products, sequences and sets."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import NamedTuple

NANOS = 1_000_000_000
_DAYS_400_YEARS = 146_097


def double_to_string(value: float) -> str | None:
    """Java's `Double.toString` (shortest round-trip digits, as JDK 19 and later); None for NaN and
    the infinities, which JSON cannot hold."""
    if math.isnan(value) or math.isinf(value):
        return None
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign, digits, exponent = Decimal(repr(value)).as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits)).rstrip("0") or "0"
    point = len(digits) + exponent  # the decimal point's place after the first digit of `digits`
    minus = "-" if sign else ""
    if 1e-3 <= abs(value) < 1e7:
        if point <= 0:
            return f"{minus}0.{'0' * -point}{text}"
        whole, fraction = text[:point].ljust(point, "0"), text[point:]
        return f"{minus}{whole}.{fraction or '0'}"
    return f"{minus}{text[0]}.{text[1:] or '0'}E{point - 1}"


def civil(days: int) -> tuple[int, int, int]:
    """The proleptic Gregorian (year, month, day) of a day count from 1970-01-01, for any year."""
    days += 719_468
    era = days // _DAYS_400_YEARS
    day_of_era = days - era * _DAYS_400_YEARS
    year_of_era = (day_of_era - day_of_era // 1460 + day_of_era // 36524 - day_of_era // 146096) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    shifted_month = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * shifted_month + 2) // 5 + 1
    month = shifted_month + 3 if shifted_month < 10 else shifted_month - 9
    return year_of_era + era * 400 + (month <= 2), month, day


def days_from_civil(year: int, month: int, day: int) -> int:
    """The day count from 1970-01-01 of a proleptic Gregorian date, for any year."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * _DAYS_400_YEARS + day_of_era - 719_468


class Moment(NamedTuple):
    """A moment's UTC calendar fields, any year; `fraction` in nanoseconds."""

    year: int
    month: int
    day: int
    hour: int
    minute: int
    second: int
    fraction: int


def moment(nanos: int) -> Moment:
    """The UTC calendar fields of a moment in nanoseconds since the epoch."""
    seconds, fraction = divmod(nanos, NANOS)
    days, second_of_day = divmod(seconds, 86_400)
    hour, rest = divmod(second_of_day, 3600)
    return Moment(*civil(days), hour, rest // 60, rest % 60, fraction)


def instant_to_string(nanos: int) -> str:
    """Java's `Instant.toString` of a moment in nanoseconds since the epoch: seconds always shown,
    a fraction of 3, 6 or 9 digits (the shortest exact one) or none, `+` before years past 9999."""
    year, month, day, hour, minute, second, fraction = moment(nanos)
    if year > 9999:
        year_text = f"+{year}"
    elif year < 0:
        year_text = f"-{-year:04d}"
    else:
        year_text = f"{year:04d}"
    text = f"{year_text}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}"
    if fraction:
        digits = f"{fraction:09d}"
        text += "." + (digits[:3] if fraction % 1_000_000 == 0 else digits[:6] if fraction % 1000 == 0 else digits)
    return text + "Z"


def date_time_millis(nanos: int) -> str:
    """`yyyy-MM-dd HH:mm:ss.SSS` as Java's formatter writes it (UTC, truncated to milliseconds;
    `yyyy` the year of the era, so year 0 is 0001)."""
    year, month, day, hour, minute, second, fraction = moment(nanos)
    era_year = year if year > 0 else 1 - year
    year_text = f"{era_year:04d}" if era_year <= 9999 else f"+{era_year}"
    return f"{year_text}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{second:02d}.{fraction // 1_000_000:03d}"


def java_double(value: float) -> str:
    """Java's `Double.toString`, NaN and the infinities included."""
    text = double_to_string(value)
    if text is not None:
        return text
    return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")


def string_hash(text: str) -> int:
    """Java's `String.hashCode` (over UTF-16 code units), as an unsigned 32-bit number."""
    h = 0
    units = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h


def _improved(h: int) -> int:
    """Scala 2.12's `HashMap.improve` of a hash code."""
    h = (h + ~(h << 9)) & 0xFFFFFFFF
    h ^= h >> 14
    h = (h + (h << 4)) & 0xFFFFFFFF
    return h ^ (h >> 10)


@functools.lru_cache(maxsize=65536)
def trie_path(key: str) -> tuple[int, ...]:
    """A key's place in a Scala 2.12 `HashMap`: the 5-bit groups of its improved hash."""
    h = _improved(string_hash(key))
    return tuple((h >> shift) & 31 for shift in range(0, 32, 5))


def hash_map_order(keys: Iterable[str]) -> list[str]:
    """The keys in the order a Scala 2.12 immutable `HashMap` iterates them: by the 5-bit groups of
    their improved hash, least significant first (the hash trie's levels)."""
    return sorted(keys, key=trie_path)


# Scala's MurmurHash3 of products, sequences and sets (`scala.util.hashing.MurmurHash3`)

_MASK = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK


def _mix_k(k: int) -> int:
    return (_rotl((k * 0xCC9E2D51) & _MASK, 15) * 0x1B873593) & _MASK


def _mix(h: int, d: int) -> int:
    return (_rotl(h ^ _mix_k(d), 13) * 5 + 0xE6546B64) & _MASK


def _mix_last(h: int, d: int) -> int:
    return h ^ _mix_k(d)


def _finalize(h: int, length: int) -> int:
    h ^= length
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _MASK
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _MASK
    return h ^ (h >> 16)


def product_hash(elements: Sequence[int]) -> int:
    """A case class's hash from its elements' (`productHash`, the seed of Scala 2.12's products)."""
    h = 0xCAFEBABE
    for element in elements:
        h = _mix(h, element)
    return _finalize(h, len(elements))


def ordered_hash(elements: Sequence[int]) -> int:
    """A `Seq`'s hash from its elements' (`seqHash`)."""
    h = string_hash("Seq")
    for element in elements:
        h = _mix(h, element)
    return _finalize(h, len(elements))


def unordered_hash(elements: Sequence[int]) -> int:
    """A `Set`'s hash from its elements' (`setHash`)."""
    total, xor, product = 0, 0, 1
    for element in elements:
        total = (total + element) & _MASK
        xor ^= element
        if element:
            product = (product * element) & _MASK
    h = _mix(_mix(string_hash("Set"), total), xor)
    return _finalize(_mix_last(h, product), len(elements))


def signed(h: int) -> int:
    """An unsigned 32-bit hash as the JVM's signed `int`."""
    return h - (1 << 32) if h & 0x80000000 else h
