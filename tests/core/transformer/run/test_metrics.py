"""What a run reports: CloudWatch's datum (moto's server), StatsD datagrams (a UDP socket),
stdout lines; a backend that is down costs one line, never the run."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import boto3
import pytest

from events_manifest._transformer.config import TransformerConfigError
from events_manifest._transformer.monitoring import CloudWatch, Monitoring, Periodic
from events_manifest._transformer.run.commit import RunCounts
from events_manifest._transformer.run.metrics import Reporter, statsd_datagrams, stdout_lines
from events_manifest.testing import LocalServer
from tests.monitors import UNREACHABLE, StatsdServer

COUNTS = RunCounts(lines=10, good=6, bad=1, natural=2, cross_batch=1, synthetic=2, puts=7)


@pytest.fixture
def statsd() -> Iterator[StatsdServer]:
    server = StatsdServer()
    yield server
    server.close()


def test_the_lines_are_the_reference_s() -> None:
    statsd = Periodic(60, "snowplow.transformer.", "h", 1, (("app", "t"), ("env", "prod")))
    assert statsd_datagrams(statsd, {"good": 6, "bad": 1}, {"lag_seconds": 2.5}) == [
        "snowplow.transformer.good:6|c|#app:t,env:prod",
        "snowplow.transformer.bad:1|c|#app:t,env:prod",
        "snowplow.transformer.lag_seconds:2.5|g|#app:t,env:prod",
    ]
    assert statsd_datagrams(Periodic(60, "p", "h", 1), {"good": 0}, {}) == ["p.good:0|c|#"], "no tags: `|#` alone"
    assert stdout_lines(Periodic(60, "snowplow.transformer"), {"good": 6, "bad": 10**6}, {"lag_seconds": 0.25}) == [
        "snowplow.transformer.good = 6",
        "snowplow.transformer.bad = 1000000",
        "snowplow.transformer.lag_seconds = 0.25",
    ]


def test_statsd_and_stdout_get_the_counters_of_each_period(
    statsd: StatsdServer, capsys: pytest.CaptureFixture[str]
) -> None:
    monitoring = Monitoring(statsd=Periodic(0.2, hostname="localhost", port=statsd.port), stdout=Periodic(0.2))
    with Reporter(monitoring, lag=lambda: 4.0) as reporter:
        reporter.committed(COUNTS, 1200)
        reporter.committed(COUNTS, 800)
        time.sleep(0.5)
    got = statsd.datagrams()
    assert "snowplow.transformer.good:12|c|#" in got and "snowplow.transformer.bad:2|c|#" in got
    assert (
        "snowplow.transformer.synthetic_duplicates:4|c|#" in got and "snowplow.transformer.manifest_puts:14|c|#" in got
    )
    assert (
        "snowplow.transformer.cross_batch_duplicates:2|c|#" in got
        and "snowplow.transformer.natural_duplicates:4|c|#" in got
    )
    assert got.count("snowplow.transformer.good:12|c|#") == 1 and "snowplow.transformer.good:0|c|#" in got, "since"
    assert "snowplow.transformer.lag_seconds:4|g|#" in got
    said = capsys.readouterr().out.splitlines()
    assert any(line.endswith(" INFO transformer.metrics: snowplow.transformer.good = 12") for line in said), said
    assert any(line.endswith(" INFO transformer.metrics: snowplow.transformer.bad = 2") for line in said)


def test_a_statsd_that_cannot_be_reached_costs_a_line_and_no_run() -> None:
    errors: list[str] = []
    monitoring = Monitoring(statsd=Periodic(60, hostname=UNREACHABLE, port=8125))
    with Reporter(monitoring, err=errors.append) as reporter:
        reporter.committed(COUNTS, 5)
    assert len(errors) == 1 and errors[0].startswith(f"Couldn't send metrics to StatsD at {UNREACHABLE}:8125. Error: ")


def test_cloudwatch_gets_the_duration_datum_and_the_dedup_figures(
    moto_server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_CLOUDWATCH", moto_server.endpoint)
    namespace = f"snowplow/transformer_batch_{time.time_ns()}"
    said: list[str] = []
    with Reporter(Monitoring(cloudwatch=CloudWatch(namespace, dimensions=(("app", "t"),))), out=said.append) as r:
        r.committed(COUNTS, 1234)
    assert said == [f"transform_duration with value 1234 milliseconds successfully sent to namespace {namespace}"]
    cloudwatch = boto3.client("cloudwatch", endpoint_url=moto_server.endpoint)
    metrics = cloudwatch.list_metrics(Namespace=namespace)["Metrics"]
    assert {m["MetricName"] for m in metrics} == {
        "transform_duration", "good", "bad", "natural_duplicates", "synthetic_duplicates",
        "cross_batch_duplicates", "manifest_puts",
    }  # fmt: skip
    assert all(m["Dimensions"] == [{"Name": "app", "Value": "t"}] for m in metrics)
    stats = cloudwatch.get_metric_statistics(
        Namespace=namespace,
        MetricName="transform_duration",
        Dimensions=[{"Name": "app", "Value": "t"}],
        StartTime=time.time() - 600,
        EndTime=time.time() + 600,
        Period=60,
        Statistics=["Sum"],
    )["Datapoints"]
    assert [(p["Sum"], p["Unit"]) for p in stats] == [(1234.0, "Milliseconds")]


def test_a_cloudwatch_that_does_not_answer_costs_a_bounded_time_and_a_line_without_its_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    monkeypatch.setenv("AWS_ENDPOINT_URL_CLOUDWATCH", f"http://metrics:SECRET@127.0.0.1:{port}")
    errors: list[str] = []
    began = time.monotonic()
    with Reporter(Monitoring(cloudwatch=CloudWatch("ns")), err=errors.append) as reporter:
        reporter.committed(COUNTS, 7)
    assert time.monotonic() - began < 30
    [line] = errors
    assert line.startswith(
        "Couldn't send transform_duration with value 7 milliseconds to namespace ns. Error: Could not"
    )
    assert "SECRET" not in line and "metrics:***@127.0.0.1" in line, line


def test_cloudwatch_without_a_region_is_refused_before_anything(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("AWS_DEFAULT_REGION", "AWS_REGION"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    with pytest.raises(TransformerConfigError, match="the region cannot be resolved; set AWS_REGION"):
        Reporter(Monitoring(cloudwatch=CloudWatch("ns")))
