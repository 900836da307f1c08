"""The native path of a windowed query (rsep.windows.native, native/src/select.rs) writes
what today's path writes, byte for byte, and takes the runs it is meant to.

Hypothesis draws streams (gaps between times, simultaneous events, several graphs of one
time, triples repeated inside an event and across events, literals pyoxigraph's store
rewrites, now and then a record to reject or a time that goes back), windows (RANGE, STEP,
both boundaries), R2S operators, report policies and patterns (constants, variables,
repeated variables, a projection with a variable the pattern does not bind); each run goes
through ``rsep run`` twice, once as it is and once with RSEP_PURE=1 (today's path), and
the two outputs, exit statuses and dead-letter files must be equal.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rsep.cli.main import main
from rsep.stream import native as native_core
from rsep.windows import native

pytestmark = pytest.mark.skipif(native.available() is not None,
                                reason=str(native.available()))

# runs the native path refused, took writing nothing, took writing rows: a reader or
# planner that refused everything, or streams that never match, would prove nothing
TAKEN = [0, 0, 0]
EXAMPLES = int(os.environ.get("RSEP_EXAMPLES", "60"))
PROV = "<http://www.w3.org/ns/prov#generatedAtTime>"
STREAM = "http://e/s"
XSD = "http://www.w3.org/2001/XMLSchema#"

SUBJECTS = ["<http://e/a>", "<http://e/b>", "<http://e/c>"]
PREDICATES = ["<http://e/p>", "<http://e/q>"]
OBJECTS = SUBJECTS + ['"x"', '"y"@en', f'"5"^^<{XSD}integer>', '"tab\\there \\"q\\" é"']
RARE = [f'"1.0"^^<{XSD}decimal>', f'"05"^^<{XSD}integer>', f'"true"^^<{XSD}boolean>']
# (a weighted draw: Hypothesis draws an integer range's ends often, so ``== 0`` is not rare)
RARELY = st.sampled_from([False] * 60 + [True])
VALUES = [f'"v{n}"' for n in range(40)]
BAD = ["<http://e/a> <http://e/p> .", "_:b <http://e/p> <http://e/a> ."]


@st.composite
def streams(draw) -> str:
    t = draw(st.integers(2, 5))
    lines = []
    objects = OBJECTS + (RARE if draw(RARELY) else [])
    # a few distinct triples, or many: the same triple in two live events, or none
    objects = objects[:draw(st.integers(1, len(objects)))]
    spread = draw(st.sampled_from([0, 10, 40]))
    for i in range(draw(st.integers(1, 24))):
        t += draw(st.sampled_from([0, 0, 1, 1, 2, 5]))
        if draw(RARELY):
            t -= 2  # a time that goes back: rejected there
        # (objects "v<n>" of many values: a triple comes again in a live event now and then)
        body = [f"{draw(st.sampled_from(SUBJECTS))} {draw(st.sampled_from(PREDICATES))} "
                f"{draw(st.sampled_from(objects + VALUES[:spread]))} ."
                for _ in range(draw(st.integers(1, 3)))]
        if draw(RARELY):
            body.append(draw(st.sampled_from(BAD)))
        lines.append(f"<http://g/{i}> {PROV} {t} .\n<http://g/{i}> {{ {' '.join(body)} }}\n")
    return "".join(lines)


# per position: its own variable most often, ?x now and then (a repeated variable), terms
TERMS = [["?s"] * 6 + ["?x", *SUBJECTS[:2]],
         ["?p"] * 4 + [*PREDICATES, "<http://e/nowhere>"],
         ["?o"] * 6 + ["?x", "<http://e/a>", '"x"', '"v3"', f'"5"^^<{XSD}integer>']]


@st.composite
def queries(draw) -> str:
    pattern = [draw(st.sampled_from(terms)) for terms in TERMS]
    variables = sorted({x for x in pattern if x.startswith("?")} | {"?w"})
    if draw(st.booleans()):
        select = "*"
    else:
        select = " ".join(draw(st.lists(st.sampled_from(variables), min_size=1, max_size=3,
                                        unique=True)))
    r2s = draw(st.sampled_from(["RSTREAM", "ISTREAM", "DSTREAM"]))
    return (f"REGISTER {r2s} <http://e/out> AS\nSELECT {select}\n"
            f"FROM NAMED WINDOW <http://e/w> ON <{STREAM}> "
            f"[RANGE {draw(st.integers(1, 6))} STEP {draw(st.integers(1, 4))}]\n"
            f"WHERE {{ WINDOW <http://e/w> {{ {' '.join(pattern)} }} }}\n")


def run(tmp: Path, query: str, stream: str, extra: list[str], pure: bool,
        monkeypatch: pytest.MonkeyPatch) -> tuple[int, bytes, bytes, native.Outcome | None]:
    (tmp / "q.rq").write_text(query, encoding="utf-8")
    (tmp / "s.trig").write_text(stream, encoding="utf-8")
    tag = "pure" if pure else "native"
    out, dead = tmp / f"{tag}.jsonl", tmp / f"{tag}.dead.jsonl"
    with monkeypatch.context() as m:
        if pure:
            m.setenv("RSEP_PURE", "1")
        native.LAST = None
        rc = main(["run", str(tmp / "q.rq"), "--stream", f"{STREAM}={tmp / 's.trig'}",
                   "-o", str(out), "--dead-letter", str(dead), "-q", *extra])
    return rc, out.read_bytes(), dead.read_bytes(), native.LAST


def both(tmp: Path, query: str, stream: str, extra: list[str],
         monkeypatch: pytest.MonkeyPatch) -> native.Outcome:
    """Run on both paths, check they agree; the native run's outcome."""
    rc, out, dead, got = run(tmp, query, stream, extra, False, monkeypatch)
    prc, pout, pdead, _ = run(tmp, query, stream, extra, True, monkeypatch)
    assert got is not None  # (rsep run of a windowed query always asks)
    assert (rc, dead) == (prc, pdead)
    assert out == pout, (got.refused, out.decode(), pout.decode())
    TAKEN[0 if got.refused else 1 if not got.rows else 2] += 1
    return got


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(query=queries(), stream=streams(),
       report=st.sampled_from([None, "window-close", "window-close,non-empty"]),
       fmt=st.sampled_from(["jsonl", "tsv"]),
       bounds=st.sampled_from([None, "right-closed", "left-closed"]))
