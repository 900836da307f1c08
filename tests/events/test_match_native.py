"""The native path of RSEP-QL's MATCH (rsep.events.native, native/src/rsepql.rs and
policy.rs) writes what today's path writes, byte for byte, and takes the runs it is meant to.

Hypothesis draws streams (items of one triple mostly, now and then two, a repeated triple,
a literal in a form pyoxigraph's store changes; times with gaps and ties), event patterns
(SEQ, FIRST and LAST over BEPs of one triple pattern, nested, a BEP repeated now and then),
a selection policy, landmark windows, an R2S operator, a projection (``*``, variables,
``?_from`` / ``?_to``) and a format; each run goes through ``rsep run`` natively and with the
native path off (RSEP_NATIVE=0 in process: today's path with the compiled build), and the
outputs and exit statuses must be equal; fewer draws against a process of the pure build.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rsep.cli.main import main
from rsep.events import native

pytestmark = pytest.mark.skipif(native.available() is not None,
                                reason=str(native.available()))

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = int(os.environ.get("RSEP_EXAMPLES", "80"))
PROV = "<http://www.w3.org/ns/prov#generatedAtTime>"
STREAM = "http://example.org/s"
EX = "http://example.org/"
XSD = "http://www.w3.org/2001/XMLSchema#"
# runs the native path refused, took writing nothing, took writing rows
TAKEN = [0, 0, 0]
WHY: dict[str, int] = {}

NODES = [f"<{EX}{n}>" for n in "abc"]
# (a literal now and then, one in a form pyoxigraph's store changes among them)
VALUES = [*NODES * 4, "1", f'"01"^^<{XSD}integer>', '"x"']
BEPS = {"A": "{ ?x :p ?y }", "B": "{ ?y :q ?z }", "C": "{ ?z :r ?w }", "D": "{ :a :p ?y }",
        "E": "{ ?x :q ?x }"}
POLICIES = ["UNRESTRICTED", "NAIVE", "CHRONOLOGICAL", "RECENT"]
RARELY = st.sampled_from([False] * 9 + [True])


@st.composite
def expressions(draw, depth=0) -> str:
    if depth >= 2 or draw(st.integers(0, 2)) == 0:
        return draw(st.sampled_from(sorted(BEPS)))
    kind = draw(st.sampled_from(["SEQ", "SEQ", "SEQ", "FIRST", "LAST"]))
    if kind == "SEQ":
        return f"({draw(expressions(depth + 1))} SEQ {draw(expressions(depth + 1))})"
    return f"{kind} ({draw(expressions(depth + 1))})"


@st.composite
def streams(draw) -> str:
    t = draw(st.integers(0, 2))
    lines = []
    for i in range(draw(st.integers(1, 30))):
        t += draw(st.sampled_from([0, 1, 1, 1, 2, 3]))
        n = 2 if draw(RARELY) else 1
        body = " ".join(f"{draw(st.sampled_from(NODES))} <{EX}{draw(st.sampled_from('pqr'))}> "
                        f"{draw(st.sampled_from(VALUES))} ." for _ in range(n))
        if draw(RARELY):
            body += " " + body.split(" . ")[0].removesuffix(" .") + " ."  # a triple twice
        lines.append(f"<{EX}g/{i}> {PROV} {t} .\n<{EX}g/{i}> {{ {body} }}\n")
    return "".join(lines)


@st.composite
def queries(draw) -> str:
    expr = draw(expressions())
    used = sorted({c for c in expr if c in BEPS})
    t0 = {w: draw(st.sampled_from([0, 0, 0, 2])) for w in ("w1", "w2")}
    decls = "\n".join(f"EVENT ON :w{1 if n in 'AD' else 2} {BEPS[n]} AS {n}" for n in used)
    variables = sorted({v for n in used for v in ("x", "y", "z", "w") if f"?{v}" in BEPS[n]})
    if draw(st.booleans()):
        select = "*"
    else:
        cols = [f"?{v}" for v in variables] + ["?_from", "?_to", "?nowhere"]
        select = " ".join(draw(st.lists(st.sampled_from(cols), min_size=1, max_size=5,
                                        unique=True)))
    r2s = draw(st.sampled_from(["RSTREAM", "RSTREAM", "ISTREAM", "DSTREAM"]))
    return (f"PREFIX : <{EX}>\nREGISTER {r2s} :q AS SELECT {select}\n"
            f"FROM NAMED WINDOW :w1 ON :s [LND {t0['w1']}]\n"
            f"FROM NAMED WINDOW :w2 ON :s [LND {t0['w2']}]\n{decls}\n"
            f"WHERE {{ MATCH {draw(st.sampled_from(POLICIES))} {{ {expr} }} }}\n")


def run(tmp: Path, query: str, stream: str, extra: list[str], off: bool,
        monkeypatch: pytest.MonkeyPatch) -> tuple[int, bytes, native.Outcome | None]:
    (tmp / "q.rq").write_text(query, encoding="utf-8")
    (tmp / "s.trig").write_text(stream, encoding="utf-8")
    out = tmp / ("off.out" if off else "native.out")
    with monkeypatch.context() as m:
        if off:
            m.setenv("RSEP_NATIVE", "0")
        native.LAST = None
        rc = main(["run", str(tmp / "q.rq"), "--stream", f"{STREAM}={tmp / 's.trig'}",
                   "-o", str(out), "-q", *extra])
    return rc, out.read_bytes(), native.LAST


def both(tmp: Path, query: str, stream: str, extra: list[str],
         monkeypatch: pytest.MonkeyPatch) -> native.Outcome:
    """Run with the native path and without it, check they agree; the native run's outcome."""
    rc, out, got = run(tmp, query, stream, extra, False, monkeypatch)
    orc, oout, _ = run(tmp, query, stream, extra, True, monkeypatch)
    assert got is not None, query  # (every query drawn is the planner's)
    assert rc == orc
    assert out == oout, (query, got.refused, out.decode(), oout.decode())
    TAKEN[0 if got.refused else 1 if not got.rows else 2] += 1
    if got.refused:
        WHY[got.refused.split(":")[0]] = WHY.get(got.refused.split(":")[0], 0) + 1
    return got


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(query=queries(), stream=streams(), fmt=st.sampled_from(["jsonl", "jsonl", "tsv"]))
def test_native_equals_todays_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   query: str, stream: str, fmt: str) -> None:
    both(tmp_path, query, stream, ["--format", fmt], monkeypatch)


