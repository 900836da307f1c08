"""What a tiny `rsep run` loads (issue 19's start-up): only its dialect's modules, none of
Spark, the benchmarks, LARS or the server, nor the readers of live and mapped streams; rsep's
public names on first use; rsep's bytecode, which the Makefile writes, read without compiling
any of rsep; the compiled build's guard and the parser's cache (rsep._native,
rsep.lang.parser)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import pytest

import rsep.lang.parser as lang_parser
from rsep._native import _Guard, digest, source, stat
from rsep.testing.snippets import ROOT

SG = "tests/data/spaseq"
RSP_RUN = ["run", "examples/coupon/q2-cqels.rq", "--stream",
           "http://coupons=examples/coupon/coupons.trig", "--stream",
           "http://locations=examples/coupon/locations.trig", "--graph",
           "http://products=examples/coupon/products.ttl", "--time-unit", "1m"]
SPASEQ_RUN = ["run", f"{SG}/query1.rq",
              "--stream", f"http://smartgrid.org/mainSource={SG}/power.trig",
              "--stream", f"http://smartgrid.org/weather={SG}/weather.trig",
              "--stream", f"http://smartgrid.org/storageSource={SG}/storage.trig",
              "--graph", f"http://smartgrid.org/db={SG}/homes.ttl", "--time-unit", "1m"]
# what no in-process run needs
NEVER = ("pyspark", "pandas", "pyarrow", "rsep.bench", "rsep.lars", "rsep.serve", "rsep.spark",
         "rsep.cli.spark", "rsep.cli.serve", "starlette", "uvicorn",
         # the imports left inside functions for start-up (MQTT, Jelly, dereferencing, plots)
         "paho", "pyjelly", "urllib.request", "matplotlib",
         # the readers of live and RML-mapped streams (sockets and threads, time zones), CSV
         "rsep.stream.live", "rsep.stream.mapping", "socket", "zoneinfo", "csv",
         # the grammars are read as files (importlib.resources imports zipfile)
         "importlib.resources", "zipfile")
RSP_ONLY = ("rsep.lang.rspql", "rsep.lang.csparql", "rsep.lang.cqels")
SPASEQ_ONLY = ("rsep.spaseq", "rsep.lang.spaseq", "rsep.algebra.spaseq")
# a windowed query's runtime and its windows (S2R, the maintained results), RSEP-QL's MATCH
WINDOWED_ONLY = ("rsep.runtime.windowed", "rsep.windows", "rsep.events.incremental",
                 "rsep.events.solver", "rsep.sparql.aggregates")
EPSPARQL_ONLY = ("rsep.epsparql", "rsep.lang.epsparql", "rsep.algebra.epsparql")

_LOADED = """
import io, json, sys
from rsep.cli.main import main
out, sys.stdout = sys.stdout, io.StringIO()
code = main(sys.argv[1:])
lines, sys.stdout = sys.stdout.getvalue().splitlines(), out
print(json.dumps({"code": code, "lines": len(lines), "modules": sorted(sys.modules)}))
"""


def _run(code: str, *args: str, **environ: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), **environ)
    p = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, env=env,
                       capture_output=True, text=True, check=True)
    result: dict = json.loads(p.stdout)
    return result


def _under(modules: list[str], roots: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == r or m.startswith(r + ".") for r in roots)]


def test_an_rsp_run_loads_only_the_rsp_dialects():
    r = _run(_LOADED, *RSP_RUN)
    assert (r["code"], r["lines"]) == (0, 1)
    assert _under(r["modules"], NEVER + SPASEQ_ONLY + EPSPARQL_ONLY) == []
    # the CQELS query's builder, and not the other RSP dialects'
    assert _under(r["modules"], RSP_ONLY) == ["rsep.lang.cqels"]
    assert {"rsep.runtime.windowed", "rsep.windows.maintained"} <= set(r["modules"])


def test_a_spaseq_run_loads_only_spaseq():
    r = _run(_LOADED, *SPASEQ_RUN)
    assert (r["code"], r["lines"]) == (0, 2)
    assert _under(r["modules"], NEVER + EPSPARQL_ONLY + RSP_ONLY + WINDOWED_ONLY) == []
    assert {"rsep.lang.spaseq", "rsep.spaseq.runtime", "rsep.algebra.spaseq"} <= set(r["modules"])


_FROZEN = """
import gc, io, json, sys
{call}
out, sys.stdout = sys.stdout, io.StringIO()
code = main({argv})
lines, sys.stdout = sys.stdout.getvalue().splitlines(), out
print(json.dumps({{"code": code, "lines": len(lines), "enabled": gc.isenabled(),
                  "frozen": gc.get_freeze_count()}}))