def test_native_equals_todays_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   query: str, stream: str, report: str | None, fmt: str,
                                   bounds: str | None) -> None:
    extra = (["--report", report] if report else []) + (["--window-bounds", bounds] if bounds else []) \
        + ["--format", fmt]
    both(tmp_path, query, stream, extra, monkeypatch)


def test_the_random_runs_were_mostly_native() -> None:
    # (after the property test, in file order: its runs counted)
    refused, empty, rows = TAKEN
    total = refused + empty + rows
    assert empty + rows >= total // 4 and rows >= total // 25, TAKEN


QUERY = (f"REGISTER RSTREAM <http://e/out> AS\nSELECT *\nFROM NAMED WINDOW <http://e/w> ON <{STREAM}> "
         "[RANGE 4 STEP 2]\nWHERE { WINDOW <http://e/w> { ?s <http://e/p> ?o } }\n")


def stream_of(*events: tuple[int, str]) -> str:
    return "".join(f"<http://g/{i}> {PROV} {t} .\n<http://g/{i}> {{ {body} }}\n"
                   for i, (t, body) in enumerate(events))


def test_the_common_shape_is_taken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = stream_of((0, '<http://e/a> <http://e/p> "x" .'), (1, '<http://e/b> <http://e/p> "y" .'),
                  (3, "<http://e/c> <http://e/q> <http://e/a> ."))
    got = both(tmp_path, QUERY, s, [], monkeypatch)
    assert (got.refused, got.events, got.evaluations, got.rows) == ("", 3, 2, 3)  # 1 + 2 rows


@pytest.mark.parametrize(("stream", "why"), [
    (stream_of((0, '<http://e/a> <http://e/p> "x" .'), (2, '<http://e/a> <http://e/p> "x" .')),
     "a matching triple is in two live events"),
    (stream_of((0, "<http://e/a> <http://e/p> .")), "a syntax error at line 2"),
    (stream_of((2, '<http://e/a> <http://e/p> "x" .'), (1, '<http://e/b> <http://e/p> "x" .')),
     "a time before"),
    (stream_of((0, '<http://e/a> <http://e/p> "1.0"^^<http://www.w3.org/2001/XMLSchema#decimal> .')),
     "reads back in another form"),
])
def test_what_it_cannot_promise_runs_as_today(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             stream: str, why: str) -> None:
    assert why in both(tmp_path, QUERY, stream, [], monkeypatch).refused


def test_rsep_native_0_turns_it_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = stream_of((0, '<http://e/a> <http://e/p> "x" .'))
    monkeypatch.setenv("RSEP_NATIVE", "0")
    assert both(tmp_path, QUERY, s, [], monkeypatch).refused.startswith("RSEP_NATIVE=0")


