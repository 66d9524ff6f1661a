"""Where users run the jobs, on loopback: S3 (moto's server, reached through the S3A connector whose
jars `nox -s integration` fetches from the package index), DynamoDB (dynalite), SQS (moto), Spark
sessions and spark-submit with those settings."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
import boto3
import pytest

from events_manifest.snowplow import sample_batches
from events_manifest.testing import LocalServer, start_moto
from tests.commands import env
from tests.transformer_helpers import RESOLVER

JARS = os.environ.get("EVENTS_MANIFEST_S3A_JARS")
if JARS is None:
    pytest.skip("the S3A connector's jars: run `nox -s integration`", allow_module_level=True)
KEYS = {"access_key": "test-access-key", "secret_key": "test-secret-key"}


@pytest.fixture(scope="session")
def s3_server() -> Iterator[LocalServer]:
    """moto's server: S3, SQS and Kinesis on one loopback port."""
    with start_moto() as server:
        yield server


@attrs.frozen
class S3:
    """A bucket of its own on the moto server, and how Spark and boto3 reach it."""

    server: LocalServer
    bucket: str

    @property
    def client(self) -> Any:
        return boto3.client("s3", region_name="us-east-1", endpoint_url=self.server.endpoint)

    def url(self, key: str = "") -> str:
        return f"s3a://{self.bucket}/{key}".rstrip("/")

    def put_folder(self, folder: Path, prefix: str) -> None:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                self.client.put_object(
                    Bucket=self.bucket, Key=f"{prefix}/{path.relative_to(folder)}", Body=path.read_bytes()
                )

    def keys(self, prefix: str) -> list[str]:
        found: list[str] = []
        token = None
        while True:
            extra: dict[str, str] = {"ContinuationToken": token} if token else {}
            page = self.client.list_objects_v2(Bucket=self.bucket, Prefix=prefix, **extra)
            found += [item["Key"] for item in page.get("Contents", [])]
            token = page.get("NextContinuationToken")
            if not token:
                return sorted(found)

    def download(self, prefix: str, folder: Path) -> None:
        """Every object under `prefix/` into `folder`, at the same relative place."""
        for key in self.keys(prefix + "/"):
            target = folder / key.removeprefix(prefix + "/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(self.read(key))

    def read(self, key: str) -> bytes:
        body: bytes = self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        return body


@pytest.fixture
def s3(s3_server: LocalServer) -> S3:
    bucket = f"lake-{uuid.uuid4().hex[:10]}"
    boto3.client("s3", region_name="us-east-1", endpoint_url=s3_server.endpoint).create_bucket(Bucket=bucket)
    return S3(s3_server, bucket)


def spark_settings(server: LocalServer) -> dict[str, str]:
    from spark_integration.session import s3a_settings

    jars = ",".join(str(path) for path in sorted(Path(str(JARS)).glob("*.jar")))
    return {"spark.jars": jars, **s3a_settings(server.endpoint, **KEYS)}


@pytest.fixture(scope="session")
def spark(s3_server: LocalServer) -> Iterator[Any]:
    """The session of these tests: the suite's local session, with the S3A connector on moto."""
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(Path(__file__).parents[2]), os.environ.get("PYTHONPATH")])
    )
    from spark_integration.session import local_session

    settings: dict[str, Any] = {"spark.sql.shuffle.partitions": "2", **spark_settings(s3_server)}
    session = local_session("local[2]", "events-manifest-integration", **settings)
    yield session
    session.stop()


def spark_submit(
    module_file: str, *args: str, server: LocalServer, master: str = "local[2]", options: Sequence[str] = ()
) -> list[str]:
    """The command line of `spark-submit` running a job's module on `master` with the S3A
    connector on `server`, and spark-submit's other `options`."""
    import pyspark

    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    command = [str(submit), "--master", master, *options]
    for key, value in spark_settings(server).items():
        command += ["--jars", value] if key == "spark.jars" else ["--conf", f"{key}={value}"]
    return [*command, module_file, *args]


def submit_env(**extra: str) -> dict[str, str]:
    return {**env(), "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable, **extra}


def run_submit(command: list[str], cwd: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=cwd, env=submit_env(**extra), capture_output=True, text=True, timeout=600, check=False
    )


@pytest.fixture
def runs(tmp_path: Path, s3: S3) -> Path:
    """The two bundled sample batches as runs 1 and 2 (the second re-delivers events of the first),
    locally under `in/` and on S3 under `in/`."""
    for n, batch in enumerate(sample_batches(), start=1):
        shutil.copytree(batch, tmp_path / "in" / f"run={n}")
        s3.put_folder(batch, f"in/run={n}")
    (tmp_path / "iglu.json").write_text(json.dumps(RESOLVER))
    return tmp_path
