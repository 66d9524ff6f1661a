"""A transformer's command line read and checked once (`TransformerFlags.of`), without Spark: the
value both commands run, and a refusal before any manifest is opened."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from events_manifest._job_flags import TransformerFlags, add_common_flags, add_config_flags
from events_manifest._transformer.config import TransformerConfig, TransformerConfigError
from events_manifest._transformer.stream.stream_config import StreamConfig
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
