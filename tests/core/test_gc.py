"""The cyclic collector paused while a batch is decided, and running again after, whatever happens."""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest

from events_manifest._gc import paused
from events_manifest._transformer import columnar, parse_decide
from tests.transformer_helpers import event


def test_paused_while_the_function_runs_and_running_after_a_return_or_an_error() -> None:
    seen: list[bool] = []

    @paused
    def work(fail: bool) -> int:
        seen.append(gc.isenabled())
        if fail:
            raise ValueError("stop")
        return 1

    assert gc.isenabled()
    assert work(False) == 1
    with pytest.raises(ValueError, match="stop"):
        work(True)
    assert seen == [False, False] and gc.isenabled()


def test_a_collector_paused_already_is_left_paused() -> None:
    gc.disable()
    try:
        paused(lambda: None)()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_transformer_s_batches_are_parsed_and_decided_with_the_collector_paused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    states: dict[str, bool] = {}

    def recorded(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            states[name] = gc.isenabled()
            return function(*args, **kwargs)

        return run

    monkeypatch.setattr(columnar, "fields", recorded("parse", columnar.fields))
    monkeypatch.setattr(parse_decide, "_groups", recorded("decide", parse_decide._groups))
    lines = pa.array([event("c6ef3124-b53a-4b13-a233-0088f79dcbcb").encode()], pa.binary())
    decided = parse_decide.Decide().rows(*parse_decide.Parse().parsed(lines))
    assert states == {"parse": False, "decide": False} and gc.isenabled()
    assert decided.column("output").to_pylist() == ["good", "meta"]
