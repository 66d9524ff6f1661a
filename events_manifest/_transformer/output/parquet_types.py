"""Wide-row Parquet columns from JSON Schemas, as the reference's schema library types them: a
schema prepared for storage (`for_storage`), typed (`field_of`), field names normalised, a model's
versions folded into one column with breaking versions recovered apart (`fold`), and the hash that
names a recovered column (`scala_hash`).

Plain Python over JSON Schemas (dicts); the types are values (`Field`, `Struct`, `Array`,
`Decimal`, and the primitives), rendered as the reference renders them in its error messages.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal as Number
from typing import Any, TypeGuard

import attrs

from events_manifest._transformer.decode import jvm
from events_manifest._transformer.decode.jvm import string_hash
from events_manifest._transformer.output.schemas import schema_types


@attrs.frozen
class Primitive:
    """A type without parameters: `String`, `Boolean`, `Integer` (32 bits), `Long`, `Double`,
    `Date`, `Timestamp`, or `Json` (the value's compact JSON text)."""

    name: str

    def __str__(self) -> str:
        return self.name


STRING, BOOLEAN, INTEGER, LONG, DOUBLE = (Primitive(n) for n in ("String", "Boolean", "Integer", "Long", "Double"))
DATE, TIMESTAMP, JSON = (Primitive(n) for n in ("Date", "Timestamp", "Json"))
DIGITS = (9, 18, 38)
"""Decimal precisions: 32-bit, 64-bit and 16-byte unscaled values."""


@attrs.frozen
class Decimal:
    precision: int
    scale: int

    def __str__(self) -> str:
        return f"Decimal(Digits{self.precision},{self.scale})"


@attrs.frozen
class Array:
    element: Type
    element_nullable: bool

    def __str__(self) -> str:
        return f"Array({self.element},{'Nullable' if self.element_nullable else 'Required'})"


@attrs.frozen
class Struct:
    fields: tuple[Field, ...]

    def __str__(self) -> str:
        return f"Struct(NonEmptyVector({', '.join(map(str, self.fields))}))"


Type = Primitive | Decimal | Array | Struct


@attrs.frozen
class Field:
    """A column or a struct's field: its normalised name, type, nullability, and the original keys
    its values are read from."""

    name: str
    type: Type
    nullable: bool
    accessors: frozenset[str]

    def __str__(self) -> str:
        nullability = "Nullable" if self.nullable else "Required"
        return f"Field({self.name},{self.type},{nullability},Set({', '.join(sorted(self.accessors))}))"


# names


_RUN_THEN_WORD = re.compile(r"([A-Z]+)([A-Z][a-z])")
_LOWER_THEN_UPPER = re.compile(r"([a-z0-9])([A-Z])")
_NOT_WORD = re.compile(r"[^A-Za-z0-9_]")


def normalise(name: str) -> str:
    """A field or column name as Parquet columns are named: camel case split, `-` and any other
    character but ASCII letters, digits and `_` as `_`, lower case, `_` before a leading digit."""
    text = _LOWER_THEN_UPPER.sub(r"\1_\2", _RUN_THEN_WORD.sub(r"\1_\2", name)).replace("-", "_").lower()
    text = _NOT_WORD.sub("_", text)
    return "_" + text if text[:1].isdigit() and text[:1].isascii() else text


# preparing a schema for storage


def _with_types(schema: dict[str, Any], kinds: set[str] | None) -> dict[str, Any]:
    schema = {k: v for k, v in schema.items() if k != "type"}
    if kinds is not None:
        schema["type"] = sorted(kinds)[0] if len(kinds) == 1 else sorted(kinds)
    return schema


def _narrow(parent: Mapping[str, Any], alternative: Mapping[str, Any]) -> dict[str, Any]:
    """An alternative of a `oneOf`/`anyOf` with what its parent says too: both must hold."""
    merged = {**parent, **alternative}
    mine, theirs = schema_types(parent), schema_types(alternative)
    merged = _with_types(merged, mine & theirs if mine is not None and theirs is not None else mine or theirs)
    properties = dict(parent.get("properties") or {})
    for key, schema in (alternative.get("properties") or {}).items():
        properties[key] = _narrow(properties[key], schema) if key in properties else schema
    if properties:
        merged["properties"] = properties
    required = [*(parent.get("required") or []), *(alternative.get("required") or [])]
    if required:
        merged["required"] = list(dict.fromkeys(required))
    if isinstance(parent.get("enum"), list) and isinstance(alternative.get("enum"), list):
        merged["enum"] = [v for v in parent["enum"] if v in alternative["enum"]]
    for bound, pick in (("minimum", max), ("maximum", min)):
        values = [s[bound] for s in (parent, alternative) if _is_number(s.get(bound))]
        if values:
            merged[bound] = pick(values)
    return merged


def _widen(alternatives: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What any of the alternatives allows."""
    kinds = [schema_types(a) for a in alternatives]
    union: set[str] | None = None if any(k is None for k in kinds) else set().union(*kinds)  # type: ignore[arg-type]
    widened = _with_types({}, union)
    keys = [k for a in alternatives for k in (a.get("properties") or {})]
    if keys:
        widened["properties"] = {
            key: _widen([a["properties"][key] for a in alternatives if key in (a.get("properties") or {})])
            for key in dict.fromkeys(keys)
        }
    required = [set(a.get("required") or []) for a in alternatives]
    if required and set.intersection(*required):
        widened["required"] = sorted(set.intersection(*required))
    if all(isinstance(a.get("enum"), list) for a in alternatives):
        widened["enum"] = list({_freeze(v): v for a in alternatives for v in a["enum"]}.values())
    for same in ("format", "pattern", "multipleOf", "items"):
        values = [a.get(same) for a in alternatives]
        if values[0] is not None and all(v == values[0] for v in values):
            widened[same] = values[0]
    for bound, pick in (("minimum", min), ("maximum", max), ("maxLength", max)):
        numbers: list[float] = [a[bound] for a in alternatives if _is_number(a.get(bound))]
        if len(numbers) == len(alternatives):
            widened[bound] = pick(numbers)
    if all(a.get("additionalProperties") is False for a in alternatives):
        widened["additionalProperties"] = False
    return widened


def _freeze(value: Any) -> Any:
    return repr(value)


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def for_storage(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A schema as the reference prepares it for storage, recursively: tuple `items` one schema,
    objects with properties closed (`additionalProperties: false`), `patternProperties` gone,
    `oneOf`/`anyOf` each alternative narrowed by its parent, then all widened into one."""
    prepared = {k: v for k, v in schema.items() if k not in ("patternProperties", "oneOf", "anyOf")}
    alternatives = [a for key in ("oneOf", "anyOf") for a in schema.get(key) or [] if isinstance(a, dict)]
    if alternatives:
        prepared = _widen([_narrow(prepared, a) for a in alternatives])
    items = prepared.get("items")
    if isinstance(items, list):
        extra = prepared.get("additionalItems")
        tuple_schemas = [i for i in items if isinstance(i, dict)] + ([extra] if isinstance(extra, dict) else [])
        prepared["items"] = _widen(tuple_schemas) if tuple_schemas else {}
    if isinstance(prepared.get("items"), dict):
        prepared["items"] = for_storage(prepared["items"])
    properties = prepared.get("properties")
    if isinstance(properties, dict) and properties:
        prepared["properties"] = {k: for_storage(v) for k, v in properties.items() if isinstance(v, dict)}
        prepared["additionalProperties"] = False
    return prepared


# typing a prepared schema


def _digits(value: Any) -> tuple[int, int]:
    """Precision and scale of a number as Java's BigDecimal counts them (`0.01`: 1 and 2)."""
    _, digits, exponent = Number(repr(value) if isinstance(value, float) else str(value)).as_tuple()
    assert isinstance(exponent, int)
    scale = -exponent
    precision = len(digits)
    return precision, scale


def _bucket(precision: int, scale: int) -> Type:
    for digits in DIGITS:
        if precision <= digits:
            return Decimal(digits, scale)
    return DOUBLE


def _integral(value: Any) -> bool:
    return _is_number(value) and float(value).is_integer()


def _integer(schema: Mapping[str, Any]) -> Type:
    bounds = [schema.get("minimum"), schema.get("maximum")]
    numbers = [int(bound) for bound in bounds if _is_number(bound)]
    if len(numbers) < 2:
        return LONG
    low, high = numbers
    if low >= -(2**31) and high <= 2**31 - 1:
        return INTEGER
    if low >= -(2**63) and high <= 2**63 - 1:
        return LONG
    return _bucket(max(len(str(abs(low))), len(str(abs(high)))), 0)


def _number(schema: Mapping[str, Any]) -> Type:
    step = schema.get("multipleOf")
    if _integral(step):
        return _integer(schema)
    low, high = schema.get("minimum"), schema.get("maximum")
    if _is_number(step) and _is_number(low) and _is_number(high):
        _, scale = _digits(step)
        precision = max(p - s + scale for p, s in (_digits(low), _digits(high)))
        return _bucket(precision, scale)
    return DOUBLE


def _enum(values: list[Any]) -> Type:
    present = [v for v in values if v is not None]
    if present and all(_is_number(v) for v in present):
        if all(_integral(v) for v in present):
            top = max(abs(int(v)) for v in present)
            if top <= 2**31 - 1:
                return INTEGER
            if top <= 2**63 - 1:
                return LONG
            return _bucket(len(str(top)), 0)
        return DOUBLE
    if present and all(isinstance(v, str) for v in present):
        return STRING
    return JSON


def type_of(schema: Mapping[str, Any]) -> Type | None:
    """The type of a prepared (sub)schema, by the first rule that applies; None when an object
    that may hold nothing else has no property left (it vanishes)."""
    kinds = schema_types(schema)
    core = None if kinds is None else kinds - {"null"}
    if core == {"object"}:
        fields = struct_fields(schema)
        if fields:
            return Struct(fields)
        return None if schema.get("additionalProperties") is False else JSON
    if core == {"array"}:
        items = schema.get("items")
        if not isinstance(items, dict):
            return Array(JSON, True)
        element = type_of(items)
        item_kinds = schema_types(items)
        return Array(element or JSON, item_kinds is None or "null" in item_kinds)
    if core == {"string"} and schema.get("format") in ("date-time", "date"):
        return TIMESTAMP if schema["format"] == "date-time" else DATE
    if core == {"boolean"}:
        return BOOLEAN
    if core == {"string"}:
        return STRING
    if core == {"integer"}:
        return _integer(schema)
    if core in ({"number"}, {"number", "integer"}):
        return _number(schema)
    if isinstance(schema.get("enum"), list):
        return _enum(schema["enum"])
    return JSON


def _nullable(schema: Mapping[str, Any], required: bool) -> bool:
    kinds = schema_types(schema)
    if kinds is None:
        enum = schema.get("enum")
        return not required or not isinstance(enum, list) or None in enum
    return not required or "null" in kinds


def struct_fields(schema: Mapping[str, Any]) -> tuple[Field, ...]:
    """An object's fields, sorted by name; keys that normalise alike are one field (the type of
    the smallest key, every key an accessor)."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return ()
    required = set(schema.get("required") or [])
    by_name: dict[str, list[tuple[str, Field]]] = {}
    for key, child in properties.items():
        kind = type_of(child) if isinstance(child, dict) else None
        if kind is None:
            continue
        name = normalise(key)
        field = Field(name, kind, _nullable(child, key in required), frozenset({key}))
        by_name.setdefault(name, []).append((key, field))
    fields = []
    for found in by_name.values():
        first = min(found)[1]
        accessors = frozenset(key for key, _ in found)
        fields.append(attrs.evolve(first, nullable=any(f.nullable for _, f in found), accessors=accessors))
    return tuple(sorted(fields, key=lambda f: f.name))


def column_field(column: str, schema: Mapping[str, Any], *, context: bool) -> Field | None:
    """The column of an entity family's schema: an array of its type for contexts (elements
    required unless the schema's type allows null), its type for the unstruct event; nullable."""
    prepared = for_storage(schema)
    kind = type_of(prepared)
    if kind is None:
        return None
    if context:
        kinds = schema_types(schema)
        kind = Array(kind, kinds is not None and "null" in kinds)
    name = normalise(column)
    return Field(name, kind, True, frozenset({name}))


# versions of a model


class Breaking(Exception):
    """Two versions of a model type a value differently."""


def merge(base: Type, new: Type) -> Type:
    """`new` folded into `base`: struct fields by name (base order, then new fields sorted and
    nullable), array elements alike; any other difference is breaking."""
    if isinstance(base, Struct) and isinstance(new, Struct):
        theirs = {f.name: f for f in new.fields}
        fields = []
        for field in base.fields:
            other = theirs.pop(field.name, None)
            if other is None:
                fields.append(attrs.evolve(field, nullable=True))
            else:
                fields.append(
                    Field(
                        field.name,
                        merge(field.type, other.type),
                        field.nullable or other.nullable,
                        field.accessors | other.accessors,
                    )
                )
        fields += [attrs.evolve(f, nullable=True) for f in sorted(theirs.values(), key=lambda f: f.name)]
        return Struct(tuple(fields))
    if isinstance(base, Array) and isinstance(new, Array):
        return Array(merge(base.element, new.element), base.element_nullable or new.element_nullable)
    if base != new:
        raise Breaking(f"{base} and {new}")
    return base


@attrs.frozen
class Folded:
    """A model's column, and the recovered columns of its breaking versions seen in the batch, by
    version."""

    column: Field
    recovered: tuple[tuple[str, Field], ...] = ()


def fold(versions: Iterable[tuple[str, Field]], seen: Iterable[str]) -> Folded:
    """Versions (version, field) in ascending order into one column; a version that breaks the
    fold gets its own column if it was `seen` in the batch (`<column>_recovered_<M>_<R>_<A>_<hash>`),
    else is left out. Later versions keep folding into the base."""
    seen = set(seen)
    base: Field | None = None
    recovered = []
    for version, field in versions:
        if base is None:
            base = field
            continue
        try:
            base = attrs.evolve(base, type=merge(base.type, field.type))
        except Breaking:
            if version in seen:
                suffix = version.replace("-", "_")
                name = f"{field.name}_recovered_{suffix}_{abs(jvm.signed(scala_hash(field)))}"
                recovered.append((version, attrs.evolve(field, name=name, accessors=frozenset({name}))))
    assert base is not None, "a model has at least one version"
    return Folded(base, tuple(recovered))


# Scala's hash codes of these values, for the names of recovered columns


def scala_hash(value: Field | Type | str | int | bool) -> int:
    """The 32-bit hash code (unsigned) the reference's Scala values of these types have."""
    if isinstance(value, bool):
        return string_hash("Nullable" if value else "Required")
    if isinstance(value, int):
        return value & 0xFFFFFFFF
    if isinstance(value, str):
        return string_hash(value)
    if isinstance(value, Primitive):
        return string_hash(value.name)
    if isinstance(value, Decimal):
        return jvm.product_hash([string_hash(f"Digits{value.precision}"), value.scale & 0xFFFFFFFF])
    if isinstance(value, Array):
        return jvm.product_hash([scala_hash(value.element), scala_hash(value.element_nullable)])
    if isinstance(value, Struct):
        return jvm.product_hash([jvm.ordered_hash([scala_hash(f) for f in value.fields])])
    accessors = jvm.unordered_hash([string_hash(a) for a in value.accessors])
    return jvm.product_hash([string_hash(value.name), scala_hash(value.type), scala_hash(value.nullable), accessors])
