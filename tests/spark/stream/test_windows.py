"""The stream transformer in this process, on the suite's Spark session, with a clock the test
moves: windows committed in order, duplicates dropped across windows through the manifest, the
same output as the batch job for the same events (each mode), a second job refused, the config's
refusals. Kills at each step and restarts are in tests/spark/stream/test_crashes.py (in this process)
and tests/integration/test_stream.py (processes)."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from events_manifest import ManifestConfigError
from events_manifest._jobs.folders import FolderClaimedError
from events_manifest._transformer.stream.stream_config import StreamConfig
from events_manifest.iglu import ResolverConfig
from tests.commands import in_process, told
from tests.monitors import UNREACHABLE, SentryServer, StatsdServer
from tests.shred_helpers import contexts, sdj, unstruct
from tests.spark.transformer.test_command import outputs, read_lines, transformer, types
from tests.transformer_helpers import RESOLVER, Clock, b64, event

A = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"
B = "d7f5fa2f-3b3a-4c97-a030-8e05d9f40b0a"
C = "0f4a8c9e-1b2d-4e3f-8a5b-6c7d8e9f0a1b"
D = "5b0c7a3e-9d8f-4a1b-b2c3-d4e5f6a7b8c9"
E = "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b"
CLICK = sdj(
    "iglu:com.snowplowanalytics.snowplow/link_click/jsonschema/1-0-1", '{"targetUrl":"https://x/","elementId":"b"}'
)
PAGE = sdj("iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0", '{"id":"p1"}')


def write(folder: Path, name: str, lines: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))


def stream_config(tmp: Path, extra: dict[str, Any] | None = None) -> StreamConfig:
    (tmp / "in").mkdir(exist_ok=True)
    document = {
        "input": {"type": "file", "dir": str(tmp / "in")},
        "output": {"path": str(tmp / "out")},
        "trigger": "100 milliseconds",  # a test waits for the next micro-batch
    }
    return StreamConfig.parse(json.dumps({**document, **(extra or {})}))


@pytest.fixture
def iglu() -> ResolverConfig:
    return ResolverConfig.parse(json.dumps(RESOLVER))


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def stream(spark: Any, tmp_path: Path, iglu: ResolverConfig, clock: Clock) -> Iterator[Any]:
    from spark_integration.stream_transformer import StreamTransformer

    manifest = f"sqlite://{tmp_path / 'm.db'}"
    with StreamTransformer(spark, stream_config(tmp_path), iglu=iglu, manifest=manifest, clock=clock) as job:
        yield job


def tree(folder: Path) -> dict[str, list[str]]:
    """Every line below `folder`, by its partition folder relative to it, sorted (repeats kept)."""
    found: dict[str, list[str]] = {}
    for part in {part.parent for part in folder.rglob("part-*")}:
        found[str(part.relative_to(folder))] = sorted(read_lines(part))
    return found


def committed(out: Path) -> list[Path]:
    return sorted(p for p in out.glob("run=*") if (p / "shredding_complete.json").exists())


@pytest.mark.every_line
def test_windows_commit_in_order_with_duplicates_dropped_across_them(stream: Any, clock: Clock, tmp_path: Path) -> None:
    inp, out = tmp_path / "in", tmp_path / "out"
    query = stream.start()
    write(inp, "a.tsv.gz", [event(A, "fa"), event(A, "fa", etl="2026-11-01 06:00:09"), event(B), "bad"])
    query.processAllAvailable()
    assert committed(out) == [], "a window is committed once its time is over"
    clock.now += 600
    write(inp, "b.tsv.gz", [event(A, "fa", etl="2026-11-01 07:00:00"), event(C), event(C, "c2")])
    query.processAllAvailable()  # the second batch opens the next window and commits the first
    [first] = committed(out)
    assert re.fullmatch(rf"run=2026-11-18-10-30-00-{stream.app_id}", first.name)
    good, bad, message = outputs(first)
    assert sorted(row["event_id"] for row in good) == [A, B] and len(bad) == 1
    assert message["data"]["count"] == {"good": 2, "bad": 1}
    assert message["data"]["base"] == f"file:{first}/"
    assert stream.results[0].counts.natural == 1
    write(inp, "c.tsv.gz", [event(D)])
    query.processAllAvailable()
    clock.now += 600
    [later] = stream.commit_due()  # no batch came: the driver's loop commits the window once it is over
    assert later.name == f"run=2026-11-18-10-40-00-{stream.app_id}"
    assert [p.name for p in committed(out)] == [first.name, later.name]
    good, bad, message = outputs(out / later.name)
    counts = later.counts
    assert (counts.lines, counts.cross_batch, counts.natural, counts.bad) == (4, 1, 0, 0), "the first window's A"
    assert A not in {row["event_id"] for row in good} and bad == []
    duplicate = "contexts_com_snowplowanalytics_snowplow_duplicate_1"
    renamed = [row for row in good if row.get(duplicate)]
    assert len(good) == 3 and len(renamed) == 2, "C twice, both renamed (synthetic duplicates), and D"
    assert all(row[duplicate] == [{"originalEventId": C}] for row in renamed)
    assert message["data"]["count"] == {"good": 3, "bad": 0}
    assert not (out / "_checkpoint/lines" / first.name).exists(), "a committed window's staged lines are dropped"


def test_stopping_commits_the_open_window_and_releases_the_claims(stream: Any, tmp_path: Path) -> None:
    query = stream.start()
    write(tmp_path / "in", "a.tsv.gz", [event(A), event(B)])
    query.processAllAvailable()
    [result] = stream.stop()
    assert result.good == 2 and committed(tmp_path / "out")[0].name == result.name
    left = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert left == ["_checkpoint", result.name], "no claim, no sign of life left behind"
    assert not [p for p in (tmp_path / "out/_checkpoint").iterdir() if p.name.startswith(("_claim", "_alive"))]


def test_a_file_copied_in_with_an_old_modification_time_is_read_once_its_copy_ends(stream: Any, tmp_path: Path) -> None:
    query = stream.start()
    write(tmp_path / "in", "new.tsv.gz", [event(A)])
    query.processAllAvailable()
    write(tmp_path / "in", "archived.tsv.gz._COPYING_", [event(B)])  # `hadoop fs -put -p`'s name until it ends
    query.processAllAvailable()
    month_ago = time.time() - 30 * 86400
    os.utime(tmp_path / "in/archived.tsv.gz._COPYING_", (month_ago, month_ago))  # copied with its times kept
    (tmp_path / "in/archived.tsv.gz._COPYING_").rename(tmp_path / "in/archived.tsv.gz")
    query.processAllAvailable()
    [window] = stream.stop()
    assert window.good == 2, "Spark's file source alone would ignore a file a week older than the newest"
    assert window.counts.lines == 2, "the file being copied not read until its copy ended"


def test_a_window_whose_commit_fails_stops_the_stream_and_the_next_start_commits_it(
    spark: Any, tmp_path: Path, iglu: ResolverConfig, clock: Clock
) -> None:
    from spark_integration.demo import EMPTY_RESOLVER
    from spark_integration.stream_transformer import StreamFailedError, StreamTransformer

    config = stream_config(tmp_path, MODES["widerow parquet"])
    manifest = f"sqlite://{tmp_path / 'm.db'}"
    no_schemas = ResolverConfig.parse(json.dumps(EMPTY_RESOLVER))  # Parquet's columns need the entities' schemas
    stream = StreamTransformer(spark, config, iglu=no_schemas, manifest=manifest, clock=clock)
    query = stream.start()
    write(tmp_path / "in", "a.tsv.gz", [event(A, "fa", unstruct_event=unstruct(CLICK)), event(B)])
    query.processAllAvailable()
    clock.now += 600
    again_a = event(A, "fa", etl="2026-11-01 07:00:00", unstruct_event=unstruct(CLICK))
    write(tmp_path / "in", "b.tsv.gz", [event(C), again_a])
    with pytest.raises(Exception, match="link_click"):
        query.processAllAvailable()  # the second batch commits the first window: its schema is not found
    with pytest.raises(StreamFailedError, match=r"the stream stopped: .*link_click.* start it again on the same"):
        stream.stop()
    assert committed(tmp_path / "out") == [] and not (tmp_path / "out/_claim.json").exists()
    with StreamTransformer(spark, config, iglu=iglu, manifest=manifest, clock=clock) as again:
        again.start(available_now=True).awaitTermination()  # an earlier start's windows: committed first
        first, second = again.results
    assert (first.good, second.good, second.cross_batch_duplicates) == (2, 1, 1), "nothing lost, nothing doubled"
    assert [p.name for p in committed(tmp_path / "out")] == [first.name, second.name]


def test_a_second_job_on_the_same_output_or_checkpoint_is_refused(
    stream: Any, spark: Any, tmp_path: Path, iglu: ResolverConfig
) -> None:
    from spark_integration.stream_transformer import StreamTransformer

    stream.start()
    other = StreamTransformer(spark, stream_config(tmp_path), iglu=iglu)
    with pytest.raises(FolderClaimedError, match=r"output folder \[.*out\] is being written by another run"):
        other.start()
    elsewhere = tmp_path / "elsewhere"
    again = StreamTransformer(
        spark,
        StreamConfig.parse(
            json.dumps({"input": {"type": "file", "dir": str(tmp_path / "in")}, "output": {"path": str(elsewhere)}})
        ),
        iglu=iglu,
        checkpoint=str(tmp_path / "out/_checkpoint"),
    )
    with pytest.raises(FolderClaimedError, match=r"checkpoint folder .* is being written by another run"):
        again.start()
    assert not (elsewhere / "_claim.json").exists(), "the refused job released what it had claimed"


def entity_lines() -> list[str]:
    """Lines of every kind the transformer meets: entities, natural and synthetic duplicates, bad rows."""
    return [
        event(A, "fa", unstruct_event=unstruct(CLICK), contexts=contexts(PAGE)),
        event(A, "fa", etl="2026-11-01 06:00:09", unstruct_event=unstruct(CLICK), contexts=contexts(PAGE)),
        event(B, "b1", contexts=contexts(PAGE)),
        event(B, "b2"),
        event(C, txn_id="not a number"),
        "a line without tabs",
        event(D, collector="2026-11-01 05:00:00.250"),
    ]


MODES: dict[str, dict[str, Any]] = {
    "widerow json": {"formats": {"transformationType": "widerow"}},
    "widerow parquet": {"formats": {"transformationType": "widerow", "fileFormat": "parquet"}},
    "shred": {
        "formats": {
            "transformationType": "shred",
            "default": "TSV",
            "json": ["iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-*-*"],
        }
    },
}


@pytest.mark.parametrize("mode", [mode for mode in MODES if mode != "widerow json"])  # JSON: stream/test_crashes.py
def test_one_window_is_what_the_batch_job_writes_for_one_run(
    spark: Any, tmp_path: Path, iglu: ResolverConfig, mode: str
) -> None:
    from spark_integration.stream_transformer import StreamTransformer

    lines = entity_lines()
    run = tmp_path / "batch/in/run=2026-11-18-10-30-00"
    write(run, "a.tsv.gz", lines[:4])
    write(run, "b.tsv.gz", lines[4:])
    (tmp_path / "iglu.json").write_text(json.dumps(RESOLVER))
    batch_config = {"input": str(tmp_path / "batch/in"), "output": {"path": str(tmp_path / "batch/out")}, **MODES[mode]}
    done = transformer(
        tmp_path, "--iglu-config", "iglu.json", "--config", b64(json.dumps(batch_config)), "--manifest", "sqlite://b.db"
    )
    assert done.returncode == 0, told(done.stderr)
    shutil.copytree(run, tmp_path / "in", dirs_exist_ok=True)
    with StreamTransformer(
        spark, stream_config(tmp_path, MODES[mode]), iglu=iglu, manifest=f"sqlite://{tmp_path}/s.db", clock=Clock()
    ) as stream:
        stream.start(available_now=True).awaitTermination()
        [window] = stream.stop()
    ours, theirs = Path(window.base.removeprefix("file:")), tmp_path / "batch/out/run=2026-11-18-10-30-00"
    mine, reference = (json.loads((p / "shredding_complete.json").read_text())["data"] for p in (ours, theirs))
    assert (mine["count"], types({"data": mine})) == (reference["count"], types({"data": reference}))
    assert mine["count"] == {"good": 4, "bad": 2}
    if mode == "widerow parquet":
        import pyarrow.parquet as pq

        tables = [pq.read_table(p / "output=good") for p in (ours, theirs)]
        assert tables[0].schema == tables[1].schema
        key = [("event_id", "ascending"), ("etl_tstamp", "ascending")]
        assert tables[0].sort_by(key).to_pylist() == tables[1].sort_by(key).to_pylist()
        assert tree(ours / "output=bad") == tree(theirs / "output=bad")
    else:
        assert tree(ours) == tree(theirs)


def test_a_new_checkpoint_over_committed_windows_is_refused_without_a_manifest(
    spark: Any, tmp_path: Path, iglu: ResolverConfig
) -> None:
    """The checkpoint deleted, the output kept: no window is committed twice. Without a manifest the
    start is refused in one line; its advice followed (a manifest), the start goes on and says why
    reading the input again is harmless."""
    from spark_integration.stream_transformer import StreamTransformer

    write(tmp_path / "in", "a.tsv.gz", [event(A), event(B)])
    with StreamTransformer(spark, stream_config(tmp_path), iglu=iglu, manifest=f"sqlite://{tmp_path}/m.db") as first:
        first.start(available_now=True).awaitTermination()
    [window] = committed(tmp_path / "out")
    shutil.rmtree(tmp_path / "out/_checkpoint")
    write(tmp_path / "in", "b.tsv.gz", [event(C)])
    refused = StreamTransformer(spark, stream_config(tmp_path), iglu=iglu)
    with pytest.raises(ManifestConfigError) as caught:
        refused.start()
    said = str(caught.value)
    assert f"holds 1 committed windows ({window.name}, ...)" in said and "start with a manifest" in said
    assert "\n" not in said and not (tmp_path / "out/_claim.json").exists()
    reports: list[str] = []
    with StreamTransformer(
        spark, stream_config(tmp_path), iglu=iglu, manifest=f"sqlite://{tmp_path}/m.db", report=reports.append
    ) as second:
        second.start(available_now=True).awaitTermination()
        [later] = second.stop()
    assert any("the manifest drops the events they hold" in line for line in reports), reports
    assert later.counts.cross_batch == 2 and later.counts.good == 1
    assert [run.name for run in committed(tmp_path / "out")] == sorted([window.name, Path(later.base).name])


def test_the_checkpoint_and_the_output_stay_apart_from_the_input(
    spark: Any, tmp_path: Path, iglu: ResolverConfig
) -> None:
    from spark_integration.stream_transformer import StreamTransformer

    config = stream_config(tmp_path)
    with pytest.raises(ManifestConfigError, match=r"checkpoint \[.*in/cp\] is inside the input \[.*in\]"):
        StreamTransformer(spark, config, iglu=iglu, checkpoint=str(tmp_path / "in/cp"))
    inside_input = StreamConfig.parse(
        json.dumps({"input": {"type": "file", "dir": str(tmp_path / "in")}, "output": {"path": str(tmp_path / "in/o")}})
    )
    with pytest.raises(ManifestConfigError, match=r"output folder \[.*in/o\] is inside the input"):
        StreamTransformer(spark, inside_input, iglu=iglu)
    missing = StreamConfig.parse(
        json.dumps({"input": {"type": "file", "dir": str(tmp_path / "nowhere")}, "output": {"path": "o"}})
    )
    with pytest.raises(ManifestConfigError, match=r"input.dir \[.*nowhere\] is not a folder: make it"):
        StreamTransformer(spark, missing, iglu=iglu)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"], "nothing written"


def test_a_config_error_is_one_line_and_exit_2_with_nothing_written(tmp_path: Path) -> None:
    from spark_integration.stream_transformer import main

    (tmp_path / "iglu.json").write_text(json.dumps(RESOLVER))
    pubsub = {"input": {"type": "pubsub", "subscription": "enriched"}, "output": {"path": "out"}}
    done = in_process(main, tmp_path, "--iglu-config", "iglu.json", "--config", b64(json.dumps(pubsub)))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(
        "DecodingFailure at .input.subscription: enriched is not of the form projects/PROJECT/subscriptions/NAME"
    )
    assert len(done.stderr.splitlines()) == 1 and sorted(p.name for p in tmp_path.iterdir()) == ["iglu.json"]


def test_kafka_without_its_connector_is_one_line(tmp_path: Path, spark: Any) -> None:
    from spark_integration.stream_transformer import main

    (tmp_path / "iglu.json").write_text(json.dumps(RESOLVER))
    config = {
        "input": {"type": "kafka", "topicName": "enriched", "bootstrapServers": "127.0.0.1:1"},
        "output": {"path": str(tmp_path / "out")},
    }
    done = in_process(main, tmp_path, "--iglu-config", "iglu.json", "--config", b64(json.dumps(config)))
    assert done.returncode == 1
    [line] = [x for x in done.stderr.splitlines() if x.startswith("stream transformer: error:")]
    scala = "2.12" if spark.version.startswith("3.") else "2.13"  # the running Spark's (test_spark_api)
    assert "needs Spark's Kafka connector" in line and f"spark-sql-kafka-0-10_{scala}:{spark.version} " in line
    assert not (tmp_path / "out/_claim.json").exists()


def committed_ids(out: Path) -> list[str]:
    """Every good event id of every committed window, repeats kept."""
    return sorted(row["event_id"] for run in committed(out) for row in outputs(run)[0])


def test_a_file_changed_after_it_was_read_is_named_once_and_again_at_the_next_start(
    spark: Any, tmp_path: Path, iglu: ResolverConfig
) -> None:
    """A file still being written (grown after it was read) and one replaced under its name are not
    read again by the file source, nor the files of a sub-folder of the input: each is named in one
    warning line, never skipped silently; the advice followed, they are read."""
    from spark_integration.stream_transformer import StreamTransformer

    inp, warned = tmp_path / "in", list[str]()
    (inp / "slow.tsv").parent.mkdir(parents=True, exist_ok=True)
    (inp / "slow.tsv").write_text(event(A) + "\n")
    write(inp, "part-00000.tsv.gz", [event(B)])
    with StreamTransformer(spark, stream_config(tmp_path), iglu=iglu, warn=warned.append) as stream:
        query = stream.start()
        query.processAllAvailable()
        stream.watch_files(now=True)
        assert warned == [], "the files as they were read"
        with (inp / "slow.tsv").open("a") as slow:
            slow.write(event(C) + "\n")
        later = time.time() + 5
        os.utime(inp / "slow.tsv", (later, later))
        stream.watch_files(now=True)
        stream.watch_files(now=True)
    [grown] = warned
    assert grown.startswith(f"input file [file:{inp}/slow.tsv] changed after it was read (modified ")
    assert "what changed is not read. To read it, put what was not read into input.dir under a new name" in grown
    write(inp, "part-00000.tsv.gz", [event(D)])  # another file under the same name
    os.utime(inp / "part-00000.tsv.gz", (later + 5, later + 5))
    write(inp / "copied", "part-00000.tsv.gz", [event(E)])  # a copy into the input that made a folder
    warned.clear()
    with StreamTransformer(spark, stream_config(tmp_path), iglu=iglu, warn=warned.append) as again:
        again.start(available_now=True).awaitTermination()
    assert sorted(line.split("]")[0] for line in warned) == [
        f"input file [file:{inp}/part-00000.tsv.gz",
        f"input file [file:{inp}/slow.tsv",
        f"input folder [file:{inp}/copied",
    ], warned
    assert (
        f"input folder [file:{inp}/copied] is inside input.dir, whose files the file source reads, not those of its "
        "sub-folders: its files are not read. To read them, move them up into input.dir" in "\n".join(warned)
    )
    (inp / "slow.tsv.rest").write_text(event(C) + "\n")  # the advice: what was not read, under a new name
    (inp / "part-00000-again.tsv.gz").write_bytes((inp / "part-00000.tsv.gz").read_bytes())
    (inp / "copied/part-00000.tsv.gz").rename(inp / "copied.tsv.gz")  # moved up
    with StreamTransformer(spark, stream_config(tmp_path), iglu=iglu, warn=warned.append) as third:
        third.start(available_now=True).awaitTermination()
    assert committed_ids(tmp_path / "out") == sorted([A, B, C, D, E])


@pytest.mark.parametrize(
    ("name", "advice", "renamed"),
    [
        (
            "half.tsv.gz",
            r"input file file:.*half\.tsv\.gz could not be read \(EOFException: .*\): move it out of input\.dir, "
            "then start again on the same checkpoint: the batch that failed is read again without it",
            "half-again.tsv.gz",
        ),
        (
            "2026-11-27T10:00:00.tsv.gz",
            r"input file \[2026-11-27T10:00:00.tsv.gz\] has ':' in its name, .*such as 2026-11-27T10-00-00\.tsv\.gz\), "
            "then start again on the same checkpoint",
            "2026-11-27T10-00-00.tsv.gz",
        ),
    ],
)
def test_a_file_that_cannot_be_read_is_named_and_the_advice_followed_goes_on(
    tmp_path: Path, spark: Any, name: str, advice: str, renamed: str
) -> None:
    """A corrupt gzip, a name Hadoop cannot hold: the stream stops naming the file (exit 1, the error
    sent to Sentry); moved away or renamed as it says, the next start goes on and every event is in
    one window."""
    from spark_integration.stream_transformer import main

    (tmp_path / "iglu.json").write_text(json.dumps(RESOLVER))
    sentry = SentryServer()
    monitoring = {"sentry": {"dsn": sentry.dsn()}}
    config = json.dumps({"input": {"type": "file", "dir": "in"}, "output": {"path": "out"}, "monitoring": monitoring})
    inp = tmp_path / "in"
    write(inp, "a.tsv.gz", [event(A)])
    whole = gzip.compress((event(B) + "\n").encode())
    (inp / name).write_bytes(whole[: len(whole) // 2] if name == "half.tsv.gz" else whole)
    flags = ("--iglu-config", "iglu.json", "--config", b64(config), "--available-now")
    stopped = in_process(main, tmp_path, *flags)
    assert stopped.returncode == 1, told(stopped.stderr)
    [line] = [x for x in stopped.stderr.splitlines() if x.startswith("stream transformer: error: the stream stopped: ")]
    assert re.search(advice, line) and "Traceback" not in stopped.stderr, line
    sentry.close()
    [reported] = sentry.events  # the error that stopped it, as the reference's Main sends it
    assert reported["exception"]["values"][-1]["value"].startswith("the stream stopped: ")
    (inp / name).rename(tmp_path / name)  # out of input.dir (or renamed): the failed batch goes on without it
    assert in_process(main, tmp_path, *flags).returncode == 0
    (tmp_path / name).write_bytes(whole)
    (tmp_path / name).rename(inp / renamed)  # put back whole, under a new name
    assert in_process(main, tmp_path, *flags).returncode == 0
    assert committed_ids(tmp_path / "out") == sorted([A, B])


def test_the_stream_s_statsd_and_stdout_metrics_count_what_its_windows_committed(tmp_path: Path, spark: Any) -> None:
    """The reference's `monitoring.metrics` (StatsD on a loopback UDP socket, stdout): the counters
    are the committed windows' counts, with ours beside them; a StatsD that cannot be reached
    costs one line, and the window is committed as before; stdout's are on unless configured."""
    from spark_integration.stream_transformer import main

    (tmp_path / "iglu.json").write_text(json.dumps(RESOLVER))
    write(tmp_path / "in", "a.tsv.gz", [event(A, "fa"), event(A, "fa"), event(B), "not an event"])
    statsd = StatsdServer()

    def run(out: str, host: str, stdout: dict[str, Any]) -> Any:
        metrics = {"statsd": {"hostname": host, "port": statsd.port, "tags": {"app": "stream"}}, **stdout}
        document = {"input": {"type": "file", "dir": "in"}, "output": {"path": out}, "monitoring": {"metrics": metrics}}
        config = ("--config", b64(json.dumps(document)), "--manifest", f"sqlite://{out}.db", "--available-now")
        return in_process(main, tmp_path, "--iglu-config", "iglu.json", *config)

    done = run("out", "localhost", {"stdout": {"prefix": "acme."}})
    assert done.returncode == 0, told(done.stderr)
    sent = set(statsd.datagrams())
    statsd.close()
    for name, value in (("good", 2), ("bad", 1), ("natural_duplicates", 1), ("manifest_puts", 2)):
        assert f"snowplow.transformer.{name}:{value}|c|#app:stream" in sent, sent
    assert "snowplow.transformer.lag_seconds:0|g|#app:stream" in sent, "every staged line committed"
    assert re.search(r" INFO transformer\.metrics: acme\.good = 2$", done.stdout, re.MULTILINE)
    down = run("out2", UNREACHABLE, {})
    assert down.returncode == 0 and len(committed(tmp_path / "out2")) == 1, told(down.stderr)
    said_by_default = r" INFO transformer\.metrics: snowplow\.transformer\.good = 2$"  # stdout's, as the reference's
    assert re.search(said_by_default, down.stdout, re.MULTILINE), down.stdout
    [said] = [line for line in down.stderr.splitlines() if "StatsD" in line]
    assert said.startswith(f"stream transformer: warning: Couldn't send metrics to StatsD at {UNREACHABLE}:")


@pytest.mark.every_line
def test_the_kinesis_input_on_spark_3_5_is_refused_in_one_line(tmp_path: Path, spark: Any) -> None:
    """Spark 3.5 has no Python stream source: the reference's Kinesis input section is refused in one
    line that names the lines that have one, nothing written. (On Spark 4, the Kinesis input runs in
    tests/spark/stream/test_crashes.py.)"""
    from spark_integration.stream_transformer import main

    if not spark.version.startswith("3."):
        pytest.skip("Spark 4 reads Kinesis: tests/spark/stream/test_crashes.py")
    (tmp_path / "iglu.json").write_text(json.dumps(RESOLVER))
    section = {"type": "kinesis", "streamName": "enriched", "region": "us-east-1", "position": "TRIM_HORIZON"}
    config = b64(json.dumps({"input": section, "output": {"path": "out"}, "windowing": "1 hour"}))
    done = in_process(main, tmp_path, "--iglu-config", "iglu.json", "--config", config, "--available-now")
    assert done.returncode == 2 and done.stderr.startswith("input.type kinesis needs Spark 4.0 or newer")
    assert len(done.stderr.splitlines()) == 1 and not (tmp_path / "out").exists()
