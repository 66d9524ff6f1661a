"""A hypothesis state machine that runs the manifest contract against any backend.

For the author of a new backend:

    from events_manifest.testing.conformance import manifest_state_machine

    TestRedisManifest = manifest_state_machine(lambda ttl: RedisManifest(..., ttl=ttl)).TestCase

Each example starts from a fresh, empty manifest made by the factory, drives it with random
`put` and `put_many` steps over a small pool of ids, fingerprints and etl times (so reruns,
later and earlier etl times, in-call duplicates and ttl expiry all happen), and compares every
answer and every stored entry with `ReferenceManifest` (through `lookup`, and through `entries_of`
when the backend offers it). Needs hypothesis.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from events_manifest._manifest.contract import DuplicateStorage
from events_manifest.errors import ManifestConfigError
from events_manifest.testing._reference import ReferenceManifest
from events_manifest.testing.strategies import items

__all__ = [
    "manifest_state_machine",
]

TTL = timedelta(days=2)


def _lists_entries(manifest: DuplicateStorage) -> bool:
    """Whether the backend offers the optional `entries_of`."""
    try:
        manifest.entries_of([])
    except ManifestConfigError:
        return False
    return True


def manifest_state_machine(
    make: Callable[[timedelta], DuplicateStorage], *, examples: int = 25, steps: int = 20
) -> type[RuleBasedStateMachine]:
    """A state machine class checking manifests from `make(ttl)`; its `.TestCase` is a unittest case."""

    class ManifestStateMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.manifest = make(TTL)
            self.model = ReferenceManifest(TTL)
            self.lists_entries = _lists_entries(self.manifest)

        @rule(item=items)
        def put(self, item: tuple[str, str, datetime]) -> None:
            assert self.manifest.put(*item) == self.model.put_many([item])[0], item

        @rule(batch=st.lists(items, max_size=8))
        def put_many(self, batch: list[tuple[str, str, datetime]]) -> None:
            assert self.manifest.put_many(batch) == self.model.put_many(batch), batch

        @invariant()
        def entries_match(self) -> None:
            by_id: dict[str, set[tuple[str, int, int]]] = {}
            for (event_id, fingerprint), (etl, ttl) in self.model.entries.items():
                entry = self.manifest.lookup(event_id, fingerprint)
                assert entry is not None, (event_id, fingerprint)
                assert (entry.etl_seconds, entry.ttl_seconds) == (etl, ttl)
                by_id.setdefault(event_id, set()).add((fingerprint, etl, ttl))
            if by_id and self.lists_entries:
                listed = self.manifest.entries_of(by_id)
                assert {
                    i: {(e.fingerprint, e.etl_seconds, e.ttl_seconds) for e in es} for i, es in listed.items()
                } == by_id

        def teardown(self) -> None:
            self.manifest.close()

    ManifestStateMachine.TestCase.settings = settings(max_examples=examples, stateful_step_count=steps, deadline=None)
    return ManifestStateMachine
