"""Deterministic generator of an SRBench-like TriG stream of sensor observations.

Each event is one named graph holding one observation in the shape of
LinkedSensorData (the data behind SRBench): six triples

    obs  rdf:type                 weather:TemperatureObservation (or another kind)
    obs  om-owl:observedProperty  weather:_AirTemperature (or another property)
    obs  om-owl:procedure         ssw:System_<sensor>
    obs  om-owl:result            res
    obs  om-owl:samplingTime      ssw:Instant_<t>
    res  om-owl:floatValue        "<value>"^^xsd:double

and its time is ``<g> prov:generatedAtTime t`` in the default graph, with integer
timestamps 0, 1, 2, ...: one event per time unit. The same seed gives the same
file, byte for byte.

    python benchmarks/gen_stream.py --events 200000 --out /tmp/sensors.trig --seed 42
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

EVENT_BASE = "http://example.org/srbench/event/"
STREAM_IRI = "http://example.org/srbench"
TRIPLES_PER_EVENT = 6

PREFIXES = """\
@prefix prov: <http://www.w3.org/ns/prov#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
@prefix om-owl: <http://knoesis.wright.edu/ssw/ont/sensor-observation.owl#> .
@prefix weather: <http://knoesis.wright.edu/ssw/ont/weather.owl#> .
@prefix ssw: <http://knoesis.wright.edu/ssw/> .
@prefix ev: <http://example.org/srbench/event/> .
"""

# (property local name, observation class, weight, low, high): value ranges as in
# LinkedSensorData (degrees Fahrenheit, percent, miles per hour, miles).
PROPERTIES = (
    ("AirTemperature", "TemperatureObservation", 4, 20.0, 110.0),
    ("RelativeHumidity", "RelativeHumidityObservation", 3, 5.0, 100.0),
    ("WindSpeed", "WindSpeedObservation", 2, 0.0, 60.0),
    ("Visibility", "VisibilityObservation", 1, 0.0, 10.0),
)


def generate(out: str | Path, events: int, *, seed: int = 42, sensors: int = 200,
             start: int = 0) -> dict[str, int]:
    """Write ``events`` events to ``out``; returns counts (events, triples, quads, bytes)."""
    rng = random.Random(seed)
    names = [f"C{i:04d}" for i in range(sensors)]
    weights = [p[2] for p in PROPERTIES]
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    size = 0
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write(PREFIXES)
        size += len(PREFIXES)
        buf: list[str] = []
        for i in range(events):
            t = start + i
            prop, cls, _, lo, hi = rng.choices(PROPERTIES, weights)[0]
            sensor = names[rng.randrange(sensors)]
            value = round(rng.uniform(lo, hi), 1)
            obs = f"ssw:Observation_{prop}_{sensor}_{t}"
            res = f"ssw:MeasureData_{prop}_{sensor}_{t}"
            buf.append(
                f"ev:{t} prov:generatedAtTime {t} .\n"
                f"ev:{t} {{\n"
                f"  {obs} a weather:{cls} ;\n"
                f"    om-owl:observedProperty weather:_{prop} ;\n"
                f"    om-owl:procedure ssw:System_{sensor} ;\n"
                f"    om-owl:result {res} ;\n"
                f"    om-owl:samplingTime ssw:Instant_{t} .\n"
                f'  {res} om-owl:floatValue "{value}"^^xsd:double .\n'
                "}\n"
            )
            if len(buf) >= 10_000:
                text = "".join(buf)
                size += len(text)
                f.write(text)
                buf.clear()
        text = "".join(buf)
        size += len(text)
        f.write(text)
    tmp.replace(path)
    return {"events": events, "triples": events * TRIPLES_PER_EVENT,
            "quads": events * (TRIPLES_PER_EVENT + 1), "bytes": size}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=200_000, help="number of events (default 200000)")
    ap.add_argument("--out", required=True, help="TriG file to write")
    ap.add_argument("--seed", type=int, default=42, help="random seed (default 42)")
    ap.add_argument("--sensors", type=int, default=200, help="number of distinct sensors (default 200)")
    ap.add_argument("--start", type=int, default=0, help="timestamp of the first event (default 0)")
    args = ap.parse_args(argv)
    if args.events < 0 or args.sensors < 1:
        ap.error("--events must be >= 0 and --sensors >= 1")
    t0 = time.perf_counter()
    info = generate(args.out, args.events, seed=args.seed, sensors=args.sensors, start=args.start)
    took = time.perf_counter() - t0
    print(f"wrote {args.out}: {info['events']} events, {info['triples']} triples in event graphs "
          f"({info['quads']} quads with the timestamps), {info['bytes'] / 1e6:.1f} MB "
          f"in {took:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
