"""The metrics of the `monitoring` section, sent as the reference sends them: CloudWatch's duration
datum after each committed run (boto3), StatsD datagrams and stdout lines every period; and ours
beside them, what dedup did and how far behind a stream is (docs/transformer.md, "Monitoring").
A backend that is down costs a run a bounded time and one line on stderr, never the run."""

from __future__ import annotations

import logging
import socket
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

import botocore.exceptions
from botocore.config import Config

from events_manifest import _redact as redact
from events_manifest._aws import boto3_session, default_region
from events_manifest._transformer.config import TransformerConfigError
from events_manifest._transformer.monitoring import (
    FIGURES,
    LAG,
    CloudWatch,
    Monitoring,
    Periodic,
    metric_name,
)
from events_manifest._transformer.run.commit import RunCounts

LOGGER = "transformer.metrics"
"""The stdout metrics' logger, as the reference names it."""
CONNECT_TIMEOUT, READ_TIMEOUT, ATTEMPTS = 3.0, 5.0, 2
"""A CloudWatch that does not answer costs a run at most about `ATTEMPTS * (CONNECT_TIMEOUT +
READ_TIMEOUT)` seconds."""
STATSD_TIMEOUT = 5.0
"""How long the last report waits for StatsD's hostname to resolve when the job stops."""


def figures(counts: RunCounts) -> dict[str, int]:
    """What a committed run or window adds to the counters, by metric name."""
    values = (counts.good, counts.bad, counts.natural, counts.synthetic, counts.cross_batch, counts.puts)
    return dict(zip(FIGURES, values, strict=True))


def number(value: float) -> str:
    """A figure as the reference prints it: an integer as digits (never `1e+06`), a fraction in
    plain decimals."""
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.6f}".rstrip("0")


def statsd_datagrams(statsd: Periodic, counters: Mapping[str, int], gauges: Mapping[str, float]) -> list[str]:
    """The reference's StatsD lines: `<prefix>.<name>:<value>|c` (a gauge `|g`), then `|#` and its
    tags as `key:value,...` (none: `|#` alone)."""
    tags = "|#" + ",".join(f"{key}:{value}" for key, value in statsd.tags)
    lines = [f"{metric_name(statsd.prefix, key)}:{number(value)}|c{tags}" for key, value in counters.items()]
    return lines + [f"{metric_name(statsd.prefix, key)}:{number(value)}|g{tags}" for key, value in gauges.items()]


def stdout_lines(stdout: Periodic, counters: Mapping[str, int], gauges: Mapping[str, float]) -> list[str]:
    """The reference's stdout lines: `<prefix>.<name> = <value>`."""
    values: dict[str, float] = {**counters, **gauges}
    return [f"{metric_name(stdout.prefix, key)} = {number(value)}" for key, value in values.items()]


def send_statsd(statsd: Periodic, datagrams: list[str]) -> None:
    """One UDP datagram a line, to the hostname resolved now (a StatsD server restarted at a new
    address is found at the next report)."""
    family, kind, protocol, _, address = socket.getaddrinfo(statsd.hostname, statsd.port, type=socket.SOCK_DGRAM)[0]
    with socket.socket(family, kind, protocol) as sender:
        for datagram in datagrams:
            sender.sendto(datagram.encode(), address)


def cloudwatch_client() -> Any:
    """A CloudWatch client with bounded timeouts (`AWS_ENDPOINT_URL_CLOUDWATCH` points it
    elsewhere), made before any run so that a missing region refuses the job first."""
    region = default_region()
    if not region:
        raise TransformerConfigError(
            "monitoring.metrics.cloudwatch: the region cannot be resolved; set AWS_REGION (or a profile's region)"
        )
    config = Config(
        connect_timeout=CONNECT_TIMEOUT,
        read_timeout=READ_TIMEOUT,
        retries={"mode": "standard", "total_max_attempts": ATTEMPTS},
    )
    return boto3_session().client("cloudwatch", region_name=region, config=config)