def test_the_random_runs_were_mostly_native() -> None:
    # (after the property test, in file order: its runs counted)
    refused, empty, rows = TAKEN
    print('native runs (refused, empty, rows):', TAKEN, WHY)
    total = refused + empty + rows
    assert empty + rows >= total // 2 and rows >= total // 5, (TAKEN, WHY)


@settings(max_examples=max(1, EXAMPLES // 8), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(query=queries(), stream=streams())
def test_native_equals_the_pure_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      query: str, stream: str) -> None:
    """Fewer draws against the pure build itself (a process with RSEP_PURE=1 from its
    start: no compiled module loaded), which the in-process runs above cannot be."""
    rc, out, _ = run(tmp_path, query, stream, [], False, monkeypatch)
    cmd = [sys.executable, "-c", "import sys; from rsep.cli.start import main; sys.exit(main())",
           "run", str(tmp_path / "q.rq"), "--stream", f"{STREAM}={tmp_path / 's.trig'}", "-q",
           "-o", str(tmp_path / "pure.out")]
    got = subprocess.run(cmd, env={**os.environ, "PYTHONPATH": str(ROOT), "RSEP_PURE": "1"},
                         capture_output=True)
    assert got.returncode == rc, got.stderr
    assert (tmp_path / "pure.out").read_bytes() == out
