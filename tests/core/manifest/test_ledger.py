"""The run ledger (docs/manifest.md, "Runs"), run unchanged against every backend, sync and async."""

from __future__ import annotations

import os
import socket
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest

from events_manifest import ManifestConfigError, RunConflictError
from events_manifest._manifest import ledger
from events_manifest._manifest.ledger import FINISHED, LEASE_SECONDS, STARTED, Run, plan
from events_manifest._manifest.liveness import this_process
from tests.backends import Backend

ETL = datetime(2026, 11, 1, 6, 0)
ID = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"
OTHER = "d7f5fa2f-3b3a-4c97-a030-8e05d9f40b0a"


def test_a_run_is_started_then_finished(backend: Backend) -> None:
    m = backend.make()
    run = m.start_run("in/batch-1", ETL)
    assert (run.etl_time, run.item, run.state) == (ETL, "in/batch-1", STARTED)
    assert m.runs() == [run]
    done = m.finish_run(run)
    assert done.state == FINISHED and done.finished_seconds is not None
    assert m.runs() == [done]


def test_runs_of_other_items_never_share_an_etl_time(backend: Backend) -> None:
    m = backend.make()
    first = m.start_run("a", ETL)
    second = m.start_run("b", ETL)
    third = m.start_run("c", ETL + timedelta(seconds=1))
    assert [first.etl_time, second.etl_time, third.etl_time] == [ETL + timedelta(seconds=n) for n in range(3)]
    anonymous = [m.start_run(None, ETL) for _ in range(2)]
    assert {r.etl_seconds for r in anonymous}.isdisjoint({first.etl_seconds, second.etl_seconds, third.etl_seconds})
    assert len({r.etl_seconds for r in anonymous}) == 2


def test_a_rerun_finishes_the_unfinished_run_of_its_item(backend: Backend) -> None:
    m = backend.make()
    failed = m.start_run("in", ETL)
    assert m.put(ID, "FP", failed.etl_time)
    with pytest.raises(RunConflictError, match=r"is still running \(process \d+ on "):
        m.start_run("in", ETL)  # while it runs, a second run of its item would keep its events too
    m.abandon_run(failed)
    rerun = m.start_run("in", ETL + timedelta(hours=1))  # the input changed: its earliest etl_tstamp too
    assert rerun.etl_time == ETL, "it takes the failed run's etl time"
    assert m.put(ID, "FP", rerun.etl_time), "so the failed run's event is delivered, not dropped"
    m.abandon_run(rerun)
    with pytest.raises(RunConflictError, match=r"Finish it with --etl-time '2026-11-01 06:00:00'"):
        m.start_run("in", ETL + timedelta(hours=1), explicit=True)
    m.finish_run(m.start_run("in", ETL, explicit=True))
    with pytest.raises(RunConflictError, match=r"\[in\] was delivered already, by the run with etl time 2026-11-01 06"):
        m.start_run("in", ETL + timedelta(hours=1), explicit=True)
    again = m.start_run("in", ETL + timedelta(hours=1), explicit=True, rerun=True)
    assert again.etl_time == ETL + timedelta(hours=1), "a rerun on purpose, at the etl time asked for"


def test_an_explicit_etl_time_of_another_item_is_refused(backend: Backend) -> None:
    m = backend.make()
    m.finish_run(m.start_run("a", ETL))
    with pytest.raises(RunConflictError, match=r"belongs to the run of \[a\]"):
        m.start_run("b", ETL, explicit=True)
    with pytest.raises(RunConflictError, match=r"\[a\] was delivered already"):
        m.start_run(None, ETL, explicit=True)
    rerun = m.start_run(None, ETL, explicit=True, rerun=True)
    assert rerun.item == "a", "a run without item, on purpose, reruns the run of that etl time"


def test_a_delivered_item_is_run_again_only_on_purpose_and_on_the_same_input(backend: Backend) -> None:
    m = backend.make()
    first = m.finish_run(m.start_run("in", ETL, source="2 files, 10 bytes", output="file:/out"))
    assert (first.source, first.output) == ("2 files, 10 bytes", "file:/out"), "the ledger keeps both"
    with pytest.raises(RunConflictError, match=r"by the run with etl time 2026-11-01 06:00:00 into file:/out"):
        m.start_run("in", ETL + timedelta(hours=1), source="2 files, 10 bytes", output="file:/out2")
    with pytest.raises(RunConflictError, match=r"names another input .* which read 2 files, 10 bytes .*--item-id"):
        m.start_run("in", ETL, source="3 files, 12 bytes", rerun=True)
    rerun = m.start_run("in", ETL + timedelta(hours=1), source="2 files, 10 bytes", rerun=True)
    assert rerun.etl_time == ETL, "a rerun takes the delivered run's etl time: its events come out again"
    assert m.put(ID, "FP", ETL) and m.put(ID, "FP", rerun.etl_time)


def test_a_killed_item_is_not_finished_by_another_input(backend: Backend) -> None:
    m = backend.make()
    killed = m.start_run("batch-9", ETL, source="1 files, 5 bytes")
    m.abandon_run(killed)
    assert [run.state for run in m.runs()] == [ledger.FAILED], "the ledger says it failed, not that it runs"
    with pytest.raises(RunConflictError, match=r"\[batch-9\] names another input than the run of \[batch-9\]"):
        m.start_run("batch-9", ETL + timedelta(hours=1), source="9 files, 99 bytes")
    assert m.start_run("batch-9", ETL + timedelta(hours=1), source="1 files, 5 bytes").etl_time == ETL


