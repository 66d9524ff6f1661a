"""Every backend against the reference model, through the state machine shipped for backend authors."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from events_manifest.testing.conformance import manifest_state_machine
from tests.backends import ASYNC_BACKENDS, BACKENDS, Backend
from tests.examples import examples


@pytest.mark.parametrize("backend", [b for b in BACKENDS + ASYNC_BACKENDS if b != "async-memory"], indirect=True)
def test_backend_follows_the_reference_model(backend: Backend) -> None:
    local = backend.name in {"memory", "sqlite", "async-sqlite"}
    machine = manifest_state_machine(lambda ttl: _fresh(backend, ttl))
    run_state_machine_as_test(  # type: ignore[no-untyped-call]
        machine,
        settings=settings(
            max_examples=examples(20 if local else 4),
            stateful_step_count=20 if local else 12,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )


def _fresh(backend: Backend, ttl: timedelta):  # type: ignore[no-untyped-def]
    """A new, empty store of the backend for each example."""
    backend.renew()
    return backend.make(ttl)
