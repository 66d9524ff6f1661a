"""The stream transformer's Pub/Sub input (`input.subscription`, the reference's GCP transformer):
the subscription pulled in the driver by the maintained client's streaming pull, each batch of
messages staged as one file under the checkpoint, and acknowledged only once that file is in
place (docs/stream-transformer.md). Spark's file source reads the staged files, so a kill loses
nothing: a message not staged yet was not acknowledged and comes back; one staged and not yet
acknowledged comes back too, and is known by its message id: acknowledged, not staged again.

The client extends the deadlines of what it pulled and has not acknowledged (its lease
management: `maxAckExtensionPeriod`, `minDurationPerAckExtension`), holds at most `bufferSize` of
them (its flow control), and opens `parallelPullCount` streams. A staged file holds one message a
line, its id then its data in base64 (`<id> <data>`): a message is read whole, whatever line ends
it holds, and `data_of` takes the data back.
"""

from __future__ import annotations

import base64
import contextlib
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import attrs

from events_manifest._jobs import steps
from events_manifest._jobs.storage import Storage, join
from events_manifest.errors import ManifestError

STAGED = "pubsub"
"""The folder under the checkpoint that holds the staged messages (the file source's input)."""
FLUSH_SECONDS = 0.5
"""How long a message waits in memory at most before its batch is staged (a batch is staged at
once when it holds `bufferSize` messages)."""
QUIET_SECONDS = 5.0
"""An available-now run reads until the subscription has given nothing for this long."""
REMEMBERED_SECONDS = 900.0
"""How long the id of a staged message is kept, to acknowledge without staging again a copy that
comes back: Pub/Sub gives back a message whose acknowledgement was lost once its deadline passes
(ten minutes at most)."""


class PubsubInputError(ManifestError):
    """The subscription cannot be read: it does not exist, or refuses us."""


@attrs.frozen
class PubsubInput:
    """The reference's Pub/Sub input section, with its defaults."""

    subscription: str
    """`projects/PROJECT/subscriptions/NAME`."""
    parallel_pull_count: int = 1
    buffer_size: int = 500
    max_ack_extension_seconds: float = 3600.0
    min_ack_extension_seconds: float = 60.0
    await_terminate_seconds: float = 60.0

    def describe(self) -> str:
        return f"Pub/Sub subscription {self.subscription}"


def _client() -> Any:
    from google.auth.exceptions import GoogleAuthError
    from google.cloud import pubsub_v1  # the `pubsub` extra: imported only by a Pub/Sub input

    try:
        return pubsub_v1.SubscriberClient()
    except GoogleAuthError as e:
        raise PubsubInputError(f"Pub/Sub: {no_credentials(e)}") from None


def no_credentials(error: BaseException) -> str:
    """What to do when the Google client finds no credentials (its own words, then the advice)."""
    return (
        f"no Google credentials ({_said(error)}): set GOOGLE_APPLICATION_CREDENTIALS to a service account's key file, "
        "run where the platform gives them (Dataproc, GKE), or point PUBSUB_EMULATOR_HOST at an emulator"
    )


def check_subscription(source: PubsubInput, client: Any = None) -> None:
    """Refuse a subscription that does not exist or cannot be read, in one line, before anything runs."""
    from google.api_core import exceptions

    subscriber = client or _client()
    try:
        subscriber.get_subscription(subscription=source.subscription, timeout=30)
    except exceptions.GoogleAPICallError as e:
        raise _missing_or(e, source) from None


def _said(error: BaseException) -> str:
    return " ".join(str(error).split())


