"""The jobs' files on Hadoop's file systems (`HadoopStorage`, as the jobs run it): the shred job's lines
staged by several jobs, moved into place together (on local folders: tests/core/jobs/test_staging.py);
a transformer run's files read as their folder where Spark takes the same ones."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import attrs
import pytest

from events_manifest._jobs.staging import Staging
from events_manifest._snowplow.shred_output import places, type_folder
from events_manifest.errors import InputNotWholeError
from spark_integration._spark.storage import HadoopStorage, literal

pytestmark = pytest.mark.every_line


def _stage(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_type_folders_are_laid_out_as_vendor_name_format_version() -> None:
    staged = "type=com.snowplowanalytics.snowplow%2Fweb_page%2Fjsonschema%2F1-0-0"
    assert type_folder(staged) == (
        "vendor=com.snowplowanalytics.snowplow/name=web_page/format=jsonschema/version=1-0-0"
    )


def test_a_path_is_named_as_its_file_system_names_it_whatever_folder_the_process_is_in(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The storage keeps what Hadoop answered (each file system, each path's full name): a relative
    path is still this process's folder's at each call, and one file system serves each way of
    naming the same place."""
    storage = HadoopStorage(spark)
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        monkeypatch.chdir(tmp_path / folder)
        assert storage.qualify("out") == storage.qualify("out") == f"file:{tmp_path / folder / 'out'}"
        storage.write_text("x/note.txt", folder)
        assert (tmp_path / folder / "x/note.txt").read_text() == folder
    named = [str(tmp_path / "a/x"), f"file:{tmp_path / 'a/x'}", f"file://{tmp_path / 'a/x'}"]
    assert {storage.qualify(path) for path in named} == {f"file:{tmp_path / 'a/x'}"}
    assert [storage.children(path) for path in named] == [["note.txt"]] * 3


def test_lines_staged_by_two_jobs_merge_into_one_layout(spark: Any, tmp_path: Path) -> None:
    out, bad = tmp_path / "out", tmp_path / "bad"
    bad.mkdir()
    storage = HadoopStorage(spark)
    staging = Staging(storage, storage.absolute(str(out)))
    first, second = Path(staging.path("first")), Path(staging.path("second"))
    page = "type=com.acme%2Fpage%2Fjsonschema%2F1-0-0"
    _stage(
        first,
        {
            "kind=atomic/type=_/part-1": "a1\n",
            f"kind=shredded/{page}/part-1": "p1\n",
            "kind=shredded/type=com.acme%2Fclick%2Fjsonschema%2F2-0-0/part-1": "c1\n",
            "kind=bad/type=_/part-1": "b1\n",
            "_SUCCESS": "",
        },
    )
    _stage(second, {"kind=atomic/type=_/part-2": "a2\n", f"kind=shredded/{page}/part-2": "p2\n"})

    staging.commit(places([str(first), str(second)], str(out), str(bad)))

    files = (p for p in tmp_path.rglob("*") if p.is_file() and not p.name.endswith(".crc"))  # Hadoop's checksums
    found = {str(p.relative_to(tmp_path)): p.read_text() for p in files}
    assert found == {
        "out/atomic-events/part-1": "a1\n",
        "out/atomic-events/part-2": "a2\n",
        "out/atomic-events/_SUCCESS": "",
        "out/shredded-types/vendor=com.acme/name=page/format=jsonschema/version=1-0-0/part-1": "p1\n",
        "out/shredded-types/vendor=com.acme/name=page/format=jsonschema/version=1-0-0/part-2": "p2\n",
        "out/shredded-types/vendor=com.acme/name=click/format=jsonschema/version=2-0-0/part-1": "c1\n",
        "out/shredded-types/_SUCCESS": "",
        "bad/part-1": "b1\n",
        "bad/_SUCCESS": "",
    }
    assert not any(p.name.startswith(".staging") for p in out.iterdir())


