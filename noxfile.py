"""Developer sessions: `nox -s tests`, `lint`, `typecheck`, `docs`, `demo`, `benchmarks`."""

from __future__ import annotations

import nox

nox.options.sessions = ["tests", "lint", "typecheck", "docs"]
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_external_run = True


def _npm(session: nox.Session) -> None:
    """The local DynamoDB server (dynalite) from the committed lockfile."""
    session.run("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error", external=True)


@nox.session
def tests(session: nox.Session) -> None:
    """The whole test suite against real local servers and a local Spark session."""
    session.install("-c", "constraints.txt", "-e", ".[all,test]")
    _npm(session)
    session.run("pytest", *(session.posargs or ["-q"]))


@nox.session
def lint(session: nox.Session) -> None:
    session.install("-c", "constraints.txt", "ruff>=0.6")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    session.install("-c", "constraints.txt", "-e", ".[all,lint,test]")
    session.run("mypy")


@nox.session
def docs(session: nox.Session) -> None:
    """Build the user's manual strictly: a broken link or a missing page fails."""
    session.install("-c", "constraints.txt", "-e", ".[docs]")
    session.run("mkdocs", "build", "--strict", "--site-dir", "site")


@nox.session
def demo(session: nox.Session) -> None:
    """The main job: the shred job on the two bundled sample batches, on an embedded SQLite manifest."""
    session.install("-c", "constraints.txt", "-e", ".[spark]")
    session.run("python", "-m", "spark_integration.demo", *session.posargs)


@nox.session
def benchmarks(session: nox.Session) -> None:
    """Run on demand: `nox -s benchmarks -- manifest_throughput` (see docs/benchmarks.md)."""
    session.install("-c", "constraints.txt", "-e", ".[all,test]", "py-spy")  # py-spy: shred_job --profile
    _npm(session)
    name = session.posargs[0] if session.posargs else "manifest_throughput"
    session.run("python", f"benchmarks/{name}.py", *session.posargs[1:])
