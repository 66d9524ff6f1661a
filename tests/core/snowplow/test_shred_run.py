"""One run of the shred job from its checks to its commit (`_snowplow.shred_run`), without Spark: an
engine that decides a batch's lines with the core's `Shred` in this process and lays them out as
Spark's partitioned write does, on local folders and a SQLite manifest. Killed at each named step
(`tests.crashes`), the puts among them (in Spark's workers, out of a test's reach but for a real
kill), a rerun gives the unbroken run's output; every check comes before the first write; a failed
write leaves nothing. The same run on Spark: `tests/spark/shred/`."""

from __future__ import annotations

import gzip
import re
import shutil
from collections import Counter, defaultdict
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from urllib.parse import quote

import attrs
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings

from events_manifest import ManifestUnavailableError, RunConflictError, SqliteManifest
from events_manifest._iglu.resolver import ResolverConfig
from events_manifest._jobs.folders import InputMissingError
from events_manifest._jobs.staging import Staging
from events_manifest._jobs.storage import Listing, LocalStorage, being_copied, join
from events_manifest._snowplow import shred_output
from events_manifest._snowplow.batch import Shred
from events_manifest._snowplow.dedup import KEPT
from events_manifest._snowplow.shred_run import ShredRequest, Staged, run
from events_manifest._snowplow.summary import ShredSummary
from events_manifest.errors import InputNotWholeError, ManifestConfigError, from_record
from events_manifest.testing.strategies import EVENT_ID, TXN_ID, Batches, enriched_batches
from tests.crashes import Crashes
from tests.examples import examples
from tests.shred_helpers import (
    FailingAfterPuts,
    KeptOnce,
    generated_batch,
    line,
    read_bad,
    read_output,
    the_unbroken_output,
    write_input,
    written,
)

ETL = datetime(2026, 11, 1, 6)
"""The generated batch's etl time (`generated_batch`)."""


@attrs.frozen
class Scan:
    lines: int
    etl_time: datetime | None

    def release(self) -> None:
        pass


@attrs.define
class LocalShred:
    """The shred run's engine in this process: the input's lines read whole, decided in one call of
    `Shred` (every line of an id together, as Spark's two paths bring them), written as Spark writes
    them (a `kind=`/`type=` folder of each). `lost` lines are left out of the counts."""

    storage: LocalStorage = attrs.field(factory=LocalStorage)
    lost: int = 0
    etl: datetime | None = ETL
    """The etl time its scan finds (Spark's: the earliest etl_tstamp of the batch's valid lines)."""
    lines: list[str] = attrs.field(factory=list)

    def absolute(self, path: str) -> str:
        return str(Path(path).absolute())

    def read(self, inputs: Sequence[str]) -> Listing:
        found = sorted(
            file
            for source in map(Path, inputs)
            for file in (source.iterdir() if source.is_dir() else [source])
            if not file.name.startswith(("_", "."))
        )
        files = [file for file in found if not being_copied(str(file))]
        texts = (gzip.decompress(f.read_bytes()) if f.suffix == ".gz" else f.read_bytes() for f in files)
        self.lines = [line for text in texts for line in re.split(r"\r\n|\r|\n", text.decode().removesuffix("\n"))]
        copying = tuple(self.storage.qualify(str(file)) for file in found if being_copied(str(file)))
        return Listing(tuple((self.storage.qualify(str(file)), file.stat().st_size) for file in files), copying=copying)

    def scan(self, iglu: ResolverConfig | None) -> Scan:
        return Scan(len(self.lines), self.etl)

    def write(self, staging: Staging, scan: Scan, shred: Shred) -> Staged:
        counts: Counter[str] = Counter()
        entities: Counter[str] = Counter()
        groups: dict[tuple[str, str], list[str]] = defaultdict(list)
        for row in (row for batch in shred.lines_of(pa.array(self.lines, pa.string())) for row in batch.to_pylist()):
            if row["failure"] is not None:
                raise from_record(row["failure"])
            if row["value"] is None:
                counts.update({name: row[name] or 0 for name in shred_output.COUNTS})
                continue
            groups[row["kind"], row["type"]].append(row["value"])
            if row["kind"] == shred_output.SHREDDED_KIND:
                entities[row["type"]] += row["lines"]
        counts[KEPT] -= self.lost
        path = staging.path("local")
        for (kind, type_), values in groups.items():
            part = join(path, f"kind={kind}", f"type={quote(type_, safe='')}", "part-00000")
            self.storage.write_text(part, "\n".join(values) + "\n")
        return Staged([path], dict(counts), dict(sorted(entities.items())))


