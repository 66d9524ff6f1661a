"""A Pub/Sub topic and a subscription of it on the suite's emulator, made and deleted around a test."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def subscribed(ack_deadline: int = 10) -> Iterator[tuple[Any, str, str]]:
    """A publisher, a new topic and a new subscription of it (which gets what is published after it);
    `PUBSUB_EMULATOR_HOST` must point at the emulator (the `pubsub_emulator` fixture)."""
    from google.cloud import pubsub_v1

    publisher, subscriber = pubsub_v1.PublisherClient(), pubsub_v1.SubscriberClient()
    name = f"enriched-{time.time_ns()}"
    topic = publisher.create_topic(name=f"projects/acme/topics/{name}").name
    subscription = f"projects/acme/subscriptions/{name}"
    subscriber.create_subscription(name=subscription, topic=topic, ack_deadline_seconds=ack_deadline)
    yield publisher, topic, subscription
    subscriber.delete_subscription(subscription=subscription)
    publisher.delete_topic(topic=topic)
