"""The `monitoring` section of both transformers' configs, as the reference reads it: Sentry's DSN,
CloudWatch's duration metric (the batch job's), StatsD and stdout metrics (the stream's), and the
names of the figures each run or window reports (docs/transformer.md, "Monitoring"; `metrics.figures`
sends them). `config` reads the section."""

from __future__ import annotations

import attrs

DEFAULT_PREFIX = "snowplow.transformer."
DEFAULT_PERIOD = "1 minute"
DURATION_METRIC = "transform_duration"

GOOD, BAD = "good", "bad"
"""The reference's two counters."""
DEDUP = ("natural_duplicates", "synthetic_duplicates", "cross_batch_duplicates", "manifest_puts")
"""Ours, beside them: what dedup did (cross-batch duplicates are the manifest's refused puts)."""
FIGURES = (GOOD, BAD, *DEDUP)
"""Every counter a run reports, in the order it is sent."""
LAG = "lag_seconds"
"""Ours, the stream's gauge: the age of its oldest staged line not committed yet."""


def metric_name(prefix: str, key: str) -> str:
    """The reference's name of a metric: the prefix without its trailing dot, then `.key`."""
    return f"{prefix.removesuffix('.')}.{key}"


@attrs.frozen
class CloudWatch:
    """`monitoring.metrics.cloudwatch`: after each run is committed, its duration in milliseconds
    as the metric `metric` in `namespace`, with `dimensions` (and our dedup figures beside it)."""

    namespace: str
    metric: str = DURATION_METRIC
    dimensions: tuple[tuple[str, str], ...] = ()


@attrs.frozen
class Periodic:
    """`monitoring.metrics.statsd` (with `hostname`, `port` and `tags`) or `.stdout`: every
    `period` seconds, the counters since the last report."""

    period: float
    prefix: str = DEFAULT_PREFIX
    hostname: str = ""
    port: int = 0
    tags: tuple[tuple[str, str], ...] = ()


@attrs.frozen
class Monitoring:
    """What is reported, and where: each part absent unless configured."""

    sentry_dsn: str | None = None
    cloudwatch: CloudWatch | None = None
    statsd: Periodic | None = None
    stdout: Periodic | None = None

    @property
    def metrics(self) -> bool:
        return any(sink is not None for sink in (self.cloudwatch, self.statsd, self.stdout))
