"""The `monitoring` section as the reference reads it: its defaults, and a wrong value refused
naming its key."""

from __future__ import annotations

from typing import Any

import pytest

from events_manifest._transformer.config import TransformerConfigError
from events_manifest._transformer.monitoring import CloudWatch, Monitoring, Periodic
from events_manifest._transformer.stream.stream_config import StreamConfig
from tests.transformer_helpers import monitoring_of

STATSD = {"hostname": "localhost", "port": 8125}


def test_the_section_reads_as_the_reference_s_with_its_defaults() -> None:
    found = monitoring_of(
        {
            "sentry": {"dsn": "https://key@sentry.acme.com/1"},
            "metrics": {
                "cloudwatch": {"namespace": "snowplow/transformer_batch", "dimensions": {"app": "transformer"}},
                "statsd": {"hostname": "localhost", "port": 8125, "tags": {"app": "t", "env": "prod"}},
                "stdout": {"period": "10 seconds", "prefix": "acme."},
            },
        }
    )
    assert found.sentry_dsn == "https://key@sentry.acme.com/1"
    assert found.cloudwatch == CloudWatch("snowplow/transformer_batch", "transform_duration", (("app", "transformer"),))
    assert found.statsd == Periodic(60.0, "snowplow.transformer.", "localhost", 8125, (("app", "t"), ("env", "prod")))
    assert found.stdout == Periodic(10.0, "acme.")
    assert monitoring_of({"metrics": {"cloudwatch": True}}) == Monitoring(), "the stream reference's flag is KCL's"
    assert monitoring_of({}) == Monitoring() and not Monitoring().metrics


@pytest.mark.parametrize(
    ("section", "said"),
    [
        ({"metrics": {"statsd": {"hostname": "h", "port": 70000}}}, r"monitoring\.metrics\.statsd\.port: 70000 is"),
        ({"metrics": {"statsd": {"port": 8125}}}, r"monitoring\.metrics\.statsd\.hostname: Missing required field"),
        ({"metrics": {"cloudwatch": {"dimensions": {}}}}, r"monitoring\.metrics\.cloudwatch\.namespace: Missing"),
        ({"metrics": {"stdout": {"period": "soon"}}}, r"monitoring\.metrics\.stdout\.period: soon is not a finite"),
        ({"metrics": {"stdout": {"period": "0 seconds"}}}, r"stdout\.period: 0 seconds is under a second; report at"),
        ({"metrics": {"statsd": {**STATSD, "period": "500 ms"}}}, r"statsd\.period: 0\.5 seconds is under a second"),
        (
            {"metrics": {"statsd": {**STATSD, "prefix": "snow|plow\nevil"}}},
            r'statsd\.prefix: "snow\|plow\\nevil" holds',
        ),
        ({"metrics": {"statsd": {**STATSD, "tags": {"app": "a,b:c"}}}}, r'statsd\.tags\.app: "a,b:c" holds'),
        ({"metrics": {"statsd": {**STATSD, "tags": {"a#pp": "a"}}}}, r'statsd\.tags: "a#pp" holds .*, which would'),
        (
            {"metrics": {"stdout": {"prefix": "acme\nevil."}}},
            r'stdout\.prefix: "acme\\nevil\." holds a line end, which',
        ),
    ],
)
def test_a_wrong_value_is_refused_naming_its_key(section: dict[str, Any], said: str) -> None:
    with pytest.raises(TransformerConfigError, match=said):
        monitoring_of(section)


def test_the_stream_s_stdout_metrics_are_on_unless_configured_as_in_the_reference() -> None:
    def stream(monitoring: str) -> Monitoring:
        text = '{"input": {"type": "file", "dir": "in"}, "output": {"path": "out"}' + monitoring + "}"
        return StreamConfig.parse(text).run.monitoring

    assert stream("").stdout == Periodic(60.0, "snowplow.transformer.")
    assert stream(', "monitoring": {"metrics": {"stdout": {"period": 10 seconds}}}').stdout == Periodic(10.0)
    assert stream(', "monitoring": {"metrics": {"stdout": null}}').stdout is None
    assert monitoring_of({}).stdout is None, "the batch job's are off, as the reference's"
