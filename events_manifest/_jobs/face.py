"""What the glue takes of a job's run: places, claims, storage, the run, the AWS SDK's
session for S3, and secrets hidden from what a job says. The glue (`spark_integration`) imports the
area through this face alone (`tests/core/test_layers.py`)."""

from __future__ import annotations

from events_manifest import _redact as redact
from events_manifest._aws import boto3_session, default_region
from events_manifest._jobs.folders import (
    Folder,
    FolderClaimedError,
    InputMissingError,
    OutputExistsError,
    beat,
    claim,
    quiet,
    silent_for,
)
from events_manifest._jobs.places import INPUT, MANIFEST, Place, check_places
from events_manifest._jobs.run import NOTHING_WRITTEN, JobRun, one_line
from events_manifest._jobs.staging import Staging
from events_manifest._jobs.storage import (
    FILE,
    FOLDER,
    Listing,
    LocalStorage,
    Storage,
    being_copied,
    hidden,
    inside,
    join,
    local_path,
    no_slash,
    unread,
)

__all__ = [
    "FILE",
    "FOLDER",
    "Folder",
    "FolderClaimedError",
    "INPUT",
    "InputMissingError",
    "JobRun",
    "Listing",
    "LocalStorage",
    "MANIFEST",
    "NOTHING_WRITTEN",
    "OutputExistsError",
    "Place",
    "Staging",
    "Storage",
    "beat",
    "being_copied",
    "boto3_session",
    "check_places",
    "claim",
    "default_region",
    "hidden",
    "inside",
    "join",
    "local_path",
    "no_slash",
    "one_line",
    "quiet",
    "redact",
    "silent_for",
    "unread",
]
