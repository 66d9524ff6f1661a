"""Bad rows and the run's message on Pub/Sub topics, on the emulator: what arrives, and a topic
that is not there in one line."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from events_manifest._transformer.config import BadSink, Queue
from events_manifest._transformer.run import pubsub, queue
from events_manifest._transformer.run.pubsub import PubsubSinkError, Topic
from events_manifest.testing import LocalServer
from tests.pubsub_helpers import subscribed


@pytest.fixture
def topic(pubsub_emulator: LocalServer) -> Iterator[tuple[str, Any, str]]:
    """A new topic, a subscriber and a subscription of it (which sees what is published after it)."""
    from google.cloud import pubsub_v1

    with subscribed() as (_, made, subscription):
        yield made, pubsub_v1.SubscriberClient(), subscription


def _received(subscriber: Any, subscription: str, count: int) -> list[bytes]:
    found: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(found) < count and time.monotonic() < deadline:
        answer = subscriber.pull(subscription=subscription, max_messages=1000, timeout=10)
        if answer.received_messages:
            found += [message.message.data for message in answer.received_messages]
            subscriber.acknowledge(subscription=subscription, ack_ids=[m.ack_id for m in answer.received_messages])
    return found


def test_bad_rows_are_published_one_a_message_in_batches_and_an_oversized_one_as_a_size_violation(
    topic: tuple[str, Any, str],
) -> None:
    name, subscriber, subscription = topic
    rows = [json.dumps({"data": {"n": n, "text": "é\n"}}) for n in range(250)]
    sink = BadSink("pubsub", topic=name, batch_size=100, request_bytes=1_000_000, delay=0.05)
    writer = Topic(sink).writer()
    assert writer.write(rows) == 250
    assert sorted(_received(subscriber, subscription, 250)) == sorted(row.encode() for row in rows)

    small = pubsub.PubsubSink(sink, writer.publisher, now=lambda: 0)
    big = json.dumps({"data": "x" * (pubsub.MESSAGE_LIMIT + 10)})
    assert small.write([big]) == 1
    [violation] = _received(subscriber, subscription, 1)
    assert json.loads(violation)["schema"].startswith("iglu:com.snowplowanalytics.snowplow.badrows/size_violation/")


def test_a_topic_that_is_not_there_is_one_line(pubsub_emulator: LocalServer) -> None:
    missing = f"projects/acme/topics/none-{time.time_ns()}"
    writer = Topic(BadSink("pubsub", topic=missing, delay=0.01)).writer()
    with pytest.raises(PubsubSinkError) as refused:
        writer.write(["{}", "{}"])
    said = str(refused.value)
    assert said.startswith(f"Pub/Sub topic {missing} refused 2 bad rows (") and "\n" not in said
    assert said.endswith("the run is not committed; run the transformer again once the topic takes them")

    loader = Queue("pubsub", missing, None)
    with pytest.raises(PubsubSinkError) as unsent:
        queue.send(loader, queue.client(loader), '{"data": {}}', "s3://out/run=1/")
    assert str(unsent.value).startswith(f'Could not send shredded types {{"data": {{}}}} to Pub/Sub topic {missing}')


def test_the_run_s_message_is_the_message_s_data(topic: tuple[str, Any, str]) -> None:
    name, subscriber, subscription = topic
    loader = Queue("pubsub", name, None)
    queue.send(loader, queue.client(loader), '{"schema": "iglu:x", "data": {}}', "file:/out/run=1/")
    assert _received(subscriber, subscription, 1) == [b'{"schema": "iglu:x", "data": {}}']


def test_no_credentials_is_one_line_with_what_to_do(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """Away from an emulator and a platform that gives credentials: the input, the bad rows and the
    message each say so in one line, with the ways to give them."""
    from events_manifest._transformer.stream.pubsub_input import PubsubInput, PubsubInputError, check_subscription

    monkeypatch.delenv("PUBSUB_EMULATOR_HOST", raising=False)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "key.json"))
    advice = "set GOOGLE_APPLICATION_CREDENTIALS to a service account's key file, run where the platform gives them"
    with pytest.raises(PubsubInputError) as input_refused:
        check_subscription(PubsubInput("projects/acme/subscriptions/enriched"))
    with pytest.raises(PubsubSinkError) as sink_refused:
        Topic(BadSink("pubsub", topic="projects/acme/topics/bad")).writer()
    with pytest.raises(PubsubSinkError) as queue_refused:
        queue.client(Queue("pubsub", "projects/acme/topics/loader", None))
    for refused in (input_refused, sink_refused, queue_refused):
        said = str(refused.value)
        assert said.startswith(f"Pub/Sub: no Google credentials (File {tmp_path / 'key.json'} was not found.)"), said
        assert advice in said and "\n" not in said
