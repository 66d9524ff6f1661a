"""The Pub/Sub input's puller without Spark, on the emulator: what it stages, when it acknowledges."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from events_manifest._jobs.storage import LocalStorage
from events_manifest._transformer.stream.pubsub_input import PubsubInput, PubsubInputError, Stager, data_of
from events_manifest.testing import LocalServer
from tests.pubsub_helpers import subscribed


@pytest.fixture
def subscription(pubsub_emulator: LocalServer) -> Iterator[tuple[Any, str, str]]:
    with subscribed() as made:
        yield made


def _staged(folder: Path) -> list[list[bytes]]:
    """Each staged file's messages, in the order of the files' names."""
    return [
        [data_of(line) for line in path.read_text().splitlines()]
        for path in sorted(folder.iterdir())
        if not path.name.startswith(".")
    ]


def test_each_message_is_staged_whole_in_files_of_at_most_buffer_size_then_acknowledged(
    tmp_path: Path, subscription: tuple[Any, str, str]
) -> None:
    publisher, topic, name = subscription
    messages = [b"line\twith\ttabs", b"a\rlone CR", b"a\nline feed", b"\xff\x00binary", *(b"%d" % n for n in range(26))]
    for future in [publisher.publish(topic, data) for data in messages]:
        future.result(timeout=30)
    source = PubsubInput(name, buffer_size=10)
    stager = Stager(source, LocalStorage(), str(tmp_path / "staged"))
    assert stager.drain(quiet_seconds=1.5) == 30
    files = _staged(tmp_path / "staged")
    assert all(len(found) <= 10 for found in files)
    assert sorted(data for found in files for data in found) == sorted(messages), "each message once, whole"
    again = Stager(source, LocalStorage(), str(tmp_path / "again"))
    assert again.drain(quiet_seconds=1.5) == 0, "acknowledged once staged"


class _Message:
    """A received message as the client hands it over: its id, its data, acknowledged or not."""

    def __init__(self, message_id: str, data: bytes) -> None:
        self.message_id, self.data, self.acked = message_id, data, 0

    def ack(self) -> None:
        self.acked += 1

    def nack(self) -> None:
        raise AssertionError("nothing refused here")


def test_a_message_that_comes_back_once_staged_is_acknowledged_and_not_staged_again(tmp_path: Path) -> None:
    """Pub/Sub gives back a message whose acknowledgement was lost, and, to the next start, one a
    kill stopped between its staging and its acknowledgement: each is known by its id (the ids of
    the folder's files, for a new start), acknowledged, and not staged a second time. Staged twice,
    an event without a fingerprint would be two events with new ids (synthetic duplicates)."""
    folder = tmp_path / "staged"
    source = PubsubInput("projects/acme/subscriptions/enriched")
    stager = Stager(source, LocalStorage(), str(folder))
    first = [_Message("1", b"a\tb"), _Message("2", b"c"), _Message("2", b"c")]
    for message in first:
        stager._received(message)  # the client's callback
    assert stager.flush() == 2, "a message given twice in one pull: staged once"
    again = [_Message("2", b"c"), _Message("3", b"d")]
    for message in again:
        stager._received(message)
    assert stager.flush() == 1 and stager.repeated_messages == 2
    assert all(m.acked == 1 for m in first + again), "each copy acknowledged"
    assert sorted(data for found in _staged(folder) for data in found) == [b"a\tb", b"c", b"d"]

    restarted = Stager(source, LocalStorage(), str(folder))
    assert restarted.recall() == 3, "the ids of what the folder holds"
    back = [_Message("1", b"a\tb"), _Message("4", b"e")]
    for message in back:
        restarted._received(message)
    assert restarted.flush() == 1 and all(m.acked == 1 for m in back)
    assert sorted(data for found in _staged(folder) for data in found) == [b"a\tb", b"c", b"d", b"e"]


class _Refusing(LocalStorage):
    """A file system that refuses every write."""

    def write_text(self, path: str, text: str) -> None:
        raise OSError(28, "No space left on device")


def test_messages_that_cannot_be_staged_are_not_acknowledged_and_the_failure_is_said(
    tmp_path: Path, subscription: tuple[Any, str, str]
) -> None:
    """A write refused: nothing staged, nothing acknowledged (the messages are given back), and the
    failure kept for the job, which stops on it."""
    publisher, topic, name = subscription
    for future in [publisher.publish(topic, b"event %d" % n) for n in range(5)]:
        future.result(timeout=30)
    refused = Stager(PubsubInput(name), _Refusing(), str(tmp_path / "staged"))
    assert refused.drain(quiet_seconds=1.5) == 0
    with pytest.raises(PubsubInputError) as caught:
        refused.check()
    assert str(caught.value) == (
        f"messages of Pub/Sub subscription {name} could not be staged under {tmp_path / 'staged'} ([Errno 28] No "
        "space left on device): they were not acknowledged, and come back to the next start"
    )
    assert list((tmp_path / "staged").iterdir()) == []


def test_a_subscription_deleted_while_pulled_ends_the_pulls_and_is_said(
    tmp_path: Path, subscription: tuple[Any, str, str]
) -> None:
    from google.cloud import pubsub_v1

    from events_manifest._transformer.stream.pubsub_input import check_subscription

    _, _, name = subscription
    stager = Stager(PubsubInput(name), LocalStorage(), str(tmp_path / "staged"))
    stager.start()
    pubsub_v1.SubscriberClient().delete_subscription(subscription=name)
    deadline = time.monotonic() + 60
    while stager.failure is None and time.monotonic() < deadline:
        time.sleep(0.1)
    stager.stop()
    said = f"Pub/Sub subscription {name} does not exist (deleted, or never created): create it, or correct input."
    with pytest.raises(PubsubInputError, match=re.escape(said)):
        stager.check()
    with pytest.raises(PubsubInputError, match=re.escape(said)):
        check_subscription(PubsubInput(name))
    pubsub_v1.SubscriberClient().create_subscription(name=name, topic=subscription[1])  # for the fixture's cleanup