"""


def test_the_command_freezes_what_its_imports_and_its_run_s_start_up_allocated():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"rsep": "rsep.cli.start:main"}
    # a run that stops before its start-up is over (no such query): the imports' ~30,000
    failed = _run(_FROZEN.format(call="from rsep.cli.start import main", argv=""),
                  "run", "no-such.rq", "--stream", "http://s=no-such.trig")
    assert (failed["code"], failed["enabled"]) == (1, True) and failed["frozen"] > 20_000
    r = _run(_FROZEN.format(call="from rsep.cli.start import main", argv=""), *RSP_RUN)
    assert (r["code"], r["lines"], r["enabled"]) == (0, 1, True)
    # and the parser's ~20,000 containers: frozen where the run's start-up was over
    assert r["frozen"] > failed["frozen"] + 15_000
    # rsep.cli.main.main called in-process (as the tests do) freezes nothing
    r = _run(_FROZEN.format(call="from rsep.cli.main import main", argv="sys.argv[1:]"), *RSP_RUN)
    assert (r["code"], r["lines"], r["enabled"], r["frozen"]) == (0, 1, True, 0)


def test_the_interpreter_starts_without_importing_for_the_editable_install():
    # make installs rsep editable as a plain path entry (setuptools' compat mode): the
    # default finder imported pathlib and more at every start (~25 ms)
    p = subprocess.run([sys.executable, "-c", "import sys; m = sorted(sys.modules); "
                        "import rsep; print(' '.join(m)); print(rsep.__file__)"],
                       cwd="/", capture_output=True, text=True, check=True)
    started, rsep_file = p.stdout.splitlines()
    assert [m for m in started.split() if "editable" in m or m == "pathlib"] == []
    assert rsep_file == str(ROOT / "rsep" / "__init__.py")


_PROBED = """
import importlib.machinery as m
compiled = []
source_to_code = m.SourceFileLoader.source_to_code
def probe(self, data, path, **kw):
    compiled.append(path)
    return source_to_code(self, data, path, **kw)
m.SourceFileLoader.source_to_code = probe
""" + _LOADED.replace('"modules": sorted(sys.modules)', '"compiled": compiled')


def _make_recipe(target: str) -> tuple[list[str], list[str]]:
    """A Makefile target's prerequisites and recipe lines."""
    text = (ROOT / "Makefile").read_text()
    m = re.search(rf"^{target}:(.*)\n((?:\t.*\n)+)", text, re.M)
    assert m, target
    return m.group(1).split(), [line.strip() for line in m.group(2).splitlines()]


def test_a_run_reads_the_bytecode_make_writes_and_compiles_none_of_rsep(tmp_path):
    assert all("bytecode" in _make_recipe(t)[0] for t in ("demo", "test", "bench"))
    _, recipe = _make_recipe("bytecode")
    # the recipe, its bytecode written aside (PYTHONPYCACHEPREFIX) and the environment's
    # PYTHONDONTWRITEBYTECODE kept: reading bytecode is all a start may do
    cache = dict(PYTHONPYCACHEPREFIX=str(tmp_path), PYTHONDONTWRITEBYTECODE="1")
    for line in recipe:
        subprocess.run(line.replace("$(BIN)", str(Path(sys.executable).parent)), shell=True,
                       cwd=ROOT, env=dict(os.environ, **cache), check=True)
    for args in (RSP_RUN, SPASEQ_RUN):
        r = _run(_PROBED, *args, **cache)
        assert r["code"] == 0
        # (the standard library's bytecode is not under the prefix: compiled, not counted)
        assert [f for f in r["compiled"] if f.startswith(str(ROOT / "rsep"))] == []
        assert any(f.endswith("argparse.py") for f in r["compiled"])  # the probe saw compiles