def test_an_etl_time_far_ahead_of_now_is_refused(backend: Backend) -> None:
    m = backend.make()
    with pytest.raises(ManifestConfigError, match=r"etl time 3026-01-01 00:00:00 is more than a day ahead of now"):
        m.start_run("in", datetime(3026, 1, 1), explicit=True)
    assert m.runs() == []
    assert m.start_run("in", datetime.now(UTC) + timedelta(hours=12), explicit=True).item == "in", "a day is allowed"


def test_clean_removes_one_runs_entries_and_record(backend: Backend) -> None:
    m = backend.make()
    kept = m.start_run("a", ETL)
    cleaned = m.start_run("b", ETL + timedelta(hours=1))
    assert m.put_many([(ID, "FP", kept.etl_time), (OTHER, "FP", cleaned.etl_time), (ID, "FP2", cleaned.etl_time)])
    with pytest.raises(RunConflictError, match=r"run of \[b\] .* is still running .* Nothing was removed"):
        m.clean(cleaned.etl_time)
    with pytest.raises(ManifestConfigError, match=r"no run with etl time 2026-11-01 09:00:00"):
        m.clean(ETL + timedelta(hours=3))
    assert m.lookup(OTHER, "FP") is not None and len(m.runs()) == 2, "nothing removed"
    m.finish_run(cleaned)
    assert m.clean(cleaned.etl_time) == 2
    assert m.runs() == [kept]
    assert m.lookup(ID, "FP") is not None and m.lookup(OTHER, "FP") is None
    assert m.put(OTHER, "FP", ETL + timedelta(hours=2)), "its events count as new again"


def test_concurrent_starts_get_distinct_etl_times(backend: Backend) -> None:
    m = backend.make()
    found: list[Run] = []
    lock = threading.Lock()

    def start(n: int) -> None:
        run = m.start_run(f"item-{n}", ETL)
        with lock:
            found.append(run)

    threads = [threading.Thread(target=start, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({run.etl_seconds for run in found}) == 6
    assert sorted(m.runs(), key=lambda r: r.item) == sorted(found, key=lambda r: r.item)


def test_a_started_run_renews_its_sign_of_life_until_it_finishes(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    m = backend.make()
    clock = iter(range(2_000_000_000, 2_100_000_000, 100))
    monkeypatch.setattr(ledger, "now_seconds", lambda: next(clock))
    monkeypatch.setattr(ledger, "BEAT_SECONDS", 0.02)
    run = m.start_run("in", ETL)
    deadline = time.monotonic() + 20
    while m.runs()[0].alive_seconds == run.alive_seconds and time.monotonic() < deadline:
        time.sleep(0.02)  # the heartbeat thread writes no event the test can wait on: poll the ledger
    renewed = m.runs()[0]
    assert renewed.alive_seconds > run.alive_seconds, "the heartbeat renewed the record"  # type: ignore[operator]
    done = m.finish_run(run)  # from the record the ledger holds now, not the one start_run returned
    assert m.runs() == [done] and done.finished
    time.sleep(0.1)  # an absence: five beats' time in which no renewal may come
    assert m.runs() == [done], "no renewal after the finish"


def test_a_dead_unfinished_run_of_another_item_is_refused_a_live_one_is_not() -> None:
    now = 1_000_000
    elsewhere = Run(1_000, "old", STARTED, now - 7200, owner="other-host:42", alive_seconds=now - LEASE_SECONDS - 1)
    with pytest.raises(RunConflictError) as refused:
        plan([elsewhere], "new", ETL, explicit=False, now=now)
    message = str(refused.value)
    assert "run of [old]" in message and "stopped without finishing" in message
    assert "--item-id 'old'" in message and "events-manifest clean --etl-time '1970-01-01 00:16:40'" in message

    live = Run(1_000, "old", STARTED, now - 7200, owner="other-host:42", alive_seconds=now - 30)
    assert plan([live], "new", datetime(1970, 1, 1, 0, 16, 40), explicit=False, now=now).record.etl_seconds == 1_001

    ended = os.fork() if hasattr(os, "fork") else None
    if ended == 0:
        os._exit(0)
    assert ended is not None
    os.waitpid(ended, 0)
    killed_here = Run(1_000, "old", STARTED, now, owner=f"{socket.gethostname()}:{ended}", alive_seconds=now)
    with pytest.raises(RunConflictError, match="stopped without finishing"):
        plan([killed_here], "new", ETL, explicit=False, now=now)  # same host: the OS says at once
    assert plan([killed_here], "old", ETL, explicit=False, now=now).record.etl_seconds == 1_000, "its rerun finishes it"
    abandoned_here = Run(1_000, "old", STARTED, now, owner=this_process(), alive_seconds=now)
    with pytest.raises(RunConflictError, match="stopped without finishing"):
        plan([abandoned_here], "new", ETL, explicit=False, now=now)  # this process no longer keeps it alive
