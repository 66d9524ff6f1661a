"""One transformer run from its claim to its commit (`_transformer.run.run_flow`), without Spark: a job
whose rows a plain function writes, on local folders and a SQLite manifest. Killed at each step of
its commit (`tests.crashes`: its rows staged, sealed, one file moved, all moved, the message sent,
committed), the next run of it finishes what the kill left: the folder an unbroken run leaves, the
sealed message delivered as it was sealed, sent once more at most, the ledger's run finished."""

from __future__ import annotations

import json
import shlex
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import attrs
import pytest

from events_manifest import SqliteManifest
from events_manifest._jobs.run import JobRun
from events_manifest._jobs.storage import Listing, LocalStorage, being_copied, join
from events_manifest._manifest.contract import DuplicateStorage
from events_manifest._manifest.ledger import COMMAND_LINE, Advice
from events_manifest._transformer.config import TransformerConfig
from events_manifest._transformer.run.commit import COMPLETE, RunCounts, State, inspect
from events_manifest._transformer.run.job import ADVICE, TransformerJob
from events_manifest._transformer.run.metrics import Reporter
from events_manifest._transformer.run.run_flow import Progress, RunResult, Write, run, run_all
from events_manifest.errors import InputNotWholeError, RunConflictError
from tests.commands import events_manifest
from tests.crashes import Crashes

STEPS = ["staged", "sealed", "moving", "moved", "messaged", "committed"]
SEALED = STEPS[1:-1]
"""The steps after which the run is delivered as it was sealed (the same message)."""
COUNTS = RunCounts(lines=4, good=2, bad=1, natural=1)


@attrs.frozen
class Job(TransformerJob[LocalStorage]):
    """The transformer's job on local folders (its runs' inputs listed as they are), the messages
    it sends kept in `sent`."""

    sent: list[str] = attrs.field(factory=list, kw_only=True)

    @classmethod
    def of(cls, config: TransformerConfig, manifest: DuplicateStorage, *, advice: Advice = COMMAND_LINE) -> Job:
        def listing(name: str) -> Listing:
            """The run folder's files, and those still being copied apart, as the glue's listing."""
            folder = Path(config.input) / name
            found = [(LocalStorage().qualify(str(p)), p.stat().st_size) for p in sorted(folder.iterdir())]
            return Listing(
                tuple(file for file in found if not being_copied(file[0])),
                copying=tuple(name for name, _ in found if being_copied(name)),
            )

        return cls.create(LocalStorage(), config, None, manifest, lister=listing, advice=advice)

    def send(self, name: str) -> Callable[[str], None]:
        return self.sent.append


