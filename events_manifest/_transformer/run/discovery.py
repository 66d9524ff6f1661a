"""Which sub-folders of the transformer's input are runs to transform (docs/transformer.md, runs).

A run is an immediate sub-folder of the input; one whose name is under the output folder already is
done, unless its folder says a transformer run of it was stopped before its commit
(`commit.inspect`): that run is finished. `run=yyyy-MM-dd-HH-mm-ss` names are filtered by the
config's run interval; other names always pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import attrs

from events_manifest._transformer.config import RunInterval, run_time

CHECKED_FOR_COMPLETION = 512
"""Of the runs found in both folders, the last this many are checked for `commit.COMPLETE`."""


_SCHEMES = {"s3a://": "s3://", "s3n://": "s3://", "gcs://": "gs://"}


def folder_uri(qualified: str) -> str:
    """A folder as the message and the loader name it: a trailing `/`, `s3a://` and `s3n://` as
    `s3://`, `gcs://` as `gs://`."""
    for scheme, canonical in _SCHEMES.items():
        if qualified.startswith(scheme):
            qualified = canonical + qualified.removeprefix(scheme)
    return qualified.rstrip("/") + "/"


def in_interval(name: str, interval: RunInterval, now: datetime) -> bool:
    """Whether a run folder passes the run interval: both bounds strict, an absent one open."""
    if not name.startswith("run="):
        return True
    moment = run_time(name.removeprefix("run="))
    if moment is None:
        return True
    since, until = interval.bounds(now)
    return (since is None or since < moment) and (until is None or moment < until)


@attrs.frozen
class Discovery:
    """The runs to transform, in the input's order, and those to check for completion."""

    to_process: tuple[str, ...]
    done: tuple[str, ...]


def discover(inputs: Sequence[str], outputs: Sequence[str], interval: RunInterval, now: datetime) -> Discovery:
    """Input folder names minus output folder names, in input order (names hidden from Hadoop,
    `_*` and `.*`, are not runs); both lists' names as listed."""
    runs = [name for name in sorted(inputs) if not name.startswith(("_", ".")) and in_interval(name, interval, now)]
    present = set(outputs)
    return Discovery(
        tuple(name for name in runs if name not in present),
        tuple(name for name in runs if name in present)[-CHECKED_FOR_COMPLETION:],
    )