def shred(work: Path, source: str, engine: LocalShred | None = None, **options: object) -> ShredSummary:
    request = ShredRequest((source,), str(work / "out"), str(work / "bad"), **options)  # type: ignore[arg-type]
    return run(request, engine or LocalShred())


FIRST_RUN = ["started", "puts", "staged"]
REPLACING_RUN = ["committing", "committed"]
"""Steps of a first run into empty folders, and of one that replaces its output on purpose."""


def test_a_run_killed_at_each_step_is_finished_by_a_rerun(tmp_path: Path, subtests: pytest.Subtests) -> None:
    source = generated_batch(tmp_path / "batch", events=300)
    work, db = tmp_path / "work", tmp_path / "m.db"
    work.mkdir()
    crashes = Crashes(work, db, tmp_path / "crashes")
    with crashes.recording(FIRST_RUN):
        shred(work, source, manifest=f"sqlite:///{db}")
    unbroken = written(work)
    assert unbroken["kept"] > 250 and unbroken["bad"], "events kept, bad lines bad rows"
    with crashes.recording(REPLACING_RUN):
        shred(work, source, manifest=f"sqlite:///{db}", overwrite=True, rerun=True)
    for step in FIRST_RUN + REPLACING_RUN:
        with subtests.test(step=step):
            url = crashes.restore(step)
            assert url is not None
            shred(work, source, manifest=url, overwrite=True, rerun=step in REPLACING_RUN)
            the_unbroken_output(work, unbroken, Path(url.removeprefix("sqlite:///")))


def test_every_check_comes_before_the_first_write(tmp_path: Path) -> None:
    """A run refused by a check creates no folder, opens no manifest, puts nothing."""
    source = generated_batch(tmp_path / "batch", events=20)
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty/_SUCCESS").write_text("")
    copying = tmp_path / "copying"
    shutil.copytree(source, copying)
    (copying / "part-9.tsv._COPYING_").write_text("half a li")  # `hadoop fs -put`'s name until its copy ends
    db = tmp_path / "m.db"
    url = f"sqlite:///{db}"
    refusals: list[tuple[type[Exception], str, str, str, dict[str, object]]] = [
        (ManifestConfigError, "needs a manifest", source, "out", {"cross_batch_synthetic": True}),
        (InputMissingError, "does not exist", str(tmp_path / "missing"), "out", {"manifest": url}),
        (ManifestConfigError, "is inside the input", source, str(Path(source) / "out"), {"manifest": url}),
        (ManifestConfigError, "no data for the job to read", str(tmp_path / "empty"), "out", {"overwrite": True}),
        (InputNotWholeError, "part-9.tsv._COPYING_ is still being copied", str(copying), "out", {"manifest": url}),
    ]
    for error, message, folder, output, options in refusals:
        with pytest.raises(error, match=message):
            run(ShredRequest((folder,), str(tmp_path / output), str(tmp_path / "bad"), **options), LocalShred())  # type: ignore[arg-type]
        assert not (tmp_path / output).exists() and not (tmp_path / "bad").exists() and not db.exists()


def test_lines_unaccounted_for_are_not_written_and_the_run_fails_in_the_ledger(tmp_path: Path) -> None:
    source, db = generated_batch(tmp_path / "batch", events=20), tmp_path / "m.db"
    with pytest.raises(RuntimeError, match="lines are unaccounted for"):
        shred(tmp_path, source, LocalShred(lost=1), manifest=f"sqlite:///{db}")
    assert not (tmp_path / "out").exists() and not (tmp_path / "bad").exists(), "nothing written"
    with SqliteManifest(db) as manifest:
        assert [r.state for r in manifest.runs()] == ["failed"]
    summary = shred(tmp_path, source, manifest=f"sqlite:///{db}")
    assert summary.balanced and summary.etl_time == "2026-11-01 06:00:00"
    with SqliteManifest(db) as manifest:
        assert [r.state for r in manifest.runs()][-1] == "finished"


@attrs.define
class Delivering(LocalShred):
    """The engine of a run that must deliver what a killed run sealed: it reads the input (the
    checks list its files), and fails if asked to compute it again."""

    def scan(self, iglu: ResolverConfig | None) -> Scan:
        raise AssertionError("the sealed run was computed again")