def test_import_rsep_loads_no_engine_and_its_names_load_on_first_use():
    r = _run("""
import json, sys
import rsep
before = sorted(m for m in sys.modules if m.startswith("rsep."))
from rsep import Engine, parse_query
print(json.dumps({"before": before, "engine": Engine.__module__,
                  "parse": parse_query.__module__, "dir": "TimeConfig" in dir(rsep)}))
""")
    assert r == {"before": ["rsep._native"], "engine": "rsep.runtime.engine",
                 "parse": "rsep.lang", "dir": True}
    with pytest.raises(AttributeError, match="module 'rsep' has no attribute 'Nope'"):
        _ = __import__("rsep").Nope


def test_the_guard_hashes_a_source_only_when_its_stat_changed():
    name = "rsep.spaseq.chain"
    py = source(name)
    wrong = "0" * 64
    # the build's stat: the source is taken as the build's without hashing it
    assert _Guard({name: {"sha256": wrong, "stat": stat(py)}}, pure=False).find_spec(name) is None
    # another stat (a checkout touched it): the hash decides
    other = [s + 1 for s in stat(py)]
    assert _Guard({name: {"sha256": digest(py), "stat": other}},
                  pure=False).find_spec(name) is None
    stale = _Guard({name: {"sha256": wrong, "stat": other}}, pure=False)
    with pytest.warns(UserWarning, match="rsep.spaseq.chain runs as pure Python"):
        spec = stale.find_spec(name)
    assert spec is not None and spec.origin == str(py) and stale.stale == [name]
    # a manifest written before stats were recorded: the hash alone
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _Guard({name: digest(py)}, pure=False).find_spec(name) is None


def test_the_parser_is_built_once_then_loaded_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RSEP_CACHE_DIR", str(tmp_path))
    ext = "rsp_unit: query\n"
    built: list[str] = []
    real = lang_parser.Lark

    def counting(*args: object, **kw: object) -> object:
        built.append(str(kw["start"]))
        return real(*args, **kw)

    monkeypatch.setattr(lang_parser, "Lark", counting)
    text = "PREFIX : <http://x/> SELECT ?x WHERE { ?x :p 'é' . FILTER(?x > -1.5e3) }"
    first = lang_parser.sparql_lalr(ext, "rsp_unit")
    files = sorted(p.name for p in tmp_path.iterdir())
    assert built == ["rsp_unit"] and files == [lang_parser.cache_file(
        lang_parser.sparql_grammar() + "\n" + ext, "rsp_unit").name]
    second = lang_parser.sparql_lalr(ext, "rsp_unit")
    assert built == ["rsp_unit"]  # loaded, not built
    assert second.parse(text) == first.parse(text)
    with pytest.raises(lang_parser.UnexpectedToken):
        second.parse("SELECT WHERE")
    # a damaged file is rebuilt and replaced; no temporary file stays behind
    (tmp_path / files[0]).write_bytes(b"not a pickle")
    third = lang_parser.sparql_lalr(ext, "rsp_unit")
    assert built == ["rsp_unit", "rsp_unit"] and third.parse(text) == first.parse(text)
    assert sorted(p.name for p in tmp_path.iterdir()) == files
    lang_parser.sparql_lalr(ext, "rsp_unit")
    assert len(built) == 2


