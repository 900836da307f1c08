"""The push API's watermark policies (rsep.runtime.watermark; issue 53, point 1): an answer
due at t comes from ``tick()`` once the policy says, without a later event or ``close``."""

from __future__ import annotations

import pytest

from rsep import Engine, Event
from rsep.runtime.engine import EngineError
from rsep.runtime.watermark import Watermarked, WatermarkPolicy

QUERY = """PREFIX : <http://example.org/>
SELECT ?s ?v WHERE { STREAM :sensors [RANGE 10] { ?s :temp ?v FILTER (?v > 30) } }"""
S = "http://example.org/sensors"


def reading(t: int, v: int) -> Event:
    return Event.at(t, f"<http://example.org/s1> <http://example.org/temp> {v} .", stream=S)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def values(engine: Engine) -> list[tuple[int, str]]:
    return [(o.time, o.bindings["v"].split('"')[1]) for o in engine.drain()]


def test_idle_moves_to_the_last_time_once_the_spell_is_over_then_refuses_late_events():
    engine, clock = Engine(), Clock()
    engine.register(QUERY)
    w = Watermarked(engine, WatermarkPolicy.parse("idle:2"), clock=clock)
    w.push(reading(1, 25))
    w.push(reading(3, 34))
    assert values(engine) == []  # the answer at 3 waits: another event at 3 may come
    clock.now += 1.9
    assert (w.tick(), values(engine)) == (None, [])
    clock.now += 0.2
    assert (w.tick(), values(engine)) == (3, [(3, "34")])
    assert w.tick() is None  # once per quiet spell
    with pytest.raises(EngineError, match="timestamp 3 of .* is not after the time 3 the "
                                          "watermark moved the engine to"):
        w.push(reading(3, 40))
    w.push(reading(5, 35))
    clock.now += 2
    assert (w.tick(), values(engine)) == (5, [(5, "35")])


def test_processing_time_follows_the_wall_clock_from_the_first_event():
    engine, clock = Engine(time_unit_ms=1000), Clock()  # a unit is a second
    engine.register(QUERY)
    w = Watermarked(engine, WatermarkPolicy.parse("processing"), clock=clock)
    w.push(reading(10, 31))
    clock.now += 0.5
    assert (w.tick(), values(engine)) == (None, [])  # the wall clock is within instant 10
    clock.now += 0.6
    assert (w.tick(), values(engine)) == (10, [(10, "31")])  # past it
    assert w.tick() is None
    clock.now += 3
    assert w.tick() == 13
    with pytest.raises(EngineError):
        w.push(reading(13, 50))
    w.push(reading(14, 50))


def test_events_policy_never_moves_and_a_bad_policy_is_refused():
    engine, clock = Engine(), Clock()
    engine.register(QUERY)
    w = Watermarked(engine, WatermarkPolicy(), clock=clock)
    w.push(reading(3, 34))
    clock.now += 1000
    assert (w.tick(), values(engine)) == (None, [])
    for bad in ("idle:0", "idle:x", "wall"):
        with pytest.raises(ValueError, match="use events, idle:SECONDS"):
            WatermarkPolicy.parse(bad)
