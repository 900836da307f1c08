"""The house's query texts, for the tests that hold a reader of the pattern tree to what
it replaced (tests/algebra/test_pattern.py, tests/windows/test_tree_readers.py): every
query text in tests/ (files and the test modules' strings), docs/ (files and Markdown
blocks), README.md and examples/, each text once. Not a test module: the tests import it
(pytest puts tests/, the conftest's directory, on the path)."""

from __future__ import annotations

import ast
import re
import warnings
from functools import cache
from pathlib import Path

from rsep.algebra.query import ContinuousQuery
from rsep.lang import QueryError, parse_query

ROOT = Path(__file__).resolve().parents[1]
EX = "http://example.org/"


def _const(node: ast.AST, env: dict[str, str]) -> str | None:
    """A string expression's value when it is made of constants and names bound to them
    (``PREFIX + "..."``, ``f"...{EX}..."``); None otherwise."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.Name):
        return env.get(node.id)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        a, b = _const(node.left, env), _const(node.right, env)
        return None if a is None or b is None else a + b
    if isinstance(node, ast.JoinedStr):
        parts = []
        for v in node.values:
            x = _const(v.value, env) if isinstance(v, ast.FormattedValue) and v.format_spec is None \
                and v.conversion == -1 else _const(v, env)
            if x is None:
                return None
            parts.append(x)
        return "".join(parts)
    return None


def _strings(path: Path) -> list[str]:
    """The string expressions of a test module that look like queries."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError):
        return []
    env = {"EX": EX}
    for n in tree.body:
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            v = _const(n.value, env)
            if v is not None:
                env[n.targets[0].id] = v
    out = []
    for n in ast.walk(tree):
        if isinstance(n, (ast.Constant, ast.BinOp, ast.JoinedStr)):
            v = _const(n, env)
            if v is not None and re.search(r"\b(SELECT|CONSTRUCT|ASK|DESCRIBE)\b", v, re.I) \
                    and "{" in v:
                out.append(v)
    return list(dict.fromkeys(out))


def _blocks(path: Path) -> list[str]:
    """The fenced code blocks of a Markdown file that hold a query."""
    blocks = re.findall(r"```[a-z]*\n(.*?)```", path.read_text(encoding="utf-8"), re.S)
    return [b for b in blocks if re.search(r"\b(SELECT|CONSTRUCT|ASK)\b", b) and "{" in b]


@cache
def house() -> list[tuple[str, str]]:
    """(where, text) of every query text in tests/ (files and the test modules' strings),
    docs/ (files and Markdown blocks), README.md and examples/, each text once."""
    out = []
    for d in ("tests", "docs/examples", "examples"):
        for f in sorted((ROOT / d).rglob("*.rq")):
            out.append((str(f.relative_to(ROOT)), f.read_text(encoding="utf-8")))
    for f in sorted((ROOT / "tests").rglob("*.py")):
        out += [(f"{f.relative_to(ROOT)}#{i}", s) for i, s in enumerate(_strings(f))]
    for f in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        out += [(f"{f.relative_to(ROOT)}#{i}", s) for i, s in enumerate(_blocks(f))]
    return list({t: (w, t) for w, t in out}.values())


def parsed_query(text: str) -> ContinuousQuery | None:
    """A continuous query with its pattern tree, or None (not one, refused, or no tree)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            q = parse_query(text)
    except (QueryError, ValueError):
        return None
    return q if isinstance(q, ContinuousQuery) and q.pattern is not None else None