class Stager:
    """Pulls the subscription and stages what it receives under `folder` (a file a batch, written
    whole under a hidden name and moved into place by `Storage.write_text`), then acknowledges it.
    `start` opens the pulls, `stop` closes them and stages what it holds; `failure` is what ended
    a pull (the subscription deleted), for the job to stop on."""

    def __init__(
        self,
        source: PubsubInput,
        storage: Storage,
        folder: str,
        *,
        flush_seconds: float = FLUSH_SECONDS,
        client: Any = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.source, self.storage, self.folder = source, storage, folder
        self.flush_seconds, self.clock = flush_seconds, clock
        self._client = client
        self._pending: list[Any] = []
        self._first_at: float | None = None
        self._lock = threading.Lock()
        self._futures: list[Any] = []
        self._stopping = threading.Event()
        self._flusher: threading.Thread | None = None
        self.failure: BaseException | None = None
        self.staged_messages = 0
        self.repeated_messages = 0
        """Copies of messages already staged that came back, acknowledged and not staged again."""
        self.last_received = clock()
        self._staged_ids: dict[str, float] = {}
        """The ids of the messages staged (or found staged), each with when: oldest first."""

    def recall(self) -> int:
        """Take the ids of what an earlier start staged under the folder and Spark has not consumed
        yet (its messages may come back: a kill before their acknowledgement): the ids known."""
        now = self.clock()
        if self.storage.exists(self.folder):
            for name in self.storage.children(self.folder):
                if not name.startswith((".", "_")):
                    for line in self.storage.read_text(join(self.folder, name)).splitlines():
                        if " " in line:
                            self._staged_ids[line.split(" ", 1)[0]] = now
        return len(self._staged_ids)

    def start(self) -> None:
        from google.cloud import pubsub_v1

        client = self._client = self._client or _client()
        self.recall()
        control = pubsub_v1.types.FlowControl(
            max_messages=self.source.buffer_size,
            max_lease_duration=round(self.source.max_ack_extension_seconds),
            min_duration_per_lease_extension=round(self.source.min_ack_extension_seconds),  # whole seconds
        )
        self.storage.mkdirs(self.folder)
        self._stopping.clear()
        for _ in range(self.source.parallel_pull_count):
            future = client.subscribe(self.source.subscription, self._received, flow_control=control)
            future.add_done_callback(self._ended)
            self._futures.append(future)
        self._flusher = threading.Thread(target=self._flush_loop, name="pubsub-stager", daemon=True)
        self._flusher.start()

    def _received(self, message: Any) -> None:
        with self._lock:
            self._pending.append(message)
            self.last_received = self.clock()
            if self._first_at is None:
                self._first_at = self.last_received
            full = len(self._pending) >= self.source.buffer_size
        if full:
            self._flush_or_fail()

    def _ended(self, future: Any) -> None:
        if self._stopping.is_set() or future.cancelled():
            return
        error = future.exception()
        if error is not None and self.failure is None:
            self.failure = _missing_or(error, self.source)

    def _flush_loop(self) -> None:
        while not self._stopping.wait(self.flush_seconds / 5):
            with self._lock:
                due = self._first_at is not None and self.clock() - self._first_at >= self.flush_seconds
            if due:
                self._flush_or_fail()

    def _flush_or_fail(self) -> None:
        """`flush` on the client's threads: a failure to stage stops the pulls and is kept for the job."""
        try:
            self.flush()
        except Exception as e:
            if self.failure is None:
                self.failure = PubsubInputError(
                    f"messages of Pub/Sub subscription {self.source.subscription} could not be staged under "
                    f"{self.folder} ({_said(e)}): they were not acknowledged, and come back to the next start"
                )
            self._stopping.set()
            for future in self._futures:
                future.cancel()

    def flush(self) -> int:
        """Stage what was received as one file, then acknowledge it: the messages staged. A message
        staged before (its acknowledgement lost, or a kill before it) is acknowledged, not staged."""
        with self._lock:
            messages, self._pending, self._first_at = self._pending, [], None
            if not messages:
                return 0
            now = self.clock()
            while self._staged_ids and now - next(iter(self._staged_ids.values())) > REMEMBERED_SECONDS:
                del self._staged_ids[next(iter(self._staged_ids))]
            fresh = list({m.message_id: m for m in messages if m.message_id not in self._staged_ids}.values())
            if fresh:
                steps.reached("pubsub-received")
                lines = "".join(f"{m.message_id} {base64.b64encode(m.data).decode('ascii')}\n" for m in fresh)
                name = f"{time.time_ns()}-{uuid.uuid4().hex[:12]}.txt"
                try:
                    self.storage.write_text(join(self.folder, name), lines)
                except BaseException:
                    for message in messages:
                        message.nack()  # back to the subscription at once, for the next read
                    raise
                steps.reached("pubsub-staged")
                self._staged_ids.update((m.message_id, now) for m in fresh)
            for message in messages:
                message.ack()
            self.staged_messages += len(fresh)
            self.repeated_messages += len(messages) - len(fresh)
            return len(fresh)

    def drain(self, quiet_seconds: float = QUIET_SECONDS) -> int:
        """Pull until the subscription has given nothing for `quiet_seconds`, stage it, stop: an
        available-now run's read. The messages staged."""
        self.last_received = self.clock()
        self.start()
        while self.failure is None and self.clock() - self.last_received < quiet_seconds:
            time.sleep(0.1)
        self.stop()
        return self.staged_messages

    def stop(self) -> None:
        """Close the pulls (waiting up to `awaitTerminatePeriod` for them), then stage what they gave."""
        self._stopping.set()
        for future in self._futures:
            future.cancel()
        for future in self._futures:
            with contextlib.suppress(Exception):  # a cancelled pull ends in its cancellation
                future.result(timeout=self.source.await_terminate_seconds)
        self._futures = []
        if self._flusher is not None:
            self._flusher.join()
            self._flusher = None
        if self.failure is None:
            self.flush()
            return
        with self._lock:
            for message in self._pending:
                message.nack()  # staging failed: back to the subscription, for the next start
            self._pending, self._first_at = [], None

    def check(self) -> None:
        """Raise what ended a pull, if one ended."""
        if self.failure is not None:
            raise self.failure


def data_of(line: str) -> bytes:
    """A staged line's message data (an earlier version staged the data alone)."""
    return base64.b64decode(line.rsplit(" ", 1)[-1])


def _missing_or(error: BaseException, source: PubsubInput) -> PubsubInputError:
    from google.api_core import exceptions

    if isinstance(error, exceptions.NotFound):
        return PubsubInputError(
            f"Pub/Sub subscription {source.subscription} does not exist (deleted, or never created): create it, "
            "or correct input.subscription"
        )
    return PubsubInputError(f"Pub/Sub subscription {source.subscription} cannot be read: {_said(error)}")


def staged_folder(checkpoint: str) -> str:
    return join(checkpoint, STAGED)
