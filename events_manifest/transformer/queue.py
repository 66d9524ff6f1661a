"""The run's message to the configured SQS queue or SNS topic (boto3), as the reference sends it:
the message's text as the body, `MessageGroupId` `shredding`."""

from __future__ import annotations

from typing import Any

import boto3
import botocore.exceptions

from events_manifest.transformer.config import Queue, TransformerConfigError

GROUP = "shredding"


def client(queue: Queue) -> Any:
    """A client for the queue's service, made before any run so that a missing region stops the
    transformer before anything is written (`AWS_ENDPOINT_URL_SQS` / `_SNS` point it elsewhere)."""
    session = boto3.session.Session()
    region = queue.region or session.region_name
    if not region:
        raise TransformerConfigError("Region cannot be resolved, needs to be passed explicitly")
    if region not in session.get_available_regions(queue.type) and not region.startswith("local"):
        known = ", ".join(session.get_available_regions(queue.type))
        raise TransformerConfigError(f"Region {region} is unknown, choose from [{known}]")
    return session.client(queue.type, region_name=region)  # type: ignore[call-overload]


def send(queue: Queue, sender: Any, body: str) -> None:
    """Send the message; a failure is the reference's error, naming the message."""
    try:
        if queue.type == "sqs":
            sender.send_message(QueueUrl=queue.name, MessageBody=body, MessageGroupId=GROUP)
        else:
            sender.publish(TargetArn=queue.name, Message=body, MessageGroupId=GROUP)
    except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as e:
        raise QueueError(f"Could not send shredded types {body} to queue: {e}") from None


class QueueError(RuntimeError):
    """The queue refused the run's message: the run's data are written, its commit file is not."""
