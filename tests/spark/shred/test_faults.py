"""The shred job under injected faults and hostile input: the output is still exactly right."""

from __future__ import annotations

import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

import attrs

from events_manifest.testing import FaultProxy, LocalServer
from events_manifest.testing.strategies import EPOCH, Event
from spark_integration import shred
from tests.backends import unique_table
from tests.shred_helpers import contexts, line, read_bad, read_output, sdj, write_input

IDS = [f"{n:08x}-4b13-4a23-8088-f79dcbcb{n:04x}" for n in range(1, 41)]


def test_throttled_run_gives_the_unthrottled_output(spark: Any, tmp_path: Path, dynalite: LocalServer) -> None:
    lines = [line(i, f"FP{n % 3}") for n, i in enumerate(IDS)] + [line(IDS[0], "FP0"), line(IDS[1], "other")]
    source = str(write_input(tmp_path / "in", lines))

    def run(endpoint: str, name: str) -> tuple[Any, dict[str, list[str]]]:
        url = f"dynamodb://{unique_table()}?region=us-east-1&endpoint={endpoint}&create=true&max_attempts=20"
        summary = shred(spark, source, str(tmp_path / name), str(tmp_path / f"{name}-bad"), manifest=url)
        return summary, read_output(tmp_path / name)

    calm_summary, calm = run(dynalite.endpoint, "calm")
    with FaultProxy(dynalite.endpoint, throttle_rate=0.15, seed=11) as proxy:
        stormy_summary, stormy = run(proxy.endpoint, "stormy")
        assert proxy.throttled > 0
        print(f"throttled {proxy.throttled} of {proxy.requests} requests")
    assert stormy == calm
    same_places = {"output_path": stormy_summary.output_path, "bad_path": stormy_summary.bad_path}
    assert stormy_summary == attrs.evolve(calm_summary, manifest=stormy_summary.manifest, **same_places)


def test_hostile_schema_names_stay_inside_the_output(spark: Any, tmp_path: Path) -> None:
    hostile = [
        "iglu:../../../../tmp/evil/jsonschema/1-0-0",
        "iglu:com.acme/../jsonschema/1-0-0",
        "iglu:com.acme/x\\/y/jsonschema/1-0-0",
        "iglu:com.acme/name/jsonschema/1-0-0/../..",
        "iglu:com.acme/na%2Fme/jsonschema/1-0-0",
    ]
    lines = [line(IDS[n], f"FP{n}", contexts=contexts(sdj(uri, "{}"))) for n, uri in enumerate(hostile)]
    dots = line(IDS[10], "FPX", contexts=contexts(sdj("iglu:../name/jsonschema/1-0-0", '{"a":1}')))
    summary, out = (
        shred(spark, str(write_input(tmp_path / "in", [*lines, dots])), str(tmp_path / "out"), str(tmp_path / "bad")),
        read_output(tmp_path / "out"),
    )
    assert summary.bad_rows == len(hostile)
    assert all("is not an Iglu URI" in row["errors"][0]["message"] for row in read_bad(tmp_path / "bad"))
    assert list(out) == ["atomic-events", "shredded-types/vendor=../name=name/format=jsonschema/version=1-0-0"]
    produced = {p.relative_to(tmp_path).parts[0] for p in tmp_path.rglob("*") if p.is_file()}
    assert produced == {"in", "out", "bad"}
    assert not Path("/tmp/evil").exists()


