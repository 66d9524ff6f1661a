"""The manifest contract for asyncio: the protocol every async manifest follows, the base the async
twins share (as `DuplicateStorage` is the sync ones'), and any sync manifest behind `await`."""

from __future__ import annotations

import abc
import asyncio
import functools
import logging
from collections.abc import Iterable
from datetime import datetime
from types import TracebackType
from typing import Any, Protocol, Self, TypeVar, runtime_checkable

from events_manifest._manifest import ledger, ledger_flow
from events_manifest._manifest.contract import DuplicateStorage, not_listable, raise_first
from events_manifest._manifest.ledger import COMMAND_LINE, Advice, Heartbeat, Run
from events_manifest.errors import ManifestRequestError
from events_manifest.model import (
    EventId,
    ManifestEntry,
    PutItem,
    entries_by_id,
    normalize_event_id,
    to_epoch_seconds,
)

Outcome = bool | ManifestRequestError
T = TypeVar("T")
log = logging.getLogger(__name__)


@runtime_checkable
class AsyncEventsManifest(Protocol):
    """What an asyncio consumer needs of a manifest; answers as in `DuplicateStorage`."""

    async def put(self, event_id: EventId, fingerprint: str, etl_time: datetime) -> bool: ...

    async def put_many(self, items: Iterable[PutItem], *, concurrency: int | None = None) -> list[bool]: ...

    async def try_put_many(self, items: Iterable[PutItem], *, concurrency: int | None = None) -> list[Outcome]: ...

    async def lookup(self, event_id: EventId, fingerprint: str) -> ManifestEntry | None: ...

    async def entries_of(self, event_ids: Iterable[EventId]) -> dict[str, list[ManifestEntry]]: ...

    async def runs(self) -> list[Run]: ...

    async def start_run(
        self,
        item: str | None,
        etl_time: datetime | None = None,
        *,
        explicit: bool = False,
        source: str = "",
        output: str = "",
        rerun: bool = False,
        advice: Advice = COMMAND_LINE,
    ) -> Run: ...

    async def finish_run(self, run: Run) -> Run: ...

    async def abandon_run(self, run: Run) -> None: ...

    async def clean(self, etl_time: datetime, *, force: bool = False) -> int: ...

    async def close(self) -> None: ...


