"""The stream transformer as a process of its own, on a clock the test moves (the float in the file
`--clock` names), committing windows only as micro-batches come (its loop sleeps): for a test to
kill it at a named step of a known micro-batch or window. Run under spark-submit."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from events_manifest._transformer.stream.stream_config import StreamConfig
from events_manifest.iglu import ResolverConfig
from spark_integration.session import local_session
from spark_integration.stream_transformer import StreamTransformer


def set_clock(clock: Path, seconds: float) -> None:
    """Set the clock the driver reads: a whole new file put in place, so that the driver, reading it
    at any moment, never reads it empty (as between `write_text`'s truncation and its write)."""
    ahead = clock.with_name(clock.name + ".new")
    ahead.write_text(str(seconds))
    os.replace(ahead, clock)


def main() -> None:
    parser = argparse.ArgumentParser()
    for flag in ("--config", "--iglu-config", "--manifest", "--clock"):
        parser.add_argument(flag, required=True)
    args = parser.parse_args()
    clock = Path(args.clock)
    stream = StreamTransformer(
        local_session(),
        StreamConfig.parse(Path(args.config).read_text()),
        iglu=ResolverConfig.parse(json.dumps(json.loads(Path(args.iglu_config).read_text()))),
        manifest=args.manifest,
        clock=lambda: float(clock.read_text()),
    )
    stream.run(poll=3600)


if __name__ == "__main__":
    main()
