"""The manual's examples marked `<!-- test -->` run as written."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
BLOCK = re.compile(r"<!-- test( spark)? -->\n```python\n(.*?)```", re.DOTALL)
"""`<!-- test spark -->` examples get the suite's Spark session as `spark`."""
EXAMPLES = [
    pytest.param(bool(spark), code, id=f"{page.name}-{n}")
    for page in sorted(DOCS.glob("*.md"))
    for n, (spark, code) in enumerate(BLOCK.findall(page.read_text()))
]


def test_there_are_examples() -> None:
    assert len(EXAMPLES) >= 2


@pytest.mark.parametrize(("needs_spark", "code"), EXAMPLES)
def test_example_runs(
    needs_spark: bool, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    monkeypatch.chdir(tmp_path)
    names = {"spark": request.getfixturevalue("spark")} if needs_spark else {}
    exec(compile(code, "<docs>", "exec"), names)


PROJECT = DOCS.parent
SOURCES = [
    path
    for folder in ("docs", "events_manifest", "spark_integration", "tests", "benchmarks")
    for path in sorted((PROJECT / folder).rglob("*"))
    if path.suffix in (".md", ".py")
] + [PROJECT / "README.md", PROJECT / "noxfile.py"]
OUTSIDE = re.compile(r"SPEC(?:\.md)? ?§|\.\./shared|SPEC\.md")


def test_the_contract_is_cited_from_the_project_itself() -> None:
    """Docs and docstrings point at the project's own pages (docs/), never at a file outside it."""
    assert len(SOURCES) > 50
    citing = [str(path.relative_to(PROJECT)) for path in SOURCES if OUTSIDE.search(path.read_text(encoding="utf-8"))]
    assert citing == []
    for page in ("manifest.md", "configuration.md", "enriched-events.md", "shred-job.md", "dynamodb.md"):
        assert (DOCS / page).is_file()


def test_every_public_name_is_in_the_api_page() -> None:
    """`__all__` holds what docs/api.md lists, and nothing else: a name users may import is explained."""
    import events_manifest
    import events_manifest.snowplow

    listed = set(re.findall(r"`(\w+)`", (DOCS / "api.md").read_text()))
    modules = [events_manifest, events_manifest.snowplow]
    if importlib.util.find_spec("pyspark") is not None:
        import spark_integration

        modules.append(spark_integration)
    for module in modules:
        missing = set(module.__all__) - listed
        assert not missing, f"{module.__name__}: {sorted(missing)} not in docs/api.md"
