"""Wide-row Parquet rows (docs/transformer.md, Parquet): the run's columns built from the entity
types it holds (`build_columns`), their Arrow schema, and each kept event as a row of values cast
to its columns (`ParquetColumns.rows`), or the `loader_iglu_error` failures of the first column a
value does not fit.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import date
from decimal import Decimal as Number
from decimal import InvalidOperation
from typing import Any

import attrs
import pyarrow as pa
import pyarrow.compute as pc

from events_manifest._iglu.keys import SchemaKey
from events_manifest._iglu.resolver import ResolverConfig
from events_manifest._snowplow.fields import ATOMIC_FIELDS, FIELD_KINDS, FIELD_NAMES
from events_manifest._transformer.decode import circe
from events_manifest._transformer.decode.event import ATOMIC_SCHEMA, Entity, Event
from events_manifest._transformer.decode.jvm import days_from_civil, double_to_string
from events_manifest._transformer.output.formats import Criterion
from events_manifest._transformer.output.parquet_types import (
    BOOLEAN,
    DOUBLE,
    INTEGER,
    JSON,
    STRING,
    TIMESTAMP,
    Array,
    Decimal,
    Field,
    Struct,
    Type,
    column_field,
    fold,
    normalise,
)
from events_manifest._transformer.output.shred_mode import IgluFailure, model_versions
from events_manifest._transformer.output.widerow import CONTEXT, column_name
from events_manifest.errors import ManifestConfigError
from events_manifest.model import unicode_text

DECIMAL_FIELDS = frozenset(
    (
        "tr_total",
        "tr_tax",
        "tr_shipping",
        "ti_price",
        "tr_total_base",
        "tr_tax_base",
        "tr_shipping_base",
        "ti_price_base",
    )
)
REQUIRED_FIELDS = frozenset(("collector_tstamp", "event_id", "v_collector", "v_etl"))
_KIND_TYPES = {
    "s": STRING,
    "S": STRING,
    "U": STRING,
    "i": INTEGER,
    "d": DOUBLE,
    "b": BOOLEAN,
    "t": TIMESTAMP,
    "T": TIMESTAMP,
}


def _atomic_field(name: str) -> Field:
    kind = Decimal(18, 2) if name in DECIMAL_FIELDS else _KIND_TYPES[FIELD_KINDS[name]]
    return Field(name, kind, name not in REQUIRED_FIELDS, frozenset({name}))


ATOMIC_COLUMNS = tuple(_atomic_field(FIELD_NAMES[i]) for i in ATOMIC_FIELDS)
"""The 128 atomic columns, in field order, with the reference's types."""


class ParquetSchemaError(ManifestConfigError):
    """The run's columns could not be built: the run stops, nothing is written."""


@attrs.frozen
class EntityColumn:
    """An entity column: its field, whether it holds contexts (an array) or the unstruct event,
    the schema keys whose data it takes, and the key its cast errors name."""

    field: Field
    context: bool
    keys: frozenset[str]
    named: str


def arrow_type(kind: Type) -> pa.DataType:
    """The Arrow (and so Spark and Parquet) type of a column type."""
    if isinstance(kind, Decimal):
        return pa.decimal128(kind.precision, kind.scale)
    if isinstance(kind, Array):
        return pa.list_(pa.field("element", arrow_type(kind.element), nullable=kind.element_nullable))
    if isinstance(kind, Struct):
        return pa.struct([arrow_field(f) for f in kind.fields])
    return {
        "String": pa.string(),
        "Json": pa.string(),
        "Boolean": pa.bool_(),
        "Integer": pa.int32(),
        "Long": pa.int64(),
        "Double": pa.float64(),
        "Date": pa.date32(),
        "Timestamp": pa.timestamp("us", tz="UTC"),
    }[kind.name]


def arrow_field(field: Field) -> pa.Field:
    return pa.field(field.name, arrow_type(field.type), nullable=field.nullable)


