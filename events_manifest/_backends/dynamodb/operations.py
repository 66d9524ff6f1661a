"""Every DynamoDB operation of the manifest, written once without I/O.

Each operation is a generator: it yields `(operation, request)` (`"PutItem"`, the keyword
arguments of `client.put_item`), receives the response, or has the SDK's `ClientError` or
`BotoCoreError` thrown in, and returns what the answer means. The sync manifest drives it with a
boto3 client (`drive`), the async one with an aioboto3 client (`drive_async`): the request, the
condition, the ttl, paging and error meanings are shared, only the I/O differs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from events_manifest._backends.dynamodb import requests
from events_manifest._backends.dynamodb.requests import Page
from events_manifest._manifest.ledger import Run
from events_manifest.errors import ManifestRequestError
from events_manifest.model import ManifestEntry

T = TypeVar("T")
Exchange = Generator[tuple[str, dict[str, Any]], Page, T]
"""Yields requests, is sent their responses, returns the operation's result."""
SDK_ERRORS = (ClientError, BotoCoreError)


def checked(table: str, operation: str, request: dict[str, Any]) -> Exchange[Page]:
    """One request whose failure is the manifest's (`requests.manifest_error`)."""
    try:
        return (yield operation, request)
    except SDK_ERRORS as e:
        raise requests.manifest_error(e, table) from e


def conditional(table: str, operation: str, request: dict[str, Any]) -> Exchange[bool]:
    """One conditional write: True if applied, False if its condition failed."""
    try:
        yield operation, request
    except SDK_ERRORS as e:
        if requests.condition_failed(e):
            return False
        raise requests.manifest_error(e, table) from e
    return True


def put(table: str, event_id: str, fingerprint: str, etl: int, ttl: int) -> Exchange[bool | ManifestRequestError]:
    """The manifest's conditional put: True (new), False (a duplicate), or the error of this put."""
    try:
        yield "PutItem", requests.put_request(table, event_id, fingerprint, etl, ttl)
    except SDK_ERRORS as e:
        return requests.put_outcome(e, table)
    return True


def lookup(table: str, event_id: str, fingerprint: str) -> Exchange[ManifestEntry | None]:
    response = yield from checked(table, "GetItem", requests.get_request(table, event_id, fingerprint))
    return requests.entry_from_item(response.get("Item"))


def pages(
    table: str,
    operation: str,
    make: Callable[[Page | None], dict[str, Any]],
    read: Callable[[Page], tuple[list[T], Page | None]],
) -> Exchange[list[T]]:
    """Everything the pages of a Query or Scan hold, each fetched from the last one's end."""
    found: list[T] = []
    start: Page | None = None
    while True:
        items, start = read((yield from checked(table, operation, make(start))))
        found += items
        if not start:
            return found


def entries_of_id(table: str, event_id: str) -> Exchange[list[ManifestEntry]]:
    return (
        yield from pages(
            table, "Query", lambda start: requests.query_request(table, event_id, start), requests.entries_from_page
        )
    )


def runs(table: str) -> Exchange[list[Run]]:
    return (
        yield from pages(table, "Query", lambda start: requests.runs_request(table, start), requests.runs_from_page)
    )


def swap_run(table: str, expected: Run | None, new: Run | None) -> Exchange[bool]:
    return (yield from conditional(table, *requests.swap_run_request(table, expected, new)))


def entry_keys_of_run(table: str, etl: int) -> Exchange[list[dict[str, Any]]]:
    """The keys of the entries stored with an etl time: a Scan (needs `dynamodb:Scan`)."""
    return (
        yield from pages(
            table,
            "Scan",
            lambda start: requests.entries_of_run_request(table, etl, start),
            lambda page: (page.get("Items", []), page.get("LastEvaluatedKey")),
        )
    )


def delete_entry(table: str, key: dict[str, Any], etl: int) -> Exchange[bool]:
    return (yield from conditional(table, "DeleteItem", requests.delete_entry_request(table, key, etl)))


def drive(exchange: Exchange[T], call: Callable[[str, dict[str, Any]], Page]) -> T:
    """Run an operation with a blocking `call(operation, request) -> response`."""
    try:
        step = next(exchange)
        while True:
            try:
                response = call(*step)
            except SDK_ERRORS as e:
                step = exchange.throw(e)
            else:
                step = exchange.send(response)
    except StopIteration as done:
        result: T = done.value
        return result


async def drive_async(exchange: Exchange[T], call: Callable[[str, dict[str, Any]], Awaitable[Page]]) -> T:
    """`drive` with an awaitable `call`."""
    try:
        step = next(exchange)
        while True:
            try:
                response = await call(*step)
            except SDK_ERRORS as e:
                step = exchange.throw(e)
            else:
                step = exchange.send(response)
    except StopIteration as done:
        result: T = done.value
        return result


def call_with(client: Any) -> Callable[[str, dict[str, Any]], Any]:
    """`call` for a boto3 or aioboto3 client: `PutItem` goes to `client.put_item(**request)`."""
    methods = {operation: getattr(client, method) for operation, method in requests.METHODS.items()}
    return lambda operation, request: methods[operation](**request)