class AsyncManifestBase(abc.ABC):
    """put and put_many in terms of `try_put_many`, `entries_of` in terms of `_entries_of`, the
    ledger's flow in terms of `_runs` and `_swap_run`, and `async with`: shared by the async
    manifests, as `DuplicateStorage` does for the sync ones, with the same abstract methods."""

    async def put(self, event_id: EventId, fingerprint: str, etl_time: datetime) -> bool:
        return (await self.put_many([(event_id, fingerprint, etl_time)]))[0]

    async def put_many(self, items: Iterable[PutItem], *, concurrency: int | None = None) -> list[bool]:
        return raise_first(await self.try_put_many(items, concurrency=concurrency))

    @abc.abstractmethod
    async def try_put_many(self, items: Iterable[PutItem], *, concurrency: int | None = None) -> list[Outcome]:
        """`DuplicateStorage.try_put_many`, at most `concurrency` requests at once."""

    @abc.abstractmethod
    async def lookup(self, event_id: EventId, fingerprint: str) -> ManifestEntry | None:
        """`DuplicateStorage.lookup`."""

    async def entries_of(self, event_ids: Iterable[EventId]) -> dict[str, list[ManifestEntry]]:
        ids = list(dict.fromkeys(map(normalize_event_id, event_ids)))
        return entries_by_id(ids, await self._entries_of(ids))

    async def _entries_of(self, event_ids: list[str]) -> list[ManifestEntry]:
        raise not_listable(self)

    async def runs(self) -> list[Run]:
        """`DuplicateStorage.runs`."""
        return sorted(await self._runs(), key=lambda run: run.etl_seconds)

    async def start_run(
        self,
        item: str | None,
        etl_time: datetime | None = None,
        *,
        explicit: bool = False,
        source: str = "",
        output: str = "",
        rerun: bool = False,
        advice: Advice = COMMAND_LINE,
    ) -> Run:
        """`DuplicateStorage.start_run`: the same decision (`ledger.plan`) and heartbeat, awaited."""
        begun = ledger.Start.of(
            item, etl_time, explicit=explicit, source=source, output=output, rerun=rerun, advice=advice
        )
        return await ledger_flow.drive_async(ledger_flow.start(begun), self._ledger_step)

    async def finish_run(self, run: Run) -> Run:
        """`DuplicateStorage.finish_run`."""
        return await ledger_flow.drive_async(ledger_flow.finish(run), self._ledger_step)

    async def abandon_run(self, run: Run) -> None:
        """`DuplicateStorage.abandon_run`."""
        await ledger_flow.drive_async(ledger_flow.abandon(run), self._ledger_step)

    async def _ledger_step(self, step: ledger_flow.Step) -> Any:
        """One step of a ledger flow, awaited; the heartbeat's `add` and `stop` off the loop (they
        wait for its thread, which may be renewing a record on this loop)."""
        match step:
            case ledger_flow.Runs():
                return await self.runs()
            case ledger_flow.Swap(expected, new):
                return await self._swap_run(expected, new)
            case ledger_flow.Delete(etl_seconds):
                return await self._delete_entries(etl_seconds)
            case ledger_flow.Beat("announce", run):
                return self._heartbeat().announce(run)
            case ledger_flow.Beat(move, run):
                return await asyncio.to_thread(getattr(self._heartbeat(), move), run)

    def _heartbeat(self) -> Heartbeat:
        """The runs' heartbeat: its thread renews each record with `_swap_run`, run on this loop."""
        beat: Heartbeat | None = self.__dict__.get("_beat")
        if beat is None:
            loop = asyncio.get_running_loop()

            def swap(expected: Run, new: Run) -> bool:
                return asyncio.run_coroutine_threadsafe(self._swap_run(expected, new), loop).result(timeout=60)

            beat = self.__dict__["_beat"] = Heartbeat(swap)
        return beat

    async def clean(self, etl_time: datetime, *, force: bool = False) -> int:
        """`DuplicateStorage.clean`."""
        flow = ledger_flow.clean(to_epoch_seconds(etl_time), force=force)
        return await ledger_flow.drive_async(flow, self._ledger_step)

    async def _runs(self) -> list[Run]:
        raise ledger.no_ledger(self)

    async def _swap_run(self, expected: Run | None, new: Run | None) -> bool:
        raise ledger.no_ledger(self)

    async def _delete_entries(self, etl_seconds: int) -> int:
        raise ledger.no_ledger(self)

    async def close(self) -> None:
        """Release connections. Runs still started stay unfinished in the ledger."""
        beat: Heartbeat | None = self.__dict__.get("_beat")
        if beat is not None:
            await asyncio.to_thread(beat.stop_all)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


class AsyncManifestAdapter(AsyncManifestBase):
    """Any sync manifest behind `await`: each call runs in a worker thread, never on the loop."""

    def __init__(self, manifest: DuplicateStorage) -> None:
        self.manifest = manifest

    def __repr__(self) -> str:
        return f"AsyncManifestAdapter({self.manifest!r})"

    async def try_put_many(self, items: Iterable[PutItem], *, concurrency: int | None = None) -> list[Outcome]:
        return await asyncio.to_thread(self.manifest.try_put_many, list(items))

    async def lookup(self, event_id: EventId, fingerprint: str) -> ManifestEntry | None:
        return await asyncio.to_thread(self.manifest.lookup, event_id, fingerprint)

    async def entries_of(self, event_ids: Iterable[EventId]) -> dict[str, list[ManifestEntry]]:
        return await asyncio.to_thread(self.manifest.entries_of, list(event_ids))

    async def runs(self) -> list[Run]:
        return await asyncio.to_thread(self.manifest.runs)

    async def start_run(
        self,
        item: str | None,
        etl_time: datetime | None = None,
        *,
        explicit: bool = False,
        source: str = "",
        output: str = "",
        rerun: bool = False,
        advice: Advice = COMMAND_LINE,
    ) -> Run:
        """The sync manifest's `start_run`, its heartbeat the sync manifest's own thread."""
        start = functools.partial(
            self.manifest.start_run, explicit=explicit, source=source, output=output, rerun=rerun, advice=advice
        )
        return await asyncio.to_thread(start, item, etl_time)

    async def finish_run(self, run: Run) -> Run:
        return await asyncio.to_thread(self.manifest.finish_run, run)

    async def abandon_run(self, run: Run) -> None:
        await asyncio.to_thread(self.manifest.abandon_run, run)

    async def clean(self, etl_time: datetime, *, force: bool = False) -> int:
        return await asyncio.to_thread(functools.partial(self.manifest.clean, force=force), etl_time)

    async def close(self) -> None:
        await super().close()
        await asyncio.to_thread(self.manifest.close)


def to_async(manifest: DuplicateStorage) -> AsyncManifestAdapter:
    return AsyncManifestAdapter(manifest)
