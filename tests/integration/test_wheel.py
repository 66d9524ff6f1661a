"""The package as users install it: the wheel `nox -s integration` builds from this checkout holds
every file of the two packages (the bundled schemas, the sample batches, `py.typed`), the license
and notice, and the commands; installed (not editable) in a fresh environment, it runs from there,
away from the checkout."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest

from spark_integration import demo
from tests.commands import ROOT, in_process

ENVIRONMENT = os.environ.get("EVENTS_MANIFEST_EXECUTOR_ENV")
if ENVIRONMENT is None:
    pytest.skip("the built wheel and its environment: run `nox -s integration`", allow_module_level=True)
BUILD = Path(ENVIRONMENT).parent
VENV = BUILD / "venv"


def test_the_wheel_holds_every_file_of_the_packages() -> None:
    [wheel] = (BUILD / "dist").glob("events_manifest-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    tracked = subprocess.run(
        ["git", "ls-files", "events_manifest", "spark_integration"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert len(tracked) > 50 and set(tracked) <= names, sorted(set(tracked) - names)
    packaged = {name for name in names if name.startswith(("events_manifest/", "spark_integration/"))}
    assert packaged == set(tracked), f"not in the checkout: {sorted(packaged - set(tracked))}"
    info = next(name.split("/")[0] for name in names if name.endswith(".dist-info/METADATA"))
    assert {f"{info}/licenses/LICENSE", f"{info}/licenses/NOTICE"} <= names
    entry_points = zipfile.ZipFile(wheel).read(f"{info}/entry_points.txt").decode()
    assert "events-manifest = events_manifest._cli:main" in entry_points
    assert "events-manifest-transformer = spark_integration.transformer:main" in entry_points


def test_the_installed_wheel_runs_away_from_the_checkout(tmp_path: Path) -> None:
    """Its command line puts into a SQLite manifest; its bundled schemas validate a config; its
    sample batches are read from the installed package, not from this checkout."""
    clean = {"PATH": f"{VENV / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path)}

    def run(*command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            command, cwd=tmp_path, env=clean, capture_output=True, text=True, timeout=120, check=False
        )

    manifest = f"sqlite:///{tmp_path / 'm.db'}"
    put = [
        "events-manifest",
        "put",
        "--manifest",
        manifest,
        "c6ef3124-b53a-4b13-a233-0088f79dcbcb",
        "f",
        "2026-11-01 06:00:00",
    ]
    assert run(*put).stdout.strip() == "new"
    assert run(*put).stdout.strip() == "new", "a rerun with the same etl time is not a duplicate"
    config = {
        "schema": "iglu:com.snowplowanalytics.snowplow.storage/amazon_dynamodb_config/jsonschema/2-0-0",
        "data": {
            "name": "dedup",
            "awsRegion": "eu-west-1",
            "dynamodbTable": "events",
            "id": "56799a26-980c-4148-8bd9-c021b988c669",
            "auth": None,
            "purpose": "EVENTS_MANIFEST",
        },
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    validated = run("events-manifest", "config", "validate", str(tmp_path / "config.json"))
    assert validated.returncode == 0, validated.stdout + validated.stderr
    where = run("python", "-c", "import events_manifest.snowplow as s; print(s.__file__); print(*s.sample_batches())")
    files = where.stdout.split()
    assert files and all(path.startswith(str(VENV)) for path in files), where.stdout + where.stderr
    assert all(Path(path).exists() for path in files[1:]) and len(files) == 3


def summaries(said: str, folder: Path) -> str:
    """What the demo printed, its folder and times left out."""
    return re.sub(r"Shred run: \S+ -> (\S+) \([\d.]+ s\)", r"Shred run: \1", said.replace(str(folder), "F"))


def test_the_wheel_installed_with_spark_runs_the_demo(tmp_path: Path, spark: Any) -> None:
    """`pip install events-manifest[spark]` from the wheel, then the README's main job from that
    environment, as a process of its own: the same summaries as the checkout's own demo (run here,
    on the session of the tests), the outputs on disk."""
    [wheel] = (BUILD / "dist").glob("events_manifest-*.whl")
    venv = tmp_path / "venv"
    alone = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}  # the suite's Spark sets it
    subprocess.run(["python", "-m", "venv", str(venv)], check=True, timeout=120, env=alone)
    constraints = os.environ.get("EVENTS_MANIFEST_CONSTRAINTS", str(ROOT / "constraints.txt"))  # the session's Spark
    install = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "-c", constraints]
    subprocess.run([*install, f"{wheel}[spark]"], check=True, timeout=900, env=alone)

    def demo_of(python: str, folder: Path) -> str:
        env = {"PATH": f"{Path(python).parent}:/usr/bin:/bin", "HOME": str(tmp_path)}
        env |= {key: os.environ[key] for key in ("JAVA_HOME",) if key in os.environ}
        folder.mkdir()
        done = subprocess.run(
            [python, "-m", "spark_integration.demo", "--out", "out"],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return summaries(done.stdout, folder)

    installed = demo_of(str(venv / "bin" / "python"), tmp_path / "installed")
    (tmp_path / "checkout").mkdir()
    ran = in_process(demo.main, tmp_path / "checkout", "--out", "out")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    checkout = summaries(ran.stdout, tmp_path / "checkout")
    assert installed == checkout
    assert re.search(r"dropped cross-batch +[1-9]", installed), installed
    for batch in ("batch-1", "batch-2"):
        assert list((tmp_path / "installed" / "out" / batch / "shredded").rglob("part-*"))
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import spark_integration; print(spark_integration.__file__)"],
        cwd=tmp_path,
        env=alone,
        capture_output=True,
        text=True,
        check=True,
    )
    assert where.stdout.startswith(str(venv))
    shutil.rmtree(venv)  # a gigabyte with pyspark: a machine with little disk left needs it back
