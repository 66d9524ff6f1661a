"""Sessions of the AWS SDK (boto3, aioboto3) that read the SDK's data files once a process.

Each client still gets a session of its own (a session is not thread-safe, and each finds its
credentials and region afresh), but every session shares one loader of the service models and
endpoint data, which the SDK would parse again for each: about 50 ms of CPU a client, paid by
each Spark task that opens a DynamoDB manifest.
"""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import aioboto3
    import boto3
    from botocore.loaders import Loader
    from botocore.session import Session

S = TypeVar("S", bound="Session")


class _Paths(list[str]):
    """A loader's search paths, each once: boto3 adds its own data folder to the loader of every
    session it is given, which would grow the shared one by an entry a client."""

    def append(self, path: str) -> None:
        if path not in self:
            super().append(path)


@functools.cache
def _loader() -> Loader:
    """The process's one loader, searching what a new botocore session searches (`AWS_DATA_PATH`)."""
    import botocore.session
    from botocore.loaders import Loader

    data_path = botocore.session.get_session().get_config_variable("data_path") or ""
    extra = [os.path.expanduser(os.path.expandvars(path)) for path in data_path.split(os.pathsep) if path]
    return Loader(extra_search_paths=_Paths(extra))


def boto3_session() -> boto3.session.Session:
    """A new boto3 session on the shared loader."""
    import boto3
    import botocore.session

    return boto3.session.Session(botocore_session=_on_shared_loader(botocore.session.get_session()))


def aioboto3_session() -> aioboto3.Session:
    """A new aioboto3 session on the shared loader."""
    import aioboto3
    from aiobotocore.session import get_session

    return aioboto3.Session(botocore_session=_on_shared_loader(get_session()))


def _on_shared_loader(core: S) -> S:
    """A new botocore (or aiobotocore) session, given the process's loader."""
    core.register_component("data_loader", _loader())
    return core