@attrs.frozen
class ParquetColumns:
    """A run's columns: the atomic ones, then one per entity family (and its recovered versions)."""

    entities: tuple[EntityColumn, ...]

    @property
    def fields(self) -> tuple[Field, ...]:
        return (*ATOMIC_COLUMNS, *(column.field for column in self.entities))

    def arrow_schema(self) -> pa.Schema:
        return pa.schema([arrow_field(field) for field in self.fields])

    def rows(self, events: Sequence[Event]) -> tuple[pa.StructArray, list[list[dict[str, Any]] | None]]:
        """The events' rows (see `rows_of`), from decoded events."""
        return self.rows_of(atomic_values(events), [entities_of(event) for event in events])

    def rows_of(
        self, atomic: AtomicValues, entities: Sequence[Entities]
    ) -> tuple[pa.StructArray, list[list[dict[str, Any]] | None]]:
        """Events' rows, built column by column from their `atomic` values (`AtomicValues`) and
        their `entities`: one struct array of the rows that fit, in order, and for each event None
        (it fits: its row is the array's next) or the failures of the first column one of its
        values does not fit (only money and entities can misfit)."""
        failures: list[list[dict[str, Any]] | None] = [None] * len(entities)
        money = [self._money(field, atomic[field.name], failures) for field, _ in _DECIMALS]
        values = self._entity_values(entities, failures)
        arrays = {name: _parquet_values(name, atomic[name]) for name in _PLAIN}
        for (field, _), column in zip(_DECIMALS, money, strict=True):
            arrays[field.name] = _values_array(column, _ARROW_TYPES[field.name])
        for entity_column, column in zip(self.entities, values, strict=True):
            arrays[entity_column.field.name] = _values_array(column, self._entity_types[entity_column.field.name])
        schema = self.arrow_schema()
        rows = pa.StructArray.from_arrays([arrays[name] for name in schema.names], fields=list(schema))
        fits = [failed is None for failed in failures]
        return (rows if all(fits) else rows.filter(pa.array(fits))), failures

    @staticmethod
    def _money(field: Field, values: pa.Array, failures: list[list[dict[str, Any]] | None]) -> list[Any]:
        """A money column's values cast to its decimal; an event's first misfit (money columns are
        cast in order, before its entities) goes to `failures`."""
        cast_values: list[Any] = [None] * len(values)
        if values.null_count == len(values):
            return cast_values
        for row, value in enumerate(values.to_pylist()):
            if value is not None and failures[row] is None:
                cast_values[row], errors = _atomic(field, value)
                if errors:
                    failures[row] = [{"schemaKey": ATOMIC_SCHEMA.uri, **error} for error in errors]
        return cast_values

    @functools.cached_property
    def _casters(self) -> list[Caster]:
        return [caster(column.field.type, True) for column in self.entities]

    @functools.cached_property
    def _columns_of(self) -> tuple[dict[str, int], dict[str, int]]:
        """Each entity column's place by the schema URI of the data it takes: of contexts, and of
        unstruct events."""
        places: tuple[dict[str, int], dict[str, int]] = ({}, {})
        for at, column in enumerate(self.entities):
            places[0 if column.context else 1].update(dict.fromkeys(column.keys, at))
        return places

    @functools.cached_property
    def _entity_types(self) -> dict[str, pa.DataType]:
        return {column.field.name: arrow_type(column.field.type) for column in self.entities}

    def _entity_values(
        self, entities: Sequence[Entities], failures: list[list[dict[str, Any]] | None]
    ) -> list[list[Any]]:
        """The entity columns' values of the events without a failure yet, column by column; an
        event's first misfit (in column order) goes to `failures`. A column's value of data events
        share (a batch's repeated JSON texts are read once) is cast once."""
        columns: list[list[Any]] = [[None] * len(entities) for _ in self.entities]
        contexts_at, events_at = self._columns_of
        made: dict[tuple[int, ...], tuple[Any, list[dict[str, Any]]]] = {}
        for row, (in_order, event) in enumerate(entities):
            if failures[row] is not None:
                continue
            held: dict[int, Any] = {}  # by column: a context column's list of data, an event column's data
            for entity in in_order:
                at = contexts_at.get(entity.key.uri)
                if at is not None:
                    held.setdefault(at, []).append(entity.data)
            if event is not None and (at := events_at.get(event.key.uri)) is not None:
                held[at] = event.data
            for at in sorted(held):
                value = held[at]
                key = (at, *map(id, value)) if self.entities[at].context else (at, id(value))
                if key not in made:
                    made[key] = self._casters[at](value)
                columns[at][row], errors = made[key]
                if errors:
                    failures[row] = [{"schemaKey": self.entities[at].named, **error} for error in errors]
                    break
        return columns


