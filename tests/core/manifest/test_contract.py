"""The manifest contract (docs/manifest.md), run unchanged against every backend."""

from __future__ import annotations

import multiprocessing
import re
import threading
import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest

from events_manifest import ManifestConfigError, manifest_from_url
from tests.backends import Backend

ETL = datetime(2017, 1, 26, 0, 1, 25, 292000)
LATER = datetime(2017, 1, 26, 0, 2, 25, 292000)
ID = "c6ef3124-b53a-4b13-a233-0088f79dcbcb"
FP = "AADCE520E20C2899F4CED228A79A3083"


def test_reference_scenario_and_stored_entry(backend: Backend) -> None:
    m = backend.make()
    assert m.put(ID, FP, ETL) is True
    assert m.put(ID, FP, ETL) is True
    assert m.put(ID, FP, LATER) is False
    assert m.put(ID, "15A65BB354B1265A775FC3C60AAD5E58", LATER) is True
    assert m.put("d7f5fa2f-3b3a-4c97-a030-8e05d9f40b0a", FP, LATER) is True
    entry = m.lookup(ID, FP)
    assert entry is not None
    assert (entry.etl_seconds, entry.ttl_seconds) == (1485388885, 1500940885)
    assert entry.etl_time == datetime(2017, 1, 26, 0, 1, 25)


def test_rerun_with_same_etl_seconds_is_accepted(backend: Backend) -> None:
    m = backend.make()
    assert m.put(ID, FP, ETL)
    assert m.put(ID, FP, ETL.replace(microsecond=999999)), "sub-second part is truncated: the same etl"
    assert m.put(ID, FP, ETL.replace(microsecond=0))


@pytest.mark.parametrize("other", [LATER, ETL - timedelta(days=3)], ids=["later", "earlier"])
def test_other_etl_is_a_duplicate_and_leaves_the_entry(backend: Backend, other: datetime) -> None:
    m = backend.make()
    assert m.put(ID, FP, ETL)
    assert m.put(ID, FP, other) is False
    entry = m.lookup(ID, FP)
    assert entry is not None and entry.etl_seconds == 1485388885
    assert m.put(ID, FP, ETL), "the original batch can still be rerun"


def test_ttl_expiry_is_judged_against_etl_time(backend: Backend) -> None:
    m = backend.make(ttl=timedelta(hours=1))
    assert m.put(ID, FP, ETL)
    assert m.put(ID, FP, ETL + timedelta(minutes=59, seconds=59)) is False
    assert m.put(ID, FP, ETL + timedelta(hours=1)) is True, "ttl at the new etl counts as expired"
    entry = m.lookup(ID, FP)
    assert entry is not None
    assert entry.etl_seconds == 1485388885 + 3600
    assert entry.ttl_seconds == 1485388885 + 7200
    assert m.put(ID, FP, ETL) is False, "the new entry is not expired for the old etl"


def test_uuid_objects_and_text_name_the_same_event(backend: Backend) -> None:
    m = backend.make()
    assert m.put(uuid.UUID(ID), FP, ETL)
    assert m.put(ID.upper(), FP, LATER) is False
    assert m.put(ID, FP, ETL)


def test_aware_and_naive_etl_times_agree(backend: Backend) -> None:
    m = backend.make()
    plus_two = timezone(timedelta(hours=2))
    assert m.put(ID, FP, ETL.replace(tzinfo=UTC).astimezone(plus_two))
    entry = m.lookup(ID, FP)
    assert entry is not None and entry.etl_seconds == 1485388885
    assert m.put(ID, FP, ETL)


def test_put_many_keeps_order_and_resolves_duplicates_in_the_call(backend: Backend) -> None:
    m = backend.make()
    a, b, c = (str(uuid.uuid4()) for _ in range(3))
    items = [(a, FP, ETL), (b, FP, ETL), (a, FP, ETL), (a, FP, LATER), (c, FP, LATER), (b, "other", LATER)]
    assert m.put_many(items) == [True, True, True, False, True, True]
    assert m.put_many([]) == []
    assert m.put_many(iter([(c, FP, ETL), (c, FP, LATER)])) == [False, True]


def test_put_many_agrees_with_one_put_after_another(backend: Backend) -> None:
    one, many = backend.make(), manifest_from_url("memory://")
    ids = [str(uuid.uuid4()) for _ in range(5)]
    times = [ETL + timedelta(days=d) for d in (0, 0, 1, 2)]
    items = [(ids[i % 5], f"fp{i % 3}", times[i % 4]) for i in range(60)]
    assert one.put_many(items) == [many.put(*item) for item in items]