SEALED_FIRST = ["sealed", "moving"]
SEALED_REPLACING = ["sealed", "committing", "moving"]
"""Steps once the run is sealed, of a first run into empty folders and of one that replaces its
output on purpose (`committing`: the earlier output deleted, none of the new one moved yet)."""


def test_a_run_killed_once_sealed_is_delivered_as_sealed_not_computed_again(
    tmp_path: Path, subtests: pytest.Subtests
) -> None:
    """From `sealed` on, the next run of the same input delivers what the killed one staged: its
    lines, its summary, its etl time in the ledger; with what it moved already kept where it is,
    not replaced as an earlier run's output."""
    source = generated_batch(tmp_path / "batch", events=300)
    work, db = tmp_path / "work", tmp_path / "m.db"
    work.mkdir()
    first, replacing = Crashes(work, db, tmp_path / "first"), Crashes(work, db, tmp_path / "replacing")
    with first.recording(SEALED_FIRST):
        shred(work, source, manifest=f"sqlite:///{db}")
    unbroken = written(work)
    with replacing.recording(SEALED_REPLACING):
        shred(work, source, manifest=f"sqlite:///{db}", overwrite=True, rerun=True)
    assert written(work) == unbroken
    for crashes, steps, options in ((first, SEALED_FIRST, {}), (replacing, SEALED_REPLACING, {"rerun": True})):
        for step in steps:
            with subtests.test(step=step, rerun=bool(options)):
                url = crashes.restore(step)
                assert url is not None
                [staging] = (work / "out").glob(".staging-*")
                moved = sorted(p.relative_to(work) for p in work.rglob("part-*") if ".staging-" not in str(p))
                # into folders that hold no earlier output, no --overwrite is needed
                overwrite = bool(options) or step != "sealed"
                summary = shred(work, source, Delivering(), manifest=url, overwrite=overwrite, **options)
                the_unbroken_output(work, unbroken, Path(url.removeprefix("sqlite:///")))
                assert summary.kept_events == unbroken["kept"] and not staging.exists()
                assert all((work / path).exists() for path in moved), "what was moved stays"


def test_a_sealed_run_is_kept_until_a_run_of_its_own_input_delivers_it(tmp_path: Path) -> None:
    """A run killed once sealed, then a run of another input into the same folders: refused by the
    ledger (the killed run's events are stored, not delivered), its staging folder kept; the
    killed run's input run again delivers it."""
    source = generated_batch(tmp_path / "batch", events=100)
    other = generated_batch(tmp_path / "other", events=50)
    work, db = tmp_path / "work", tmp_path / "m.db"
    work.mkdir()
    crashes = Crashes(work, db, tmp_path / "crashes")
    with crashes.recording(["sealed"]):
        shred(work, source, manifest=f"sqlite:///{db}")
    unbroken = written(work)
    url = crashes.restore("sealed")
    assert url is not None
    with pytest.raises(ManifestConfigError, match=r"stopped without finishing.*Rerun it first"):
        shred(work, other, manifest=url, overwrite=True)
    [staging] = (work / "out").glob(".staging-*")
    assert (staging / "_sealed.json").exists()
    shred(work, source, Delivering(), manifest=url)
    the_unbroken_output(work, unbroken, Path(url.removeprefix("sqlite:///")))


def test_a_sealed_run_is_delivered_only_for_its_own_input_and_etl_time(tmp_path: Path) -> None:
    """Without a manifest, no ledger stands between a sealed run and the next run into its folders:
    a run of another input, or of its input at another etl time, computes its own output (the
    sealed one deleted), never delivers the sealed one's."""
    source = generated_batch(tmp_path / "batch", events=100)
    other = generated_batch(tmp_path / "other", events=50)
    alone = tmp_path / "alone"
    alone.mkdir()
    shred(alone, other)
    expected = written(alone)
    work = tmp_path / "work"
    work.mkdir()
    crashes = Crashes(work, None, tmp_path / "crashes")
    with crashes.recording(["sealed"]):
        shred(work, source)
    crashes.restore("sealed")
    shred(work, other)
    assert written(work) == expected
    assert not list((work / "out").glob(".staging-*"))
    crashes.restore("sealed")
    later = datetime(2026, 11, 2, 6)
    summary = shred(work, source, overwrite=True, etl_time=later)
    assert summary.etl_time == "2026-11-02 06:00:00" and not list((work / "out").glob(".staging-*"))


