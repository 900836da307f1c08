"""docs/architecture.md stays true: every path it names exists, and its diagram is the one
the code gives (``python -m rsep.testing architecture`` rewrites it)."""

from __future__ import annotations

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