INVALID = [
    ("not-a-uuid", FP, ETL, "event_id ['not-a-uuid'] is not a UUID"),
    ("{" + ID + "}", FP, ETL, "is not a UUID"),
    (ID, "", ETL, "fingerprint [''] must be a non-empty string"),
    (ID, None, ETL, "fingerprint [None] must be a non-empty string"),
    (ID, "x" * 1025, ETL, "longer than 1024 bytes"),
    (ID, FP, "2017-01-26", "etl_time must be a datetime"),
    (ID, FP, 1485388885, "etl_time must be a datetime"),
    (ID, "fp-\ud800", ETL, "fingerprint ['fp-\\ud800'] holds half a UTF-16 surrogate pair at character 3"),
    ("a" * 10_000_000, FP, ETL, f"event_id ['{'a' * 37}...{'a' * 38}'] is not a UUID"),
]
"""Every backend agrees on each (a lone surrogate, which the memory store could hold and SQLite
could not, is refused by all); what a message echoes is cut, whatever its size."""


def test_invalid_input_is_rejected_with_the_value(backend: Backend) -> None:
    """Each invalid item, alone and in a batch, against one store (a table each would cost a
    DynamoDB table creation per case): nothing is ever written."""
    m = backend.make()
    for event_id, fingerprint, etl, message in INVALID:
        with pytest.raises(ManifestConfigError, match=re.escape(message)) as refused:
            m.put(event_id, fingerprint, etl)  # type: ignore[arg-type]
        assert len(str(refused.value)) < 300
        with pytest.raises(ManifestConfigError):
            m.put_many([(ID, FP, ETL), (event_id, fingerprint, etl)])  # type: ignore[list-item]
        assert m.lookup(ID, FP) is None, f"a batch with an invalid item writes nothing: {message}"


def test_threads_racing_on_the_same_pairs_accept_each_once(backend: Backend) -> None:
    m = backend.make()
    pairs = [(str(uuid.uuid4()), f"fp-{i}") for i in range(24)]
    workers = 4
    results: dict[int, list[bool]] = {}
    start = threading.Barrier(workers)

    def work(n: int) -> None:
        etl = ETL + timedelta(seconds=n)
        start.wait()
        results[n] = [m.put(*pair, etl) for pair in pairs[:8]] + m.put_many((*p, etl) for p in pairs[8:])

    threads = [threading.Thread(target=work, args=(n,)) for n in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    accepted = [sum(results[n][i] for n in range(workers)) for i in range(len(pairs))]
    assert accepted == [1] * len(pairs)


RACERS = multiprocessing.get_context("forkserver")
"""Processes of their own, forked from one clean server that imported this module once (where a
spawned process imports it again, a second each): none inherits the suite's threads or clients."""
RACERS.set_forkserver_preload([__name__])


def _put_from_process(
    url: str,
    pairs: list[tuple[str, str]],
    seconds: int,
    start: threading.Barrier,
    out: multiprocessing.Queue,  # type: ignore[type-arg]
) -> None:
    with manifest_from_url(url) as m:
        start.wait(timeout=60)  # opened: the processes put at once, however long each took to start
        out.put((seconds, m.put_many((*p, ETL + timedelta(seconds=seconds)) for p in pairs)))


def test_processes_racing_on_the_same_pairs_accept_each_once(backend: Backend) -> None:
    if not backend.shared_across_processes:
        pytest.skip(f"{backend.name} lives in one process")
    url = backend.url(timedelta(days=180))
    backend.make().close()  # create the file or table once, before the race
    pairs = [(str(uuid.uuid4()), f"fp-{i}") for i in range(40)]
    out, start = RACERS.Queue(), RACERS.Barrier(3)
    processes = [RACERS.Process(target=_put_from_process, args=(url, pairs, n, start, out)) for n in range(3)]
    for p in processes:
        p.start()
    answers = [out.get(timeout=120) for _ in processes]
    for p in processes:
        p.join(timeout=60)
        assert p.exitcode == 0
    accepted = [sum(answer[i] for _, answer in answers) for i in range(len(pairs))]
    assert accepted == [1] * len(pairs)


def test_context_manager_closes(backend: Backend) -> None:
    with backend.make() as m:
        assert m.put(ID, FP, ETL)
    assert repr(m).startswith(type(m).__name__)


def test_epoch_zero_etl_is_an_etl_like_any_other(backend: Backend) -> None:
    m = backend.make()
    epoch = datetime(1970, 1, 1)
    assert m.put(ID, FP, epoch)
    assert m.put_many([(ID, FP, epoch + timedelta(days=1)), (ID, FP, epoch)]) == [False, True]


def test_entries_of_lists_every_fingerprint_of_an_id(backend: Backend) -> None:
    m = backend.make()
    other = "d7f5fa2f-3b3a-4c97-a030-8e05d9f40b0a"
    m.put_many([(ID, "A", ETL), (ID, "B", LATER), (ID.upper(), "C", ETL), (other, "A", LATER)])
    listed = m.entries_of([ID.upper(), other, "00000000-0000-4000-8000-000000000000"])
    assert sorted((e.fingerprint, e.etl_seconds) for e in listed[ID]) == [
        ("A", 1485388885),
        ("B", 1485388945),
        ("C", 1485388885),
    ]
    assert [e.fingerprint for e in listed[other]] == ["A"]
    assert listed["00000000-0000-4000-8000-000000000000"] == []
    assert m.entries_of([]) == {}