def test_hostile_lines_become_bad_rows_naming_the_problem(spark: Any, tmp_path: Path) -> None:
    """Invalid UTF-8, huge fields and JSON bombs: the job finishes and says what is wrong."""
    fine = line(IDS[0], "FP", page_url="https://example.com/")
    deep = contexts(sdj("iglu:com.acme/x/jsonschema/1-0-0", "[" * 100_000 + "]" * 100_000))
    wide = contexts(*[sdj("iglu:com.acme/x/jsonschema/1-0-0", "{}")] * 20_000)
    lines = [
        fine,
        line(IDS[1], "FP", page_url="https://example.com/\udcff", page_title="x"),  # a raw 0xFF byte
        line(IDS[2], "FP", page_url="x" * 5_000_000),
        line(IDS[3], "FP", contexts=deep),
        line(IDS[4], "FP", contexts=wide),
        line(IDS[5], "FP", contexts="{" * 2_000_000),
        "\t".join(["x"] * 100_000),
        line(IDS[6], "FP", contexts=contexts(sdj("iglu:com.acme/x/jsonschema/1-0-0", '{"a":"\udcff"}'))),
    ]
    source = write_input(tmp_path / "in", lines)
    summary = shred(spark, str(source), str(tmp_path / "out"), str(tmp_path / "bad"))
    out, bad = read_output(tmp_path / "out"), read_bad(tmp_path / "bad")
    messages = {row["line"][:120]: [e["message"] for e in row["errors"]] for row in bad}
    assert summary.input_lines == 8 and summary.bad_rows == 5 and summary.kept_events == 3
    assert len(out["atomic-events"]) == 3
    assert len(out["shredded-types/vendor=com.acme/name=x/format=jsonschema/version=1-0-0"]) == 20_000
    assert sorted(len(a) for a in out["atomic-events"])[-1] > 5_000_000
    by_id = {m[0].split("\t")[6] if "\t" in m[0] else m[0]: m[1] for m in messages.items()}
    assert "not valid UTF-8" in by_id[IDS[1]][0]
    assert "not valid UTF-8" in by_id[IDS[6]][0]  # inside a context's data too
    assert "nested too deeply" in by_id[IDS[3]][0]
    assert "invalid JSON" in by_id[IDS[5]][0]
    assert any("expected at most 131 fields; found 100000" in m[0] for m in messages.values())


def test_a_batch_of_bad_lines_only_leaves_empty_output_folders(spark: Any, tmp_path: Path) -> None:
    source = write_input(tmp_path / "in", ["garbage", line("not-a-uuid", "FP")])
    summary = shred(spark, str(source), str(tmp_path / "out"), str(tmp_path / "bad"))
    assert (summary.input_lines, summary.bad_rows, summary.kept_events, summary.entities) == (2, 2, 0, {})
    files = (p for p in (tmp_path / "out").rglob("*") if p.is_file() and not p.name.startswith("."))
    out = sorted(str(p.relative_to(tmp_path / "out")) for p in files)
    assert out == ["_shred.json", "_summary.json", "atomic-events/_SUCCESS", "shredded-types/_SUCCESS"]
    assert len(read_bad(tmp_path / "bad")) == 2


def test_two_racing_jobs_on_overlapping_inputs_keep_each_event_once(spark: Any, tmp_path: Path) -> None:
    """Job A reads days 1-2, job B days 2-3, at the same time, against one manifest: the events of
    day 2 are each kept by exactly one of them (the batch etl times differ, so neither is a rerun).
    On SQLite, whose writers' lock the two jobs' workers share; that racing puts are each accepted
    once on every backend, DynamoDB's among them: `tests/core/manifest/test_contract.py`."""
    days = []
    for day in range(3):
        etl = EPOCH + timedelta(days=day)
        events = [
            Event(str(uuid.UUID(int=day * 1000 + n + 1, version=4)), f"F{n % 3}", etl, etl, f"D{day}-{n}")
            for n in range(300)
        ]
        days.append(write_input(tmp_path / f"day-{day}", [e.line() for e in events] + [events[0].line()]))
    url = f"sqlite:///{tmp_path}/manifest.db"
    jobs = {"a": [str(days[0]), str(days[1])], "b": [str(days[1]), str(days[2])]}
    with ThreadPoolExecutor(2) as pool:
        running = {
            j: pool.submit(shred, spark, inputs, str(tmp_path / j), str(tmp_path / f"{j}-bad"), manifest=url)
            for j, inputs in jobs.items()
        }
        summaries = {j: future.result() for j, future in running.items()}
    kept = Counter(a.split("\t")[7] for j in jobs for a in read_output(tmp_path / j)["atomic-events"])
    assert set(kept.values()) == {1} and len(kept) == 900
    assert sum(s.cross_batch_duplicates for s in summaries.values()) == 300
    assert all(s.in_batch_duplicates == 2 and s.balanced for s in summaries.values())
