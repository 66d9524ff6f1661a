"""Properties of the shred job on generated batches: its Spark paths, whatever the input's order
and split, give the lines the core's engine gives (whose own properties over a sequence of batches,
every line accounted for, every event kept once, reruns identical, run without Spark:
`tests/core/snowplow/test_shred_run.py`); fuzzed lines never crash the job, each ends up once.

Three examples per property in the suite; ten times as many with `EVENTS_MANIFEST_EXAMPLES=10 pytest ...`.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from events_manifest._backends.sqlite import SqliteManifest
from events_manifest._opening.handle import ManifestHandle
from events_manifest._snowplow.batch import Shred
from events_manifest._snowplow.dedup import Dedup
from events_manifest._snowplow.shred_output import COUNTS
from events_manifest.model import to_epoch_seconds
from events_manifest.testing.strategies import EPOCH, Batches, Event, enriched_batches
from spark_integration import shred
from spark_integration._shred.plan import output_lines
from spark_integration._spark.enriched import load_enriched
from spark_integration._spark.scan import scan_batch
from tests.examples import examples
from tests.shred_helpers import read_bad, read_output, write_input

SLOW = settings(
    max_examples=examples(3),
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.every_line
@SLOW
@given(
    data=enriched_batches(batches=2, max_events=14), order=st.randoms(use_true_random=False), files=st.integers(2, 4)
)
def test_every_path_and_every_order_of_the_lines_give_the_same_bytes(
    spark: Any, tmp_path_factory: pytest.TempPathFactory, data: Batches, order: random.Random, files: int
) -> None:
    """The job decides lines of ids found once where it reads them, and shuffles the others; with
    every line shuffled instead, and the lines read in another order from several files, the scan
    finds the same, and every output line, every count and every manifest entry is the same, batch
    after batch, with cross-batch synthetic dedup on; and the same as the core's engine gives,
    deciding each batch whole in one call, as `tests/core/snowplow/test_shred_run.py` runs it over
    generated batches: every line accounted for, every event kept once, reruns identical."""
    folder = tmp_path_factory.mktemp("paths")
    stores = {name: folder / f"{name}.db" for name in ("split", "shuffled", "whole")}
    for k, lines in enumerate(data.batches):
        source = load_enriched(spark, str(write_input(folder / f"in-{k}", lines)))
        shuffled = order.sample(lines, len(lines))
        parts = [shuffled[n::files] for n in range(files)]
        reordered = load_enriched(spark, str(write_input(folder / f"reordered-{k}", *parts)))
        scan, other_scan = scan_batch(source), scan_batch(reordered)
        try:
            assert other_scan.lines == scan.lines == len(lines) and other_scan.etl_time == scan.etl_time
            assert sorted(r.key for r in other_scan.keys.collect()) == sorted(r.key for r in scan.keys.collect())
            etl = scan.etl_time or EPOCH
            written = []
            for name, lines_read, keys in (("split", source, scan.shared_keys), ("shuffled", reordered, None)):
                handle = ManifestHandle.of(f"sqlite://{stores[name]}")
                plan = output_lines(lines_read, etl, handle, "T", shared_keys=keys, cross_batch_synthetic=True)
                written.append(_written([group.asDict() for group in plan.collect()]))
            whole_store = ManifestHandle.of(f"sqlite://{stores['whole']}")
            decide = Dedup(whole_store, to_epoch_seconds(etl), synthetic=True, cross_batch_synthetic=True)
            whole = Shred(decide, "T").lines_of(pa.array(lines, pa.string()))
            assert written[0] == written[1] == _written([row for batch in whole for row in batch.to_pylist()])
        finally:
            scan.release()
            other_scan.release()
    ids = sorted({e.event_id for events in data.events for e in events})
    contents = []
    for store in stores.values():
        with SqliteManifest(store) as manifest:
            contents.append(
                {
                    i: sorted((e.fingerprint, e.etl_seconds) for e in found)
                    for i, found in manifest.entries_of(ids).items()
                }
            )
    assert contents[0] == contents[1] == contents[2]


def _written(groups: list[dict[str, Any]]) -> tuple[list[tuple[str, str, str]], dict[str, int]]:
    """The output lines of a run (where each goes, and its text), sorted, and its counts."""
    lines = [(g["kind"], g["type"], text) for g in groups if g["value"] is not None for text in g["value"].split("\n")]
    assert len(lines) == sum(g["lines"] for g in groups)
    return sorted(lines), {name: sum(g[name] or 0 for g in groups) for name in COUNTS}


def _fields(texts: list[str]) -> str:
    return "\t".join(texts)


_text = st.text(st.characters(exclude_characters="\n\r", exclude_categories=["Cs"]), max_size=30)  # a line
arbitrary_lines = st.one_of(
    _text,
    st.lists(_text, max_size=140).map(_fields),
    st.lists(
        st.sampled_from(["", "x", "{", "2026-01-01 00:00:00", "00000000-0000-4000-8000-000000000001"]), max_size=140
    ).map(_fields),
)


@SLOW
@given(
    data=enriched_batches(batches=1, max_events=6),
    arbitrary=st.lists(arbitrary_lines, max_size=25),
    mangled=st.lists(st.tuples(st.integers(0, 130), _text), max_size=10),
)
def test_fuzzed_lines_never_crash_and_each_ends_up_once(
    spark: Any,
    tmp_path_factory: pytest.TempPathFactory,
    data: Batches,
    arbitrary: list[str],
    mangled: list[tuple[int, str]],
) -> None:
    """Arbitrary text, random field counts, and valid lines with a random field replaced: each line
    is kept, dropped as a duplicate or a bad row whose message names the problem."""
    folder = tmp_path_factory.mktemp("fuzz")
    lines = list(data.batches[0])
    for n, (index, text) in enumerate(mangled):
        fields = Event(str(uuid.UUID(int=n + 1, version=4)), f"M{n}", EPOCH, EPOCH, f"M{n}").line().split("\t")
        fields[index] = text
        lines.append("\t".join(fields))
    lines += arbitrary
    summary = shred(spark, str(write_input(folder / "in", lines)), str(folder / "out"), str(folder / "bad"))
    bad = read_bad(folder / "bad")
    atomic = read_output(folder / "out")["atomic-events"]
    assert summary.input_lines == len(lines)
    assert summary.balanced and len(atomic) == summary.kept_events and len(bad) == summary.bad_rows
    assert Counter(row["line"] for row in bad) <= Counter(lines)
    assert set(data.bad[0]) <= {row["line"] for row in bad}
    assert all(row["errors"] and all(e["message"] for e in row["errors"]) for row in bad)
    assert set(arbitrary) <= {row["line"] for row in bad}
