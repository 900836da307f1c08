"""Stage times (``rsep run --stage-times``, ``rsep bench``): exclusive, complete, harmless."""

from __future__ import annotations

import json

import pytest

import rsep.runtime.stages as stages
from rsep.cli.main import main
from rsep.testing.snippets import ROOT

COUPON = ROOT / "examples" / "coupon"
SPASEQ = ROOT / "docs" / "examples" / "spaseq.rq"
SRBENCH = ROOT.parent / "shared" / "data" / "srbench-weather" / "weather-stream.trig"


def test_nested_stages_are_counted_exclusively(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(stages.time, "perf_counter", lambda: now[0])
    clock = stages.StageClock()

    def inner() -> str:
        now[0] += 2.0
        return "x"

    timed_inner = clock.timed("match", inner)

    def outer() -> str:
        now[0] += 1.0
        got = timed_inner() + timed_inner()
        now[0] += 3.0
        return got

    assert clock.timed("state", outer)() == "xx"
    assert list(clock.iterate("parse", iter([1, 2]))) == [1, 2]
    assert clock.seconds == {"parse": 0.0, "match": 4.0, "state": 4.0, "output": 0.0}
    assert clock.report(10.0) == {"parse": 0.0, "match": 4.0, "state": 4.0, "output": 0.0,
                                  "engine": 2.0}


def _table(err: str) -> dict[str, float]:
    """Microseconds per event, per stage."""
    lines = err.strip().splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("stage "))
    rows = [x.split() for x in lines[start + 1:]]
    return {r[0]: float(r[-1]) for r in rows}


@pytest.mark.parametrize("query", ["q1-csparql.rq", "q2-cqels.rq"])
def test_windowed_query_stage_times_and_same_results(query, capsys):
    args = ["run", str(COUPON / query), "--stream", f"http://coupons={COUPON / 'coupons.trig'}",
            "--stream", f"http://locations={COUPON / 'locations.trig'}",
            "--graph", f"http://products={COUPON / 'products.ttl'}", "--time-unit", "1m"]
    assert main(args) == 0
    plain = capsys.readouterr().out
    assert main([*args, "--stage-times"]) == 0
    got = capsys.readouterr()
    assert got.out == plain
    t = _table(got.err)
    assert list(t) == ["parse", "match", "state", "output", "engine", "total"]
    assert t["parse"] > 0 and t["match"] > 0 and t["state"] > 0
    assert abs(sum(v for k, v in t.items() if k != "total") - t["total"]) < 0.5


@pytest.mark.skipif(not SRBENCH.is_file(), reason="shared data not present")
def test_spaseq_stage_times_over_srbench(capsys):
    args = ["run", str(SPASEQ), "--stream", f"http://example.org/srbench={SRBENCH}"]
    assert main([*args, "--stage-times"]) == 0
    got = capsys.readouterr()
    assert len([json.loads(x) for x in got.out.splitlines()]) == 4
    t = _table(got.err)
    assert t["match"] > 0 and t["state"] > 0 and t["parse"] > 0


def test_stage_times_refused_on_spark(capsys):
    args = ["run", str(SPASEQ), "--stream", f"http://example.org/srbench={SRBENCH}",
            "--engine", "spark", "--stage-times"]
    assert main(args) == 2  # usage: an option the engine does not take
    assert "--stage-times times the in-process engine" in capsys.readouterr().err