Entities = tuple[Sequence[Entity], Entity | None]
"""What an event's entity columns take: its contexts then its derived contexts, and its unstruct event."""
AtomicValues = Mapping[str, pa.Array]
"""Events' atomic fields, column by column, by name, as the decoder reads them (`Event.values`): a
text as a string (empty: null, but for a UUID field), an int as int64, a double as float64, a
boolean as bool, and a timestamp as int64 microseconds since the epoch (floored)."""


def entities_of(event: Event) -> Entities:
    """A decoded event's `Entities`."""
    return (*event.contexts, *event.derived), event.unstruct


def atomic_values(events: Sequence[Event]) -> dict[str, pa.Array]:
    """`AtomicValues` of decoded events."""
    found: dict[str, pa.Array] = {}
    for field, index in zip(ATOMIC_COLUMNS, ATOMIC_FIELDS, strict=True):
        values = [event.values[index] for event in events]
        kind = FIELD_KINDS[field.name]
        if kind in "tT":
            found[field.name] = pa.array([None if nanos is None else nanos // 1000 for nanos in values], pa.int64())
        elif kind in "sSU":
            found[field.name] = string_array(values)
        else:
            found[field.name] = pa.array(values, _DECODED_TYPES[kind])
    return found


_DECODED_TYPES = {"i": pa.int64(), "d": pa.float64(), "b": pa.bool_()}


def _parquet_values(name: str, values: pa.Array) -> pa.Array:
    """An atomic column of `AtomicValues`: an int in Integer, a timestamp in Timestamp, a NaN or
    infinite double null."""
    kind = _ARROW_TYPES[name]
    if kind == pa.float64():
        return pc.if_else(pc.is_finite(values), values, pa.scalar(None, kind))
    return values if values.type == kind else values.cast(kind)


_DECIMALS = tuple((f, i) for f, i in zip(ATOMIC_COLUMNS, ATOMIC_FIELDS, strict=True) if isinstance(f.type, Decimal))
"""The money columns: cast event by event, the only atomic ones a value can misfit."""
_PLAIN = tuple(f.name for f in ATOMIC_COLUMNS if not isinstance(f.type, Decimal))
"""The other atomic columns, cast column by column (`_parquet_values`)."""
_ARROW_TYPES = {field.name: arrow_type(field.type) for field in ATOMIC_COLUMNS}


def string_array(values: list[Any]) -> pa.Array:
    """A string column; half a surrogate pair (no UTF-8 form) written `?`, as the JVM writes it (`_utf8`)."""
    try:
        return pa.array(values, pa.string())
    except (UnicodeEncodeError, pa.ArrowInvalid):
        return pa.array([None if value is None else _utf8(value) for value in values], pa.string())


def _values_array(values: list[Any], kind: pa.DataType) -> pa.Array:
    """A column of cast values; half a surrogate pair in a string written `?` (`_utf8`), looked
    for only when Arrow refuses the column."""
    try:
        return pa.array(values, kind)
    except (UnicodeEncodeError, pa.ArrowInvalid):
        return pa.array(_without_surrogates(values), kind)


def _without_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _utf8(value)
    if isinstance(value, list):
        return [_without_surrogates(item) for item in value]
    if isinstance(value, dict):
        return {key: _without_surrogates(item) for key, item in value.items()}
    return value


def _atomic(field: Field, value: Any) -> tuple[Any, list[dict[str, Any]]]:
    """A money value (a decoded double) in its decimal column, as its JSON form casts (NaN: null)."""
    text = None if value is None else double_to_string(value)
    return cast(None if text is None else circe.Number(text), field.type, nullable=True)


def _utf8(text: str) -> str:
    """A string Arrow takes: half a surrogate pair (it has no UTF-8 form) written `?`, as the JVM writes it."""
    return text if unicode_text(text) else text.encode("utf-8", "replace").decode()


def _wrong(value: Any, kind: Type) -> list[dict[str, Any]]:
    return [{"value": value, "expected": str(kind)}]


_ISO_DATE_TIME = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:\.([0-9]{1,9}))?)?"
    r"(Z|[+-][0-9]{2}:[0-9]{2}(?::[0-9]{2})?)(?:\[[^\]]+\])?"
)
_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")