def test_options_it_does_not_keep_to_run_as_today(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    s = stream_of((0, '<http://e/a> <http://e/p> "x" .'))
    assert both(tmp_path, QUERY, s, ["--until", "10"], monkeypatch).refused == "--until given"
    assert "--format" in both(tmp_path, QUERY, s, ["--format", "csv"], monkeypatch).refused
    got = both(tmp_path, QUERY, s, ["--format", "tsv"], monkeypatch)
    assert (got.refused, got.rows) == ("", 1)
    odd = QUERY.replace("?o }", f'"05"^^<{XSD}integer> }}')
    assert "not in canonical form" in both(tmp_path, odd, s, [], monkeypatch).refused
    group = QUERY.replace("SELECT *", "SELECT (COUNT(*) AS ?n)")
    assert both(tmp_path, group, s, [], monkeypatch).refused == ""  # (native/src/bgp.rs)
    group = QUERY.replace("SELECT *", "SELECT (SAMPLE(?o) AS ?n)")
    assert both(tmp_path, group, s, [], monkeypatch).refused == ""
    group = QUERY.replace("SELECT *", "SELECT (GROUP_CONCAT(DISTINCT ?o) AS ?n)")
    assert "the aggregate GROUP_CONCAT(DISTINCT" in both(tmp_path, group, s, [], monkeypatch).refused


def test_what_the_locality_check_counts_is_its_own(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # ?s ?p "x": the locality check reads the literal as anything, so <a> <p> <a> in two
    # live events sends rsep to its store (its order), though it is no solution: refused
    q = QUERY.replace("?s <http://e/p> ?o", '?s ?p "x"')
    s = stream_of((2, "<http://e/a> <http://e/p> <http://e/a> ."),
                  (2, "<http://e/a> <http://e/p> <http://e/a> ."),
                  (2, '<http://e/a> <http://e/p> "x" .'), (2, '<http://e/a> <http://e/q> "x" .'))
    assert "two live events" in both(tmp_path, q, s, [], monkeypatch).refused
    got = both(tmp_path, q, stream_of((2, '<http://e/a> <http://e/p> "x" .'),
                                      (2, '<http://e/a> <http://e/q> "x" .')), [], monkeypatch)
    assert (got.refused, got.rows) == ("", 2)


def test_to_standard_output(tmp_path: Path) -> None:
    (tmp_path / "q.rq").write_text(QUERY, encoding="utf-8")
    s = tmp_path / "s.trig"
    s.write_text(stream_of((0, '<http://e/a> <http://e/p> "é\\n" .'),
                           (2, '<http://e/b> <http://e/p> "y" .')), encoding="utf-8")
    root = Path(__file__).resolve().parents[2]
    outs = []
    for extra in ({}, {"RSEP_NATIVE": "0"}):
        env = {**os.environ, "PYTHONPATH": str(root), **extra}
        got = subprocess.run([sys.executable, "-c", "import sys; from rsep.cli.start import main; "
                              "sys.exit(main())", "run", str(tmp_path / "q.rq"),
                              "--stream", f"{STREAM}={s}"], env=env, capture_output=True,
                             check=True)
        outs.append(got.stdout)
    assert outs[0] == outs[1] and outs[0].count(b"\n") == 3


def test_an_output_that_is_no_regular_file_is_written_through(tmp_path: Path) -> None:
    """-o naming a symbolic link or a FIFO (or /dev/null) gets the rows written into it; the
    native path's rename of its results onto the output once made /dev/null a regular
    file."""
    (tmp_path / "q.rq").write_text(QUERY, encoding="utf-8")
    s = tmp_path / "s.trig"
    s.write_text(stream_of((0, '<http://e/a> <http://e/p> "x" .'),
                           (2, '<http://e/b> <http://e/p> "y" .')), encoding="utf-8")
    args = ["run", str(tmp_path / "q.rq"), "--stream", f"{STREAM}={s}", "-q", "-o"]
    real = tmp_path / "real.jsonl"
    real.write_text("", encoding="utf-8")
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    assert main([*args, str(link)]) == 0
    assert native.LAST is not None and native.LAST.refused == ""
    assert link.is_symlink() and real.read_text(encoding="utf-8").count("\n") == 3
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    assert main([*args, str(fifo)]) == 0
    reader.join(10)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and got[0] == real.read_bytes()


def test_a_core_older_than_the_operator_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native_core, "core", lambda: object())
    assert native.available() == "the native core was built before its operator (run `make`)"


def test_a_file_over_the_whole_file_readers_bound_is_read_in_parts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the reader that holds a file whole (rsep.stream.native.read) refuses a file past its
    # bound; the window operators read a file in parts, and have no such bound
    s = stream_of((0, '<http://e/a> <http://e/p> "x" .'), (1, '<http://e/b> <http://e/p> "y" .'))
    (tmp_path / "s.trig").write_text(s, encoding="utf-8")
    monkeypatch.setattr(native_core, "MAX_FILE_BYTES", len(s.encode()) - 1)
    ev, why, _ = native_core.read(str(tmp_path / "s.trig"), [PROV[1:-1]], 1 << 26)
    assert ev is None and "holds a file whole" in why
    group = QUERY.replace("SELECT *", "SELECT (COUNT(*) AS ?n)")
    for q in (QUERY, group):
        got = both(tmp_path, q, s, [], monkeypatch)
        assert (got.refused, got.events, got.rows) == ("", 2, 1)


# runs read in parts of a few bytes, the dictionary swept after each: refused, taken
TINY = [0, 0]


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(query=queries(), stream=streams(),
       report=st.sampled_from([None, "window-close", "window-close,non-empty"]),
       fmt=st.sampled_from(["jsonl", "tsv"]), chunk=st.sampled_from([1, 16, 64, 200]),
       fast=st.booleans())
def test_read_in_tiny_parts_with_constant_sweeps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 query: str, stream: str, report: str | None,
                                                 fmt: str, chunk: int, fast: bool) -> None:
    # every few bytes a chunk, the dictionary swept after each (ids freed and given again
    # all along): the output is today's, byte for byte; a refusal found late (a record to
    # reject, a time that goes back, a literal the store rewrites) leaves nothing written
    # (not ``fast``: rsep's own reader given up where a part ends in a "# }" line inside a
    # graph block, and oxttl reads the file from the start)
    if not fast:
        stream = stream.replace(" { ", " { # }\n", 1)
    with monkeypatch.context() as m:
        m.setattr(native_core, "STREAM_CHUNK", chunk)
        m.setattr(native_core, "SWEEP_TERMS", 0)
        extra = (["--report", report] if report else []) + ["--format", fmt]
        got = both(tmp_path, query, stream, extra, monkeypatch)
    TINY[0 if got.refused else 1] += 1


