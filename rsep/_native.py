"""The guard that never lets rsep's compiled build (rsep.native) go stale.

``python -m rsep.native build`` compiles the modules in :data:`MODULES` with Cython
(unchanged Python source, no annotations enforced), in place, and records each source's
SHA-256 in ``rsep/_native.json`` (with its size and modification time, so that a start
hashes a source only when its stat changed). A module may have a ``.pxd`` beside it (the chain
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
import importlib.machinery
import importlib.util
import json
import os
import re
import sys
import warnings
from pathlib import Path
from typing import Any

# Where a stream's events spend their time (rsep run --stage-times): reading, SPASEQ's
# GPMs and runs, EP-SPARQL's occurrence store, semi-naive delta, indexed selection and
# ETALIS-mode goals, the engine loop and the windows.
MODULES = (
    "rsep.algebra.mapping",
    "rsep.algebra.spaseq",
    "rsep.spaseq.chain",
    "rsep.sparql.matcher",
    "rsep.sparql.filters",
    "rsep.spaseq.gpm",
    "rsep.spaseq.nfa",
    "rsep.spaseq.runs",
    "rsep.spaseq.ranges",
    "rsep.spaseq.matches",
    "rsep.spaseq.runtime",
    "rsep.epsparql.matcher",
    "rsep.epsparql.expr",
    "rsep.epsparql.plan",
    "rsep.epsparql.delta",
    "rsep.epsparql.seqindex",
    "rsep.epsparql.policy",
    "rsep.epsparql.runtime",
    "rsep.epsparql.etalis",
    "rsep.epsparql.etalis_rules",
    "rsep.algebra.selection",
    "rsep.runtime.engine",
    "rsep.runtime.windowed",
    "rsep.runtime.ticks",
    "rsep.windows.operator",
    "rsep.windows.incremental",
    "rsep.windows.maintained",
    "rsep.windows.joins",
    "rsep.windows.groups",
    "rsep.sparql.aggregates",
    "rsep.stream.assembly",
    "rsep.stream.files",
    "rsep.stream.framing",
    "rsep.stream.messages",
    "rsep.stream.source",
)

ROOT = Path(__file__).resolve().parent
MANIFEST = ROOT / "_native.json"


def source(name: str) -> Path:
    return ROOT.joinpath(*name.split(".")[1:]).with_suffix(".py")


_CIMPORT = re.compile(r"^\s*(?:from\s+(rsep(?:\.\w+)+)\s+cimport|cimport\s+(rsep(?:\.\w+)+))", re.M)


def depends(path: Path, root: Path = ROOT) -> list[Path]:
    """The sources of the modules whose C types a module's .pxd cimports (nfa.pxd: runs'),
    transitively: its compiled build is made against their compiled build, so it is current
    only while they are too."""
    out: list[Path] = []
    todo = [path]
    while todo:
        pxd = todo.pop().with_suffix(".pxd")
        if not pxd.is_file():
            continue
        for m in _CIMPORT.finditer(pxd.read_text()):
            dep = root.joinpath(*(m.group(1) or m.group(2)).split(".")[1:]).with_suffix(".py")
            if dep != path and dep not in out:
                out.append(dep)
                todo.append(dep)
    return out


def digest(path: Path, root: Path = ROOT) -> str:
    """The hash of a module's source: its .py and, where there is one, the .pxd that
    declares its C types (part of what the build compiled), and theirs of the modules
    that .pxd cimports."""
    h = hashlib.sha256(path.read_bytes())
    pxd = path.with_suffix(".pxd")
    if pxd.is_file():
        h.update(b"\0pxd\0" + pxd.read_bytes())
    for dep in depends(path, root):
        h.update(b"\0dep\0" + digest(dep, root).encode())
    return h.hexdigest()


def stat(path: Path, root: Path = ROOT) -> list[int]:
    """A module's sources' sizes and modification times (its .py's and .pxd's, and those
    of the modules its .pxd cimports): while they are the build's, so is the source, and
    the guard need not hash it."""
    out = []
    for src in (path, *depends(path, root)):
        for f in (src, src.with_suffix(".pxd")):
            try:
                st = f.stat()
            except OSError:
                out += [-1, -1]
            else:
                out += [st.st_size, st.st_mtime_ns]
    return out


def record(name: str) -> dict[str, Any]:
    """What the manifest records of a module the build compiled."""
    py = source(name)
    return {"sha256": digest(py), "stat": stat(py)}


class _Guard:
    """Loads the .py of a compiled module whose build does not match its source (a finder
    on ``sys.meta_path``: only ``find_spec`` is asked of it)."""

    def __init__(self, built: dict[str, Any], pure: bool) -> None:
        # name -> its record (older manifests: the hash alone)
        self.built = {n: r if isinstance(r, dict) else {"sha256": r} for n, r in built.items()}
        self.pure = pure
        self.stale: list[str] = []

    def current(self, name: str) -> bool:
        """Whether the build of ``name`` is from its current source."""
        rec, py = self.built.get(name), source(name)
        if rec is None:
            return False
        if rec.get("stat") == stat(py):
            return True
        return bool(rec.get("sha256") == digest(py))

    def find_spec(self, name: str, path: object = None, target: object = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if name not in MODULES:
            return None
        py = source(name)
        if not self.pure and self.current(name):
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
