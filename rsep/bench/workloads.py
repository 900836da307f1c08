"""Deterministic workload generators: TriG streams for rsep, the same events as CSV tuples.

Every generator streams its output (a buffer of at most a few thousand events), so 10^7
events need no more memory than 10^3. The same (workload, size, seed, options) gives the
same files byte for byte. Each event is one named graph ``<g> { ... }`` with its time as
``<g> prov:generatedAtTime t`` in the default graph (integer time units), the shape
``rsep.stream.files.StreamFile`` reads; its CSV row carries the time and the event's
attribute values (the relational flattening CORE and Flink read).
"""

from __future__ import annotations

import csv
import hashlib
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO

PROV = "http://www.w3.org/ns/prov#generatedAtTime"
PRED = "http://example/"
XSD = "http://www.w3.org/2001/XMLSchema#"

# The stream IRIs are the ones 002's Appendix A queries read.
STOCKS = "http://stockmarket.org/stocks/google"
CARDS = "http://creditCard.org/boats"
CARD_DB = "http://creditcard.org/db"
GRID = "http://smartgrid.org/"
GRID_POWER, GRID_WEATHER, GRID_STORAGE = GRID + "mainSource", GRID + "weather", GRID + "storageSource"
GRID_DB = GRID + "db"
TRAFFIC = "http://www.insight-centre.org/dataset/SampleEventService#AarhusTrafficData"
TRAFFIC_IDS = ("182955", "195578", "195446")
SSN = "http://purl.oclc.org/NET/ssnx/ssn#"
SAO = "http://purl.oclc.org/NET/sao/ssn#"
BOATS = "http://harbour.org/boats"
HARBOUR = "http://harbour.org/"
HARBOUR_DB = HARBOUR + "db"
SRBENCH = "http://example.org/srbench"
COUPONS, LOCATIONS, PRODUCTS = "http://coupons", "http://locations", "http://products"
EXORG = "http://example.org/"


@dataclass
class StreamOut:
    """One generated stream: its IRI, TriG file, CSV file and CSV columns."""

    iri: str
    trig: str
    csv: str
    columns: list[str]
    events: int = 0
    triples: int = 0


@dataclass
class Generated:
    """What a generator wrote; saved as ``manifest.json`` beside the files."""

    workload: str
    size: int
    seed: int
    options: dict
    streams: dict[str, StreamOut] = field(default_factory=dict)
    graphs: dict[str, str] = field(default_factory=dict)  # background graph IRI -> N-Triples
    kb_triples: int = 0
    code: str = ""  # digest of this module: data written by older generators is not reused

    @property
    def events(self) -> int:
        return sum(s.events for s in self.streams.values())

    @property
    def triples(self) -> int:
        return sum(s.triples for s in self.streams.values())

    def save(self, directory: Path) -> None:
        self.code = _code_digest()
        d = asdict(self)
        (directory / "manifest.json").write_text(json.dumps(d, indent=1), encoding="utf-8")

    @classmethod
    def load(cls, directory: Path) -> Generated:
        d = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
        streams = {k: StreamOut(**v) for k, v in d.pop("streams").items()}
        return cls(streams=streams, **d)


def _lit(v: object) -> str:
    if isinstance(v, bool):
        return f'"{str(v).lower()}"^^<{XSD}boolean>'
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return f'"{v}"^^<{XSD}double>'
    return json.dumps(str(v))


def _nt_lit(v: object) -> str:
    # N-Triples has no bare numbers (Turtle's shorthand), so integers are typed literals
    if isinstance(v, int) and not isinstance(v, bool):
        return f'"{v}"^^<{XSD}integer>'
    return _lit(v)