def _micros(text: str) -> int | None:
    """Java's ISO_DATE_TIME with an offset (or Z), in microseconds; None if it is not one."""
    match = _ISO_DATE_TIME.fullmatch(text)
    if match is None:
        return None
    year, month, day, hour, minute = (int(match.group(i)) for i in range(1, 6))
    second = int(match.group(6) or 0)
    fraction = int((match.group(7) or "").ljust(9, "0")) // 1000
    try:
        date(year, month, day)
    except ValueError:
        return None
    if hour > 23 or minute > 59 or second > 59:
        return None
    offset = match.group(8)
    shift = 0
    if offset != "Z":
        parts = [int(p) for p in offset[1:].split(":")]
        shift = (parts[0] * 3600 + parts[1] * 60 + (parts[2] if len(parts) > 2 else 0)) * (
            1 if offset[0] == "+" else -1
        )
    seconds = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - shift
    return seconds * 1_000_000 + fraction


def _number(value: Any) -> Number | None:
    if not isinstance(value, circe.Number):
        return None
    try:
        return Number(value)
    except InvalidOperation:
        return None


def cast(value: Any, kind: Type, *, nullable: bool) -> tuple[Any, list[dict[str, Any]]]:
    """A JSON value (`circe`) in a column of `kind`: the value Arrow takes, and what did not fit
    (every misfit inside it, in field and item order)."""
    return caster(kind, nullable)(value)


Caster = Callable[[Any], tuple[Any, list[dict[str, Any]]]]
"""`cast` into one column type, made once for the type (`caster`)."""


@functools.cache
def caster(kind: Type, nullable: bool) -> Caster:
    """`cast` for values of one column type: a struct's fields, their accessors and casts looked
    up once, not for every value."""
    body = _body(kind)

    def cast_value(value: Any) -> tuple[Any, list[dict[str, Any]]]:
        if value is None:
            if nullable:
                return None, []
            return ("null", []) if kind == JSON else (None, _wrong(None, kind))
        return body(value)

    return cast_value


def _struct(kind: Struct) -> Caster:
    """The cast of an object into a struct: each field from the first of its keys present."""
    fields = [(f.name, _in_order(f.accessors), caster(f.type, f.nullable)) for f in kind.fields]

    def struct(value: Any) -> tuple[Any, list[dict[str, Any]]]:
        if not isinstance(value, dict):
            return None, _wrong(value, kind)
        row, errors = {}, []
        for name, accessors, cast_field in fields:
            found = None
            for key in accessors:
                found = value.get(key)
                if found is not None:
                    break
            row[name], misfits = cast_field(found)
            errors += misfits
        return row, errors

    return struct


def _array(kind: Array) -> Caster:
    """The cast of a list into an array, item by item."""
    cast_item = caster(kind.element, kind.element_nullable)

    def array(value: Any) -> tuple[Any, list[dict[str, Any]]]:
        if not isinstance(value, list):
            return None, _wrong(value, kind)
        items, errors = [], []
        for item in value:
            cast_value, misfits = cast_item(item)
            items.append(cast_value)
            errors += misfits
        return items, errors

    return array


def _body(kind: Type) -> Caster:
    """The cast of a value (not null) into `kind`."""
    if isinstance(kind, Struct):
        return _struct(kind)
    if isinstance(kind, Array):
        return _array(kind)
    if isinstance(kind, Decimal):
        unit = Number(1).scaleb(-kind.scale)

        def decimal(value: Any) -> tuple[Any, list[dict[str, Any]]]:
            number = _number(value)
            if number is not None:
                scaled = number.quantize(unit) if number.is_finite() else None
                if scaled is not None and scaled == number and len(scaled.as_tuple().digits) <= kind.precision:
                    return scaled, []
            return None, _wrong(value, kind)

        return decimal
    convert = _PRIMITIVES[kind.name]

    def primitive(value: Any) -> tuple[Any, list[dict[str, Any]]]:
        found = convert(value)
        return (None, _wrong(value, kind)) if found is _MISFIT else (found, [])

    return primitive


_MISFIT = object()
"""What a primitive's cast gives for a value that does not fit the column."""


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and not isinstance(value, circe.Number)