def cloudwatch_data(cloudwatch: CloudWatch, duration_ms: int, counts: RunCounts) -> list[dict[str, Any]]:
    """The run's datum, as the reference's (the duration, in milliseconds), then our figures."""
    dimensions = [{"Name": name, "Value": value} for name, value in cloudwatch.dimensions]
    data: list[dict[str, Any]] = [
        {"MetricName": cloudwatch.metric, "Value": duration_ms, "Unit": "Milliseconds", "Dimensions": dimensions}
    ]
    for name, value in figures(counts).items():
        data.append({"MetricName": name, "Value": value, "Unit": "Count", "Dimensions": dimensions})
    return data


class Reporter:
    """A job's metrics: `committed` after each run or window (its CloudWatch datum at once, its
    figures added to the counters), the counters sent every period while it is `open`, and once
    more when it is closed. `lag` gives the stream's gauge (None: not a stream, or nothing waits)."""

    def __init__(
        self,
        monitoring: Monitoring,
        *,
        lag: Callable[[], float | None] = lambda: None,
        out: Callable[[str], None] = print,
        err: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
    ) -> None:
        self.monitoring, self.lag, self.out, self.err = monitoring, lag, out, err
        self._cloudwatch: Any = cloudwatch_client() if monitoring.cloudwatch is not None else None
        self._sinks = [sink for sink in (monitoring.statsd, monitoring.stdout) if sink is not None]
        self._counters: list[dict[str, int]] = [{} for _ in self._sinks]
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def open(self) -> None:
        """Report every period from now (a thread a periodic sink)."""
        self._stop.clear()
        for n, sink in enumerate(self._sinks):
            thread = threading.Thread(target=self._every, args=(n, sink), name=f"metrics {n}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def close(self) -> None:
        """Report what the last period counted, and stop (a bounded wait for a StatsD that does not answer)."""
        self._stop.set()
        for thread in self._threads:
            thread.join(STATSD_TIMEOUT)
        self._threads = []

    def __enter__(self) -> Reporter:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def committed(self, counts: RunCounts, duration_ms: int) -> None:
        """A run or window committed in `duration_ms`."""
        added = figures(counts)
        with self._lock:
            for counters in self._counters:
                for name, value in added.items():
                    counters[name] = counters.get(name, 0) + value
        cloudwatch = self.monitoring.cloudwatch
        if cloudwatch is None:
            return
        said = f"{cloudwatch.metric} with value {duration_ms} milliseconds"  # Scala's FiniteDuration
        try:
            data = cloudwatch_data(cloudwatch, duration_ms, counts)
            self._cloudwatch.put_metric_data(Namespace=cloudwatch.namespace, MetricData=data)
        except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as e:
            reason = redact.text(str(e).replace("\n", " "))  # an endpoint's password
            self.err(f"Couldn't send {said} to namespace {cloudwatch.namespace}. Error: {reason}")
        else:
            self.out(f"{said} successfully sent to namespace {cloudwatch.namespace}")

    def _every(self, n: int, sink: Periodic) -> None:
        while not self._stop.wait(sink.period):
            self._report(n, sink)
        self._report(n, sink)  # what the last period counted

    def _report(self, n: int, sink: Periodic) -> None:
        with self._lock:
            counters = {name: self._counters[n].get(name, 0) for name in FIGURES}
            self._counters[n] = {}
        lag = self.lag()
        gauges = {} if lag is None else {LAG: lag}
        if sink is self.monitoring.stdout:
            for line in stdout_lines(sink, counters, gauges):
                logger().info(line)
            return
        try:
            send_statsd(sink, statsd_datagrams(sink, counters, gauges))
        except OSError as e:  # a name that does not resolve, a network down
            self.err(f"Couldn't send metrics to StatsD at {sink.hostname}:{sink.port}. Error: {e}")


def logger() -> logging.Logger:
    """`transformer.metrics`, printing to stdout unless the application gave it a handler."""
    found = logging.getLogger(LOGGER)
    if not found.handlers:
        handler = _Stdout()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        found.addHandler(handler)
        found.setLevel(logging.INFO)
        found.propagate = False
    return found


class _Stdout(logging.Handler):
    """To whatever `sys.stdout` is when a line is logged."""

    def emit(self, record: logging.LogRecord) -> None:
        print(self.format(record), file=sys.stdout, flush=True)