class StreamWriter:
    """Writes one stream's TriG and CSV side by side, buffered."""

    def __init__(self, out: StreamOut, graph_base: str, prefixes: str = "") -> None:
        self.out = out
        self.base = graph_base
        Path(out.trig).parent.mkdir(parents=True, exist_ok=True)
        self._trig: IO[str] = open(out.trig + ".part", "w", encoding="utf-8", newline="\n")
        self._csvf: IO[str] = open(out.csv + ".part", "w", encoding="utf-8", newline="")
        self._csv = csv.writer(self._csvf, lineterminator="\n")
        self._csv.writerow(out.columns)
        self._buf: list[str] = []
        if prefixes:
            self._trig.write(prefixes)

    def event(self, t: int, triples: list[tuple[str, str, object]], row: list[object]) -> None:
        """``triples``: (subject IRI, predicate IRI, object: IRI as '<..>', or a value)."""
        g = f"<{self.base}{t}>"
        body = " ".join(f"<{s}> <{p}> {o if isinstance(o, str) and o.startswith('<') else _lit(o)} ."
                        for s, p, o in triples)
        self._buf.append(f"{g} <{PROV}> {t} .\n{g} {{ {body} }}\n")
        self._csv.writerow(row)
        self.out.events += 1
        self.out.triples += len(triples)
        if len(self._buf) >= 5000:
            self.flush()

    def text(self, t: int, text: str, ntriples: int, row: list[object]) -> None:
        """An event given as ready TriG text (the SRBench shape shared with gen_stream.py)."""
        self._buf.append(text)
        self._csv.writerow(row)
        self.out.events += 1
        self.out.triples += ntriples
        if len(self._buf) >= 5000:
            self.flush()

    def flush(self) -> None:
        self._trig.write("".join(self._buf))
        self._buf.clear()

    def close(self) -> None:
        self.flush()
        self._trig.close()
        self._csvf.close()
        Path(self.out.trig + ".part").replace(self.out.trig)
        Path(self.out.csv + ".part").replace(self.out.csv)


def _writer(g: Generated, directory: Path, key: str, iri: str, columns: list[str],
            prefixes: str = "") -> StreamWriter:
    so = StreamOut(iri, str(directory / f"{key}.trig"), str(directory / f"{key}.csv"), columns)
    g.streams[key] = so
    return StreamWriter(so, f"{EXORG}bench/{g.workload}/{key}/", prefixes)


def _write_kb(g: Generated, directory: Path, iri: str, name: str,
              triples: Iterator[tuple[str, str, object]]) -> None:
    path = directory / f"{name}.nt"
    n = 0
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        buf: list[str] = []
        for s, p, o in triples:
            buf.append(f"<{s}> <{p}> {o if isinstance(o, str) and o.startswith('<') else _nt_lit(o)} .\n")
            n += 1
            if len(buf) >= 10_000:
                f.write("".join(buf))
                buf.clear()
        f.write("".join(buf))
    g.graphs[iri] = str(path)
    g.kb_triples += n


def _padding(rng: random.Random, base: str, n: int) -> Iterator[tuple[str, str, object]]:
    """Unrelated background facts that make the KB the asked size (002 Sec. 8: 10^4..10^6)."""
    for i in range(n):
        yield (f"{base}entity/{i // 4}", f"{base}attr{i % 4}", rng.randrange(1_000_000))


# ------------------------------------------------------------------ stock market (SMD-like)

def stock(directory: Path, size: int, seed: int, companies: int = 10, sectors: int = 3,
          kb: int = 0, max_step: int = 3) -> Generated:
    """UC 4: transactions of ``companies`` companies; 5 triples an event (price, volume,
    sector, transaction id, type), integer prices on a per-company random walk, so the
    V-shape and head-and-shoulders of Queries 3/4 occur. Query 3's seven strictly
    contiguous moves need steps of more than 3 (``max_step``): with steps of 1-3 its
    FILTERs cannot all hold."""
    options = {"companies": companies, "sectors": sectors, "kb": kb}
    if max_step != 3:
        options["max_step"] = max_step
    g = Generated("stock", size, seed, options)
    steps = tuple(range(-max_step, 0)) + tuple(range(1, max_step + 1))
    rng = random.Random(seed)
    w = _writer(g, directory, "stocks", STOCKS,
                ["t", "company", "sector", "price", "volume", "txid", "type"])
    price = [100 + rng.randrange(50) for _ in range(companies)]
    for t in range(size):
        c = rng.randrange(companies)
        price[c] = max(1, price[c] + rng.choice(steps))
        vol = rng.randrange(1, 1000)
        kind = "buy" if rng.random() < 0.5 else "sell"
        comp, sect = f"{PRED}c{c}", f"{PRED}s{c % sectors}"
        w.event(t, [(comp, PRED + "price", price[c]), (comp, PRED + "volume", vol),
                    (comp, PRED + "sector", f"<{sect}>"), (comp, PRED + "txid", t),
                    (comp, PRED + "type", kind)],
                [t, f"c{c}", f"s{c % sectors}", price[c], vol, t, kind])
    w.close()
    if kb:
        base = PRED + "kb/"
        _write_kb(g, directory, PRED + "companies", "companies", (
            (f"{PRED}c{i}", f"{PRED}name", f"Company {i}") for i in range(companies)))
        _write_kb(g, directory, PRED + "companies-extra", "padding",
                  _padding(rng, base, max(0, kb - companies)))
    g.save(directory)
    return g


