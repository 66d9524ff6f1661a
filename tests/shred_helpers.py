"""Building enriched lines, reading the shred job's outputs, and the oracle of "every event kept
exactly once" over a sequence of batches."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import attrs

from events_manifest import ManifestRequestError, ManifestUnavailableError, SqliteManifest
from events_manifest._snowplow.fields import FIELD_NAMES
from events_manifest._snowplow.generator import BatchSpec, write_batches
from events_manifest.model import PutBatch
from events_manifest.testing.strategies import Event
from tests.commands import shredder, told

INDEX = {name: i for i, name in enumerate(FIELD_NAMES)}
CONTEXTS_URI = "iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/1-0-1"
UNSTRUCT_URI = "iglu:com.snowplowanalytics.snowplow/unstruct_event/jsonschema/1-0-0"
JSON_FIELDS = (52, 58, 122)


def line(
    event_id: str,
    fingerprint: str = "",
    etl: str = "2026-11-01 06:00:00.000",
    collector: str = "2026-11-01 05:59:00.000",
    *,
    fields: int = 131,
    **values: str,
) -> str:
    """A tab-separated enriched line of `fields` fields; keyword arguments name other fields."""
    f = [""] * 131
    f[0], f[1], f[5] = "app", "web", "page_view"
    f[INDEX["etl_tstamp"]], f[INDEX["collector_tstamp"]] = etl, collector
    f[INDEX["event_id"]], f[INDEX["event_fingerprint"]] = event_id, fingerprint
    for name, value in values.items():
        f[INDEX[name]] = value
    return "\t".join(f[:fields])


def contexts(*entities: str) -> str:
    return '{"schema":"' + CONTEXTS_URI + '","data":[' + ",".join(entities) + "]}"


def unstruct(entity: str) -> str:
    return '{"schema":"' + UNSTRUCT_URI + '","data":' + entity + "}"


def sdj(uri: str, data: str) -> str:
    return '{"schema":"' + uri + '","data":' + data + "}"


def atomic(input_line: str, event_id: str | None = None) -> str:
    """What the output layout (docs/shred-job.md) says the atomic line of an input line is, written
    independently of the job (no field here is over its limit)."""
    f = input_line.split("\t")
    f += [""] * (131 - len(f))
    if event_id is not None:
        f[6] = event_id
    return "\t".join(v for i, v in enumerate(f) if i not in JSON_FIELDS)


def shredded(vendor: str, name: str, version: str, data: str, root_id: str, root_tstamp: str) -> str:
    return (
        f'{{"schema":{{"vendor":"{vendor}","name":"{name}","format":"jsonschema","version":"{version}"}},'
        f'"data":{data},"hierarchy":{{"rootId":"{root_id}","rootTstamp":"{root_tstamp}","refRoot":"events",'
        f'"refTree":["events","{name}"],"refParent":"events"}}}}'
    )


def write_input(folder: Path, *files: list[str]) -> Path:
    """One file of lines each; a lone surrogate such as "\\udcff" is written as that raw byte."""
    folder.mkdir(parents=True, exist_ok=True)
    for n, lines in enumerate(files):
        text = "".join(x + "\n" for x in lines)
        (folder / f"part-{n:05d}.tsv").write_bytes(text.encode("utf-8", "surrogateescape"))
    return folder


def _lines(folder: Path) -> list[str]:
    """Lines split on "\n" only, as Spark writes them (a field may hold "\r" or "\u2028")."""
    return sorted(x for p in folder.glob("part-*") for x in p.read_bytes().decode("utf-8").split("\n")[:-1])


def read_output(out: Path) -> dict[str, list[str]]:
    """Every output folder (relative path) with its lines, sorted: atomic events and shredded types."""
    result = {"atomic-events": _lines(out / "atomic-events")}
    for folder in sorted((out / "shredded-types").glob("vendor=*/name=*/format=*/version=*")):
        result[str(folder.relative_to(out))] = _lines(folder)
    return result


def read_bad(bad: Path) -> list[dict[str, Any]]:
    rows = [json.loads(x) for x in _lines(bad)]
    for row in rows:
        assert list(row) == ["line", "errors", "failure_tstamp"]
        row.pop("failure_tstamp")
    return sorted(rows, key=lambda r: r["line"])


def uuid5(namespace: str, name: str) -> str:
    return str(uuid.uuid5(uuid.UUID(namespace), name))


def _key(event: Event) -> tuple[str, str]:
    """What makes an event one event: its pair, or for a line without fingerprint the line itself."""
    return (event.event_id, event.fingerprint or event.marker)


@attrs.define
class KeptOnce:
    """Checks, batch after batch, that each generated event (`strategies.Event`) is kept exactly
    once: in the batch it first came in, each copy without fingerprint on its own, under its id or,
    when other events share that id in the batch, a UUID v5."""

    kept_in: dict[tuple[str, str], list[int]] = attrs.Factory(dict)
    first_seen: dict[tuple[str, str], int] = attrs.Factory(dict)
    copies_without_fingerprint: Counter[tuple[str, str]] = attrs.Factory(Counter)

    def batch(self, k: int, events: list[Event], kept: list[tuple[str, str]]) -> None:
        """Batch `k`'s valid `events` and what it kept: (marker, id loaded under) per kept event."""
        ids = [new_id for _, new_id in kept]
        assert len(set(ids)) == len(ids), "two kept events share an event id"
        by_marker = {e.marker: e for e in events}
        distinct = {_key(e): e for e in events if e.fingerprint}.values()  # each copy without one is an event
        events_per_id = Counter(e.event_id for e in [*distinct, *(e for e in events if not e.fingerprint)])
        for event in events:
            self.first_seen.setdefault(_key(event), k)
            if not event.fingerprint:
                self.copies_without_fingerprint[_key(event)] += 1
        for marker, new_id in kept:
            event = by_marker[marker]
            self.kept_in.setdefault(_key(event), []).append(k)
            assert new_id == event.event_id or (events_per_id[event.event_id] > 1 and uuid.UUID(new_id).version == 5)

    def check(self) -> None:
        for key, k in self.first_seen.items():
            copies = self.copies_without_fingerprint[key]
            assert sorted(self.kept_in.get(key, [])) == ([k] * copies if copies else [k]), key


