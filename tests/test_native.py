"""The compiled build (rsep.native) is only ever loaded when built from the current source."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import pytest

from rsep import _native
from rsep._native import MODULES, _Guard, depends, digest, source, stat


def test_a_module_loads_compiled_only_when_its_build_matches_the_source():
    name = "rsep.spaseq.chain"
    fresh = _Guard({name: digest(source(name))}, pure=False)
    assert fresh.find_spec(name) is None  # the normal finders take the extension module
    stale = _Guard({name: "0" * 64}, pure=False)
    with pytest.warns(UserWarning, match="rsep.spaseq.chain runs as pure Python"):
        spec = stale.find_spec(name)
    assert spec is not None and spec.origin == str(source(name))
    assert stale.stale == [name]
    # RSEP_PURE=1, or never built: the source, without a warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for guard in (_Guard({name: digest(source(name))}, pure=True), _Guard({}, pure=False)):
            spec = guard.find_spec(name)
            assert spec is not None and spec.origin == str(source(name))
    assert _Guard({}, pure=False).find_spec("rsep.cli.main") is None  # not one of MODULES


def test_every_listed_module_exists():
    assert all(source(m).is_file() for m in MODULES)


def test_pure_mode_loads_every_module_from_source():
    env = dict(os.environ, RSEP_PURE="1")
    out = subprocess.run([sys.executable, "-m", "rsep.native", "status"], env=env,
                         capture_output=True, text=True, check=True).stdout
    assert out.startswith("compiled: none\n")
    assert f"pure Python: {', '.join(MODULES)}" in out


def test_status_says_which_build_runs():
    env = {k: v for k, v in os.environ.items() if k != "RSEP_PURE"}
    out = subprocess.run([sys.executable, "-m", "rsep.native", "status"], env=env,
                         capture_output=True, text=True, check=True).stdout
    built = _native.MANIFEST.is_file()
    # where `make` has built it, every module is compiled (and current: see the guard)
    assert out.startswith("compiled: rsep.") == built


def test_the_pxd_declarations_are_part_of_the_source(tmp_path):
    # chain.pxd types the compiled build's fields and calls: editing it alone makes the
    # build stale as editing the .py does
    py = tmp_path / "m.py"
    py.write_text("x = 1\n")
    alone = digest(py)
    (tmp_path / "m.pxd").write_text("cdef class A:\n    cdef public int x\n")
    with_pxd = digest(py)
    (tmp_path / "m.pxd").write_text("cdef class A:\n    cdef public long x\n")
    assert len({alone, with_pxd, digest(py)}) == 3


def test_a_build_against_another_modules_c_types_is_stale_when_that_module_changes(tmp_path):
    # nfa.pxd cimports runs' C classes: a compiled nfa is made against compiled runs, so
    # editing runs.py or runs.pxd alone must make both load as pure Python
    (tmp_path / "sub").mkdir()
    m, n = tmp_path / "m.py", tmp_path / "sub" / "n.py"
    m.write_text("x = 1\n")
    (tmp_path / "m.pxd").write_text("from rsep.sub.n cimport A\n")
    n.write_text("class A:\n    pass\n")
    (tmp_path / "sub" / "n.pxd").write_text("cdef class A:\n    cdef public int x\n")
    assert depends(m, tmp_path) == [n]
    before, before_stat = digest(m, tmp_path), stat(m, tmp_path)
    n.write_text("class A:\n    y = 2\n")
    after_py = digest(m, tmp_path)
    (tmp_path / "sub" / "n.pxd").write_text("cdef class A:\n    cdef public long x\n")
    assert len({before, after_py, digest(m, tmp_path)}) == 3
    assert stat(m, tmp_path) != before_stat
    # the real one: nfa's build depends on runs'
    assert _native.source("rsep.spaseq.runs") in depends(_native.source("rsep.spaseq.nfa"))