# ------------------------------------------------------------------ credit cards (CCD-like)

def credit(directory: Path, size: int, seed: int, cards: int = 1000, kb: int = 10_000) -> Generated:
    """UC 3: card transactions (id, amount, location) and a card-holder KB; about one in
    200 transactions is a big one right after a small one on the same card."""
    g = Generated("credit", size, seed, {"cards": cards, "kb": kb})
    rng = random.Random(seed)
    w = _writer(g, directory, "cards", CARDS, ["t", "card", "id", "amount", "loc"])
    last = -1
    for t in range(size):
        c = last if last >= 0 and rng.random() < 0.3 else rng.randrange(cards)
        amount = rng.randrange(1, 100) if rng.random() < 0.995 else rng.randrange(1000, 5000)
        card = f"{PRED}card{c}"
        loc = f"L{rng.randrange(50)}"
        w.event(t, [(card, PRED + "id", f"<{PRED}id{c}>"), (card, PRED + "amount", amount),
                    (card, PRED + "loc", loc)], [t, f"card{c}", f"id{c}", amount, loc])
        last = c
    w.close()
    holders = ((f"{PRED}id{i}", p, o) for i in range(cards)
               for p, o in ((CARD_DB + "#cardHolder", f"Holder {i}"),
                            (CARD_DB + "#holderAddress", f"{i} Main Street")))
    _write_kb(g, directory, CARD_DB, "holders", holders)
    _write_kb(g, directory, CARD_DB + "-extra", "padding",
              _padding(rng, PRED + "kb/", max(0, kb - 2 * cards)))
    g.save(directory)
    return g


# ------------------------------------------------------------------ smart grid (UC 1)

def smartgrid(directory: Path, size: int, seed: int, houses: int = 100, locations: int = 20,
              kb: int = 10_000) -> Generated:
    """UC 1 (Figure 2): power, weather and storage events on three streams (``size`` in
    all, one stream per time unit in turn), and a KB of houses grown to ``kb`` triples."""
    g = Generated("smartgrid", size, seed, {"houses": houses, "locations": locations, "kb": kb})
    rng = random.Random(seed)
    cols = ["t", "subject", "loc", "source", "fare", "light", "windsp"]
    ws = {k: _writer(g, directory, k, iri, cols) for k, iri in
          (("power", GRID_POWER), ("weather", GRID_WEATHER), ("storage", GRID_STORAGE))}
    for t in range(size):
        which = ("power", "weather", "storage")[t % 3]
        loc = f"{GRID}L{rng.randrange(locations)}"
        if which == "weather":
            s, v = f"{GRID}W{t}", f"{GRID}Vl"
            light, sp = rng.randrange(100), rng.randrange(10)
            ws[which].event(t, [(s, GRID + "loc", f"<{loc}>"), (s, GRID + "value", f"<{v}>"),
                                (v, GRID + "light", light), (v, GRID + "windsp", sp)],
                            [t, s, loc, "", "", light, sp])
            continue
        h = rng.randrange(houses)
        s = f"{GRID}H{h}" if which == "power" else f"{GRID}S{h}"
        source = "fuel" if which == "power" and rng.random() < 0.5 else "solar"
        fare = rng.randrange(1, 40)
        pw = f"{GRID}Pw"
        ws[which].event(t, [(s, GRID + "loc", f"<{loc}>"), (s, GRID + "pow", f"<{pw}>"),
                            (pw, GRID + "source", source), (pw, GRID + "fare", fare)],
                        [t, s, loc, source, fare, "", ""])
    for w in ws.values():
        w.close()
    homes = ((f"{GRID}H{i}", p, o) for i in range(houses)
             for p, o in ((GRID + "locatedIn", f"City {i % 7}"),
                          (GRID + "nearBy", f"<{GRID}H{(i + 1) % houses}>"),
                          (GRID + "ownerName", f"Owner {i}")))
    _write_kb(g, directory, GRID_DB, "homes", homes)
    _write_kb(g, directory, GRID + "db-extra", "padding",
              _padding(rng, GRID + "kb/", max(0, kb - 3 * houses)))
    g.save(directory)
    return g


