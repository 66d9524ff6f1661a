"""The import graph of both packages, read from their code: no circle, and no arrow up, from a
module to one of a higher layer (docs/development.md, "Three layers"). An internal module never
imports the package's public face (httpx's rule): it takes a name from where it is defined."""

from __future__ import annotations

import ast
import functools
import importlib
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
LAYERS = (
    ("errors", "_redact", "_version", "_gc", "_aws", "_documents", "model"),
    ("_manifest",),
    ("_backends",),
    ("_opening",),
    ("_jobs", "_iglu"),
    ("_dedup", "_snowplow"),
    ("_transformer",),
    ("", "aio", "iglu", "snowplow", "_cli", "_job_flags", "__main__", "testing"),
)
"""The core's layers, lowest first, by the first part of a module's name below `events_manifest`
(`""`: the package itself); the glue, `spark_integration`, stands above them all."""


@functools.cache
def _modules() -> dict[str, Path]:
    found = {}
    for package in ("events_manifest", "spark_integration"):
        for path in (PROJECT / package).rglob("*.py"):
            found[".".join(path.relative_to(PROJECT).with_suffix("").parts).removesuffix(".__init__")] = path
    return found


@functools.cache
def _imports() -> dict[str, frozenset[str]]:
    """Each module's imports, of any package, wherever in the module they are (a name imported from
    a module of the two packages, when it is one, as that module)."""
    modules = _modules()
    found: dict[str, frozenset[str]] = {}
    for name, path in modules.items():
        imported = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                imported |= {
                    f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                    for a in node.names
                }
            elif isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names}
        found[name] = frozenset(imported)
    return found


def _graph() -> dict[str, set[str]]:
    """Each module's imports of the two packages' modules."""
    modules = _modules()
    return {name: {m for m in imported if m in modules and m != name} for name, imported in _imports().items()}


def _layer(module: str) -> int:
    parts = module.split(".")
    if parts[0] == "spark_integration":
        return len(LAYERS)
    first = parts[1] if len(parts) > 1 else ""
    return next(n for n, names in enumerate(LAYERS) if first in names)


def test_the_core_imports_nothing_of_spark() -> None:
    """`pip install events-manifest` brings no Spark: no core module imports pyspark or py4j, even
    lazily (`nox -s core` runs the command line and the manifest where pyspark is not installed)."""
    spark = sorted(
        f"{module} -> {used}"
        for module, imported in _imports().items()
        if module.startswith("events_manifest")
        for used in imported
        if used.split(".")[0] in ("pyspark", "py4j", "spark_integration")
    )
    assert spark == []


def test_no_module_imports_one_of_a_higher_layer() -> None:
    graph = _graph()
    assert len(graph) > 120
    up = sorted(
        f"{module} -> {used}" for module, used_ in graph.items() for used in used_ if _layer(used) > _layer(module)
    )
    assert up == [], "arrows up:\n" + "\n".join(up)


def test_the_import_graph_has_no_circle() -> None:
    graph = _graph()
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        if module in path:
            raise AssertionError("a circle: " + " -> ".join([*path[path.index(module) :], module]))
        if module in done:
            return
        for used in sorted(graph[module]):
            visit(used, [*path, module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])


FACES = ("_dedup", "_jobs", "_manifest", "_opening", "_snowplow", "_transformer")
"""The core's internal areas the glue takes anything from, each through its face (`face.py`)."""


def _glue_takes() -> dict[str, set[str]]:
    """What the glue imports of the core: each module, and the names taken from it."""
    taken: dict[str, set[str]] = {}
    for name, path in _modules().items():
        if not name.startswith("spark_integration"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("events_manifest"):
                taken.setdefault(str(node.module), set()).update(alias.name for alias in node.names)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("events_manifest"):
                        taken.setdefault(alias.name, set()).add("")
    return taken


def test_the_glue_takes_the_core_through_its_public_modules_and_the_faces_alone() -> None:
    """The boundary is narrow and named: the glue imports the core's public modules (public names
    only) and, of an internal area, its face, whose `__all__` is what the area offers the glue, each
    name taken by it; any other internal module, or a private name, reaches past the faces."""
    faces = {f"events_manifest.{area}.face" for area in FACES}
    allowed = faces | {"events_manifest._job_flags"}  # the jobs' shared command-line flags
    taken = _glue_takes()
    past = sorted(
        f"{module}: {', '.join(sorted(names))}"
        for module, names in taken.items()
        if module not in allowed
        and (
            any(part.startswith("_") for part in module.split("."))
            or any(n.startswith("_") for n in names if n != "__version__")
        )
    )
    assert past == [], "past the faces:\n" + "\n".join(past)
    assert len(taken) <= 12, sorted(taken)
    for face in sorted(faces):
        offered, took = set(importlib.import_module(face).__all__), taken.get(face, set())
        assert took == offered, f"{face}: offered, never taken: {offered - took}; taken, not offered: {took - offered}"


LAZY = ("events_manifest._transformer.face", "spark_integration")
"""The modules that import each name's module at its first use (`_EXPORTS`, read by a module
`__getattr__`), so that a process that takes a few names imports only theirs: the type checker
reads the same names in an `if TYPE_CHECKING:` block."""


def test_a_lazy_module_offers_the_names_it_imports_for_the_type_checker_from_where_they_are() -> None:
    """Its three lists agree (what the type checker sees, what `__getattr__` imports, `__all__`),
    each name resolves, and to the object its module defines."""
    for name in LAZY:
        module = importlib.import_module(name)
        tree = ast.parse(_modules()[name].read_text())
        [block] = [n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"]
        typed = {
            alias.name: f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in _modules() else node.module
            for node in block.body
            if isinstance(node, ast.ImportFrom)
            for alias in node.names
        }
        exports = module._EXPORTS
        assert typed == exports and sorted(exports) == sorted(module.__all__), name
        for offered, source in exports.items():
            defined = importlib.import_module(source)
            expected = defined if source.endswith(f".{offered}") else getattr(defined, offered)
            assert getattr(module, offered) is expected, f"{name}.{offered}"


TRANSFORMER_ROOMS = {"decode": 0, "output": 1, "": 2, "run": 3, "stream": 3, "face": 4}
"""The transformer's rooms (`events_manifest._transformer`), lowest first: decoding, then what a run
writes, then the area's root (the config, the columnar parse, the steps on Arrow batches), then a
run's flow and the stream's pieces; the face, the area's door, above them all."""


def test_the_transformer_s_rooms_import_only_the_rooms_below_them() -> None:
    def room(module: str) -> int:
        parts = module.split(".")[2:]
        first = parts[0] if parts and parts[0] in TRANSFORMER_ROOMS else ""
        return TRANSFORMER_ROOMS[first]

    inside = {name: used for name, used in _graph().items() if name.startswith("events_manifest._transformer.")}
    assert len(inside) > 25
    up = sorted(
        f"{module} -> {used}"
        for module, used_ in inside.items()
        for used in used_
        if used.startswith("events_manifest._transformer.") and room(used) > room(module)
    )
    assert up == [], "arrows up between the transformer's rooms:\n" + "\n".join(up)
