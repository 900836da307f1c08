"""N-Quads stream files on the native reader (native/src/nquads.rs, source.rs): every native
operator writes what today's path (RSEP_NATIVE=0) writes, byte for byte, with the same exit
status and the same dead letters, on random N-Quads files read whole and in parts of 1 to
300 bytes with the dictionary swept after each.

Hypothesis draws events (times that repeat, now and then one that goes back, a graph name
given again, its time after its quads), the file's layout (comments, blank lines, CRLF line
ends, spaces, a last line without its end) and now and then a line today's reader rejects
(a syntax error, a relative IRI, an unclosed string, a byte that is not UTF-8) or a shape
the native reader refuses (a blank node, a literal pyoxigraph's store rewrites). Each run
goes through ``rsep run`` of one query of each native operator: a windowed SELECT of one
pattern (select.rs), a window's COUNT per group (bgp.rs), SPASEQ's SEQ (chain.rs),
EP-SPARQL's SEQ (epsparql.rs) and RSEP-QL's MATCH (rsepql.rs).
"""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rsep.cli.main import main
from rsep.epsparql import native as epsparql_native
from rsep.events import native as events_native
from rsep.spaseq import native as spaseq_native
from rsep.stream import native as native_core
from rsep.windows import native as windows_native

pytestmark = pytest.mark.skipif(windows_native.available() is not None,
                                reason=str(windows_native.available()))

EXAMPLES = int(os.environ.get("RSEP_EXAMPLES", "60"))
EX = "http://example.org/"
STREAM = f"{EX}s"
PROV = "<http://www.w3.org/ns/prov#generatedAtTime>"
XSD = "http://www.w3.org/2001/XMLSchema#"
SUBJECTS = [f"<{EX}a>", f"<{EX}b>", f"<{EX}c>"]
PREDICATES = [f"<{EX}p>", f"<{EX}q>"]
OBJECTS = [*(f'"{n}"^^<{XSD}integer>' for n in range(40)), '"x"', '"y"@en', f"<{EX}a>",
           '"tab\\there \\"q\\" \\u00E9"']
RARE = [f'"1.0"^^<{XSD}decimal>', f'"05"^^<{XSD}integer>', f'"true"^^<{XSD}boolean>',
        "_:b0"]
# lines today's reader rejects (each with its line, column and message in the dead letter)
BAD = [f"<{EX}a> <{EX}p> .", f'<{EX}a> <{EX}p> "x" <http://g/0>', f"<a> <{EX}p> <{EX}b> <http://g/0> .",
       f'<{EX}a> <{EX}p> "open <http://g/0> .', f"<{EX}a> <{EX}p> <{EX}b> <http://g/0> . junk",
       f'<{EX}a> <{EX}p> "\udcff" <http://g/0> .']

QUERIES: dict[str, tuple[str, list[str]]] = {
    "select": (f"REGISTER RSTREAM <{EX}out> AS\nSELECT *\nFROM NAMED WINDOW <{EX}w> ON <{STREAM}> "
               f"[RANGE 4 STEP 2]\nWHERE {{ WINDOW <{EX}w> {{ ?s <{EX}p> ?o }} }}\n", []),
    "bgp": (f"REGISTER RSTREAM <{EX}out> AS\nSELECT ?s (COUNT(*) AS ?n)\n"
            f"FROM NAMED WINDOW <{EX}w> ON <{STREAM}> [RANGE 5 STEP 1]\n"
            f"WHERE {{ WINDOW <{EX}w> {{ ?s ?p ?o }} }} GROUP BY ?s\n", []),
    "spaseq": (f"SELECT ?c ?v1 ?v2\nWITHIN 10\nFROM STREAM S1 <{STREAM}>\nWHERE {{\n  SEQ (A; B)\n"
               f"  DEFINE GPM A ON S1 {{ ?c <{EX}p> ?v1 }}\n"
               f"  DEFINE GPM B ON S1 {{ ?c <{EX}q> ?v2 }}\n}}\n", []),
    "epsparql": (f"PREFIX : <{EX}>\nSELECT ?k ?a ?b WHERE {{ {{?k :p ?a}} SEQ {{?k :q ?b}} }}\n",
                 ["--dialect", "epsparql"]),
    "rsepql": (f"PREFIX : <{EX}>\nREGISTER RSTREAM :q AS SELECT ?k ?a ?b ?_from ?_to\n"
               f"FROM NAMED WINDOW :w1 ON :s [LND 0]\nFROM NAMED WINDOW :w2 ON :s [LND 0]\n"
               f"EVENT ON :w1 {{ ?k :p ?a . }} AS E_1\nEVENT ON :w2 {{ ?k :q ?b . }} AS E_2\n"
               f"WHERE {{ MATCH CHRONOLOGICAL {{ E_1 SEQ E_2 }} }}\n", []),
}
PATHS: dict[str, ModuleType] = {"select": windows_native, "bgp": windows_native,
                                "spaseq": spaseq_native, "epsparql": epsparql_native,
                                "rsepql": events_native}
