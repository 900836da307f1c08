"""rsep shipped to Spark executors: a packed virtual environment, built once per source.

PySpark's package-management way (``spark.archives=ARCHIVE#environment``, the executors'
Python ``./environment/bin/python``): rsep is built into a wheel from its source, installed
with its dependencies into a fresh virtual environment, its compiled build (rsep.native)
copied beside the modules it was built from, and the environment packed with venv-pack.
pyspark is left out (the executors' Spark home provides it: the same Spark version as the
driver's), and so is matplotlib (``rsep bench`` plots only).

The archive is cached under :func:`cache_dir`, named by a hash of everything that goes
into it (rsep's source, the dependencies' versions, the Python it links to, the compiled
modules), so a run with ``--ship`` builds it only when one of those changed.

As with every packed virtual environment, the archive holds no Python interpreter: its
``bin/python`` is a link to the Python the environment was made from
(:attr:`Archive.python`), which each worker must have at the same path (a bare one is
enough: nothing of its site-packages is used).

``rsep spark package`` builds (or finds) it from the command line; ``rsep run --engine spark
--ship`` passes it to the job. :func:`check_executors` runs a one-task-per-core probe job
that says in one line what an executor's Python lacks.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import TYPE_CHECKING, Any

import rsep
from rsep._native import MANIFEST, MODULES, digest
from rsep.cache import cache_dir as rsep_cache_dir

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ALIAS = "environment"
EXECUTOR_PYTHON = f"./{ALIAS}/bin/python"
# Left out of the archive: the Spark home has pyspark; matplotlib draws `rsep bench` plots.
LEFT_OUT = frozenset({"pyspark", "matplotlib"})
# Test suites of the large dependencies: ~55 MB the executors never read.
EXCLUDE = ("pandas/tests/*", "pyarrow/tests/*", "numpy/*/tests/*", "*/__pycache__/*.opt-*.pyc")
FORMAT = 1  # the archive's layout: part of the cache key
KEEP = 3  # archives kept in the cache (newest first)


class PackageError(Exception):
    """The archive could not be built; the message says why, in one line."""


@dataclass
class Archive:
    path: Path
    key: str
    python: str  # the interpreter bin/python links to: needed at this path on every worker
    size: int
    compiled: list[str]
    source: str = ""  # the hash of the rsep modules inside (rsep_source_hash)
    built: bool = False  # False: found in the cache
    seconds: float = 0.0

    def conf(self) -> dict[str, str]:
        """The Spark settings that ship it (besides PYSPARK_PYTHON=./environment/bin/python)."""
        return {"spark.archives": f"{self.path}#{ALIAS}"}


# ---------------------------------------------------------------- what goes in

# The same source reads the same on the driver and in the probe on an executor (which
# has no rsep to import it from): it is executed in both places from this text.
_HASH_SOURCE = '''
def rsep_source_hash(root):
    """A hash of rsep's modules under ``root`` (the package directory): its .py, .pxd and
    .lark files, by path relative to it; compiled builds and caches are not read."""
    import hashlib, os
    h = hashlib.sha256()
    files = []
    for d, dirs, names in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        for n in names:
            if n.endswith((".py", ".pxd", ".lark")):
                files.append(os.path.relpath(os.path.join(d, n), root))
    for rel in sorted(files):
        h.update(rel.replace(os.sep, "/").encode() + b"\\0")
        with open(os.path.join(root, rel), "rb") as f:
            h.update(f.read() + b"\\0")
    return h.hexdigest()
'''
_ns: dict[str, Any] = {}
exec(compile(_HASH_SOURCE, "<rsep.spark.package>", "exec"), _ns)
rsep_source_hash: Callable[[str], str] = _ns["rsep_source_hash"]


def package_dir() -> Path:
    return Path(rsep.__file__).resolve().parent


def source_hash() -> str:
    """The hash of the rsep modules this process runs."""
    return rsep_source_hash(str(package_dir()))


def project_dir() -> Path:
    """The source tree rsep runs from (a checkout with its pyproject.toml)."""
    root = package_dir().parent
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file() or not re.search(r'(?m)^name\s*=\s*"rsep"',
                                                 pyproject.read_text(encoding="utf-8")):
        raise PackageError(
            f"rsep runs from {package_dir()}, not from a source checkout (no pyproject.toml "
            "beside it): build the archive where rsep is installed from its source "
            "(pip install -e .), or pack an environment yourself (docs/deploy.md)")
    return root


def cache_dir() -> Path:
    """The ``spark`` folder of rsep's cache (:func:`rsep.cache.cache_dir`): the archives."""
    return rsep_cache_dir() / "spark"


