"""The native path of a SPASEQ query over several streams (rsep.spaseq.native's run_streams,
native/src/source.rs's Merged, native/src/chain.rs): each GPM matched on its own stream's
events of an instant, as NFAEngine and ChainEngine match ``evs[stream]``, writes what
today's path writes, byte for byte.

002 Appendix A's Query 5 (a conjunction of two GPMs on two streams after a third stream's
GPM) runs natively over test_spaseq_appendix.py's events, written as three stream files.
Hypothesis draws test_spaseq_native.py's chain queries (plain, Kleene+, negated, optional,
conjunctions and disjunctions of GPMs) with their GPMs spread over two or three streams,
and a stream file of that module's kind for each; every run goes through ``rsep run``
natively, with RSEP_NATIVE=0 and with RSEP_PURE=1, now and then with the files read a few
bytes at a time and the dictionary swept after every part.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_spaseq_appendix import QUERY5
from test_spaseq_native import queries, streams

from rsep.cli.main import main
from rsep.spaseq import native
from rsep.stream import native as native_core

pytestmark = pytest.mark.skipif(native.available() is not None,
                                reason=str(native.available()))

TAKEN = [0, 0, 0]  # runs refused, taken writing nothing, taken writing rows
WHY: dict[str, int] = {}
EXAMPLES = int(os.environ.get("RSEP_EXAMPLES", "60"))
PROV = "<http://www.w3.org/ns/prov#generatedAtTime>"
XSD = "http://www.w3.org/2001/XMLSchema#"
ENVS = (("today", {"RSEP_NATIVE": "0"}), ("pure", {"RSEP_PURE": "1"}))


def run(tmp: Path, tag: str, query: str, files: list[tuple[str, str]], extra: list[str],
        env: dict[str, str], monkeypatch: pytest.MonkeyPatch
        ) -> tuple[int, bytes, native.Outcome | None]:
    """One ``rsep run`` of ``query`` over ``files`` ((stream IRI, the file's text))."""
    (tmp / "q.rq").write_text(query, encoding="utf-8")
    (tmp / f"{tag}.out").unlink(missing_ok=True)
    args = ["run", str(tmp / "q.rq"), "-o", str(tmp / f"{tag}.out"), "-q", *extra]
    for i, (iri, text) in enumerate(files):
        (tmp / f"s{i}.trig").write_text(text, encoding="utf-8")
        args += ["--stream", f"{iri}={tmp / f's{i}.trig'}"]
    with monkeypatch.context() as m:
        for k, v in env.items():
            m.setenv(k, v)
        native.LAST = None
        rc = main(args)
    out = tmp / f"{tag}.out"
    return rc, out.read_bytes() if out.exists() else b"", native.LAST


def all_three(tmp: Path, query: str, files: list[tuple[str, str]], extra: list[str],
              monkeypatch: pytest.MonkeyPatch, chunk: int | None = None
              ) -> tuple[native.Outcome, bytes]:
    """Natively (its files read ``chunk`` bytes at a time, swept after each, if given), with
    RSEP_NATIVE=0 and with RSEP_PURE=1: equal exit statuses and outputs."""
    with monkeypatch.context() as m:
        if chunk is not None:
            m.setattr(native_core, "STREAM_CHUNK", chunk)
            m.setattr(native_core, "SWEEP_TERMS", 0)
        rc, out, got = run(tmp, "native", query, files, extra, {}, m)
    for tag, env in ENVS:
        orc, oout, _ = run(tmp, tag, query, files, extra, env, monkeypatch)
        assert (rc, out) == (orc, oout), (tag, got, out.decode(), oout.decode())
    assert got is not None  # (rsep run of a SPASEQ query always asks)
    return got, out


def q5_files() -> list[tuple[str, str]]:
    """test_spaseq_appendix.py's events of Query 5, a file for each of its streams."""
    base = "http://www.insight-centre.org/dataset/SampleEventService#AarhusTrafficData"
    ssn, sao = "http://purl.oclc.org/NET/ssnx/ssn#", "http://purl.oclc.org/NET/sao/ssn#"
    events = [(1, 5, 1), (2, 6, 2), (3, 7, 2), (3, 8, 3), (4, 10, 1), (5, 12, 2), (5, 11, 3),
              (6, 12, 2), (6, 13, 3)]  # (time, value, stream)
    files = []
    for s, name in ((1, "182955"), (2, "195578"), (3, "195446")):
        text = ""
        for i, (t, v, of) in enumerate(events):
            if of == s:
                g = f"<http://g/{name}/{i}>"
                text += (f"{g} {PROV} {t} .\n{g} {{ <http://example/seg1> "
                         f"<{ssn}observedProperty> <http://example/speed> ; "
                         f"<{sao}hasValue> {v} . }}\n")
        files.append((base + name, text))
    return files


def test_query5_runs_natively_and_prints_what_todays_path_prints(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = q5_files()
    speed, xi = "<http://example/speed>", f"^^<{XSD}integer>"

    def row(t: int, start: int, v1: int, v2: int, v3: int) -> str:
        vs = ", ".join(f'"v{k}": "\\"{v}\\"{xi}"' for k, v in ((1, v1), (2, v2), (3, v3)))
        return (f'{{"time": {t}, "from": {start}, "to": {t}, "start": {start}, '
                f'"bindings": {{"p1": "{speed}", {vs}}}}}')
    for order in (files, files[::-1]):
        for chunk in (None, 1, 40):
            got, out = all_three(tmp_path, QUERY5, order, ["--time-unit", "1m"], monkeypatch,
                                 chunk)
            assert (got.refused, got.events, got.evaluations, got.rows) == ("", 9, 6, 2)
            # B alone at 2: the conjunction waits; B & C at 3; at 5 C's 11 < B's 12; at 6
            assert out.decode().splitlines() == [row(3, 1, 5, 7, 8), row(6, 4, 10, 12, 13)]


def test_what_the_streams_do_not_give_runs_as_today(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    files = q5_files()
    # a file of no stream of the query besides
    extra = [*files, ("http://e/other", files[0][1])]
    got, _ = all_three(tmp_path, QUERY5, extra, ["--time-unit", "1m"], monkeypatch)
    assert got.refused == "not one stream file for each stream the query reads, and no other"
    # a time going back in one file: that file's reader refuses, today's path runs
    back = files[1][1].replace(f"{PROV} 5 .", f"{PROV} 1 .")
    got, _ = all_three(tmp_path, QUERY5, [files[0], (files[1][0], back), files[2]],
                       ["--time-unit", "1m"], monkeypatch)
    assert "s1.trig" in got.refused and "a time before" in got.refused, got.refused


@st.composite
def spread(draw) -> tuple[str, list[tuple[str, str]]]:
    """A chain query whose GPMs read two or three streams, and a file for each."""
    query = draw(st.one_of(queries(), queries(bops=True), queries(forced=True)))
    k = draw(st.integers(2, 3))
    names = re.findall(r"DEFINE GPM (\w+) ON S1", query)
    on = {name: draw(st.integers(1, k)) for name in names}
    if len(set(on.values())) < 2:
        on[names[0]] = 1 if on[names[0]] != 1 else 2
    used = sorted(set(on.values()))
    for name, s in on.items():
        query = query.replace(f"DEFINE GPM {name} ON S1", f"DEFINE GPM {name} ON S{s}")
    head = re.search(r"FROM STREAM S1 <[^>]*>\n", query)
    assert head is not None
    iri = {s: f"http://e/s{s}" for s in used}
    query = query.replace(head.group(0), "".join(f"FROM STREAM S{s} <{iri[s]}>\n" for s in used))
    return query, [(iri[s], draw(streams())) for s in used]


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(drawn=spread(), fmt=st.sampled_from(["jsonl", "tsv"]), swap=st.booleans(),
       chunk=st.sampled_from([None, None, 1, 16, 300]))
def test_several_streams_native_equals_todays_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        drawn: tuple[str, list[tuple[str, str]]], fmt: str, swap: bool,
        chunk: int | None) -> None:
    query, files = drawn
    if swap:  # (the files' order is not the query's)
        files = files[::-1]
    got, _ = all_three(tmp_path, query, files, ["--format", fmt], monkeypatch, chunk)
    TAKEN[0 if got.refused else 1 if not got.rows else 2] += 1
    if got.refused:
        WHY[got.refused[:60]] = WHY.get(got.refused[:60], 0) + 1


def test_the_random_runs_were_mostly_native() -> None:
    # (after the property test, in file order: its runs counted)
    refused, empty, rows = TAKEN
    total = refused + empty + rows
    print(TAKEN, sorted(WHY.items(), key=lambda kv: -kv[1]))
    assert empty + rows >= total // 2 and rows >= total // 8, (TAKEN, WHY)