# per operator: runs the native path refused, took writing nothing, took writing rows
TAKEN = {k: [0, 0, 0] for k in QUERIES}


FLAWS = ["late", "again", "after", "bad", "empty", "rare"]


@st.composite
def nquads(draw: st.DrawFn) -> bytes:
    """A random N-Quads stream file: most of them of the shape the native reader takes, a
    few with one kind of flaw here and there (today's reader decides on those)."""
    flaw = draw(st.sampled_from([None] * len(FLAWS) + FLAWS))
    # (a weighted draw per event: a flaw in about one event of five)
    now = st.sampled_from([False] * 4 + [True]) if flaw else st.just(False)
    t = draw(st.integers(0, 3))
    objects = OBJECTS + (RARE if flaw == "rare" else [])
    layout = draw(st.booleans())
    lines: list[str] = []
    for i in range(draw(st.integers(1, 20))):
        t += draw(st.sampled_from([0, 0, 1, 1, 2, 4]))
        if flaw == "late" and draw(now):
            t -= 2  # a time that goes back: a late event
        g = f"<http://g/{draw(st.integers(0, i)) if flaw == 'again' and draw(now) else i}>"
        time = f'{g} {PROV} "{t}"^^<{XSD}integer> .'
        # (two triples of an event of two predicates: two of one predicate are two
        # solutions of one RSEP-QL BEP, which its native path refuses; of an event that
        # often, it would hardly run natively)
        preds = draw(st.permutations(PREDICATES))
        body = [f"{draw(st.sampled_from(SUBJECTS))} {preds[j]} "
                f"{draw(st.sampled_from(objects))} {g} ."
                for j in range(0 if flaw == "empty" and draw(now) else
                               draw(st.sampled_from([1, 1, 1, 2])))]
        if flaw == "bad" and draw(now):
            body.insert(draw(st.integers(0, len(body))), draw(st.sampled_from(BAD)))
        event = body + [time] if flaw == "after" and draw(now) else [time, *body]
        if layout and draw(st.booleans()):
            event.insert(draw(st.integers(0, len(event))), draw(st.sampled_from(
                ["# a comment", "", "   ", "# <http://g/9> <p> . }"])))
        lines += event
    sep = "\r\n" if layout and draw(st.booleans()) else "\n"
    pad = " \t" if layout and draw(st.booleans()) else ""
    text = sep.join(line + pad for line in lines)
    if not (layout and draw(st.booleans())):
        text += sep
    return text.encode("utf-8", "surrogateescape")


def run(tmp: Path, name: str, stream: bytes, off: bool,
        monkeypatch: pytest.MonkeyPatch) -> tuple[int, bytes, bytes, native_core.Outcome | None]:
    query, extra = QUERIES[name]
    (tmp / "q.rq").write_text(query, encoding="utf-8")
    (tmp / "s.nq").write_bytes(stream)
    tag = "off" if off else "native"
    out, dead = tmp / f"{tag}.out", tmp / f"{tag}.dead.jsonl"
    path = PATHS[name]
    with monkeypatch.context() as m:
        if off:
            m.setenv("RSEP_NATIVE", "0")
        path.LAST = None  # type: ignore[attr-defined]
        rc = main(["run", str(tmp / "q.rq"), "--stream", f"{STREAM}={tmp / 's.nq'}",
                   "-o", str(out), "--dead-letter", str(dead), "-q", *extra])
    return rc, out.read_bytes(), dead.read_bytes(), path.LAST  # type: ignore[attr-defined]


