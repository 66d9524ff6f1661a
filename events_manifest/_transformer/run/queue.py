"""The run's message to the configured SQS queue or SNS topic (boto3), as the reference sends it:
the message's text as the body, `MessageGroupId` `shredding`; within a bounded deadline. A Pub/Sub
topic's is `pubsub`'s."""

from __future__ import annotations

from typing import Any

import botocore.exceptions
from botocore.config import Config

from events_manifest._aws import boto3_session, default_region
from events_manifest._transformer.config import Queue, TransformerConfigError, check_known_region
from events_manifest._transformer.run import pubsub
from events_manifest.errors import DeliveryError

GROUP = "shredding"
CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 10.0
ATTEMPTS = 3
"""A queue that does not answer fails the run within about `ATTEMPTS * (CONNECT_TIMEOUT +
READ_TIMEOUT)` seconds and botocore's backoff between attempts (under a minute), not the SDK's
default of minutes: the run stays sealed, and the next invocation sends its message."""


def client(queue: Queue) -> Any:
    """A client for the queue's service, made before any run so that a missing region stops the
    transformer before anything is written (`AWS_ENDPOINT_URL_SQS` / `_SNS` point it elsewhere)."""
    if queue.type == "pubsub":
        return pubsub.queue_publisher()
    region = queue.region or default_region()
    if not region:
        raise TransformerConfigError("Region cannot be resolved, needs to be passed explicitly")
    check_known_region(region)
    config = Config(
        connect_timeout=CONNECT_TIMEOUT,
        read_timeout=READ_TIMEOUT,
        retries={"mode": "standard", "total_max_attempts": ATTEMPTS},
    )
    return boto3_session().client(queue.type, region_name=region, config=config)  # type: ignore[call-overload]


def send(queue: Queue, sender: Any, body: str, base: str) -> None:
    """Send the message; a failure is the reference's error, naming the message and the folder."""
    if queue.type == "pubsub":
        pubsub.send(queue.name, sender, body, base)
        return
    try:
        if queue.type == "sqs":
            sender.send_message(QueueUrl=queue_url(queue, sender), MessageBody=body, MessageGroupId=GROUP)
        else:
            sender.publish(TargetArn=queue.name, Message=body, MessageGroupId=GROUP)
    except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as e:
        reason = str(e).replace("\n", " ")
        raise QueueError(
            f"Could not send shredded types {body} to queue for {base} ({reason}). The run's rows are written and "
            "sealed: once the queue answers, run the transformer again; it sends this message and commits the run"
        ) from None


def queue_url(queue: Queue, sender: Any) -> str:
    """`queue.queueName` as SendMessage takes it: a URL as given; a name looked up (`GetQueueUrl`),
    as the reference's stream transformer does."""
    if queue.name.startswith(("https://", "http://")):
        return queue.name
    url: str = sender.get_queue_url(QueueName=queue.name)["QueueUrl"]
    return url


class QueueError(DeliveryError):
    """The queue refused the run's message: the run stays sealed, uncommitted (see `commit`)."""
