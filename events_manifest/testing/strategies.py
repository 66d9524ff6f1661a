"""Hypothesis strategies for manifest items and for enriched batches with a chosen duplicate
structure, so a backend or a pipeline can be tested on the cases that matter. Needs hypothesis.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import attrs
from hypothesis import strategies as st

__all__ = [
    "Batches",
    "Event",
    "enriched_batches",
    "etl_times",
    "event_ids",
    "fingerprints",
    "items",
]

EPOCH = datetime(2026, 1, 1)

event_ids = st.sampled_from([str(uuid.UUID(int=n, version=4)) for n in range(1, 5)])
"""A small pool, so that the same ids come back: reruns and duplicates are the interesting cases."""
fingerprints = st.sampled_from(["A", "B", "C"])
etl_times = st.integers(min_value=0, max_value=5 * 24).map(lambda hours: EPOCH + timedelta(hours=hours * 12))
"""Twelve-hour steps over ten weeks: with a ttl of days, reruns, other etls and expiry all occur."""
items = st.tuples(event_ids, fingerprints, etl_times)

FIELDS, MIN_FIELDS = 131, 108
ETL_TSTAMP, COLLECTOR_TSTAMP, EVENT_ID, TXN_ID, CONTEXTS, EVENT_FINGERPRINT = 2, 3, 6, 7, 52, 129
CONTEXTS_URI = "iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/1-0-1"


def tstamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


@attrs.frozen
class Event:
    """One event of a generated batch: its pair, its times, and a `marker` (the txn_id field) that
    names the line it came from, so every output line can be traced back to its input line."""

    event_id: str
    fingerprint: str
    etl: datetime
    collector: datetime
    marker: str

    def line(self) -> str:
        """A valid 131-field enriched line (docs/enriched-events.md) with one context."""
        f = [""] * FIELDS
        f[0], f[1], f[5] = "app", "web", "page_view"
        f[ETL_TSTAMP], f[COLLECTOR_TSTAMP] = tstamp(self.etl), tstamp(self.collector)
        f[EVENT_ID], f[TXN_ID], f[EVENT_FINGERPRINT] = self.event_id, self.marker, self.fingerprint
        entity = '{"schema":"iglu:com.acme/marker/jsonschema/1-0-0","data":{"m":"' + self.marker + '"}}'
        f[CONTEXTS] = '{"schema":"' + CONTEXTS_URI + '","data":[' + entity + "]}"
        return "\t".join(f)


@attrs.frozen
class Batches:
    """Batches of enriched lines, in order, with what is known about each line."""

    batches: list[list[str]]
    events: list[list[Event]]
    """The valid events of each batch, in the batch's line order."""
    bad: list[list[str]]
    """The lines of each batch that are invalid by construction."""


_safe_text = st.text(st.characters(exclude_characters="\n\r", exclude_categories=["Cs"]), max_size=40)
"""Text of one line: no line break of any kind (a lone carriage return ends a line too)."""


@st.composite
def invalid_lines(draw: st.DrawFn, valid: str) -> str:
    """A line that the enriched format rejects, made from the `valid` line: garbage, wrong field counts, bad
    id, bad timestamps, bad JSON, JSON of the wrong shape."""
    base = valid.split("\t")
    kind = draw(st.sampled_from(["text", "short", "long", "id", "collector", "etl", "json", "shape"]))
    if kind == "text":
        return draw(_safe_text.filter(lambda s: s.count("\t") < MIN_FIELDS - 1))
    if kind == "short":
        return "\t".join(base[: draw(st.integers(1, MIN_FIELDS - 1))])
    if kind == "long":
        return "\t".join(base + [""] * draw(st.integers(1, 5)))
    corrupt = {
        "id": (EVENT_ID, st.sampled_from(["", "not-a-uuid", base[EVENT_ID].upper(), base[EVENT_ID][:-1]])),
        "collector": (COLLECTOR_TSTAMP, st.sampled_from(["", "yesterday", "2026-13-45 99:99:99", "1485388885"])),
        "etl": (ETL_TSTAMP, st.sampled_from(["", "2026-11-01T06:00:00Z", "2026-02-30 00:00:00"])),
        "json": (CONTEXTS, st.sampled_from(["{", "[1,2", '{"schema":1}', "nan", '{"a":"\\x"}', "[" * 5000])),
        "shape": (CONTEXTS, st.sampled_from(["[]", '{"schema":"iglu:a/b/jsonschema/1-0-0","data":[]}', "{}"])),
    }
    index, values = corrupt[kind]
    base[index] = draw(values.filter(lambda value: value != base[index]))  # an all-digit id is its own upper case
    return "\t".join(base)


@st.composite
def enriched_batches(
    draw: st.DrawFn,
    *,
    batches: int = 2,
    max_events: int = 12,
    invalid: bool = True,
    missing_fingerprints: bool = True,
) -> Batches:
    """Consecutive batches whose events repeat on purpose: natural duplicates (same id and
    fingerprint, in one batch or redelivered in a later one), synthetic duplicates (same id, other
    fingerprint), events without fingerprint, and (with `invalid`) corrupted lines mixed in.

    Batch k has etl times in day k, so the batch etl times increase. Two lines of one pair are
    either the very same line or have different etl times, so which is kept never depends on the
    line order.
    """
    ids = [str(uuid.UUID(int=draw(st.integers(1, 2**64)), version=4)) for _ in range(draw(st.integers(1, 6)))]
    pool: list[Event] = []
    result, valid_events, bad = [], [], []
    marker = 0
    for k in range(batches):
        etl = EPOCH + timedelta(days=k)
        events: list[Event] = []
        for _ in range(draw(st.integers(0, max_events))):
            choice = draw(st.sampled_from(["new", "copy", "copy", "later"] if pool else ["new"]))
            if choice == "new":
                marker += 1
                no_fp = missing_fingerprints and draw(st.booleans()) and draw(st.booleans())
                event = Event(
                    event_id=draw(st.sampled_from(ids)),
                    fingerprint="" if no_fp else draw(st.sampled_from(["F1", "F2", "F3"])),
                    etl=etl + timedelta(minutes=draw(st.integers(0, 30)), milliseconds=marker),
                    collector=etl - timedelta(minutes=draw(st.integers(1, 30))),
                    marker=f"L{marker}",
                )
                pool.append(event)
            else:
                event = draw(st.sampled_from(pool))
                if choice == "later" or event.etl < etl:  # a redelivery comes later, with a new line
                    marker += 1
                    event = attrs.evolve(
                        event,
                        etl=max(event.etl, etl) + timedelta(minutes=draw(st.integers(31, 60)), milliseconds=marker),
                        marker=f"L{marker}",
                    )
            events.append(event)
        lines = [e.line() for e in events]
        bases = lines or [Event(ids[0], "F", etl + timedelta(hours=1), etl, "bad").line()]
        corrupted = (
            draw(st.lists(st.sampled_from(bases).flatmap(invalid_lines), min_size=1, max_size=4)) if invalid else []
        )
        for line in corrupted:
            lines.insert(draw(st.integers(0, len(lines))), line)
        result.append(lines)
        valid_events.append(events)
        bad.append(corrupted)
    return Batches(result, valid_events, bad)
