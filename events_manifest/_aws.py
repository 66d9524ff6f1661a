"""Sessions of the AWS SDK (boto3, aioboto3) that read the SDK's data files once a process; the
region when none is given, the regions the SDK knows, a region name's shape.

Each client still gets a session of its own (a session is not thread-safe, and each finds its
credentials and region afresh), but every session shares one loader of the service models and
endpoint data, which the SDK would parse again for each: about 50 ms of CPU a client, paid by
each Spark task that opens a DynamoDB manifest.
"""

from __future__ import annotations

import functools
import os
import re
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import aioboto3
    import boto3
    from botocore.loaders import Loader
    from botocore.session import Session

from events_manifest.errors import ManifestConfigError

S = TypeVar("S", bound="Session")
_REGION = re.compile(r"[a-z]{2}(-[a-z0-9]+)+")


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


def default_region() -> str | None:
    """The AWS region when none is given, found as the AWS SDKs find it: `AWS_REGION` (the Java, Go
    and JavaScript SDKs read it; EMR, ECS and Lambda set it), then boto's own chain
    (`AWS_DEFAULT_REGION`, the profile's region in the AWS config file)."""
    region: str | None = os.environ.get("AWS_REGION") or boto3_session().region_name
    return region


@functools.cache
def known_regions() -> tuple[str, ...]:
    """Every region of every AWS partition the SDK knows (botocore's endpoint data), sorted."""
    import botocore.session

    data = botocore.session.get_session().get_data("endpoints")
    return tuple(sorted({region for partition in data["partitions"] for region in partition["regions"]}))


def no_region() -> ManifestConfigError:
    """No AWS region anywhere: the one message, wherever the SDK finds none."""
    return ManifestConfigError("no AWS region given: set awsRegion in the config, region= in the URL, or AWS_REGION")


def check_region_name(region: str, where: str = "AWS region") -> str:
    """A region name's shape (`eu-west-1`), as a manifest's URL and config are read: a region the SDK
    does not know yet is taken (the transformer's config asks for a known one: the reference's rule,
    `_transformer.config.check_known_region`)."""
    if not _REGION.fullmatch(region):
        raise ManifestConfigError(f"{where}: [{region}] is not an AWS region name (such as eu-west-1)")
    return region