def both(tmp: Path, name: str, stream: bytes,
         monkeypatch: pytest.MonkeyPatch) -> native_core.Outcome:
    """Run with the native path and without it, check they agree; the native run's outcome."""
    rc, out, dead, got = run(tmp, name, stream, False, monkeypatch)
    orc, oout, odead, _ = run(tmp, name, stream, True, monkeypatch)
    assert got is not None  # (rsep run of a query of a native operator always asks)
    assert (rc, dead) == (orc, odead), (got.refused, dead, odead)
    assert out == oout, (got.refused, out.decode(), oout.decode())
    TAKEN[name][0 if got.refused else 1 if not got.rows else 2] += 1
    return got


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(stream=nquads(), chunk=st.sampled_from([None, 1, 7, 64, 300]), sweep=st.booleans())
def test_nquads_native_equals_todays_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          stream: bytes, chunk: int | None, sweep: bool) -> None:
    # (each operator over the same file: each gets the same share of every kind of draw)
    with monkeypatch.context() as m:
        if chunk is not None:
            m.setattr(native_core, "STREAM_CHUNK", chunk)
        if sweep:
            m.setattr(native_core, "SWEEP_TERMS", 0)
        for name in QUERIES:
            both(tmp_path, name, stream, m)


def test_the_random_runs_were_mostly_native() -> None:
    # (after the property test, in file order: its runs counted) every operator ran
    # natively on a good share of its draws, and wrote rows on some
    for name, (refused, empty, rows) in TAKEN.items():
        total = refused + empty + rows
        assert empty + rows >= total // 4 and rows >= total // 20, (name, TAKEN)


def events(n: int, start: int = 0) -> list[str]:
    return [line for i in range(start, start + n) for line in (
        f'<http://g/{i}> {PROV} "{i}"^^<{XSD}integer> .',
        f'<{EX}{"ab"[i % 2]}> <{EX}p> "{i % 5}"^^<{XSD}integer> <http://g/{i}> .',
        f'<{EX}{"ab"[i % 2]}> <{EX}q> "v{i}" <http://g/{i}> .')]


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_the_common_shape_is_taken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   name: str) -> None:
    got = both(tmp_path, name, ("\n".join(events(40)) + "\n").encode(), monkeypatch)
    assert (got.refused, got.events, got.triples) == ("", 40, 80)
    assert got.rows > 0


@pytest.mark.parametrize(("line", "why"), [
    (f"<{EX}a> <{EX}p> .", "a syntax error at line 61"),
    (f"_:x <{EX}p> <{EX}b> <http://g/20> .", "a blank node"),
    (f'<http://g/99> {PROV} "3"^^<{XSD}integer> .', "a time before"),
    (f'<{EX}a> <{EX}p> "1.0"^^<{XSD}decimal> <http://g/19> .', "reads back in another form"),
])
def test_what_it_cannot_promise_runs_as_today(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             line: str, why: str) -> None:
    # the line after 20 events (60 lines): today's path reads the file, its dead letters
    # and lateness rules its own
    lines = [*events(20), line, *events(20, 20)]
    got = both(tmp_path, "select", ("\n".join(lines) + "\n").encode(), monkeypatch)
    assert why in got.refused, got.refused
    assert (tmp_path / "native.dead.jsonl").read_bytes() == (tmp_path / "off.dead.jsonl").read_bytes()


def test_a_late_refusal_in_a_large_file_leaves_no_output(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # 3,000 events read in 4 KiB chunks and written before the line to reject: today's path
    # runs over the whole file, and the output and dead letter are its own alone
    monkeypatch.setattr(native_core, "STREAM_CHUNK", 4096)
    monkeypatch.setattr(native_core, "SWEEP_TERMS", 64)
    lines = [*events(3000), f"<{EX}a> <{EX}p> ."]
    got = both(tmp_path, "select", ("\n".join(lines) + "\n").encode(), monkeypatch)
    assert "a syntax error at line 9001" in got.refused
    dead = (tmp_path / "native.dead.jsonl").read_text(encoding="utf-8")
    assert dead.count("\n") == 1 and '"line": 9001, "column": 47' in dead


def test_the_syntax_is_the_name_s() -> None:
    assert [native_core.file_format(p) for p in ("s.nq", "S.NQUADS", "s.trig", "s.nt", "-")] \
        == ["nquads", "nquads", "trig", "trig", "trig"]


def test_a_syntax_given_otherwise_runs_as_today(tmp_path: Path) -> None:
    from rsep.stream.files import StreamFile
    f = StreamFile(tmp_path / "s.nq", STREAM, fmt="trig")
    q = type("Q", (), {"native": object()})()
    assert native_core.refusal([q], [f], "", None) == \
        "not one TriG or N-Quads stream file read in the syntax its name gives"
    assert native_core.refusal([q], [StreamFile(tmp_path / "s.nq", STREAM)], "", None) is None