def test_an_unwritable_cache_directory_is_done_without(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setenv("RSEP_CACHE_DIR", str(blocked / "rsep"))  # under a file: no mkdir
    p = lang_parser.sparql_lalr("rsp_unit: query\n", "rsp_unit")
    assert p.parse("SELECT * WHERE { ?s ?p ?o }").data == "rsp_unit"


def _scanners(p: lang_parser.Lark) -> tuple[list[object], list[lang_parser._Regex]]:
    """A parser's lexers (one per set of terminals a state accepts, and the root one) and
    the terminal patterns their scanners try."""
    lexer = p.parser.lexer
    basics = list({id(b): b for b in (*lexer.lexers.values(), lexer.root_lexer)}.values())
    regexes: dict[int, lang_parser._Regex] = {}
    for b in basics:
        if b._scanner is not None:
            for scanner in (b._scanner, *(cb.scanner for cb in b.callback.values())):
                regexes.update((id(rx), rx) for mre in scanner._mres for _, rx in mre.parts)
    return basics, list(regexes.values())


def test_a_loaded_parser_builds_no_lexer_and_compiles_no_pattern_a_parse_does_not_try(
        tmp_path, monkeypatch):
    monkeypatch.setenv("RSEP_CACHE_DIR", str(tmp_path))
    ext = "rsp_unit: query\n"
    lang_parser.sparql_lalr(ext, "rsp_unit")
    p = lang_parser.sparql_lalr(ext, "rsp_unit")  # loaded
    assert not hasattr(p, "grammar")  # the grammar's analysis, read only to build, is not kept
    basics, regexes = _scanners(p)
    # every state's scanner came built (Lark builds one per state a first parse reaches)
    assert len(basics) > 100 and all(b._scanner is not None for b in basics)
    assert len(regexes) > 100 and [rx.pattern for rx in regexes if rx.rx is not None] == []
    # each with the regex engine's code, compiled when the parser was built
    assert [rx.pattern for rx in regexes if rx.code is None] == []
    p.parse("SELECT ?x WHERE { ?x ?p 1 }")
    tried = {rx.pattern for rx in regexes if rx.rx is not None}
    assert p.get_terminal("VAR1").pattern.to_regexp() in tried
    assert p.get_terminal("LANGTAG").pattern.to_regexp() not in tried
    # the parse table's ~38,000 actions are its ~1,300 distinct (action, argument) pairs
    rows = p.parser.parser.parser.parse_table.states.values()
    actions = [a for row in rows for a in row.values()]
    assert len({id(a) for a in actions}) == len(set(actions)) < len(actions) / 10


_METHODS = """
import hashlib, inspect, json, marshal, sys
{install}
from rsep.cli.main import main
import io
out, sys.stdout = sys.stdout, io.StringIO()
code = main(sys.argv[1:])
lines, sys.stdout = sys.stdout.getvalue().splitlines(), out
digests = {{}}
for name, module in sorted(sys.modules.items()):
    for cls in vars(module).values() if name.startswith("rsep") else ():
        if isinstance(cls, type) and "__dataclass_fields__" in vars(cls):
            for m in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__"):
                f = inspect.unwrap(vars(cls).get(m, None) or (lambda: None))
                if getattr(f, "__qualname__", "").startswith(cls.__qualname__ + "."):
                    digests[f.__qualname__] = hashlib.sha256(marshal.dumps(f.__code__)).hexdigest()
report = {report}
print(json.dumps({{"code": code, "lines": len(lines), "digests": digests, **report}}))
"""


def test_dataclasses_methods_come_from_the_cache_and_are_dataclasses_own(tmp_path):
    plain = _run(_METHODS.format(install="", report="{}"), *RSP_RUN)
    hooked = _METHODS.format(install="from rsep.cli.start import MethodCode\n"
                                     "methods = MethodCode.install()",
                             report='{"compiled": methods.compiled, "used": len(methods.used)}'
                                    "\nmethods.save()")
    first = _run(hooked, *RSP_RUN, RSEP_CACHE_DIR=str(tmp_path))
    (cache,) = tmp_path.glob("dataclass-code-*")
    second = _run(hooked, *RSP_RUN, RSEP_CACHE_DIR=str(tmp_path))
    assert (plain["code"], plain["lines"]) == (first["code"], first["lines"]) == (0, 1)
    assert len(plain["digests"]) > 100
    # each method's code is the one dataclasses compiles itself, from the cache or not
    assert first["digests"] == second["digests"] == plain["digests"]
    assert first["compiled"] == first["used"] > 100  # (5 texts a class, some shared)
    assert (second["compiled"], second["used"]) == (0, first["used"])
    # a damaged cache is compiled again and replaced
    cache.write_bytes(b"\x00 not marshal")
    third = _run(hooked, *RSP_RUN, RSEP_CACHE_DIR=str(tmp_path))
    assert third["compiled"] == first["used"] and third["digests"] == plain["digests"]
    assert [p.name for p in tmp_path.glob("dataclass-code-*")] == [cache.name]
    assert _run(hooked, *RSP_RUN, RSEP_CACHE_DIR=str(tmp_path))["compiled"] == 0
