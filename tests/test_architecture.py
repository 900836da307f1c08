"""docs/architecture.md stays true: every path it names exists, and its diagram is the one
the code gives (``python -m rsep.testing architecture`` rewrites it)."""

from __future__ import annotations

import ast
import re

from rsep.testing import architecture_doc_with_diagram
from rsep.testing.snippets import ROOT

DOC = ROOT / "docs" / "architecture.md"


def test_every_path_named_exists():
    paths = re.findall(r"`(rsep/[A-Za-z0-9_./]+)`", DOC.read_text(encoding="utf-8"))
    assert len(paths) > 30
    missing = [p for p in paths if not (ROOT / p).exists()]
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_the_diagram_is_the_codes():
    text = DOC.read_text(encoding="utf-8")
    assert architecture_doc_with_diagram(text) == text, \
        "docs/architecture.md's diagram is stale: run python -m rsep.testing architecture"


def test_every_package_is_in_the_layer_table():
    text = DOC.read_text(encoding="utf-8")
    packages = sorted(p.name for p in (ROOT / "rsep").iterdir()
                      if p.is_dir() and (p / "__init__.py").exists())
    assert [p for p in packages if f"`rsep/{p}`" not in text] == []


# An rsep module imported inside a function is a dependency the import graph hides until the
# function runs: left only where deferring it is needed, an optional dependency (MQTT,
# Kafka, Jelly, Spark) or start-up time measured (issue 46), each saying why in a comment.
MAX_DEFERRED = 10


def deferred_imports(source: str) -> list[tuple[int, str, bool]]:
    """The imports of rsep modules (absolute or relative) inside a function of ``source``:
    (line, module, whether a comment says why: on the line, or among the lines above it back
    to the statement before the imports it is in a run of)."""
    lines = source.splitlines()
    found: list[tuple[int, str, bool]] = []

    def walk(node: ast.AST, inside: bool) -> None:
        for child in ast.iter_child_nodes(node):
            module = None
            if inside and isinstance(child, ast.ImportFrom) and (
                    child.level or (child.module or "").split(".")[0] == "rsep"):
                module = "." * child.level + (child.module or "")
            elif inside and isinstance(child, ast.Import):
                module = next((a.name for a in child.names if a.name.split(".")[0] == "rsep"), None)
            if module is not None:
                found.append((child.lineno, module, _explained(lines, child.lineno)))
            walk(child, inside or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                     ast.Lambda)))

    walk(ast.parse(source), False)
    return found


def _explained(lines: list[str], lineno: int) -> bool:
    if "#" in lines[lineno - 1]:
        return True
    i = lineno - 2
    while i >= 0 and (not lines[i].strip() or lines[i].lstrip().startswith(("from ", "import "))):
        i -= 1
    return i >= 0 and lines[i].lstrip().startswith("#")


def _deferred() -> list[tuple[str, int, str, bool]]:
    return [(str(p.relative_to(ROOT)), line, module, why)
            for p in sorted((ROOT / "rsep").rglob("*.py"))
            for line, module, why in deferred_imports(p.read_text(encoding="utf-8"))]


def test_at_most_ten_rsep_imports_are_deferred_into_functions_each_saying_why():
    found = _deferred()
    assert len(found) <= MAX_DEFERRED, "\n".join(f"{p}:{n} {m}" for p, n, m, _ in found)
    assert [f"{p}:{n} {m}" for p, n, m, why in found if not why] == []
    # (the ones left today: the optional dependencies and start-up's)
    assert sorted({m for _, _, m, _ in found}) == [
        "rsep.cli.main", "rsep.runtime.kafka_output", "rsep.runtime.mqtt_output",
        "rsep.serve.protocol", "rsep.spark.pipeline", "rsep.spark.session", "rsep.stream",
        "rsep.stream.jelly", "rsep.stream.mapping"]


def test_the_count_of_deferred_imports_sees_every_kind():
    source = '''
import rsep.lang
from rsep.algebra import query


def f():
    # why: start-up
    from rsep.windows import native
    from . import sibling
    import os
    import rsep.stream.live

    def g():
        from rsep.x import y  # an optional dependency
    return lambda: __import__("rsep.z")


class C:
    def m(self):
        x = 1
        from ..up import z
'''
    assert deferred_imports(source) == [(8, "rsep.windows", True), (9, ".", True),
                                        (11, "rsep.stream.live", True), (14, "rsep.x", True),
                                        (21, "..up", False)]


# Oracles stay oracles (issue 46): production imports the operators the evaluators share
# (rsep.epsparql.operators, rsep.events.mappings), not the reference evaluators, so that a
# bug in one shows up in the differential tests. Left: where production's general case *is*
# the reference's evaluate, each import saying so in a comment.
ORACLES = ("rsep.epsparql.reference", "rsep.events.reference")
ORACLE_IMPORTS_ALLOWED = {
    # Delta's static parts (the background, VALUES), evaluated whole
    ("rsep/epsparql/delta.py", "rsep.epsparql.reference", ("evaluate",)),
    # the policies' general case: what the index does not take
    ("rsep/epsparql/policy.py", "rsep.epsparql.reference", ("evaluate",)),
    # MATCH outside delta mode: the equations over the indexed mappings
    ("rsep/events/incremental.py", "rsep.events.reference", ("*",)),
}


def _module_name(path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def oracle_imports(source: str, module: str, is_package: bool = False) -> list[tuple[int, str, tuple[str, ...]]]:
    """The imports of a reference evaluator in ``source`` (the module named ``module``):
    (line, the reference module, the names taken from it; ``*`` for the module itself)."""
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name, ("*",)) for a in node.names if a.name in ORACLES]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([base] if base else [])])
            if base in ORACLES:
                found.append((node.lineno, base, tuple(sorted(a.name for a in node.names))))
            found += [(node.lineno, f"{base}.{a.name}", ("*",)) for a in node.names
                      if f"{base}.{a.name}" in ORACLES]
    return found


def _oracle_imports() -> list[tuple[str, int, str, tuple[str, ...], bool]]:
    out = []
    for p in sorted((ROOT / "rsep").rglob("*.py")):
        if p.stem in ("reference", "why", "explain"):
            continue  # the oracles themselves, and what explains a run by them
        source = p.read_text(encoding="utf-8")
        lines = source.splitlines()
        out += [(str(p.relative_to(ROOT)), line, m, names, _explained(lines, line))
                for line, m, names in oracle_imports(source, _module_name(p), p.stem == "__init__")]
    return out


def test_production_imports_no_reference_evaluator_but_the_documented_general_cases():
    found = _oracle_imports()
    assert {(p, m, names) for p, _, m, names, _ in found} == ORACLE_IMPORTS_ALLOWED, found
    assert [f"{p}:{n}" for p, n, _, _, why in found if not why] == []


def test_the_oracle_import_check_sees_every_kind():
    source = '''
import rsep.epsparql.reference
from rsep.events import reference as r
from rsep.epsparql.reference import evaluate, World
from .reference import Context
from . import reference
from rsep.epsparql.operators import project
'''
    assert oracle_imports(source, "rsep.events.incremental") == [
        (2, "rsep.epsparql.reference", ("*",)), (3, "rsep.events.reference", ("*",)),
        (4, "rsep.epsparql.reference", ("World", "evaluate")),
        (5, "rsep.events.reference", ("Context",)), (6, "rsep.events.reference", ("*",))]