# ------------------------------------------------------------------ traffic (CityBench-like)

def traffic(directory: Path, size: int, seed: int, segments: int = 10) -> Generated:
    """UC 5: three Aarhus road-segment streams (``size`` events in all) reporting in
    rounds, one observation per stream and time unit (Query 5's ``B & C`` needs events of
    two streams at one time), each about one of ``segments`` observation points (the
    ``?traffic`` its GPMs join on) with a property (avgSpeed, vehicleCount) and an
    integer value."""
    g = Generated("traffic", size, seed, {"segments": segments})
    rng = random.Random(seed)
    cols = ["t", "obs", "property", "value"]
    ws = [_writer(g, directory, f"traffic{i + 1}", TRAFFIC + sid, cols)
          for i, sid in enumerate(TRAFFIC_IDS)]
    props = (f"{SAO}avgSpeed", f"{SAO}vehicleCount")
    for i in range(size):
        t, w = i // 3, ws[i % 3]
        p = props[rng.randrange(2)] if rng.random() < 0.5 else props[0]
        v = rng.randrange(0, 12)
        obs = f"{SAO}segment{rng.randrange(segments)}"
        w.event(t, [(obs, SSN + "observedProperty", f"<{p}>"), (obs, SAO + "hasValue", v)],
                [t, obs, p, v])
    for w in ws:
        w.close()
    g.save(directory)
    return g


# ------------------------------------------------------------------ CityBench (RSP joins)

CT = "http://www.insight-centre.org/citytraffic#"
CITY = "http://example.org/citybench/"
CITY_SPEED = CITY + "AarhusTrafficData/speed"
CITY_COUNT = CITY + "AarhusTrafficData/count"
CITY_KB = CITY + "sensors"


def citybench(directory: Path, size: int, seed: int, sensors: int = 20, roads: int = 5,
              kb: int = 10_000) -> Generated:
    """CityBench-style (Aarhus traffic) RSP workload: two streams of SSN observations,
    average speed and vehicle count (``size`` events in all, one per stream and time
    unit), each made by one of ``sensors`` road-segment sensors; a KB placing each sensor
    on one of ``roads`` roads (what the streams are joined on), grown to ``kb`` triples."""
    g = Generated("citybench", size, seed, {"sensors": sensors, "roads": roads, "kb": kb})
    rng = random.Random(seed)
    cols = ["t", "obs", "sensor", "value"]
    ws = [(_writer(g, directory, "speed", CITY_SPEED, cols), CT + "AverageSpeed", 120),
          (_writer(g, directory, "count", CITY_COUNT, cols), CT + "VehicleCount", 40)]
    for i in range(size):
        t = i // 2
        w, prop, top = ws[i % 2]
        obs, sensor, v = f"{CITY}obs{i}", f"{CITY}sensor{rng.randrange(sensors)}", rng.randrange(top)
        w.event(t, [(obs, SSN + "observedProperty", f"<{prop}>"),
                    (obs, SSN + "observedBy", f"<{sensor}>"), (obs, SAO + "hasValue", v)],
                [t, obs, sensor, v])
    for w, _, _ in ws:
        w.close()

    def facts() -> Iterator[tuple[str, str, object]]:
        for k in range(sensors):
            yield (f"{CITY}sensor{k}", CT + "onRoad", f"<{CITY}road{k % roads}>")
        yield from _padding(rng, CITY, max(0, kb - sensors))

    _write_kb(g, directory, CITY_KB, "sensors", facts())
    g.save(directory)
    return g


# ------------------------------------------------------------------ vessels (UC 2)