def write(job: Job, ledger: JobRun, listing: Listing, staging: str, now: int) -> RunCounts:
    """The run's rows, as Spark writes them under its staging folder: two files of good rows, one
    of bad rows; the run started in the ledger at `now` (nanoseconds), as before the first put."""
    ledger.start(datetime.fromtimestamp(now // 10**9, UTC))
    for output, parts in (("output=good", ["part-0.txt", "part-1.txt"]), ("output=bad", ["part-0.txt"])):
        for part in parts:
            job.storage.write_text(join(staging, "data", output, part), f"{output}/{part}\n")
    return COUNTS


def tree(base: Path) -> dict[str, str]:
    return {str(p.relative_to(base)): p.read_text() for p in sorted(base.rglob("*")) if p.is_file()}


def test_a_run_killed_at_each_step_of_its_commit_is_finished_by_its_next_run(
    tmp_path: Path, subtests: pytest.Subtests
) -> None:
    (tmp_path / "in/run=1").mkdir(parents=True)
    (tmp_path / "in/run=1/part-0.tsv").write_text("lines\n")
    document = {"input": str(tmp_path / "in"), "output": {"path": str(tmp_path / "out")}}
    config = TransformerConfig.parse(json.dumps({**document, "formats": {"transformationType": "widerow"}}))
    db, crashes = tmp_path / "m.db", Crashes(tmp_path / "out", tmp_path / "m.db", tmp_path / "crashes")

    def transform(manifest: DuplicateStorage) -> tuple[Job, RunResult | None]:
        job = Job.of(config, manifest)
        return job, run(job, "run=1", Progress(), write)

    with SqliteManifest(db) as manifest, crashes.recording(STEPS):
        job, result = transform(manifest)
    assert result is not None and result.counts == COUNTS
    unbroken, [message] = tree(tmp_path / "out/run=1"), job.sent
    assert unbroken == {
        "output=bad/_SUCCESS": "",
        "output=bad/part-0.txt": "output=bad/part-0.txt\n",
        "output=good/_SUCCESS": "",
        "output=good/part-0.txt": "output=good/part-0.txt\n",
        "output=good/part-1.txt": "output=good/part-1.txt\n",
        COMPLETE: message,
    }

    for step in STEPS:
        with subtests.test(step=step):
            url = crashes.restore(step)
            assert url is not None
            left = inspect(LocalStorage(), str(tmp_path / "out/run=1"))
            assert left.claimed and left.state is (State.COMMITTED if step == "committed" else (
                State.UNFINISHED if step == "staged" else State.SEALED
            ))  # fmt: skip
            with SqliteManifest(url.removeprefix("sqlite:///")) as manifest:
                job, result = transform(manifest)
                records = manifest.runs()
            found = tree(tmp_path / "out/run=1")
            if step == "committed":
                assert result is None and job.sent == [], "a committed run is done: nothing sent again"
                assert found == unbroken, "what the kill left beside the commit removed"
                continue
            assert result is not None and result.counts == COUNTS
            assert found.keys() == unbroken.keys()
            assert {k: v for k, v in found.items() if k != COMPLETE} == {
                k: v for k, v in unbroken.items() if k != COMPLETE
            }
            assert job.sent == [found[COMPLETE]], "its message sent once, the one it commits"
            if step in SEALED:
                assert found[COMPLETE] == message, "delivered as it was sealed"
            assert [record.state for record in records] == ["finished"]


def test_every_run_goes_in_order_what_a_stopped_invocation_left_first(tmp_path: Path) -> None:
    """`run_all`: runs a stopped invocation left (a folder it began, a run the ledger holds as
    stopped) before new ones, each committed and reported; a done folder that is not this
    transformer's is said once."""
    for name in ("run=1", "run=2", "run=3", "run=4"):
        (tmp_path / "in" / name).mkdir(parents=True)
        (tmp_path / "in" / name / "part-0.tsv").write_text("lines\n")
    (tmp_path / "out/run=3/.staging-begun").mkdir(parents=True)
    (tmp_path / "out/run=4").mkdir()
    (tmp_path / "out/run=4/part-0").write_text("another tool's\n")
    document = {"input": str(tmp_path / "in"), "output": {"path": str(tmp_path / "out")}}
    config = TransformerConfig.parse(json.dumps({**document, "formats": {"transformationType": "widerow"}}))
    said: list[str] = []
    with SqliteManifest(tmp_path / "m.db") as manifest:
        job = Job.of(config, manifest)
        manifest.abandon_run(manifest.start_run(job.item("run=2")))  # stopped: failed, unfinished
        results = run_all(job, write, Reporter(config.monitoring), Progress(), said.append, said.append)
        assert all(record.finished for record in manifest.runs())
    assert [result.name for result in results] == ["run=2", "run=3", "run=1"]
    processing = [
        line.rstrip("/").rsplit("/", 1)[-1] for line in said if line.startswith("Batch Transformer: processing")
    ]
    assert processing == ["run=2", "run=3", "run=1"]
    assert [line for line in said if "was not successfully shredded" in line] == [
        f"file:{tmp_path}/in/run=4/ was not successfully shredded"
    ]
    assert all((tmp_path / "out" / name / COMPLETE).exists() for name in ("run=1", "run=2", "run=3"))


def test_a_run_a_copy_still_writes_into_waits_with_the_runs_after_it(tmp_path: Path) -> None:
    """A run folder holding a file still being copied (`NAME._COPYING_`, which Spark's read leaves
    out) is not transformed: committed now, its file would land in a done run, never read. The runs
    before it are committed, it and those after it left: nothing of them written, no ledger record;
    once the copy ends, the next invocation transforms them."""
    for name in ("run=1", "run=2", "run=3"):
        (tmp_path / "in" / name).mkdir(parents=True)
        (tmp_path / "in" / name / "part-0.tsv").write_text("lines\n")
    copying = tmp_path / "in/run=2/part-1.tsv._COPYING_"
    copying.write_text("half a li")
    document = {"input": str(tmp_path / "in"), "output": {"path": str(tmp_path / "out")}}
    config = TransformerConfig.parse(json.dumps({**document, "formats": {"transformationType": "widerow"}}))
    with SqliteManifest(tmp_path / "m.db") as manifest:
        job, progress = Job.of(config, manifest), Progress()
        with pytest.raises(InputNotWholeError) as refused:
            run_all(job, write, Reporter(config.monitoring), progress, print, print)
        said = str(refused.value)
        assert said.startswith(f"input file file:{copying} is still being copied")
        assert said.endswith(f"if no copy is running, it failed: delete file:{copying}, or copy the file again")
        assert progress.failed() == (
            "1 run committed before (run=1); run=2: nothing of it was committed, and the next invocation finishes it"
        )
        assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["run=1"]
        assert [record.item for record in manifest.runs()] == [job.item("run=1")]
        copying.rename(tmp_path / "in/run=2/part-1.tsv")  # the copy ended
        results = run_all(job, write, Reporter(config.monitoring), Progress(), print, print)
    assert [result.name for result in results] == ["run=2", "run=3"]
    assert all((tmp_path / "out" / name / COMPLETE).exists() for name in ("run=1", "run=2", "run=3"))


def test_files_directly_in_the_input_are_said_not_read(tmp_path: Path) -> None:
    """A file in the input, not in a run folder, is read by no run: said in one line, each time,
    the runs going on (an input given a run's own folder transforms nothing, and says why)."""
    (tmp_path / "in/run=1").mkdir(parents=True)
    (tmp_path / "in/run=1/part-0.tsv").write_text("lines\n")
    for name in ("part-0.tsv", "part-1.tsv", "part-2.tsv", "part-3.tsv", "_SUCCESS", ".part-0.tsv.crc"):
        (tmp_path / "in" / name).write_text("lines\n")
    document = {"input": str(tmp_path / "in"), "output": {"path": str(tmp_path / "out")}}
    config = TransformerConfig.parse(json.dumps({**document, "formats": {"transformationType": "widerow"}}))
    said: list[str] = []
    with SqliteManifest(tmp_path / "m.db") as manifest:
        results = run_all(Job.of(config, manifest), write, Reporter(config.monitoring), Progress(), print, said.append)
    assert [result.name for result in results] == ["run=1"]
    assert said == [
        f"file:{tmp_path}/in/ holds files outside any run folder (part-0.tsv, part-1.tsv, part-2.tsv and 1 more): "
        "a run is a folder in input, and these are not read; if input is a run's folder, give input the folder that "
        "holds it"
    ]


def test_what_a_failure_says_of_the_runs_committed_before_it() -> None:
    """The count of the runs committed before, the last three named: which they are is the order's."""
    progress = Progress(committed=["run=1"], current="run=2", started=True)
    assert progress.failed() == (
        "1 run committed before (run=1); run=2: nothing of it was committed, and the next invocation finishes it"
    )
    progress.committed += ["run=2", "run=3", "run=4"]
    progress.current, progress.sealed = "run=5", True
    assert progress.interrupted() == (
        "interrupted during run=5: 4 runs committed before (the last three: run=2, run=3, run=4); its rows are "
        "sealed, and the next invocation finishes it"
    )


def failing(job: Job, ledger: JobRun, listing: Listing, staging: str, now: int) -> RunCounts:
    """A write that fails once its puts are made (the run started in the ledger): a full disk."""
    write(job, ledger, listing, staging, now)
    raise RuntimeError("the disk is full")


def test_every_ledger_refusal_s_advice_followed_works(tmp_path: Path) -> None:
    """The ledger's refusals in the transformer's words, each followed to a committed run: a run that
    failed after its puts, whose input then changed (clean its entries with the command given); a
    run of another input stopped before its commit (run that input's transformer, or clean its
    entries). A held claim and `--rerun`, through the command: tests/spark/transformer/test_operations.py."""
    site, copy = tmp_path / "site", tmp_path / "copy"

    def transform(root: Path, name: str, through: Write[Job] = write) -> list[str]:
        """The runs the transformer of `root/name/in` commits, on the manifest `root/m.db`."""
        document = {"input": str(root / name / "in"), "output": {"path": str(root / name / "out")}}
        config = TransformerConfig.parse(json.dumps({**document, "formats": {"transformationType": "widerow"}}))
        with SqliteManifest(root / "m.db") as manifest:
            job = Job.of(config, manifest, advice=ADVICE)
            committed = run_all(job, through, Reporter(config.monitoring), Progress(), print, print)
        return [result.name for result in committed]

    def arrive(name: str, run: str, file: str) -> None:
        (site / name / "in" / run).mkdir(parents=True, exist_ok=True)
        (site / name / "in" / run / file).write_text("lines\n")

    def follow(root: Path, refusal: pytest.ExceptionInfo[RunConflictError]) -> None:
        """The `events-manifest ...` command the refusal advises, run in `root` as its words say."""
        text = str(refusal.value).split("`events-manifest ", 1)[1].split("`", 1)[0]
        done = events_manifest(root, *shlex.split(text))
        assert done.returncode == 0, done.stderr

    arrive("this", "run=2", "part-0.tsv")
    with pytest.raises(RuntimeError, match="the disk is full"):
        transform(site, "this", failing)
    assert not (site / "this/out/run=2").exists()
    arrive("this", "run=2", "part-1.tsv")
    with pytest.raises(RunConflictError, match="holds other files than when the run of") as changed:
        transform(site, "this")
    follow(site, changed)
    assert transform(site, "this") == ["run=2"]

    arrive("other", "run=9", "part-0.tsv")
    with pytest.raises(RuntimeError, match="the disk is full"):
        transform(site, "other", failing)
    arrive("this", "run=3", "part-0.tsv")
    stopped = r"Rerun it first \(run the transformer whose input holds it"
    with pytest.raises(RunConflictError, match=stopped):
        transform(site, "this")
    shutil.copytree(site, copy)  # for the other advice
    assert transform(site, "other") == ["run=9"]
    assert transform(site, "this") == ["run=3"]
    with pytest.raises(RunConflictError, match=stopped) as refused:
        transform(copy, "this")
    follow(copy, refused)
    assert transform(copy, "this") == ["run=3"]
