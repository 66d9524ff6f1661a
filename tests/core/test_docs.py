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


API_SECTION = re.compile(r"^## `([\w.]+)`\n(.*?)(?=^## |\Z)", re.DOTALL | re.MULTILINE)
IMPORT = re.compile(r"^from ((?:events_manifest|spark_integration)[\w.]*) import (\([^)]*\)|[^\n]+)", re.MULTILINE)


def _api() -> dict[str, set[str]]:
    """docs/api.md: each public module and the names its table lists (first column)."""
    sections = API_SECTION.findall((DOCS / "api.md").read_text())
    return {
        module: {
            name
            for row in body.splitlines()
            if row.startswith("| `")
            for name in re.findall(r"`(\w+)`", row.split("|")[1])
        }
        for module, body in sections
    }


def _importable(module: str) -> bool:
    return not module.startswith("spark_integration") or importlib.util.find_spec("pyspark") is not None


def test_every_public_module_exports_what_the_api_page_lists_and_nothing_else() -> None:
    """Both directions, for every module the page names: a name users may import is explained, and
    a name the page explains is there."""
    api = _api()
    assert {"events_manifest", "events_manifest.aio", "spark_integration"} <= set(api)
    for module, listed in api.items():
        if _importable(module):
            exported = set(importlib.import_module(module).__all__)
            extra, absent = sorted(exported - listed), sorted(listed - exported)
            assert exported == listed, f"{module}: exported, not listed {extra}; listed, not exported {absent}"


def test_the_manual_imports_only_public_names() -> None:
    """Every `from events_manifest... import ...` of the manual and the README names a public module
    and names its page lists (so that the manual teaches nothing internal)."""
    api = _api()
    pages = [*sorted(DOCS.glob("*.md")), DOCS.parent / "README.md"]
    found = [(page.name, module, names) for page in pages for module, names in IMPORT.findall(page.read_text())]
    assert len(found) > 10
    for page, module, names in found:
        if page == "development.md":
            continue  # the maintainer's page names internal modules on purpose
        text = re.sub(r"#[^\n]*", "", names.strip("()"))  # comments in a parenthesised list
        imported = {name.strip() for name in text.replace("\n", ",").split(",") if name.strip()}
        assert module in api, f"{page}: {module} is not a public module (docs/api.md)"
        assert imported <= api[module], f"{page}: {sorted(imported - api[module])} not public in {module}"


COMMANDS = re.compile(r"^\| `([\w.]+)` \|", re.MULTILINE)


def test_every_module_is_public_by_the_api_page_or_internal_by_its_name() -> None:
    """A module whose dotted name has no `_`-prefixed part is a public module (a section of
    docs/api.md) or a command (its table of commands); a documented module or command exists."""
    api = set(_api())
    commands = set(COMMANDS.findall((DOCS / "api.md").read_text().split("## Commands")[1]))
    modules = {
        ".".join(path.relative_to(PROJECT).with_suffix("").parts).removesuffix(".__init__")
        for package in ("events_manifest", "spark_integration")
        for path in (PROJECT / package).rglob("*.py")
    }
    unmarked = {name for name in modules if not any(part.startswith("_") for part in name.split("."))}
    assert len(modules) > 60 and commands >= {"spark_integration.transformer", "events_manifest"}
    assert unmarked - api - commands == set(), "neither listed in docs/api.md nor `_`-prefixed"
    assert (api | commands) - modules == set(), "listed in docs/api.md, not a module"


