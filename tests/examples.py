"""How many examples the suite's property tests draw: each test names what the README's suite can
afford (docs/development.md, the test pyramid); `EVENTS_MANIFEST_EXAMPLES=10` draws ten times as
many, for a deeper run (before a release, or after a change to what a property covers)."""

from __future__ import annotations

import os

TIMES = float(os.environ.get("EVENTS_MANIFEST_EXAMPLES", "1"))


def examples(count: int) -> int:
    """`count` examples, times `EVENTS_MANIFEST_EXAMPLES`."""
    return max(1, round(count * TIMES))
