"""The rsep command as a user runs it."""

from __future__ import annotations

import json

import pytest

from rsep.cli.main import main
from rsep.testing.snippets import ROOT

COUPON = ROOT / "examples" / "coupon"
SHARED = ROOT.parent / "shared" / "data"
RAYBAN = {"shop": "<http://example.org/b>", "product": "<http://example.org/rayban>",
          "percent": '"25"^^<http://www.w3.org/2001/XMLSchema#integer>'}


def coupon_args(query: str, *extra: str) -> list[str]:
    return ["run", str(COUPON / query), "--stream", f"http://coupons={COUPON / 'coupons.trig'}",
            "--stream", f"http://locations={COUPON / 'locations.trig'}",
            "--graph", f"http://products={COUPON / 'products.ttl'}", "--time-unit", "1m", *extra]


def test_jsonl_contract(capsys):
    assert main(coupon_args("q2-cqels.rq")) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(x) for x in lines] == [{"time": 18, "bindings": RAYBAN}]


def test_csparql_until_and_csv(capsys):
    assert main(coupon_args("q1-csparql.rq", "--until", "30", "--format", "csv")) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "time,op,shop,product,percent"
    assert out[1:] == [f"{t},insert,http://example.org/b,http://example.org/rayban,25" for t in range(19, 24)]


def test_two_queries_tsv_and_r2s_override(capsys):
    args = coupon_args("q2-cqels.rq", "--format", "tsv", "--r2s", "rstream", "--until", "22")
    args.insert(2, str(COUPON / "q1-csparql.rq"))
    assert main(args) == 0
    out = capsys.readouterr().out.splitlines()
    header = "query\ttime\top\t?shop\t?product\t?percent"
    row = "\tinsert\t<http://example.org/b>\t<http://example.org/rayban>\t" \
          '"25"^^<http://www.w3.org/2001/XMLSchema#integer>'
    # the CQELS query (unnamed, so named after its file) answers at 18 on arrival;
    # C-SPARQL's (REGISTER QUERY notify) at window closes
    assert out == [header, "q2-cqels\t18" + row, header] + [f"notify\t{t}" + row for t in (19, 20, 21, 22)]


def test_syntax_error_exit_1_one_line(tmp_path, capsys):
    q = tmp_path / "bad.rq"
    q.write_text("SELECT * WHERE {\n  STREAM <http://s> [RANGE 5] { ?s ?p }\n}")
    assert main(["run", str(q), "--stream", "http://s=x.trig"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"rsep: {q}:2:39: syntax error: unexpected '}}'")


def test_rejected_records_exit_3_and_dead_letter(tmp_path, capsys):
    s = tmp_path / "s.trig"
    s.write_text("@prefix : <http://example.org/> .\n@prefix prov: <http://www.w3.org/ns/prov#> .\n"
                 ":g1 prov:generatedAtTime 1 .\n:g1 { :a :p :b . }\n"
                 ":g2 prov:generatedAtTime 2 .\n:g2 { :a :p  }\n"
                 ":g3 { :a :p :c . }\n")
    q = tmp_path / "q.rq"
    q.write_text("SELECT ?o WHERE { STREAM <http://s> [RANGE 5] { ?s ?p ?o } }")
    dl = tmp_path / "dead.jsonl"
    assert main(["run", str(q), "--stream", f"http://s={s}", "--dead-letter", str(dl)]) == 3
    cap = capsys.readouterr()
    assert [json.loads(x)["bindings"]["o"] for x in cap.out.splitlines()] == ["<http://example.org/b>"]
    dead = [json.loads(x) for x in dl.read_text().splitlines()]
    assert [(d["line"], d["reason"][:40]) for d in dead] == [
        (6, dead[0]["reason"][:40]), (5, "timestamp given for <http://example.org/"),
        (7, "event graph <http://example.org/g3> has ")]
    assert f"{s}:6:" in cap.err and "3 input record(s) rejected" in cap.err


def test_datetime_stream_and_xsd_durations(tmp_path, capsys):
    s = tmp_path / "s.trig"
    s.write_text("@prefix : <http://example.org/> .\n@prefix prov: <http://www.w3.org/ns/prov#> .\n"
                 "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n"
                 + "".join(f':g{i} prov:generatedAtTime "2024-01-01T00:00:0{i}Z"^^xsd:dateTime .\n'
                           f":g{i} {{ :s :v {i} . }}\n" for i in range(1, 6)))
    q = tmp_path / "q.rq"
    q.write_text("PREFIX : <http://example.org/>\nSELECT (SUM(?v) AS ?sum)\n"
                 "FROM NAMED WINDOW :w ON :S [RANGE PT2S STEP PT2S]\nWHERE { WINDOW :w { ?s :v ?v } }")
    assert main(["run", str(q), "--stream", f"http://example.org/S={s}"]) == 0
    out = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [(o["time"], o["bindings"]["sum"].split('"')[1]) for o in out] == [
        ("2024-01-01T00:00:02Z", "3"), ("2024-01-01T00:00:04Z", "7")]


def test_missing_stream_is_an_error(capsys):
    assert main(["run", str(COUPON / "q2-cqels.rq"), "--graph", f"http://products={COUPON / 'products.ttl'}",
                 "--stream", f"http://coupons={COUPON / 'coupons.trig'}"]) == 1
    assert "no --stream given: <http://locations>" in capsys.readouterr().err


@pytest.mark.skipif(not (SHARED / "srbench-weather").is_dir(), reason="shared data not present")
def test_demo_over_srbench(capsys):
    assert main(["run", str(ROOT / "examples" / "srbench-hot.rq"), "--stream",
                 f"http://example.org/srbench={SHARED / 'srbench-weather' / 'weather-stream.trig'}"]) == 0
    out = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert out[0] == {"time": 0, "bindings": {
        "sensor": "<http://knoesis.wright.edu/ssw/System_C0694>",
        "max": '"79"^^<http://www.w3.org/2001/XMLSchema#double>',
        "readings": '"1"^^<http://www.w3.org/2001/XMLSchema#integer>'}}
    assert sorted({o["time"] for o in out}) == list(range(0, 33001, 5000))
