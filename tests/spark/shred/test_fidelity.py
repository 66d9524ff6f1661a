"""The shred job gives the reference's output: handmade batches run through its command line (in
this process, on the suite's Spark session), then the files on disk read back.

Batch 1 stores X/fpA and W/fpA; batch 2 holds X/fpA again, X/fpB, W/fpB and one case of every
field rule (docs/reference-differences.md lists where the job deliberately differs).
"""

from __future__ import annotations

import base64
import json
import shutil
import sqlite3
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from events_manifest._snowplow.fields import ATOMIC_AFTER, FIELD_NAMES
from events_manifest.testing._servers import LocalServer
from tests.commands import shredder, told
from tests.once import made_once
from tests.shred_helpers import contexts, line, read_bad, read_output, sdj, uuid5

pytestmark = pytest.mark.every_line

X = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"
W = "d7f5fa2f-3b3a-4c97-a030-8e05d9f40b0a"
Y = "1f4b7b8e-6c1e-4c55-9a6c-3e9f0f7c2a10"
Z = "2a0e9c3d-8f7b-4d6a-b1e2-5c4d3e2f1a09"
N = "3b1f0d4e-9a8c-4e7b-82f3-6d5e4f3a2b18"
CR = ["4c2a1e5f-0b9d-4f8c-93a4-7e6f5a4b3c27", "5d3b2f60-1cae-4a9d-a4b5-8f7a6b5c4d36"]
LF = ["6e4c3a71-2dbf-4bae-b5c6-9a8b7c6d5e45", "7f5d4b82-3eca-4cbf-86d7-ab9c8d7e6f54"]
BAD_ID, BAD_TIME, BAD_JSON = (
    "8a6e5c93-4fdb-4dca-97e8-bcad9e8f7a63",
    "9b7f6da4-5aec-4edb-a8f9-cdbeaf9a8b72",
    ("ab807eb5-6bfd-4fec-b90a-decfbaab9c81"),
)
ETL_1, ETL_2 = "2026-11-01 06:00:00.000", "2026-11-02 06:00:00.000"
EMOJI = "\U0001f600"  # two UTF-16 units, as Java counts a string's length
AGENT = "é" * 600 + EMOJI * 300  # 1,200 units: cut to 1,000
TITLE = "a" + EMOJI * 1000  # 2,001 units: cut to 2,000, inside the last emoji kept
NAN = contexts(sdj("iglu:com.acme/x/jsonschema/1-0-0", '{"a":NaN}'))
LONG_ID = "x" * 90
BOTH = "bc918fc6-7c0e-4a0d-8a1b-efcb0bcbad90"
SPACED = "cda20fd7-8d1f-4e1b-9b2c-f0dc1cdcbe01"
SPACED_DATA = '{ "a" : "x\\u00e9 y\\/" ,  "n" : 1.50, "l" : [ 1 , {} ] }'  # spaces only: a line holds no LF


def _batch_2() -> dict[str, bytes]:
    main = [
        line(X, "fpA", ETL_2),
        line(X, "fpB", ETL_2),
        line(W, "fpB", ETL_2),
        line(Y, "fpC", ETL_2),
        line(Y, "fpC", ETL_2),
        line(Y, "fpD", ETL_2),
        line(Z, "fpZ", ETL_2, useragent=AGENT, page_title=TITLE),
        line(N, "fpN", ETL_2, "2026-11-02 05:59:00.123456789"),
        line(BAD_TIME, "fp", "2026-11-02 06:00:00"),
        line(BAD_JSON, "fp", "2026-10-01 00:00:00.000", contexts=NAN),  # earliest etl, but a bad row
        line(BOTH, "fp", ETL_2, "yesterday", unstruct_event="{"),  # a field error and invalid JSON
        line(SPACED, "fp", ETL_2, contexts=contexts(sdj("iglu:com.acme/spaced/jsonschema/1-0-0", SPACED_DATA))),
        line("", "fp", ETL_2),
        line(LONG_ID, "fp", ETL_2),
    ]
    return {
        "a.tsv": "".join(x + "\n" for x in main).encode(),
        "crlf.tsv": "".join(line(i, "fp", ETL_2) + "\r\n" for i in LF).encode(),
        "cr.tsv": "".join(line(i, "fp", ETL_2) + "\r" for i in CR).encode(),
    }


