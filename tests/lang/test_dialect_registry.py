"""The dialect registry (rsep.lang.dialect): every family has a runtime, a partitioning and an
explanation, and `rsep run` takes or refuses every language-dependent option as the registry
says, for every dialect (the option x dialect matrix)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rsep.cli.explain import EXPLAIN
from rsep.cli.main import main
from rsep.lang import DIALECTS, dialect_of, parse_query
from rsep.lang.dialect import OPTIONS
from rsep.runtime import dialects
from rsep.runtime.dialects import FAMILIES, Family
from rsep.runtime.engine import Engine
from rsep.spark.plan import PARTITIONING

ROOT = Path(__file__).resolve().parents[2]
EX = "http://example.org/"
# one query per dialect, each reading the stream <EX>s
QUERIES = {
    "rspql": f"PREFIX : <{EX}> REGISTER RSTREAM :q AS SELECT ?x FROM NAMED WINDOW :w ON :s "
             "[RANGE PT10S STEP PT5S] WHERE { WINDOW :w { ?x :p ?y } }",
    "csparql": f"PREFIX : <{EX}> REGISTER QUERY q AS SELECT ?x FROM STREAM :s [RANGE 10s STEP 5s] "
               "WHERE { ?x :p ?y }",
    "cqels": f"PREFIX : <{EX}> SELECT ?x WHERE {{ STREAM :s [RANGE 10s SLIDE 5s] {{ ?x :p ?y }} }}",
    "spaseq": f"PREFIX : <{EX}> SELECT ?x FROM STREAM S1 <{EX}s> WHERE {{ SEQ (A) "
              "DEFINE GPM A ON S1 { ?x :p ?y } }",
    "epsparql": f"PREFIX : <{EX}> SELECT ?x WHERE {{ {{ ?x :p ?y }} SEQ {{ ?x :p ?z }} }}",
}
# a value for each language-dependent option of `rsep run`
VALUES = {"--r2s": "istream", "--report": "on-arrival", "--policy": "chronological",
          "--max-window-triples": "1000", "--max-results": "1000",
          "--max-matches": "1000", "--max-derived": "1000",
          "--window-bounds": "left-closed", "--window-origin": "1",
          "--graph-updates": f"{EX}rooms={ROOT}/docs/examples/rooms/rooms.ru"}
STREAM = (f"<{EX}g1> <http://www.w3.org/ns/prov#generatedAtTime> 1 . <{EX}g1> {{ <{EX}a> <{EX}p> 1 }}\n"
          f"<{EX}g2> <http://www.w3.org/ns/prov#generatedAtTime> 2 . <{EX}g2> {{ <{EX}a> <{EX}p> 2 }}\n")


def test_every_family_has_a_runtime_a_partitioning_and_an_explanation():
    families = {d.family for d in DIALECTS.values()}
    assert families == {"rsp", "spaseq", "epsparql"}
    assert set(PARTITIONING) == families and set(EXPLAIN) == families
    assert set(FAMILIES) == families


# each family's runtime, by the class's qualified name
RUNTIME_OF = {"rspql": "rsep.runtime.windowed.QueryRuntime",
              "csparql": "rsep.runtime.windowed.QueryRuntime",
              "cqels": "rsep.runtime.windowed.QueryRuntime",
              "spaseq": "rsep.spaseq.runtime.SpaseqRuntime",
              "epsparql": "rsep.epsparql.runtime.EpSparqlRuntime"}


@pytest.mark.parametrize("name", sorted(DIALECTS))
def test_the_engine_builds_every_family_s_runtime_through_the_registry(name, monkeypatch):
    """No family is a special case of Engine.register: the RSP family's window runtime is
    built by its registry entry, as the automata are."""
    family = dialect_of(parse_query(QUERIES[name])).family
    built: list[tuple[str, str]] = []
    entry = FAMILIES[family]

    def runtime(q, engine, n, callback):
        rt = entry.runtime(q, engine, n, callback)
        built.append((n, f"{type(rt).__module__}.{type(rt).__qualname__}"))
        return rt

    monkeypatch.setitem(dialects.FAMILIES, family, Family(runtime, entry.prepare))
    rt = Engine().register(QUERIES[name], name="q1")
    assert built == [("q1", RUNTIME_OF[name])]
    assert f"{type(rt).__module__}.{type(rt).__qualname__}" == RUNTIME_OF[name]


@pytest.mark.parametrize("name", sorted(DIALECTS))
def test_each_dialect_is_detected_and_named_by_its_queries(name):
    assert dialect_of(parse_query(QUERIES[name])).name == name
    assert dialect_of(parse_query(QUERIES[name], name)).name == name


def test_the_registry_covers_every_run_option_it_names():
    assert set(VALUES) == {o for o in OPTIONS if o not in ("--lars", "compare")}


@pytest.mark.parametrize("option", sorted(VALUES))
@pytest.mark.parametrize("name", sorted(DIALECTS))
def test_run_takes_or_refuses_each_option_as_the_registry_says(tmp_path, capsys, name, option):
    q = tmp_path / "q.rq"
    q.write_text(QUERIES[name])
    s = tmp_path / "s.trig"
    s.write_text(STREAM)
    code = main(["run", str(q), "--stream", f"{EX}s={s}", "--time-unit", "1s", option,
                 VALUES[option]])
    err = capsys.readouterr().err
    d = DIALECTS[name]
    if option in d.takes:
        assert code == 0, err
        assert err == ""
    else:  # a usage error, as explain's and compare's refusals are (README, "Exit status")
        assert code == 2
        assert err == f"rsep: {q}: {d.refusal(option)}\n"
        assert option in err and d.title in err


@pytest.mark.parametrize("name", sorted(DIALECTS))
def test_explain_lars_and_compare_follow_the_registry(tmp_path, capsys, name):
    q = tmp_path / "q.rq"
    q.write_text(QUERIES[name])
    s = tmp_path / "s.trig"
    s.write_text(STREAM)
    d = DIALECTS[name]
    code = main(["explain", str(q), "--lars", "--time-unit", "1s"])
    err = capsys.readouterr().err
    assert (code, err) == ((0, "") if "--lars" in d.takes else (2, f"rsep explain: {d.refusal('--lars')}\n"))
    code = main(["compare", str(q), "--stream", f"{EX}s={s}", "--period", "5", "--time-unit", "1s"])
    err = capsys.readouterr().err
    if "compare" in d.takes:
        assert code in (0, 4) and err == ""  # agree everywhere, or disagree somewhere
    else:
        assert (code, err) == (2, f"rsep compare: {d.refusal('compare')}\n")


def test_refusals_name_the_option_the_dialect_and_who_takes_it():
    assert DIALECTS["spaseq"].refusal("--max-results") == (
        "--max-results applies to RSP-QL, C-SPARQL and CQELS queries, not SPASEQ: it bounds the "
        "results of one window evaluation; SPASEQ queries output each complex event once, when "
        "it is detected")
    assert DIALECTS["cqels"].refusal("--policy") == (
        "--policy applies to EP-SPARQL queries, not CQELS: event selection and consumption "
        "policies are EP-SPARQL's (RSEP-QL's, 000, and ETALIS's; docs/semantics.md)")
    assert DIALECTS["epsparql"].refusal("--policy") is None
    assert DIALECTS["rspql"].refusal("--until") is None  # (every dialect takes it)


@pytest.mark.parametrize("option, value", [("--master", "local[1]"), ("--batch", None),
                                           ("--sink-format", "parquet"), ("--follow", None)])
def test_spark_options_are_refused_in_process(tmp_path, capsys, option, value):
    q = tmp_path / "q.rq"
    q.write_text(QUERIES["cqels"])
    s = tmp_path / "s.trig"
    s.write_text(STREAM)
    code = main(["run", str(q), "--stream", f"{EX}s={s}", option] + ([value] if value else []))
    assert code == 2
    assert capsys.readouterr().err == \
        f"rsep: {option} applies to --engine spark runs, not --engine inprocess\n"
