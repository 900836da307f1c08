"""Build, remove or inspect rsep's compiled hot path: ``python -m rsep.native build|clean|status``.

The build needs Cython and a C compiler (the dev extra; ``make`` runs it). Without it
rsep runs the same modules as pure Python. See rsep/_native.py for the guard that loads
a compiled module only when it was built from the current source.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import tempfile
from pathlib import Path

from rsep._native import MANIFEST, MODULES, ROOT, record, source


def compiled() -> list[str]:
    """The modules of :data:`MODULES` that load from their compiled build here."""
    for m in MODULES:
        importlib.import_module(m)
    return [m for m in MODULES if not str(sys.modules[m].__file__).endswith(".py")]


def build(jobs: int = 2) -> int:
    """Compile :data:`MODULES`; record their sources' hashes."""
    from Cython.Build import cythonize  # build-time only
    from setuptools import Distribution  # build-time only

    # recorded before compiling: a source edited meanwhile is not taken for the build's
    hashes = {n: record(n) for n in MODULES}
    cwd = os.getcwd()
    os.chdir(ROOT.parent)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            exts = cythonize([str(source(n).relative_to(ROOT.parent)) for n in MODULES],
                             build_dir=str(Path(tmp) / "c"),
                             compiler_directives={"language_level": 3, "binding": True,
                                                  # annotations document, as in CPython
                                                  "annotation_typing": False},
                             nthreads=jobs, quiet=True)
            dist = Distribution({"name": "rsep-native", "ext_modules": exts})
            cmd = dist.get_command_obj("build_ext")
            cmd.build_lib = str(Path(tmp) / "lib")
            cmd.build_temp = str(Path(tmp) / "tmp")
            cmd.parallel = jobs
            cmd.ensure_finalized()
            cmd.run()
            # Renamed into place, never overwritten: a running process keeps the old file.
            for ext in exts:
                built = Path(cmd.get_ext_fullpath(ext.name))
                os.replace(built, ROOT.parent / built.relative_to(cmd.build_lib))
    finally:
        os.chdir(cwd)
    tmp_manifest = MANIFEST.with_suffix(".tmp")
    tmp_manifest.write_text(json.dumps(hashes, indent=1, sort_keys=True) + "\n")
    os.replace(tmp_manifest, MANIFEST)
    print(f"rsep: compiled {len(MODULES)} modules")
    return 0


def clean() -> int:
    """Remove the compiled build: the pure modules load from then on."""
    MANIFEST.unlink(missing_ok=True)
    for n in MODULES:
        py = source(n)
        for f in py.parent.glob(py.stem + ".*"):
            if f.suffix in (".so", ".pyd"):
                f.unlink()
    return 0


def main(argv: list[str]) -> int:
    if argv == ["build"]:
        return build()
    if argv == ["clean"]:
        return clean()
    if argv == ["status"]:
        done = compiled()
        print(f"compiled: {', '.join(done) or 'none'}")
        pure = [m for m in MODULES if m not in done]
        if pure:
            print(f"pure Python: {', '.join(pure)}")
        return 0
    print("usage: python -m rsep.native build|clean|status", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