def base_python() -> str:
    """The interpreter a new virtual environment made from this one links to."""
    exe = getattr(sys, "_base_executable", None) or sys.executable
    return os.path.realpath(exe)


def _fresh_compiled(src_pkg: Path) -> dict[str, tuple[str, Path]]:
    """The modules whose compiled build matches the source in ``src_pkg`` (a copy of
    rsep's package): name -> (recorded hash, extension file)."""
    try:
        built = json.loads(MANIFEST.read_text())
    except (OSError, ValueError):
        return {}
    live = package_dir()
    out: dict[str, tuple[str, Path]] = {}
    for name in MODULES:
        rel = Path(*name.split(".")[1:]).with_suffix(".py")
        py = src_pkg / rel
        if not py.is_file() or name not in built:
            continue
        rec = built[name]  # its record, or (older manifests) the hash alone
        h = rec.get("sha256") if isinstance(rec, dict) else rec
        if digest(py, src_pkg) != h:  # (the modules it cimports read from the copy too)
            continue
        exts = sorted((live / rel).parent.glob(rel.stem + ".*.so"))
        if exts:
            out[name] = (h, exts[-1])
    return out


def _copy_source(dst: Path) -> Path:
    """rsep's package (its .py, .pxd, .lark and py.typed files), pyproject.toml and the
    README it names, copied to ``dst``: the wheel is built from this snapshot."""
    root = project_dir()
    pkg = package_dir()
    for d, dirs, names in os.walk(pkg):
        dirs[:] = [x for x in dirs if x != "__pycache__"]
        for n in names:
            if n.endswith((".py", ".pxd", ".lark")) or n == "py.typed":
                src = Path(d) / n
                to = dst / "rsep" / src.relative_to(pkg)
                to.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, to)
    shutil.copy2(root / "pyproject.toml", dst / "pyproject.toml")
    for name in ("README.md", "LICENSE"):
        if (root / name).is_file():
            shutil.copy2(root / name, dst / name)
    return dst / "rsep"


def _requirements(project: Path) -> list[str]:
    """rsep's dependencies (pyproject.toml's list, no extras), less what is left out."""
    with open(project / "pyproject.toml", "rb") as f:
        deps = tomllib.load(f)["project"].get("dependencies", [])
    return sorted(r for r in deps if _norm(_name(r)) not in LEFT_OUT)


def _name(req: str) -> str:
    return re.split(r"[\s;<>=!~\[(]", req.strip(), maxsplit=1)[0]


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _constraints(pinned: list[str]) -> list[str]:
    """The driver's installed versions of what rsep's dependencies need in turn: the
    archive's transitive dependencies are the driver's."""
    direct = {_norm(_name(r)) for r in pinned}
    seen: dict[str, str] = {}
    todo = [_name(r) for r in pinned]
    while todo:
        name = todo.pop()
        if _norm(name) in seen or _norm(name) in LEFT_OUT:
            continue
        try:
            d = distribution(name)
        except PackageNotFoundError:
            continue
        seen[_norm(name)] = f"{d.metadata['Name']}=={d.version}"
        todo.extend(_name(r) for r in d.requires or () if "extra ==" not in r)
    return sorted(v for k, v in seen.items() if k not in direct)


