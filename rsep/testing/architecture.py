"""docs/architecture.md's import diagram, read from the code (``python -m rsep.testing
architecture`` rewrites it; tests/test_architecture.py keeps it true)."""

from __future__ import annotations

import grimp

_DIAGRAM_BEGIN, _DIAGRAM_END = "<!-- diagram: python -m rsep.testing architecture -->", "<!-- end of diagram -->"


def architecture_diagram() -> str:
    """rsep's packages and which import which (type-checking imports aside), as a Mermaid
    flowchart, read from the code with grimp (import-linter's graph builder)."""

    g = grimp.build_graph("rsep", exclude_type_checking_imports=True)

    def package(m: str) -> str | None:
        parts = m.split(".")
        return parts[1] if len(parts) > 2 or (len(parts) == 2 and g.find_children(m)) else None

    edges: set[tuple[str, str]] = set()
    for m in g.modules:
        a = package(m)
        for t in g.find_modules_directly_imported_by(m):
            b = package(t)
            if a and b and a != b:
                edges.add((a, b))
    lines = ["```mermaid", "flowchart TD"]
    lines += [f"    {a} --> {b}" for a, b in sorted(edges)]
    lines.append("```")
    return "\n".join(lines)


def architecture_doc_with_diagram(text: str) -> str:
    """docs/architecture.md with its diagram replaced by the one the code gives now."""
    a = text.index(_DIAGRAM_BEGIN) + len(_DIAGRAM_BEGIN)
    b = text.index(_DIAGRAM_END)
    return text[:a] + "\n" + architecture_diagram() + "\n" + text[b:]
