"""The run's message to SQS (a FIFO queue, group `shredding`) or SNS, against moto's server; a
queue that refuses it named with the folder and what to do; no region, refused before any run."""

from __future__ import annotations

import json
import time

import boto3
import pytest

from events_manifest._transformer.config import Queue, TransformerConfigError
from events_manifest._transformer.run import queue as queues
from events_manifest.testing import LocalServer


@pytest.fixture(autouse=True)
def endpoint(moto_server: LocalServer, monkeypatch: pytest.MonkeyPatch) -> str:
    for service in ("SQS", "SNS"):
        monkeypatch.setenv(f"AWS_ENDPOINT_URL_{service}", moto_server.endpoint)
    return moto_server.endpoint


def test_the_message_goes_to_a_fifo_queue_in_the_shredding_group(endpoint: str) -> None:
    sqs = boto3.client("sqs", region_name="us-east-1", endpoint_url=endpoint)
    url = sqs.create_queue(
        QueueName=f"runs-{time.time_ns()}.fifo",
        Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"},
    )["QueueUrl"]
    queue = Queue("sqs", url, "us-east-1")
    queues.send(queue, queues.client(queue), '{"schema":"x"}', "s3://b/out/run=1/")
    [message] = sqs.receive_message(QueueUrl=url, AttributeNames=["MessageGroupId"])["Messages"]
    assert message["Body"] == '{"schema":"x"}' and message["Attributes"]["MessageGroupId"] == queues.GROUP


def test_a_queue_given_by_name_is_looked_up_and_sent_to_by_its_url(endpoint: str) -> None:
    """`queue.queueName` as a name, not a URL: its URL asked for (GetQueueUrl), as the reference's
    stream transformer does, and the message sent there (moto would take the name as a URL too)."""
    sqs = boto3.client("sqs", region_name="us-east-1", endpoint_url=endpoint)
    name = f"runs-{time.time_ns()}.fifo"
    url = sqs.create_queue(QueueName=name, Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"})[
        "QueueUrl"
    ]
    queue = Queue("sqs", name, "us-east-1")
    sender, calls = queues.client(queue), []
    sender.meta.events.register(
        "before-parameter-build.sqs.*", lambda params, model, **_: calls.append((model.name, params))
    )
    queues.send(queue, sender, '{"schema":"x"}', "s3://b/out/run=1/")
    assert [(operation, params.get("QueueName") or params.get("QueueUrl")) for operation, params in calls] == [
        ("GetQueueUrl", name),
        ("SendMessage", url),
    ]
    [message] = sqs.receive_message(QueueUrl=url)["Messages"]
    assert message["Body"] == '{"schema":"x"}'
    missing = Queue("sqs", "no-such-queue.fifo", "us-east-1")
    with pytest.raises(queues.QueueError, match=r"to queue for s3://b/out/run=1/ \(.*NonExistentQueue"):
        queues.send(missing, queues.client(missing), "{}", "s3://b/out/run=1/")


def test_the_message_goes_to_an_sns_topic(endpoint: str) -> None:
    sns = boto3.client("sns", region_name="us-east-1", endpoint_url=endpoint)
    arn = sns.create_topic(Name=f"runs-{time.time_ns()}")["TopicArn"]
    sqs = boto3.client("sqs", region_name="us-east-1", endpoint_url=endpoint)
    url = sqs.create_queue(QueueName=f"listener-{time.time_ns()}")["QueueUrl"]
    listener = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=arn, Protocol="sqs", Endpoint=listener)
    queue = Queue("sns", arn, "us-east-1")
    queues.send(queue, queues.client(queue), '{"schema":"y"}', "s3://b/out/run=1/")
    [message] = sqs.receive_message(QueueUrl=url)["Messages"]
    assert json.loads(message["Body"])["Message"] == '{"schema":"y"}'


def test_a_refused_message_names_the_folder_and_what_to_do(endpoint: str) -> None:
    queue = Queue("sqs", f"{endpoint}/123456789012/no-such-queue.fifo", "us-east-1")
    with pytest.raises(queues.QueueError) as refused:
        queues.send(queue, queues.client(queue), "{}", "s3://b/out/run=1/")
    said = str(refused.value)
    assert said.startswith("Could not send shredded types {} to queue for s3://b/out/run=1/ (")
    assert "once the queue answers, run the transformer again" in said


def test_no_region_anywhere_is_refused_before_any_run(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    with pytest.raises(TransformerConfigError, match="Region cannot be resolved, needs to be passed explicitly"):
        queues.client(Queue("sqs", "https://sqs/q", None))