def _run(cmd: list[str], what: str, **kw: Any) -> str:
    p = subprocess.run(cmd, capture_output=True, text=True, check=False, **kw)
    if p.returncode != 0:
        tail = (p.stderr or p.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise PackageError(f"{what} failed: {tail[0]}")
    return p.stdout


# ---------------------------------------------------------------- the archive

def archive_key(source: str, reqs: list[str], compiled: dict[str, tuple[str, Path]]) -> str:
    import venv_pack  # optional: only building an archive needs it (ensure_archive says so)

    h = hashlib.sha256()
    for part in (f"format {FORMAT}", source, *reqs,
                 *_constraints(reqs), base_python(), platform.python_version(),
                 platform.machine(), f"venv-pack {getattr(venv_pack, '__version__', '?')}",
                 *(f"{n} {v[0]}" for n, v in sorted(compiled.items())), *EXCLUDE):
        h.update(part.encode() + b"\n")
    return h.hexdigest()[:16]


def ensure_archive(*, force: bool = False, log: Callable[[str], None] | None = None
                   ) -> Archive:
    """The archive for the rsep this process runs: from the cache, or built (about a
    minute: a wheel, an install from pip's cache, the pack) and cached."""
    try:
        import venv_pack  # optional: only building an archive needs it
    except ImportError as e:
        raise PackageError("venv-pack is not installed (pip install venv-pack): it packs "
                           "the environment shipped to the executors") from e
    say = log or (lambda s: None)
    t0 = time.monotonic()
    cache = cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    for old in cache.glob("build-*"):  # left by a build that was killed
        if time.time() - old.stat().st_mtime > 3600:
            shutil.rmtree(old, ignore_errors=True)
    work = Path(tempfile.mkdtemp(prefix="build-", dir=cache))
    try:
        src_pkg = _copy_source(work / "src")
        compiled = _fresh_compiled(src_pkg)
        reqs = _requirements(work / "src")
        source = rsep_source_hash(str(src_pkg))
        key = archive_key(source, reqs, compiled)
        path = cache / f"rsep-env-{key}.tar.gz"
        with open(cache / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building the same
            meta = path.with_suffix("").with_suffix(".json")
            info = json.loads(meta.read_text()) if meta.is_file() else {}
            if path.is_file() and info.get("source") == source and not force:
                os.utime(path)  # kept by the eviction below (newest first)
                return Archive(path, key, info["python"], path.stat().st_size,
                               info["compiled"], source, built=False,
                               seconds=time.monotonic() - t0)
            say(f"rsep: building the environment shipped to the executors ({path.name})")
            env = work / "env"
            _run([sys.executable, "-m", "venv", "--without-pip", str(env)], "python -m venv")
            py = env / "bin" / "python"
            wheel = _build_wheel(work / "src", work / "wheel")
            cons = work / "constraints.txt"
            cons.write_text("\n".join(_constraints(reqs)) + "\n")
            pip = [sys.executable, "-m", "pip", "--python", str(py), "install", "-q",
                   "--disable-pip-version-check"]
            _run(pip + ["--no-deps", str(wheel)], "pip install (rsep's wheel)")
            _run(pip + ["-c", str(cons), *reqs], "pip install (rsep's dependencies)")
            site = Path(_run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()"
                              "['purelib'])"], "the new environment's Python").strip())
            manifest = {}
            for name, (h, so) in compiled.items():
                rel = Path(*name.split(".")[1:])
                shutil.copy2(so, site / "rsep" / rel.parent / so.name)
                manifest[name] = h
            (site / "rsep" / "_native.json").write_text(
                json.dumps(manifest, indent=1, sort_keys=True) + "\n")
            # It imports, and runs the compiled modules the driver runs.
            got = json.loads(_run(
                [str(py), "-c", "import json, rsep, pyoxigraph, pandas, pyarrow; "
                 "from rsep.native import compiled; print(json.dumps(compiled()))"],
                "importing rsep in the new environment", env=_bare_env()).strip())
            if sorted(got) != sorted(manifest):
                raise PackageError(f"the new environment runs {len(got)} compiled modules, "
                                   f"not the {len(manifest)} copied into it")
            tmp = path.with_suffix(".part")
            venv_pack.pack(prefix=str(env), output=str(tmp), format="tar.gz",
                           compress_level=1, force=True,
                           filters=[("exclude", f"lib/python*/site-packages/{p}")
                                    for p in EXCLUDE])
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
            meta.write_text(json.dumps({"python": base_python(), "compiled": sorted(manifest),
                                        "source": source,
                                        "requirements": reqs, "from": str(project_dir()),
                                        "built": time.strftime("%Y-%m-%dT%H:%M:%S")},
                                       indent=1) + "\n")
            _evict(cache, keep=path)
            return Archive(path, key, base_python(), path.stat().st_size, sorted(manifest),
                           source, built=True, seconds=time.monotonic() - t0)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _build_wheel(src: Path, out: Path) -> Path:
    """rsep's wheel, by setuptools' PEP 517 hook run on the snapshot."""
    out.mkdir(parents=True, exist_ok=True)
    if importlib.util.find_spec("setuptools") is None:
        raise PackageError("building rsep's wheel needs setuptools (pip install setuptools)")
    name = _run([sys.executable, "-c", "import sys; from setuptools import build_meta; "
                 "print(build_meta.build_wheel(sys.argv[1]))", str(out)],
                "building rsep's wheel (setuptools)", cwd=src).strip().splitlines()[-1]
    return out / name


