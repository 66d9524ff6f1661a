"""A Spark command's line read and checked once (`TransformerFlags.of`, `ShredFlags.of`), without
Spark: the value the command runs, and a refusal before any manifest is opened or Spark starts."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from events_manifest._job_flags import (
    ShredFlags,
    TransformerFlags,
    add_common_flags,
    add_config_flags,
    add_shred_flags,
)
from events_manifest._snowplow.shred_run import ShredRequest
from events_manifest._transformer.config import TransformerConfig, TransformerConfigError
from events_manifest._transformer.stream.stream_config import StreamConfig
from events_manifest.errors import ManifestConfigError
from tests.transformer_helpers import RESOLVER, b64


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_config_flags(parser)
    add_common_flags(parser)
    return parser.parse_args(["--iglu-config", b64(json.dumps(RESOLVER)), *argv])


BATCH = {"input": "in", "output": {"path": "out"}, "formats": {"transformationType": "widerow"}}
STREAM = {"input": {"type": "file", "dir": "in"}, "output": {"path": "out"}, "windowing": "5 minutes"}


def test_both_commands_read_their_config_iglu_and_manifest_into_one_value(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    batch = TransformerFlags.of(_args("--config", b64(json.dumps(BATCH)), "--manifest", url), TransformerConfig.parse)
    assert (batch.config.input, batch.config.output, batch.manifest.url) == ("in", "out", url)
    assert batch.iglu.repositories and batch.manifest.named == url
    stream = TransformerFlags.of(_args("--config", b64(json.dumps(STREAM))), StreamConfig.parse)
    assert (stream.config.window_seconds, stream.config.output, stream.manifest.named) == (300, "out", None)


@pytest.mark.parametrize(
    ("parse", "document"),
    [(TransformerConfig.parse, BATCH), (StreamConfig.parse, STREAM)],
    ids=["transformer", "stream transformer"],
)
def test_a_manifest_without_natural_dedup_is_refused_before_the_manifest_opens(
    parse: Callable[[str], Any], document: dict[str, object], tmp_path: Path
) -> None:
    """The batch job's refusal, for either command, before the SQLite file the URL names exists."""
    db = tmp_path / "m.db"
    config = {**document, "deduplication": {"natural": False, "synthetic": {"type": "NONE"}}}
    args = _args("--config", b64(json.dumps(config)), "--manifest", f"sqlite:///{db}")
    with pytest.raises(TransformerConfigError, match="when cross batch deduplication is enabled"):
        TransformerFlags.of(args, parse)
    assert not db.exists()


@pytest.mark.parametrize(
    ("parse", "document"),
    [(TransformerConfig.parse, BATCH), (StreamConfig.parse, STREAM)],
    ids=["transformer", "stream transformer"],
)
def test_a_manifest_spark_s_workers_cannot_share_is_refused_by_every_command(
    parse: Callable[[str], Any], document: dict[str, object]
) -> None:
    """An in-memory manifest would be one per Python worker: refused while the flags are read."""
    with pytest.raises(ManifestConfigError, match="an in-memory manifest would not be shared"):
        TransformerFlags.of(_args("--config", b64(json.dumps(document)), "--manifest", "memory://"), parse)
    with pytest.raises(ManifestConfigError, match="an in-memory manifest would not be shared"):
        ShredFlags.of(_shred_args("--manifest", "memory://"))


def _shred_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_shred_flags(parser)
    folders = ["--input-folder", "in", "--output-folder", "out", "--bad-folder", "bad"]
    return parser.parse_args([*folders, *argv])


def test_the_shred_job_s_flags_are_one_value_and_cross_batch_synthetic_needs_a_manifest(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    etl = ["--etl-time", "2026-11-01 06:00:00"]
    flags = ShredFlags.of(_shred_args("--manifest", url, *etl, "--cross-batch-synthetic", "--no-synthetic-dedup"))
    assert (flags.manifest.url, flags.request.etl_time) == (url, datetime(2026, 11, 1, 6))
    assert flags.request == ShredRequest(
        ("in",), "out", "bad", etl_time=datetime(2026, 11, 1, 6), synthetic_dedup=False, cross_batch_synthetic=True
    )
    assert flags.request.manifest is None and not (tmp_path / "m.db").exists(), "read, not opened"
    with pytest.raises(ManifestConfigError, match="cross-batch synthetic dedup needs a manifest"):
        ShredFlags.of(_shred_args("--cross-batch-synthetic"))