def _to_integer(bits: int) -> Any:
    def integer(value: Any) -> Any:
        number = _number(value)
        if number is not None and number == number.to_integral_value() and -(2**bits) <= number < 2**bits:
            return int(number)
        return _MISFIT

    return integer


def _to_date(value: Any) -> Any:
    if _is_text(value) and _DATE.fullmatch(value):
        year, month, day = (int(part) for part in value.split("-"))
        try:
            return date(year, month, day)
        except ValueError:
            pass
    return _MISFIT


def _to_timestamp(value: Any) -> Any:
    micros = _micros(value) if _is_text(value) else None
    return _MISFIT if micros is None else micros


_PRIMITIVES: dict[str, Any] = {
    "Json": circe.dumps,
    "String": lambda value: value if _is_text(value) else _MISFIT,
    "Boolean": lambda value: value if isinstance(value, bool) else _MISFIT,
    "Integer": _to_integer(31),
    "Long": _to_integer(63),
    "Double": lambda value: float(value) if isinstance(value, circe.Number) else _MISFIT,
    "Timestamp": _to_timestamp,
    "Date": _to_date,
}
"""Each primitive type's cast of a JSON value (`circe`): the value Arrow takes, or `_MISFIT`."""


DUPLICATE = "iglu:com.snowplowanalytics.snowplow/duplicate/jsonschema/1-0-0"


def build_columns(
    seen: Iterable[tuple[str, str]], iglu: ResolverConfig, skip: Iterable[Criterion] = (), *, synthetic: bool
) -> ParquetColumns:
    """The run's entity columns from the (schema key, entity) pairs its good events hold: those
    `skip` matches left out, the `duplicate` context added with synthetic dedup; each family's
    versions up to the highest seen folded into one column, a breaking version seen recovered."""
    skip = tuple(skip)
    wanted = {(uri, entity) for uri, entity in seen if not any(c.matches(uri) for c in skip)}
    if synthetic:
        wanted.add((DUPLICATE, CONTEXT))
    families: dict[tuple[str, str, str, str, int], list[SchemaKey]] = {}
    for uri, entity in wanted:
        key = SchemaKey.parse(uri)
        assert key is not None
        families.setdefault((entity, key.vendor, key.name, key.format, key.model), []).append(key)
    columns: list[EntityColumn] = []
    for (entity, *_), keys in sorted(families.items(), key=_family_order):
        highest = max(keys, key=lambda k: (k.revision, k.addition))
        versions = model_versions(iglu, highest.uri)
        if isinstance(versions, IgluFailure):
            raise ParquetSchemaError(f"Error while building non-atomic DDL fields. {_detail(versions)}")
        context = entity == CONTEXT
        name = normalise(column_name(highest, entity))
        typed = [(v, f) for v, schema in versions if (f := column_field(name, schema, context=context)) is not None]
        if not typed:
            continue
        folded = fold(typed, seen=[k.version for k in keys])
        recovered = {version for version, _ in folded.recovered}
        prefix = f"iglu:{highest.vendor}/{highest.name}/{highest.format}/"
        base_keys = frozenset(prefix + v for v, _ in versions if v not in recovered)
        columns.append(EntityColumn(folded.column, context, base_keys, highest.uri))
        for version, field in folded.recovered:
            columns.append(EntityColumn(field, context, frozenset({prefix + version}), prefix + version))
    return ParquetColumns(tuple(columns))


def _family_order(family: tuple[tuple[str, str, str, str, int], list[SchemaKey]]) -> tuple[object, ...]:
    """The reference's order of entity columns: families by their first type, types ordered as
    its loader message orders them (contexts before the unstruct event, then the schema key:
    vendor, name, format, version); a family's recovered columns right after its own."""
    (entity, vendor, name, fmt, _), keys = family
    first = min((k.model, k.revision, k.addition) for k in keys)
    return (entity != CONTEXT, vendor, name, fmt, first)


def _detail(failure: IgluFailure) -> str:
    if failure.repositories:
        return f"Schema {failure.uri} was not found in any repository ({', '.join(failure.repositories)})"
    return f"Schema {failure.uri} cannot be parsed as JSON Schema AST"


@functools.cache
def _in_order(accessors: frozenset[str]) -> tuple[str, ...]:
    """A field's accessors in the order `cast` tries them (sorted: the first present one wins)."""
    return tuple(sorted(accessors))