def _bare_env() -> dict[str, str]:
    """This process's environment without what points Python at the driver's packages."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")}
    return env


def _evict(cache: Path, keep: Path) -> None:
    old = sorted(cache.glob("rsep-env-*.tar.gz"), key=lambda p: p.stat().st_mtime,
                 reverse=True)
    for p in old[KEEP:]:
        if p != keep:
            p.unlink(missing_ok=True)
            p.with_suffix("").with_suffix(".json").unlink(missing_ok=True)
    kept = {p.name[len("rsep-env-"):-len(".tar.gz")] for p in cache.glob("rsep-env-*.tar.gz")}
    for d in cache.glob("driver-*"):  # driver-KEY-PREFIXHASH: links only
        if d.name.split("-")[1] not in kept:
            shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------------------- the driver's side

def driver_dir(key: str) -> Path:
    """A directory holding ``environment``, a link to this process's environment.

    The Python a job runs is read once, on the driver (PYSPARK_PYTHON), and the driver's
    own Python runners (Python data source planning, transformWithState's set-up) start
    it too, from the driver JVM's working directory: started there, the JVM finds
    ``./environment/bin/python``, an environment equivalent to the shipped one."""
    prefix = os.path.realpath(sys.prefix)
    d = cache_dir() / f"driver-{key}-{hashlib.sha256(prefix.encode()).hexdigest()[:8]}"
    link = d / ALIAS
    d.mkdir(parents=True, exist_ok=True)
    target = Path(prefix)
    if not (target / "bin" / "python").exists():
        raise PackageError(f"this Python's environment {target} has no bin/python for the "
                           "driver's Python runners: run rsep from a virtual environment")
    if not link.is_symlink() or os.readlink(link) != str(target):
        tmp = d / f".{ALIAS}.{os.getpid()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(target)
        os.replace(tmp, link)
    return d


# ---------------------------------------------------------------- the executors' side

_PROBE_SOURCE = _HASH_SOURCE + '''
def rsep_probe(_):
    """What this executor's Python has: run as a Spark task, pickled by value."""
    import importlib, os, socket, sys
    out = {"host": socket.gethostname(), "python": sys.executable,
           "version": "%d.%d" % sys.version_info[:2], "missing": {}, "hash": None}
    for m in ("pyspark", "numpy", "pandas", "pyarrow", "pyoxigraph", "lark", "rsep"):
        try:
            importlib.import_module(m)
        except Exception as e:
            out["missing"][m] = "%s: %s" % (type(e).__name__, e)
    if "rsep" not in out["missing"]:
        import rsep
        out["hash"] = rsep_source_hash(os.path.dirname(os.path.abspath(rsep.__file__)))
        out["at"] = os.path.dirname(os.path.abspath(rsep.__file__))
    yield out
'''


class ExecutorError(Exception):
    """An executor's Python cannot run rsep; the message is one line."""


SHIP_HINT = ("ship rsep with `rsep run ... --ship` (or `rsep spark package`, "
             "docs/deploy.md)")


def check_executors(spark: SparkSession, *, shipped: Archive | None) -> list[dict]:
    """Run the probe on every core; raise :class:`ExecutorError` saying what is missing
    (or that the executors run another rsep than the driver, or than ``shipped``)."""
    ns: dict[str, Any] = {"__name__": "rsep_probe"}
    exec(compile(_PROBE_SOURCE, "<rsep probe>", "exec"), ns)
    sc = spark.sparkContext
    n = max(1, sc.defaultParallelism)
    python = os.environ.get("PYSPARK_PYTHON", "python3")
    try:
        got = sc.parallelize(range(n), n).mapPartitions(ns["rsep_probe"]).collect()
    except Exception as e:  # noqa: BLE001 - a Py4J error: its text says what failed
        raise ExecutorError(explain_failure(str(e), python, shipped is not None,
                                            where="the Spark executors") or
                            f"the executors could not run Python ({python}): "
                            f"{_first_line(str(e))}") from None
    # the archive's own snapshot: the source may be edited while the job starts
    want = shipped.source if shipped is not None else source_hash()
    for r in got:
        where = f"the Spark executors' Python ({r['python']} on {r['host']})"
        if r["missing"]:
            names = ", ".join(r["missing"])
            first = next(iter(r["missing"].values()))
            raise ExecutorError(f"{where} cannot import {names} ({first}): "
                                + ("the shipped archive is incomplete" if shipped else
                                   SHIP_HINT))
        if r["hash"] != want:
            raise ExecutorError(
                f"{where} runs another rsep ({r.get('at')}) than "
                + ("the archive shipped (an old copy on the worker?)" if shipped else
                   f"the driver's ({package_dir()}): " + SHIP_HINT))
    return got


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:300]
    return text[:300]


def explain_failure(text: str, python: str, shipped: bool,
                    where: str = "a Spark executor (or the driver's Python runner)"
                    ) -> str | None:
    """One line for a Spark failure caused by the Python a job runs, else None."""
    m = re.search(r"Cannot run program \"([^\"]+)\"[^:]*: error=2", text)
    if m:
        if shipped:
            return (f"{where} cannot start {m.group(1)}: the shipped environment links to "
                    "a Python that is not at that path on the worker (every worker needs "
                    "it there; docs/deploy.md)")
        return (f"{where} cannot start Python {m.group(1)}: no such file on the worker; "
                + SHIP_HINT)
    m = re.search(r"PYTHON_VERSION_MISMATCH[^\n]*?(\d+\.\d+)[^\n]*?(\d+\.\d+)", text)
    if m:
        return (f"{where} runs Python {m.group(1)} and the driver {m.group(2)}: the "
                "executors' Python must be the driver's version"
                + ("" if shipped else "; " + SHIP_HINT))
    m = re.search(r"(ModuleNotFoundError|ImportError): (No module named '([^']+)'[^\n]*)", text)
    if m:
        mod = m.group(3)
        return (f"the Python of {where} ({python}) cannot import {mod.split('.')[0]} "
                f"({m.group(2).strip()}): "
                + ("the shipped archive is incomplete" if shipped else SHIP_HINT))
    return None