def vessels(directory: Path, size: int, seed: int, boats: int = 40, kb: int = 10_000) -> Generated:
    """UC 2: boats leaving the harbour, speeding up at sea and stopping in a fishing area
    (Query 6) on one heading, interleaved; a quarter of the trips report as one uninterrupted burst (Query 6
    is strictly contiguous, so only those can match); a KB with boat names and operating
    companies."""
    g = Generated("vessels", size, seed, {"boats": boats, "kb": kb})
    rng = random.Random(seed)
    w = _writer(g, directory, "boats", BOATS, ["t", "vessel", "speed", "location", "direction"])
    phase = [0] * boats
    speed = [0] * boats
    heading = [0] * boats
    burst = None
    for t in range(size):
        b = burst if burst is not None else rng.randrange(boats)
        ph = phase[b]
        if burst is None and ph == 0 and rng.random() < 0.25:
            burst = b
        if ph == 0:
            speed[b], loc = rng.randrange(1, 4), "harbour"
        elif ph < 4 and rng.random() < 0.8:
            speed[b], loc = speed[b] + rng.randrange(1, 4), "sea"
        else:
            speed[b], loc = (0, "fishingarea") if rng.random() < 0.7 else (speed[b] - 1, "sea")
            ph = -1
            burst = None
        phase[b] = ph + 1
        if ph == 0:
            # a trip keeps the heading it left the harbour with (Query 6's ?dir1)
            heading[b] = rng.randrange(4)
        d = f"{HARBOUR}{'NESW'[heading[b]]}"
        v = f"{HARBOUR}V{b}"
        w.event(t, [(v, PRED + "speed", speed[b]), (v, PRED + "location", loc),
                    (v, PRED + "direction", f"<{d}>")], [t, f"V{b}", speed[b], loc, d])
    w.close()
    facts = ((s, p, o) for i in range(boats)
             for s, p, o in ((f"{HARBOUR}V{i}", HARBOUR + "name", f"Boat {i}"),
                             (f"{HARBOUR}V{i}", HARBOUR + "operatedBy", f"<{HARBOUR}co{i % 5}>"),
                             (f"{HARBOUR}co{i % 5}", HARBOUR + "name", f"Company {i % 5}")))
    _write_kb(g, directory, HARBOUR_DB, "boats-db", facts)
    _write_kb(g, directory, HARBOUR + "db-extra", "padding",
              _padding(rng, HARBOUR + "kb/", max(0, kb - 3 * boats)))
    g.save(directory)
    return g


# ------------------------------------------------------------------ SRBench sensors

# The shape and random sequence of benchmarks/gen_stream.py (the same seed gives the same
# TriG text byte for byte; tests/bench/test_bench.py checks it), plus the CSV form.
SENSOR_PREFIXES = """\
@prefix prov: <http://www.w3.org/ns/prov#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
@prefix om-owl: <http://knoesis.wright.edu/ssw/ont/sensor-observation.owl#> .
@prefix weather: <http://knoesis.wright.edu/ssw/ont/weather.owl#> .
@prefix ssw: <http://knoesis.wright.edu/ssw/> .
@prefix ev: <http://example.org/srbench/event/> .
"""
SENSOR_PROPERTIES = (
    ("AirTemperature", "TemperatureObservation", 4, 20.0, 110.0),
    ("RelativeHumidity", "RelativeHumidityObservation", 3, 5.0, 100.0),
    ("WindSpeed", "WindSpeedObservation", 2, 0.0, 60.0),
    ("Visibility", "VisibilityObservation", 1, 0.0, 10.0),
)


def sensors(directory: Path, size: int, seed: int, stations: int = 200) -> Generated:
    """SRBench-style observations (LinkedSensorData shape): 6 triples an event."""
    g = Generated("sensors", size, seed, {"stations": stations})
    rng = random.Random(seed)
    names = [f"C{i:04d}" for i in range(stations)]
    weights = [p[2] for p in SENSOR_PROPERTIES]
    w = _writer(g, directory, "sensors", SRBENCH, ["t", "sensor", "property", "value"],
                SENSOR_PREFIXES)
    for t in range(size):
        prop, cls, _, lo, hi = rng.choices(SENSOR_PROPERTIES, weights)[0]
        sensor = names[rng.randrange(stations)]
        value = round(rng.uniform(lo, hi), 1)
        obs = f"ssw:Observation_{prop}_{sensor}_{t}"
        res = f"ssw:MeasureData_{prop}_{sensor}_{t}"
        w.text(t, f"ev:{t} prov:generatedAtTime {t} .\n"
                  f"ev:{t} {{\n"
                  f"  {obs} a weather:{cls} ;\n"
                  f"    om-owl:observedProperty weather:_{prop} ;\n"
                  f"    om-owl:procedure ssw:System_{sensor} ;\n"
                  f"    om-owl:result {res} ;\n"
                  f"    om-owl:samplingTime ssw:Instant_{t} .\n"
                  f'  {res} om-owl:floatValue "{value}"^^xsd:double .\n'
                  "}\n", 6, [t, sensor, prop, value])
    w.close()
    g.save(directory)
    return g