def test_a_failing_part_stops_the_other_and_its_own_error_is_raised(spark: Any, tmp_path: Path) -> None:
    """The run's two jobs: when one fails, the other is interrupted rather than left to finish, and
    the error raised is the failure's, not the interruption it caused."""
    import time
    from collections.abc import Iterator

    import pyarrow as pa
    import pytest

    from events_manifest._snowplow import shred_output
    from spark_integration._shred import plan
    from spark_integration._spark import udfs
    from tests.commands import wait_for

    batches_done = tmp_path / "done"
    batches_done.mkdir()

    def slow(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            time.sleep(0.5)  # the behaviour: a batch that is still running when the other job fails
            (batches_done / str(time.monotonic_ns())).touch()
            yield pa.RecordBatch.from_pylist([], shred_output.LINES_SCHEMA)
            del batch

    def failing() -> Any:
        wait_for(lambda: any(batches_done.iterdir()), "the slow job writing a batch")  # so it runs
        raise ValueError("the manifest is gone")

    slow_part = spark.range(20, numPartitions=1).mapInArrow(slow, udfs.LINES_TYPE)
    storage = HadoopStorage(spark)
    staging = Staging(storage, storage.absolute(str(tmp_path / "out")))
    conf = {"spark.sql.execution.arrow.maxRecordsPerBatch": "1"}
    previous = {key: spark.conf.get(key) for key in conf}
    for key, value in conf.items():
        spark.conf.set(key, value)
    try:
        with pytest.raises(ValueError, match="the manifest is gone"):
            plan.write_lines(spark, staging, {"slow": lambda: slow_part, "failing": failing})
    finally:
        for key, value in previous.items():
            spark.conf.set(key, value)
    assert len(list(batches_done.iterdir())) < 20  # 20 batches of 0.5 s: 10 s if left to finish


def _scanned(frame: Any) -> int:
    """How many paths Spark's file index of `frame` was given (its plan: `InMemoryFileIndex(n paths)`)."""
    [count] = re.findall(r"InMemoryFileIndex\((\d+) paths\)", frame._jdf.queryExecution().executedPlan().toString())
    return int(count)


def test_a_run_s_files_are_read_from_one_listing_of_their_folder_where_spark_takes_the_same(
    spark: Any, tmp_path: Path
) -> None:
    """A transformer run's text files (`folder_files`, then `frame_of`) read as their folder, which
    Spark lists once (named, it looks for each file on its own: on S3, tests/integration/test_s3.py),
    where its listing of the folder takes the same files; by their names where it would not: a
    sub-folder beside them (Spark's read of the folder takes a `k=v` one for a partition, or refuses
    the mix), a `_metadata` file (Spark reads it, the run's listing hides it as Hadoop does). A file
    still being copied (`NAME._COPYING_`, which Spark skips, even named) is kept apart in the listing,
    and in `files_of`'s, which the jobs refuse (`Listing.check_whole`)."""
    storage = HadoopStorage(spark)
    run = tmp_path / "run [1]"  # glob characters, read as themselves
    run.mkdir()
    for n in range(40):
        (run / f"part {n:02d} %ü.tsv").write_text(f"line {n}\n")
    (run / "_SUCCESS").write_text("")
    lines = sorted(f"line {n}" for n in range(40))

    listing = storage.folder_files(str(run))
    assert listing.folders == (f"file:{run}",) and len(listing.files) == 40
    frame = storage.frame_of(listing)
    assert _scanned(frame) == 1 and sorted(row.value for row in frame.collect()) == lines

    for beside, text in (
        ("sub/part", "in a sub-folder\n"),
        ("_metadata", "metadata\n"),
    ):
        with_it = tmp_path / f"with {beside.replace('/', '-')}"
        shutil.copytree(run, with_it)
        (with_it / beside).parent.mkdir(exist_ok=True)
        (with_it / beside).write_text(text)
        listing = storage.folder_files(str(with_it))
        assert listing.nested == ((f"file:{with_it}/sub",) if "/" in beside else ()), beside
        frame = storage.frame_of(listing)
        assert _scanned(frame) == len(listing.files) >= 40, beside
        assert sorted(row.value for row in frame.collect()) == lines, beside

    copying = run / "part 40.tsv._COPYING_"
    copying.write_text("half a li")
    for listing in (storage.folder_files(str(run)), storage.files_of(spark.read.text(literal(str(run))))):
        assert listing.copying == (f"file:{copying}",) and len(listing.files) == 40
        with pytest.raises(InputNotWholeError, match=r"part 40\.tsv\._COPYING_ is still being copied"):
            listing.check_whole()
    begun = tmp_path / "a copy begun"  # its first file not there yet: Spark reads nothing from the folder
    begun.mkdir()
    (begun / "part 0.tsv._COPYING_").write_text("half a li")
    listing = storage.files_of(spark.read.text(literal(str(begun))), roots=[str(begun)])
    assert listing.files == () and listing.copying == (f"file:{begun}/part 0.tsv._COPYING_",)
    runs = tmp_path / "runs"  # the same folder among others a glob matches
    shutil.copytree(run, runs / "run=1")
    shutil.copytree(begun, runs / "run=2")
    listing = storage.files_of(spark.read.text(f"{runs}/run=*"), roots=[f"{runs}/run=*"])
    assert len(listing.files) == 40 and listing.copying == (
        f"file:{runs}/run=1/part 40.tsv._COPYING_",
        f"file:{runs}/run=2/part 0.tsv._COPYING_",  # where Spark read nothing
    )
    (runs / "run=1/sub").mkdir()
    (runs / "run=1/sub/part-0.tsv").write_text("in a sub-folder\n")
    alone = f"{runs}/run=1/part 07 %ü.tsv"  # named alone, it takes only itself: not the copy beside it
    listing = storage.listing([alone])
    assert listing.files == ((f"file:{alone}", len("line 7\n")),) and (listing.copying, listing.nested) == ((), ())
    listing = storage.listing([f"{runs}/run=1/part 0*"])  # a glob: the folder where it matches files
    assert len(listing.files) == 10 and (listing.copying, listing.nested) == (
        (f"file:{runs}/run=1/part 40.tsv._COPYING_",),
        (f"file:{runs}/run=1/sub",),
    )


def test_a_window_s_records_are_read_from_one_listing_of_each_batch_s_folder(spark: Any, tmp_path: Path) -> None:
    """The stream's staged records (Parquet, a folder a micro-batch, as `StreamTransformer._stage`
    writes them) read as the batches' folders, a listing each, not file by file."""
    storage = HadoopStorage(spark)
    window = tmp_path / "window"
    for batch in range(3):
        records = spark.createDataFrame([(f"record {batch} {n}".encode(),) for n in range(8)], "value binary")
        records.repartition(4).write.parquet(str(window / f"batch={batch}"))
    listing = attrs.evolve(storage.folder_files(*(str(window / f"batch={n}") for n in range(3))), records=True)
    assert len(listing.folders) == 3 and len(listing.files) >= 6
    frame = storage.frame_of(listing)
    assert _scanned(frame) == 3
    assert sorted(bytes(row.value).decode() for row in frame.collect()) == sorted(
        f"record {batch} {n}" for batch in range(3) for n in range(8)
    )


def test_the_files_a_run_reads_are_sized_from_their_folder_whatever_its_name(spark: Any, tmp_path: Path) -> None:
    """`files_of` over a folder whose name holds what a URI would escape or cut (`#`, `?`, `%`, a space):
    each file's qualified name and size, a file alone in its folder too."""
    folder, alone = tmp_path / "in #1 ?x %20", tmp_path / "alone #2"
    folder.mkdir()
    alone.mkdir()
    for n, name in enumerate(["a b.tsv", "c#d", "e?f", "g%25h", "ü.tsv"]):
        (folder / name).write_text("x\n" * (n + 1))
    (alone / "only #").write_text("y\n")
    frame = spark.read.text([literal(str(folder)), literal(str(alone / "only #"))])
    expected = sorted(
        [*((f"file:{folder}/{p.name}", p.stat().st_size) for p in folder.iterdir()), (f"file:{alone}/only #", 2)]
    )
    assert sorted(HadoopStorage(spark).files_of(frame).files) == expected
