"""What every run of one transformer invocation shares (`TransformerJob`): its storage and config,
its manifest opened, its senders; and what tells the ledger and the output apart from other
transformers' (`reconcile`, `dead_elsewhere`). The batch job makes one for its runs, the stream
transformer one for its windows; the glue's (`spark_integration._transformer.job.Job`) adds Spark's
session, and `run_flow.run` takes either."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, Self, TypeVar

import attrs

from events_manifest._iglu.resolver import ResolverConfig
from events_manifest._jobs.folders import Judge, owner
from events_manifest._jobs.storage import Listing, Storage, join
from events_manifest._manifest.contract import DuplicateStorage
from events_manifest._manifest.ledger import LEASE_SECONDS, Advice
from events_manifest._manifest.ledger import now_seconds as runs_now
from events_manifest._opening.handle import ManifestHandle
from events_manifest._transformer.config import TransformerConfig
from events_manifest._transformer.decode.event import atomic_limits
from events_manifest._transformer.run import kinesis, pubsub
from events_manifest._transformer.run import queue as queues
from events_manifest._transformer.run.commit import OUTPUTS, RunFolder, State, tidy
from events_manifest._transformer.run.discovery import folder_uri

ADVICE = Advice(
    rerun_other="run the transformer whose input holds it: it finishes a stopped run before any other",
    rerun="--rerun",
    item=None,
    etl_time=None,
)
"""How a transformer user follows the run ledger's advice."""

S = TypeVar("S", bound=Storage)


def _bad_sink(config: TransformerConfig) -> kinesis.Stream | pubsub.Topic | None:
    """Where `output.bad` sends bad rows other than files, resolved where the job starts."""
    if config.bad.type == "kinesis":
        return kinesis.Stream.of(config.bad)
    return pubsub.Topic.of(config.bad) if config.bad.type == "pubsub" else None


def _clean_flag(handle: ManifestHandle | None) -> str:
    """The manifest as `events-manifest clean` takes it, when it has a URL."""
    return f"--manifest '{handle.url}'" if handle is not None and handle.url is not None else ""


@attrs.frozen
class TransformerJob(Generic[S]):
    """What every run of one transformer invocation shares; `lister` gives a run's input files
    by its name."""

    storage: S
    config: TransformerConfig
    iglu: ResolverConfig | None
    limits: dict[str, int] | None
    handle: ManifestHandle | None
    opened: DuplicateStorage | None
    sender: Any
    bad_sink: kinesis.Stream | pubsub.Topic | None
    """Where bad rows are sent instead of `output=bad/` (each has a `writer()`), if anywhere."""
    random_ids: bool
    rerun: bool
    advice: Advice
    input_root: str
    """The input folder, qualified: a run's item is its folder below it."""
    lister: Callable[[str], Listing]

    @classmethod
    def create(
        cls,
        storage: S,
        config: TransformerConfig,
        iglu: ResolverConfig | None,
        manifest: str | DuplicateStorage | None,
        *,
        lister: Callable[[str], Listing],
        random_ids: bool = False,
        rerun: bool = False,
        advice: Advice = ADVICE,
        **more: Any,
    ) -> Self:
        """The job of `config`, its manifest opened (a missing table or unusable file fails here);
        `more`: a subclass's own fields."""
        handle = ManifestHandle.of(manifest) if manifest is not None else None
        return cls(
            storage,
            config,
            iglu,
            atomic_limits(iglu) if config.truncate_atomic_fields else None,
            handle,
            handle.open() if handle is not None else None,
            queues.client(config.queue) if config.queue is not None else None,
            _bad_sink(config),
            random_ids,
            rerun,
            attrs.evolve(advice, manifest=_clean_flag(handle)),
            storage.qualify(config.input),
            lister,
            **more,
        )

    def listing(self, name: str) -> Listing:
        """The files the run `name` reads."""
        return self.lister(name)

    def send(self, name: str) -> Callable[[str], None] | None:
        """How the run's message goes to the queue, if one is configured."""
        queue, sender = self.config.queue, self.sender
        if queue is None or sender is None:
            return None
        base = folder_uri(self.storage.qualify(join(self.config.output, name)))
        return lambda message: queues.send(queue, sender, message, base)

    def outputs(self) -> tuple[str, ...]:
        """The folders a run delivers: no `output=bad/` when bad rows go to a stream or a topic."""
        return OUTPUTS if self.bad_sink is None else OUTPUTS[:1]

    def item(self, name: str) -> str:
        """A run's item in the manifest's ledger: its input folder."""
        return join(self.input_root, name)

    def reconcile(self, folders: dict[str, RunFolder], inputs: Sequence[str]) -> list[str]:
        """Bring the ledger to what the output says: a committed run whose ledger record a kill left
        unfinished is finished, and what that kill left beside its output removed. The names of the
        runs the ledger holds as stopped, to finish before any new run."""
        for name, found in folders.items():
            if found.state is State.COMMITTED and (found.leftovers() or found.claimed):
                tidy(self.storage, found, self.dead_elsewhere(name))
        if self.opened is None:
            return []
        now = runs_now()
        names = {self.item(name): name for name in inputs}
        stopped = []
        for record in self.opened.runs():
            of = names.get(record.item)
            if record.finished or of is None or not record.dead(now):
                continue
            if of in folders and folders[of].state is State.COMMITTED:
                self.opened.finish_run(record)
            else:
                stopped.append(of)
        return stopped

    def dead_elsewhere(self, name: str) -> Judge:
        """Whether a claim on the run `name` written on another host is dead: its run's record in
        the ledger says so (no sign of life for `ledger.LEASE_SECONDS`), or, with no record yet, the
        claim is older than that. Without a manifest nothing tells: it is not."""

        def judge(held: dict[str, Any]) -> bool:
            if self.opened is None:
                return False
            now = runs_now()
            item, holder = self.item(name), owner(held)
            records = [r for r in self.opened.runs() if r.item == item and not r.finished and r.owner == holder]
            if records:
                return all(record.dead(now) for record in records)
            return now - float(held.get("since", now)) > LEASE_SECONDS

        return judge
