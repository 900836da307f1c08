"""The guard that never lets rsep's compiled build (rsep.native) go stale.

``python -m rsep.native build`` compiles the modules in :data:`MODULES` with Cython
(unchanged Python source, no annotations enforced), in place, and records each source's
SHA-256 in ``rsep/_native.json``. A module may have a ``.pxd`` beside it (the chain
engine's, the compiled GPMs'): C types for its classes' fields and C calls between its
methods, which the pure build never reads; it counts as part of the source. On import,
:func:`install` puts a finder first on ``sys.meta_path`` that lets Python load a compiled
module only when its recorded hash is the source's; otherwise (edited since the build,
never built, or ``RSEP_PURE=1``) the ``.py`` file is loaded. The compiled and pure builds
run the same code, so either gives the same results; the compiled one runs a SPASEQ stream
~1.6x faster end to end.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import warnings
from pathlib import Path

# Where a stream's events spend their time (rsep run --stage-times): reading, SPASEQ's
# GPMs and runs, the engine loop and the windows.
MODULES = (
    "rsep.algebra.mapping",
    "rsep.algebra.spaseq",
    "rsep.spaseq.chain",
    "rsep.sparql.matcher",
    "rsep.sparql.filters",
    "rsep.spaseq.gpm",
    "rsep.spaseq.nfa",
    "rsep.spaseq.runtime",
    "rsep.runtime.engine",
    "rsep.runtime.ticks",
    "rsep.windows.operator",
    "rsep.windows.incremental",
    "rsep.stream.files",
    "rsep.stream.source",
)

ROOT = Path(__file__).resolve().parent
MANIFEST = ROOT / "_native.json"


def source(name: str) -> Path:
    return ROOT.joinpath(*name.split(".")[1:]).with_suffix(".py")


def digest(path: Path) -> str:
    """The hash of a module's source: its .py and, where there is one, the .pxd that
    declares its C types (part of what the build compiled)."""
    h = hashlib.sha256(path.read_bytes())
    pxd = path.with_suffix(".pxd")
    if pxd.is_file():
        h.update(b"\0pxd\0" + pxd.read_bytes())
    return h.hexdigest()


class _Guard(importlib.abc.MetaPathFinder):
    """Loads the .py of a compiled module whose build does not match its source."""

    def __init__(self, built: dict[str, str], pure: bool) -> None:
        self.built = built
        self.pure = pure
        self.stale: list[str] = []

    def find_spec(self, name: str, path: object = None, target: object = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if name not in MODULES:
            return None
        py = source(name)
        if not self.pure and self.built.get(name) == digest(py):
            return None  # the normal finders load the extension module
        if name in self.built and not self.pure:
            self.stale.append(name)
            warnings.warn(f"rsep: {name} runs as pure Python: its compiled build is older "
                          "than the source (run `make` or `python -m rsep.native build`)",
                          stacklevel=2)
        return importlib.util.spec_from_file_location(name, py)


def install() -> None:
    """Called by rsep/__init__.py before any compiled module can be imported."""
    if any(isinstance(f, _Guard) for f in sys.meta_path):
        return
    try:
        built = json.loads(MANIFEST.read_text())
    except (OSError, ValueError):
        built = {}
    sys.meta_path.insert(0, _Guard(built, os.environ.get("RSEP_PURE", "") not in ("", "0")))