A, B = "c6ef3124-b53a-4b13-a233-0088f79dcbcb", "d7f5fa2f-3b3a-4c97-a030-8e05d9f40b0a"


def test_a_run_that_failed_after_its_puts_is_finished_by_its_own_input_only(tmp_path: Path) -> None:
    """Run again on the same input, a run that failed after its puts needs no flag: its events are
    its own. Had the input gained a line of an earlier etl_tstamp since, the ledger knows the failed
    run read other files, and refuses to let the changed input finish it (its events would be
    mixed up with the failed run's); once the failed run is cleaned, the changed input runs whole."""
    first = [line(A, "FP", etl="2026-11-01 06:00:00.000")]
    sources = {case: str(write_input(tmp_path / case / "in", first)) for case in ("same", "changed")}
    for case, source in sources.items():
        work, store = tmp_path / case, tmp_path / f"{case}.db"
        with pytest.raises(ManifestUnavailableError, match="went away"):
            shred(work, source, manifest=FailingAfterPuts(store))
        assert not (work / "out").exists() and not (work / "bad").exists(), "no folder left behind"
        assert SqliteManifest(store).lookup(A, "FP") is not None, "the failed run recorded its event"
    url = f"sqlite://{tmp_path / 'same.db'}"
    again = shred(tmp_path / "same", sources["same"], manifest=url)
    assert (again.kept_events, again.cross_batch_duplicates) == (1, 0), "its own event, not a duplicate"

    work, store, url = tmp_path / "changed", tmp_path / "changed.db", f"sqlite://{tmp_path / 'changed.db'}"
    changed = str(write_input(work / "in", [*first, line(B, "FP", etl="2026-11-01 05:00:00.000")]))
    earlier = LocalShred(etl=datetime(2026, 11, 1, 5))
    with pytest.raises(
        RunConflictError, match=r"Finish it with --etl-time '2026-11-01 06:00:00', not 2026-11-01 05:00"
    ):
        shred(work, changed, earlier, manifest=url, etl_time=datetime(2026, 11, 1, 5))
    with pytest.raises(
        RunConflictError, match=r"names another input than the run of .* \(failed\), which read 1 files"
    ):
        shred(work, changed, earlier, manifest=url)
    assert not (work / "out").exists(), "refused before any folder"
    with SqliteManifest(store) as manifest:
        manifest.clean(datetime(2026, 11, 1, 6))
    summary = shred(work, changed, earlier, manifest=url)
    assert (summary.kept_events, summary.cross_batch_duplicates) == (2, 0), "the failed run's event is kept"
    with SqliteManifest(store) as manifest:
        assert [run.state for run in manifest.runs()] == ["finished"]


@settings(max_examples=examples(30), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=enriched_batches(batches=2))
def test_every_line_is_accounted_for_and_every_event_is_kept_once(
    tmp_path_factory: pytest.TempPathFactory, data: Batches
) -> None:
    """Over a sequence of generated batches on one manifest: each input line is kept, dropped as a
    duplicate (counted) or a bad row, the bad rows are the lines bad by construction, each event is
    kept once (in the batch it first came in), and a rerun of the last batch gives the same output
    and counts. Spark's paths give the engine's lines: `tests/spark/shred/test_pipeline_properties.py`."""
    folder = tmp_path_factory.mktemp("sequence")
    url = f"sqlite:///{folder}/manifest.db"
    kept_once = KeptOnce()
    for k, lines in enumerate(data.batches):
        source = str(write_input(folder / f"in-{k}", lines))
        engine = LocalShred(etl=min((e.etl for e in data.events[k]), default=None))
        summary = shred(folder / f"run-{k}", source, engine, manifest=url)
        atomic = read_output(folder / f"run-{k}/out")["atomic-events"]
        dropped = summary.in_batch_duplicates + summary.cross_batch_duplicates
        assert summary.input_lines == len(lines) == len(atomic) + summary.bad_rows + dropped
        assert sorted(row["line"] for row in read_bad(folder / f"run-{k}/bad")) == sorted(data.bad[k])
        kept_once.batch(k, data.events[k], [(a.split("\t")[TXN_ID], a.split("\t")[EVENT_ID]) for a in atomic])
    kept_once.check()

    last = folder / f"run-{len(data.batches) - 1}"
    rerun = shred(folder / "rerun", source, engine, manifest=url, rerun=True)
    assert written(folder / "rerun") == written(last)
    assert rerun.counts() == summary.counts()
