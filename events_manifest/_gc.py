"""Python's cyclic garbage collector paused while a batch is decided.

A batch of 10,000 events allocates hundreds of thousands of objects at once (rows, events, their
entities); each few hundred allocations start a collection, and the older generations' walk every
object the process holds (the libraries' too): in a measured Parquet batch the collections cost
more than the batch's own work. What a batch allocates is freed by reference counting all the same;
the collector runs again as soon as the batch is done.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def paused(function: Callable[P, R]) -> Callable[P, R]:
    """`function` with the cyclic collector paused while it runs (left as it is when something
    paused it already). Not for generator functions: their work runs after the call returns."""

    @functools.wraps(function)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        if not gc.isenabled():
            return function(*args, **kwargs)
        gc.disable()
        try:
            return function(*args, **kwargs)
        finally:
            gc.enable()

    return run