def test_the_tiny_part_runs_were_mostly_native() -> None:
    refused, taken = TINY
    assert taken >= (refused + taken) // 4, TINY


def test_a_late_refusal_leaves_no_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 3,000 events read and written before the record to reject: today's path runs over
    # the whole file, and the output is its own alone
    events = [(t, f'<http://e/a> <http://e/p> "v{t}" .') for t in range(3000)]
    events.append((3000, "<http://e/a> <http://e/p> ."))
    monkeypatch.setattr(native_core, "STREAM_CHUNK", 4096)
    monkeypatch.setattr(native_core, "SWEEP_TERMS", 64)
    got = both(tmp_path, QUERY, stream_of(*events), [], monkeypatch)
    assert "a syntax error" in got.refused
    # a literal the store rewrites, late: refused as early, the same output as today's
    events[-1] = (3000, f'<http://e/a> <http://e/p> "1.0"^^<{XSD}decimal> .')
    got = both(tmp_path, QUERY, stream_of(*events), [], monkeypatch)
    assert "reads back in another form" in got.refused


def test_the_dictionary_stays_bounded(tmp_path: Path) -> None:
    # each event's object new: 20,000 terms read, a few thousand held at once
    from rsep.stream import native as nc
    (tmp_path / "s.trig").write_text(stream_of(*[(t, f'<http://e/a> <http://e/p> "v{t}" .')
                                                 for t in range(20_000)]), encoding="utf-8")
    src = nc.core().open_stream(str(tmp_path / "s.trig"), [PROV[1:-1]], 1 << 26, 1 << 14, 512)
    pattern = [("var", 0), ("var", 1), ("var", 2)]
    out = tmp_path / "out.jsonl"
    refused, evaluations, rows = nc.core().select_stream(
        src, (4, 2, 0, 0, True), False, "RSTREAM", pattern, [(True, None)] * 3,
        [("s", 0), ("p", 1), ("o", 2)], (10**9, 10**9), "jsonl", str(out))
    # each event in the windows of two closes (0, 2, ..., 19998, the last one's time at
    # most), but for the last three: 19997's and 19998's in one, 19999's in none
    assert (refused, len(src), rows) == ("", 20_000, 2 * 20_000 - 4)
    assert sum(1 for _ in out.open()) == rows
    sweeps, peak, _ = src.stats()
    assert sweeps >= 5 and peak < 5_000, (sweeps, peak)