def _resolve(dotted: str) -> object | None:
    """The module or attribute a dotted path names, or None."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            found = getattr(found, name, None)
        return found
    return None


def test_every_place_in_the_rule_table_exists() -> None:
    """docs/development.md's "Where each rule is": each path names a module or a name in one (a
    bracketed name is in the module before it), so the table cannot drift from the tree."""
    page = (DOCS / "development.md").read_text()
    table = page.split("## Where each rule is")[1].split("\n## ")[0]
    rows = [row.split(" | ")[-1] for row in table.splitlines() if row.startswith("| ") and " | " in row][1:]
    assert len(rows) > 40
    for cell in rows:
        module: object | None = None
        unimportable = False  # a module of the glue where pyspark is not installed (`nox -s core`)
        for path in re.findall(r"`([\w.]+)`", cell):
            absolute = path if path.startswith(("spark_integration", "events_manifest")) else f"events_manifest.{path}"
            if not _importable(absolute):
                module, unimportable = None, True
                continue
            found = _resolve(absolute)
            if found is None and module is not None:
                found = _resolve(f"{module.__name__}.{path}")  # type: ignore[attr-defined]
            if found is None and unimportable:
                continue  # a name in the glue's module just skipped
            assert found is not None, f"docs/development.md: `{path}` ({cell.strip()}) names nothing"
            if hasattr(found, "__path__") or type(found).__name__ == "module":
                module = found


CODE_NAME = re.compile(r"`([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?:\(\))?`")
NOT_CODE = {"events_manifest.backends", "transformer.metrics", "client.put_item"}
"""Dotted names in backticks that name no Python object of the project: the backends' entry-point
group, the metrics' logger, the SDK's method."""
CONFIG_SECTIONS = {"config", "input", "output", "formats", "queue", "monitoring"}
"""First parts of dotted names that are config keys (`formats.fileFormat`), whatever module bears
the name."""
FILE_SUFFIXES = ("json", "py", "md", "tsv", "gz", "db", "hocon", "txt", "csv")


def _candidates(name: str, modules: dict[str, list[str]], *, in_code: bool) -> list[str]:
    """Where a dotted name may point: itself when it starts with a package; an internal name
    (`_jobs.run`) under either package; `module.name` under each module of that name (a
    public module's, `snowplow.EnrichedDeduplicator`, or a module's name in its package's
    docstrings, `ledger.Run`; a name left without its module's `_`, `snowplow.fields` for
    `_snowplow.fields`, names nothing), but for config keys (`formats.fileFormat`)."""
    first, rest = name.split(".", 1)
    if first in ("events_manifest", "spark_integration"):
        return [name]
    if first.startswith("_"):
        return [f"events_manifest.{name}", f"spark_integration.{name}"]
    if first in CONFIG_SECTIONS:
        return []
    return [f"{module}.{rest}" for module in modules.get(first, [])]


def test_every_dotted_name_in_docstrings_and_the_manual_names_something() -> None:
    """A dotted name in backticks (`_jobs.run.JobRun`, `events_manifest._transformer.output.formats`,
    in a docstring `ledger.Run`) resolves to a module or a name in one, so a reference cannot
    outlive what it names when code moves."""
    project = DOCS.parent
    files = [
        path
        for package in ("events_manifest", "spark_integration")
        for path in sorted((project / package).rglob("*.py"))
    ]
    modules: dict[str, list[str]] = {}
    for path in files:
        dotted = ".".join(path.relative_to(project).with_suffix("").parts).removesuffix(".__init__")
        modules.setdefault(dotted.rsplit(".", 1)[-1], []).append(dotted)
    checked, unresolved = 0, []
    for path in [*files, *sorted(DOCS.glob("*.md"))]:
        text = path.read_text()
        for match in CODE_NAME.finditer(text):
            name = match.group(1)
            if name in NOT_CODE or name.rsplit(".", 1)[-1] in FILE_SUFFIXES:
                continue
            candidates = _candidates(name, modules, in_code=path.suffix == ".py")
            places = [place for place in candidates if _importable(place)]
            if not places:
                continue
            checked += 1
            if all(_resolve(place) is None for place in places) and places == candidates:  # else: in the glue
                line = text.count("\n", 0, match.start()) + 1
                unresolved.append(f"{path.relative_to(project)}:{line}: `{name}`")
    assert checked > 100
    assert unresolved == [], "names nothing:\n" + "\n".join(unresolved)


def test_every_file_the_manual_names_exists() -> None:
    """A path of the project's tree in the manual or the README (`tests/...py`, a module's file)
    names a file that is there."""
    pages = [*sorted(DOCS.glob("*.md")), PROJECT / "README.md", PROJECT / "CHANGELOG.md"]
    named = {
        path
        for page in pages
        for path in re.findall(
            r"\b((?:tests|events_manifest|spark_integration|benchmarks)/[\w/.-]*\w)", page.read_text()
        )
    }
    assert len(named) > 20
    assert sorted(path for path in named if not (PROJECT / path).exists()) == []


def test_the_map_of_the_tree_names_every_module_and_nothing_else() -> None:
    """docs/development.md's map ("Three layers"): each module of the glue and each top-level
    module or package of the core by its name, and every name it shows is in the tree."""
    page = (DOCS / "development.md").read_text()
    drawing = page.split("## Three layers")[1].split("```")[1]
    shown = set(re.findall(r"(?<![\w/*])(\w+(?:\.py|/))(?![\w.])", drawing)) - {
        "events_manifest/",
        "spark_integration/",
    }

    def named(path: Path) -> str:
        return path.name + ("/" if path.is_dir() else "")

    packages = [PROJECT / "events_manifest", PROJECT / "spark_integration"]
    top = {named(path) for package in packages for path in package.iterdir() if _a_module(path)}
    anywhere = {named(path) for package in packages for path in package.rglob("*") if _a_module(path)}
    assert len(shown) > 50
    assert top - shown == set(), "in the tree, not on the map"
    assert shown - anywhere == set(), "on the map, not in the tree"


def _a_module(path: Path) -> bool:
    return path.suffix == ".py" or (path / "__init__.py").is_file()