def java_substring(text: str, limit: int) -> str:
    """`text.substring(0, limit)` in Java, written by Java's UTF-8 encoder (a lone half of a
    surrogate pair becomes `?`): the oracle of the cut."""
    units = text.encode("utf-16-le")[: 2 * limit].decode("utf-16-le", "surrogatepass")
    return units.encode("utf-8", "replace").decode()


def generated_batch(folder: Path, events: int = 2_000) -> str:
    """A generated batch in `folder` (duplicates of every kind, bad lines): its folder."""
    spec = BatchSpec(events=events, bot_copies=20)
    return str(write_batches(folder, batches=1, spec=spec, seed=7, first_etl=datetime(2026, 11, 1, 6))[0])


def written(folder: Path) -> dict[str, Any]:
    """What a run of the shred job wrote into `folder/out` and `folder/bad`: what a rerun after a kill
    must give (`rerun_gives_the_unbroken_output`)."""
    summary = json.loads((folder / "out" / "_summary.json").read_text())
    return {"out": read_output(folder / "out"), "bad": read_bad(folder / "bad"), "kept": summary["kept_events"]}


def rerun_gives_the_unbroken_output(folder: Path, flags: list[str], unbroken: dict[str, Any], db: Path) -> None:
    """The shred job run again in `folder` with `flags` (and `--overwrite`) gives `unbroken`, and
    leaves one finished run in the ledger of the manifest at `db`."""
    rerun = shredder(folder, *flags, "--overwrite")
    assert rerun.returncode == 0, told(rerun.stderr)
    the_unbroken_output(folder, unbroken, db)


def the_unbroken_output(folder: Path, unbroken: dict[str, Any], db: Path) -> None:
    """`folder` holds `unbroken` (`written`), and nothing a run left on its way; the ledger of the
    manifest at `db` one finished run."""
    assert read_output(folder / "out") == unbroken["out"]
    assert read_bad(folder / "bad") == unbroken["bad"]
    summary = json.loads((folder / "out" / "_summary.json").read_text())
    assert summary["kept_events"] == unbroken["kept"]
    assert not any(p.name.startswith((".staging-", "_claim")) for p in [*(folder / "out").iterdir()])
    with SqliteManifest(db) as manifest:
        assert [run.state for run in manifest.runs()] == ["finished"]


class FailingAfterPuts(SqliteManifest):
    """A store that records a batch's puts and then fails with `message`, as a crash right after
    the puts would."""

    message = "the store went away after writing"

    def _put_batch(self, batch: PutBatch) -> list[bool | ManifestRequestError]:
        super()._put_batch(batch)
        raise ManifestUnavailableError(self.message)
