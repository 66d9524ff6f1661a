"""The `monitoring` section as the reference reads it: its defaults, and a wrong value refused
naming its key."""

from __future__ import annotations

from typing import Any

import pytest

from events_manifest._transformer.config import TransformerConfigError
from events_manifest._transformer.monitoring import CloudWatch, Monitoring, Periodic
from tests.transformer_helpers import monitoring_of


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
    ],
)
def test_a_wrong_value_is_refused_naming_its_key(section: dict[str, Any], said: str) -> None:
    with pytest.raises(TransformerConfigError, match=said):
        monitoring_of(section)
