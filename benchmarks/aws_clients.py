"""CPU to make one DynamoDB client: a new SDK session each (what boto3 and aioboto3 do by default)
against `events_manifest._aws`'s sessions, which share one loader of the SDK's data files.
Alternated rounds, the median of each, in milliseconds of this process's CPU a client.

    python benchmarks/aws_clients.py --clients 20 --rounds 5
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

REGION, ENDPOINT = "eu-west-1", "http://127.0.0.1:9"


def per_client(make: Callable[[], Any], clients: int) -> float:
    """Milliseconds of CPU a client, `clients` made one after another."""
    started = time.process_time()
    for _ in range(clients):
        make()
    return (time.process_time() - started) / clients * 1000


def opened(session: Callable[[], Any]) -> Callable[[], None]:
    """An aioboto3 client of a new `session()`, opened and closed."""

    async def run() -> None:
        async with session().client("dynamodb", region_name=REGION, endpoint_url=ENDPOINT):
            pass

    return lambda: asyncio.run(run())


def main() -> int:
    import aioboto3
    import boto3

    from events_manifest._aws import aioboto3_session, boto3_session

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    cases: dict[str, Callable[[], Any]] = {
        "boto3, a new SDK session": lambda: boto3.session.Session().client(
            "dynamodb", region_name=REGION, endpoint_url=ENDPOINT
        ),
        "boto3, _aws.boto3_session": lambda: boto3_session().client(
            "dynamodb", region_name=REGION, endpoint_url=ENDPOINT
        ),
        "aioboto3, a new SDK session": opened(aioboto3.Session),
        "aioboto3, _aws.aioboto3_session": opened(aioboto3_session),
    }
    for make in cases.values():  # the first client of each reads the files
        make()
    times: dict[str, list[float]] = {name: [] for name in cases}
    for n in range(args.rounds):
        for name in list(cases) if n % 2 == 0 else list(cases)[::-1]:
            times[name].append(per_client(cases[name], args.clients))
    for name, found in times.items():
        print(f"{name:<32} {statistics.median(found):6.1f} ms of CPU a client")
    return 0


if __name__ == "__main__":
    sys.exit(main())