# ------------------------------------------------------------------ triples (rsp-rs's own shape)

TRIPLES = "http://example.org/stream1"


def triples(directory: Path, size: int, seed: int, subjects: int = 100,
            properties: int = 10) -> Generated:
    """rsp-rs's benchmark stream (its benches/streaming_throughput.rs): one triple an event,
    ``<sensor{i}> <property{j}> "value_{t}"`` of 100 subjects and 10 properties (drawn from
    the seed: rsp-rs's cycle through them), each object new (rsp-rs keeps a window as a set
    of quads, so a repeated triple would count once there)."""
    g = Generated("triples", size, seed, {"subjects": subjects, "properties": properties})
    rng = random.Random(seed)
    w = _writer(g, directory, "triples", TRIPLES, ["t", "s", "p", "o"])
    for t in range(size):
        i, j = rng.randrange(subjects), rng.randrange(properties)
        w.event(t, [(f"{EXORG}sensor{i}", f"{EXORG}property{j}", f"value_{t}")],
                [t, f"sensor{i}", f"property{j}", f"value_{t}"])
    w.close()
    g.save(directory)
    return g

# ------------------------------------------------------------------ coupons (001 Example 1)

def coupons(directory: Path, size: int, seed: int, shops: int = 200, users: int = 500,
            products: int = 1000) -> Generated:
    """001's geo-marketing scenario scaled up: coupon offers and user locations (``size``
    events in all, 1 location event in 3), a product KB with g_classify."""
    g = Generated("coupons", size, seed, {"shops": shops, "users": users, "products": products})
    rng = random.Random(seed)
    wc = _writer(g, directory, "coupons", COUPONS, ["t", "shop", "coupon", "product", "reduce"])
    wl = _writer(g, directory, "locations", LOCATIONS, ["t", "user", "shop"])
    for t in range(size):
        if t % 3 == 2:
            u, s = f"{EXORG}u{rng.randrange(users)}", f"{EXORG}shop{rng.randrange(shops)}"
            wl.event(t, [(u, EXORG + "isNear", f"<{s}>")], [t, u, s])
            continue
        s, c = f"{EXORG}shop{rng.randrange(shops)}", f"{EXORG}coupon{t}"
        p, r = f"{EXORG}p{rng.randrange(products)}", rng.randrange(5, 60)
        wc.event(t, [(s, EXORG + "offers", f"<{c}>"), (c, EXORG + "on", f"<{p}>"),
                     (c, EXORG + "reduce", r)], [t, s, c, p, r])
    wc.close()
    wl.close()
    _write_kb(g, directory, PRODUCTS, "products",
              ((f"{EXORG}p{i}", EXORG + "g_classify", i % 3) for i in range(products)))
    g.save(directory)
    return g


GENERATORS: dict[str, Callable[..., Generated]] = {
    "stock": stock, "credit": credit, "smartgrid": smartgrid, "traffic": traffic,
    "vessels": vessels, "sensors": sensors, "coupons": coupons, "citybench": citybench,
    "triples": triples,
}


def _code_digest() -> str:
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


def generate(workload: str, directory: str | Path, size: int, seed: int = 42,
             **options: object) -> Generated:
    """Write ``workload`` with ``size`` events under ``directory`` (reused if already there)."""
    if workload not in GENERATORS:
        raise ValueError(f"unknown workload {workload!r}; known: {', '.join(sorted(GENERATORS))}")
    if size < 1:
        raise ValueError("--size must be at least 1")
    d = Path(directory)
    if (d / "manifest.json").is_file():
        old = Generated.load(d)
        if ((old.size, old.seed, old.options, old.code)
                == (size, seed, {**old.options, **options}, _code_digest())):
            return old
    d.mkdir(parents=True, exist_ok=True)
    return GENERATORS[workload](d, size, seed, **options)