def _write(folder: Path, files: dict[str, bytes]) -> str:
    folder.mkdir(parents=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return str(folder)


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = shredder(cwd, *args)
    assert done.returncode == 0, told(done.stderr)
    return done


@pytest.fixture(scope="module")
def runs(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Batch 1, then batch 2 twice on copies of the manifest: plain, and with cross-batch synthetic;
    run once by the suite's test processes between them (the tests only read the folder)."""
    return made_once(tmp_path_factory, "fidelity", _make_runs)


def _make_runs(root: Path) -> None:
    batch_1 = _write(root / "in-1", {"a.tsv": f"{line(X, 'fpA', ETL_1)}\n{line(W, 'fpA', ETL_1)}\n".encode()})
    batch_2 = _write(root / "in-2", _batch_2())
    manifest = root / "manifest.db"
    _run(root, "--input-folder", batch_1, "--output-folder", "out-1", "--bad-folder", "bad-1",
         "--manifest", f"sqlite://{manifest}")  # fmt: skip
    for suffix in ("", "-wal", "-shm"):  # the file and what its journal holds
        if Path(f"{manifest}{suffix}").exists():
            shutil.copy(f"{manifest}{suffix}", root / f"manifest-copy.db{suffix}")
    for name, db, extra in (
        ("plain", manifest, ()),
        ("across", root / "manifest-copy.db", ("--cross-batch-synthetic",)),
    ):
        _run(root, "--input-folder", batch_2, "--output-folder", f"out-{name}", "--bad-folder", f"bad-{name}",
             "--manifest", f"sqlite://{db}", *extra)  # fmt: skip


def _atomic(out: Path) -> dict[tuple[str, str], str]:
    """Each atomic line by (event id, fingerprint)."""
    position = {name: i for i, name in enumerate([*FIELD_NAMES[:7], *(FIELD_NAMES[i] for i in ATOMIC_AFTER)])}
    found = {}
    for text in read_output(out)["atomic-events"]:
        fields = text.split("\t")
        assert len(fields) == 128
        found[(fields[position["event_id"]], fields[position["event_fingerprint"]])] = text
    return found


def _summary(out: Path) -> dict[str, Any]:
    summary: dict[str, Any] = json.loads((out / "_summary.json").read_text())
    return summary


def test_a_sibling_dropped_across_batches_leaves_the_other_event_its_id(runs: Path) -> None:
    atomic = _atomic(runs / "out-plain")
    assert (X, "fpB") in atomic and (W, "fpB") in atomic, "kept under their own ids, unchanged"
    assert (X, "fpA") not in atomic
    duplicates = read_output(runs / "out-plain").get(
        "shredded-types/vendor=com.snowplowanalytics.snowplow/name=duplicate/format=jsonschema/version=1-0-0", []
    )
    original_ids = sorted(json.loads(text)["data"]["originalEventId"] for text in duplicates)
    assert original_ids == [Y, Y], "only the in-batch synthetic pair, both put, is re-identified"
    summary = _summary(runs / "out-plain")
    assert (summary["cross_batch_duplicates"], summary["synthetic_duplicates"]) == (1, 2)


def test_cross_batch_synthetic_re_identifies_whether_or_not_the_sibling_came_again(runs: Path) -> None:
    atomic = _atomic(runs / "out-across")
    assert (uuid5(X, "fpB"), "fpB") in atomic, "X/fpA came again (and was dropped)"
    assert (uuid5(W, "fpB"), "fpB") in atomic, "W/fpA did not come again"
    assert (X, "fpB") not in atomic and (W, "fpB") not in atomic
    summary = _summary(runs / "out-across")
    assert summary["cross_batch_synthetic_duplicates"] == 2


def test_atomic_fields_are_cut_to_their_limit_in_utf16_units(runs: Path) -> None:
    """Java's `substring`: an emoji counts two; half of one kept is written `?` by its UTF-8 writer."""
    fields = _atomic(runs / "out-plain")[(Z, "fpZ")].split("\t")
    names = [*FIELD_NAMES[:7], *(FIELD_NAMES[i] for i in ATOMIC_AFTER)]
    assert fields[names.index("useragent")] == "é" * 600 + EMOJI * 200
    assert fields[names.index("page_title")] == "a" + EMOJI * 999 + "?"


def test_shredded_data_is_reserialised_compact(runs: Path) -> None:
    """The reference writes each entity through its JSON library: no whitespace, keys in their
    order, no needless escape; numbers here keep their text."""
    [shredded] = read_output(runs / "out-plain")[
        "shredded-types/vendor=com.acme/name=spaced/format=jsonschema/version=1-0-0"
    ]
    assert '"data":{"a":"xé y/","n":1.50,"l":[1,{}]},' in shredded


def test_timestamps_need_a_fraction_of_one_to_nine_digits(runs: Path) -> None:
    assert (N, "fpN") in _atomic(runs / "out-plain"), "nine digits: valid"
    bad = {row["line"].split("\t")[6]: row["errors"] for row in read_bad(runs / "bad-plain")}
    assert bad[BAD_TIME] == [
        {
            "level": "error",
            "message": "Field [etl_tstamp]: [2026-11-02 06:00:00] is not in the expected Redshift/Postgres "
            "timestamp format",
        }
    ]


def test_json_with_nan_is_invalid(runs: Path) -> None:
    bad = {row["line"].split("\t")[6]: row["errors"] for row in read_bad(runs / "bad-plain")}
    assert [e["message"] for e in bad[BAD_JSON]] == [
        f"Field [context]: invalid JSON [{NAN}] with parsing error: NaN is not a JSON value"
    ]
    assert not any("NaN" in text for texts in read_output(runs / "out-plain").values() for text in texts)


def test_a_line_with_a_field_error_gets_no_json_error(runs: Path) -> None:
    """The reference reads no JSON column once a field failed: only the field's message."""
    bad = {row["line"].split("\t")[6]: row["errors"] for row in read_bad(runs / "bad-plain")}
    assert [e["message"] for e in bad[BOTH]] == [
        "Field [collector_tstamp]: [yesterday] is not in the expected Redshift/Postgres timestamp format"
    ]


def test_crlf_and_lone_cr_end_lines_and_no_line_keeps_a_cr(runs: Path) -> None:
    atomic = _atomic(runs / "out-plain")
    assert all((event_id, "fp") in atomic for event_id in [*LF, *CR])
    everything = [p.read_bytes() for p in (runs / "out-plain").rglob("part-*")]
    everything += [p.read_bytes() for p in (runs / "bad-plain").rglob("part-*")]
    assert not any(b"\r" in data for data in everything)


def test_bad_row_messages_quote_the_whole_value_and_null_when_empty(runs: Path) -> None:
    messages = sorted(m["message"] for row in read_bad(runs / "bad-plain") for m in row["errors"])
    assert "Field [event_id]: [null] is not a valid UUID" in messages
    assert f"Field [event_id]: [{LONG_ID}] is not a valid UUID" in messages
    assert len(messages) == 5  # with the field error of BOTH, and none of its JSON


def test_the_batch_etl_time_comes_from_valid_lines_only(runs: Path) -> None:
    assert _summary(runs / "out-plain")["etl_time"] == "2026-11-02 06:00:00"
    with sqlite3.connect(runs / "manifest.db") as db:
        stored = db.execute("SELECT DISTINCT etl_time FROM events_manifest ORDER BY 1").fetchall()
    seconds = [
        int(datetime.strptime(t, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC).timestamp()) for t in (ETL_1, ETL_2)
    ]
    assert [row[0] for row in stored] == seconds


def test_configs_are_read_as_the_reference_reads_them(spark: Any, tmp_path: Path, dynalite: LocalServer) -> None:
    """A `1-0-1` config given as URL-safe base64 without padding, broken over lines."""
    for name in (f"dedup{'~' * n}" for n in range(8)):
        config = {
            "schema": "iglu:com.snowplowanalytics.snowplow.storage/amazon_dynamodb_config/jsonschema/1-0-1",
            "data": {
                "name": name,
                "accessKeyId": "AKIDEXAMPLE",
                "secretAccessKey": "not-a-secret?>",
                "awsRegion": "us-east-1",
                "dynamodbTable": "fidelity-config",
                "purpose": "DUPLICATE_TRACKING",
            },
        }
        standard = base64.b64encode(json.dumps(config).encode()).decode()
        if ("+" in standard or "/" in standard) and standard.endswith("="):
            break
    lenient = base64.urlsafe_b64encode(json.dumps(config).encode()).decode().rstrip("=")
    lenient = "\n".join(lenient[i : i + 60] for i in range(0, len(lenient), 60))
    batch = _write(tmp_path / "in", {"a.tsv": f"{line(X, 'fpA', ETL_1)}\n".encode()})
    flags = ["--duplicate-storage-config", lenient, "--dynamodb-endpoint", dynalite.endpoint, "--create-table"]
    _run(tmp_path, "--input-folder", batch, "--output-folder", "out", "--bad-folder", "bad", *flags)
    assert _summary(tmp_path / "out")["kept_events"] == 1
