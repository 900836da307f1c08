"""The query texts each engine runs, one function per comparison.

A comparison puts side by side texts that mean the same thing on the same events (what
differs is stated in ``Comparison.note``): SPASEQ for rsep, CORE's language for pycer,
SQL MATCH_RECOGNIZE for Flink, RSP-QL for rsep, RSP-JS and the naive baseline.
"""

from __future__ import annotations

from pathlib import Path

from rsep.bench import workloads as w

STRATEGY = {"strict": ",", "next": ";", "any": ":"}


def zigzag_filters(length: int) -> list[str]:
    """Step i >= 1 rises above step i-1 when i is odd and falls below it when even: the
    V-shape of 002's Query 4 for length 3, a longer zigzag (Query 3's family) beyond."""
    return [("{cur} > {prev}" if i % 2 else "{cur} < {prev}") for i in range(1, length)]


def spaseq_zigzag(length: int, window: int, strategy: str = "strict") -> str:
    """002 Query 4 (V-shape, length 3) generalised to ``length`` GPMs on the stock stream."""
    names = [chr(ord("A") + i) for i in range(length)]
    op = STRATEGY[strategy]
    gpms = []
    for i, n in enumerate(names):
        filt = ""
        if i:
            cond = zigzag_filters(length)[i - 1].format(cur=f"?p{i + 1}", prev=f"?p{i}")
            filt = f"\n    FILTER ({cond})"
        gpms.append(f"  DEFINE GPM {n} ON S1 {{\n    ?company pred:price ?p{i + 1}.\n"
                    f"    ?company pred:volume ?vol{i + 1}.{filt}\n  }}")
    sel = " ".join(f"?p{i + 1}" for i in range(length))
    return (f"PREFIX pred: <{w.PRED}>\nSELECT ?company {sel}\nWITHIN {window}\n"
            f"FROM STREAM S1 <{w.STOCKS}>\nWHERE {{\n  SEQ ({f'{op} '.join(names)})\n"
            + "\n".join(gpms) + "\n}\n")


def flink_zigzag(length: int) -> str:
    """The same zigzag in SQL MATCH_RECOGNIZE: strict contiguity over the whole stream (no
    PARTITION BY: SPASEQ's ',' is about the stream's next event), the company joined by
    equality, every start tried (AFTER MATCH SKIP TO NEXT ROW)."""
    names = [chr(ord("A") + i) for i in range(length)]
    defines = []
    for i in range(1, length):
        cmp = ">" if i % 2 else "<"
        defines.append(f"{names[i]} AS {names[i]}.company = A.company AND "
                       f"{names[i]}.price {cmp} {names[i - 1]}.price")
    measures = ", ".join(f"{n}.t AS t{i + 1}" for i, n in enumerate(names))
    return (f"SELECT * FROM stocks MATCH_RECOGNIZE (ORDER BY rowtime MEASURES {measures} "
            f"ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW PATTERN ({' '.join(names)}) "
            f"DEFINE {', '.join(defines)})")



def esper_zigzag(length: int) -> str:
    """The zigzag in Esper's EPL ``match_recognize``: as Flink's (strict contiguity over the
    unpartitioned stream, every start tried: AFTER MATCH SKIP TO NEXT ROW), the company
    joined by equality with A's, each price compared with the step before."""
    names = [chr(ord("A") + i) for i in range(length)]
    defines = []
    for i in range(1, length):
        cmp = ">" if i % 2 else "<"
        defines.append(f"{names[i]} as {names[i]}.company = A.company and "
                       f"{names[i]}.price {cmp} {names[i - 1]}.price")
    measures = ", ".join(f"{n}.t as t{i + 1}" for i, n in enumerate(names))
    return (f"select * from Stock match_recognize (measures {measures} "
            f"after match skip to next row pattern ({' '.join(names)}) "
            f"define {', '.join(defines)})")

# Per-event filters CORE (pycer 0.1.6) can express: volume bands, ~1% of events each.
CORE_BANDS = (("volume > 990", "?v{i} > 990"), ("volume < 10", "?v{i} < 10"),
              ("volume > 990", "?v{i} > 990"), ("volume < 10", "?v{i} < 10"),
              ("volume > 990", "?v{i} > 990"))


def spaseq_bands(length: int, window: int, strategy: str = "any") -> str:
    """SEQ(A: B: C ...) with one per-event FILTER per GPM, joined on ?company: the part of
    SPASEQ that CORE's skip-till-any sequences with per-event filters express."""
    names = [chr(ord("A") + i) for i in range(length)]
    op = STRATEGY[strategy]
    gpms = [f"  DEFINE GPM {n} ON S1 {{\n    ?company pred:volume ?v{i + 1}.\n"
            f"    FILTER ({CORE_BANDS[i][1].format(i=i + 1)})\n  }}" for i, n in enumerate(names)]
    sel = " ".join(f"?v{i + 1}" for i in range(length))
    return (f"PREFIX pred: <{w.PRED}>\nSELECT ?company {sel}\nWITHIN {window}\n"
            f"FROM STREAM S1 <{w.STOCKS}>\nWHERE {{\n  SEQ ({f'{op} '.join(names)})\n"
            + "\n".join(gpms) + "\n}\n")


def core_bands(length: int, window: int) -> tuple[str, str]:
    """(stream declaration, query) for pycer. CORE's WITHIN is a sliding bound on a match's
    span; SPASEQ's is tumbling windows (Def. 16), so CORE gets one more unit and the harness
    keeps CORE's matches that lie inside one SPASEQ window before comparing."""
    names = [f"e{i + 1}" for i in range(length)]
    decl = ("CREATE STREAM S { EVENT Stock { t:int, company:string, sector:string, price:int, "
            "volume:int } }")
    filters = " AND ".join(f"{n}[{CORE_BANDS[i][0]}]" for i, n in enumerate(names))
    seq = " ; ".join(f"Stock AS {n}" for n in names)
    q = (f"SELECT * FROM S WHERE {seq} FILTER {filters} PARTITION BY [company] "
         f"WITHIN {window + 1} EVENTS")
    return decl, q



def esper_bands(length: int, window: int) -> str:
    """The per-event-filter sequence as an EPL pattern: ``every`` on each step is Esper's
    skip-till-any (every combination of events in order), the company joined with the
    first event's; a match spans at most ``window`` time units (as CORE's WITHIN window+1
    EVENTS: one event a unit), the kept ones then those inside one SPASEQ tumbling window.
    ``timer:within`` (Esper's clock is the stream's, see the worker) ends each first
    event's sub-pattern after the window, so that its state does not grow for ever; the
    span itself is the filter on the last step, which does not hang on whether the timer
    counts its end."""
    names = [f"e{i + 1}" for i in range(length)]
    band = [CORE_BANDS[i][0] for i in range(length)]
    steps = [f"every {names[i]}=Stock(company = e1.company, {band[i]}"
             + (f", t <= e1.t + {window}" if i == length - 1 else "") + ")"
             for i in range(1, length)]
    select = ", ".join(f"{n}.t as t{i + 1}" for i, n in enumerate(names))
    return (f"select {select} from pattern [every e1=Stock({band[0]}) -> "
            f"({' -> '.join(steps)}) where timer:within({window + 1} msec)]")

SENSOR_PREFIXES = ("PREFIX om-owl: <http://knoesis.wright.edu/ssw/ont/sensor-observation.owl#>\n"
                   "PREFIX weather: <http://knoesis.wright.edu/ssw/ont/weather.owl#>\n")
SENSOR_WHERE = ("    ?obs om-owl:observedProperty weather:_AirTemperature .\n"
                "    ?obs om-owl:procedure ?sensor .\n"
                "    ?obs om-owl:result ?res .\n"
                "    ?res om-owl:floatValue ?value .\n"
                "    FILTER (?value > {threshold})\n")
SENSOR_TAIL = "GROUP BY ?sensor\n"
SENSOR_SELECT = "SELECT ?sensor (MAX(?value) AS ?max) (COUNT(?obs) AS ?readings)\n"


def rspql_sensors(range_: int, step: int, threshold: float = 100.0) -> str:
    """A windowed aggregate (SRBench-style): per sensor the maximum air temperature above
    a threshold and the number of such readings in the window."""
    return (SENSOR_PREFIXES + "REGISTER RSTREAM <http://example.org/bench/out> AS\n"
            + SENSOR_SELECT
            + f"FROM NAMED WINDOW <http://example.org/bench/w> ON <{w.SRBENCH}> "
              f"[RANGE {range_} STEP {step}]\n"
            + "WHERE {\n  WINDOW <http://example.org/bench/w> {\n"
            + SENSOR_WHERE.format(threshold=threshold) + "  }\n}\n" + SENSOR_TAIL)


def rspjs_sensors(range_: int, step: int, threshold: float = 100.0) -> str:
    """The same for RSP-JS, whose parser reads one clause per line and wants ON STREAM."""
    return (SENSOR_PREFIXES + "PREFIX : <http://example.org/bench/>\n"
            + "REGISTER RStream <http://example.org/bench/out> AS\n" + SENSOR_SELECT
            + f"FROM NAMED WINDOW :w ON STREAM <{w.SRBENCH}> [RANGE {range_} STEP {step}]\n"
            + "WHERE {\nWINDOW :w {\n" + SENSOR_WHERE.format(threshold=threshold) + "}\n}\n"
            + SENSOR_TAIL)


def sparql_sensors(threshold: float = 100.0) -> str:
    """What the naive baseline runs on each window snapshot (a fresh default-graph store)."""
    return (SENSOR_PREFIXES + SENSOR_SELECT + "WHERE {\n" + SENSOR_WHERE.format(
        threshold=threshold) + "}\n" + SENSOR_TAIL)



TRIPLES_STREAM = w.TRIPLES


def rspql_select_all(range_: int, step: int) -> str:
    """rsp-rs's own benchmark query (its benches/streaming_throughput.rs): every triple of
    the window, ``SELECT *`` over ``[RANGE 5000 STEP 1000]`` there."""
    return ("REGISTER RSTREAM <http://example.org/bench/out> AS\nSELECT *\n"
            f"FROM NAMED WINDOW <http://example.org/bench/w> ON <{TRIPLES_STREAM}> "
            f"[RANGE {range_} STEP {step}]\n"
            "WHERE {\n  WINDOW <http://example.org/bench/w> { ?s ?p ?o }\n}\n")


def rsprs_select_all(range_: int, step: int) -> str:
    """The same as rsp-rs's parser reads it: one clause a line, ON STREAM, a prefixed window
    name (its WINDOW line becomes SPARQL's GRAPH, which needs the prefix)."""
    return ("PREFIX ex: <http://example.org/bench/>\n"
            "REGISTER RStream <http://example.org/bench/out> AS\nSELECT *\n"
            f"FROM NAMED WINDOW ex:w ON STREAM <{TRIPLES_STREAM}> [RANGE {range_} STEP {step}]\n"
            "WHERE {\nWINDOW ex:w { ?s ?p ?o }\n}\n")

CITY_PREFIXES = f"""PREFIX ssn: <{w.SSN}>
PREFIX sao: <{w.SAO}>
PREFIX ct: <{w.CT}>
"""
CITY_SELECT = ("SELECT ?road (COUNT(*) AS ?pairs) (MIN(?speed) AS ?slowest) "
               "(MAX(?count) AS ?busiest)\n")
CITY_SPEED = ("?o1 ssn:observedProperty ct:AverageSpeed ; ssn:observedBy ?s1 ; "
              "sao:hasValue ?speed .")
CITY_COUNT = ("?o2 ssn:observedProperty ct:VehicleCount ; ssn:observedBy ?s2 ; "
              "sao:hasValue ?count .")
CITY_KB = "?s1 ct:onRoad ?road . ?s2 ct:onRoad ?road . FILTER (?speed < {slow})"
CITY_TAIL = "GROUP BY ?road\n"


def rspql_citybench(range_: int, step: int, slow: int = 30) -> str:
    """CityBench-style (its Q1/Q5 shape): two windowed traffic streams joined through the
    sensors' roads in the background KB; per road the slow-speed/vehicle-count pairs."""
    return (CITY_PREFIXES + "REGISTER RSTREAM <http://example.org/bench/out> AS\n"
            + CITY_SELECT + f"FROM <{w.CITY_KB}>\n"
            + f"FROM NAMED WINDOW <http://example.org/bench/w1> ON <{w.CITY_SPEED}> "
              f"[RANGE {range_} STEP {step}]\n"
            + f"FROM NAMED WINDOW <http://example.org/bench/w2> ON <{w.CITY_COUNT}> "
              f"[RANGE {range_} STEP {step}]\n"
            + "WHERE {\n  WINDOW <http://example.org/bench/w1> { " + CITY_SPEED + " }\n"
            + "  WINDOW <http://example.org/bench/w2> { " + CITY_COUNT + " }\n  "
            + CITY_KB.format(slow=slow) + "\n}\n" + CITY_TAIL)


def sparql_citybench(slow: int = 30) -> str:
    """The naive baseline's query: the windows as named graphs w1, w2 of a fresh store,
    the KB in its default graph."""
    return (CITY_PREFIXES + CITY_SELECT + "WHERE {\n"
            + "  GRAPH <http://example.org/bench/w1> { " + CITY_SPEED + " }\n"
            + "  GRAPH <http://example.org/bench/w2> { " + CITY_COUNT + " }\n  "
            + CITY_KB.format(slow=slow) + "\n}\n" + CITY_TAIL)


# ------------------------------------------------------------ 002 Appendix A, as run by rsep

def spaseq_query1(window: int) -> str:
    """002 Query 1 (smart grid, three streams, KB), the ':' prefix declared."""
    return f"""PREFIX : <{w.GRID}>
SELECT ?house ?fr1 ?fr2 ?house2 ?city ?oname
WITHIN {window}
FROM STREAM S1 <{w.GRID_POWER}>
FROM STREAM S2 <{w.GRID_WEATHER}>
FROM STREAM S3 <{w.GRID_STORAGE}>
WHERE {{
  SEQ (A; B+, C)
  DEFINE GPM A ON S1 {{
    ?house :loc ?l. ?house :pow :Pw. :Pw :source "fuel". :Pw :fare ?fr1.
    FILTER(?fr1 > 20).
    GRAPH <{w.GRID_DB}> {{ ?house :locatedIn ?city. ?house :nearBy ?house2. ?house :ownerName ?oname. }}
  }}
  DEFINE GPM B ON S2 {{
    ?wthr :loc ?l. ?wthr :value :Vl. :Vl :light ?lt. :Vl :windsp ?sp.
    FILTER (?sp > 3 && ?lt > 40).
  }}
  DEFINE GPM C ON S3 {{
    ?storage :loc ?l. ?storage :pow :Pw. :Pw :source "solar". :Pw :fare ?fr2.
    FILTER (?fr2 < ?fr1).
  }}
}}
"""


def spaseq_query2(window: int) -> str:
    """002 Query 2 (big after small), corrected as 002's text needs: the ':' prefix declared,
    A's FILTER on the unbound ?s1 dropped, SELECT of variables the GPMs bind."""
    return f"""PREFIX pred: <{w.PRED}>
PREFIX : <{w.CARD_DB}#>
SELECT ?card ?amount1 ?amount2 ?name
WITHIN {window}
FROM STREAM S1 <{w.CARDS}>
WHERE {{
  SEQ (A, B+)
  DEFINE GPM A ON S1 {{ ?card pred:id ?id1. ?card pred:amount ?amount1. ?card pred:loc ?loc. }}
  DEFINE GPM B ON S1 {{
    ?card pred:id ?id1. ?card pred:amount ?amount2.
    FILTER (?amount2 >= ?amount1 * 10)
    GRAPH <{w.CARD_DB}> {{ ?id1 :cardHolder ?name. ?id1 :holderAddress ?address. }}
  }}
}}
"""



def esper_query2() -> str:
    """Query 2 in EPL: SEQ (A, B+) under strict contiguity is ``match_recognize`` over the
    unpartitioned stream. SPASEQ outputs every prefix of a run of B (a match per B event):
    Esper's ALL MATCHES with AFTER MATCH SKIP TO CURRENT ROW gives exactly those (checked
    against rsep's matches; its default keeps the greedy, longest match, and ALL MATCHES
    with SKIP TO NEXT ROW the shortest of each start). B's GRAPH pattern (the holder's name
    and address) is a lookup in an Esper table loaded with the KB before the stream. No
    WITHIN in match_recognize: the harness keeps the matches inside one SPASEQ tumbling
    window, as for Flink."""
    return ("create table Holders (id string primary key, name string, address string);\n"
            "insert into Holders select id, name, address from Holder;\n"
            "@name('bench') select * from Card match_recognize (measures A.t as t1, "
            "B.selectFrom(v => v.t) as bs, Holders[B.lastOf().id].name as name "
            "all matches after match skip to current row pattern (A B+) "
            "define B as B.card = A.card and B.amount >= A.amount * 10 "
            "and Holders[B.id] is not null)")

def esper_query6() -> str:
    """Query 6 in EPL: SEQ (A, B+, C) under strict contiguity is ``match_recognize`` over the
    unpartitioned stream. B and C are disjoint (B's speed exceeds A's, which is above 0; C's
    is 0), so one start has at most one match (the whole run of B, then C) and the default
    greedy B+ finds it; AFTER MATCH SKIP TO NEXT ROW tries every start, as SPASEQ does (a
    later harbour event could be a B of an earlier A and an A of its own; the generated trips
    never overlap so, and Esper's default SKIP PAST LAST ROW gave the same 182 matches at
    5,000 events). Each iteration of B
    compares its own speed with A's (SPASEQ binds ?s2 afresh per iteration) and keeps A's
    vessel and ?dir1. C's GRAPH pattern (the boat's name, its operator's name) is a lookup in
    an Esper table loaded with the KB before the stream."""
    return ("create table Boats (vessel string primary key, name string, cname string);\n"
            "insert into Boats select vessel, name, cname from Boat;\n"
            "@name('bench') select * from Ship match_recognize (measures A.t as t1, "
            "B.selectFrom(v => v.t) as bs, C.t as t3, Boats[C.vessel].name as n, "
            "Boats[C.vessel].cname as cname "
            "after match skip to next row pattern (A B+ C) "
            "define A as A.speed > 0 and A.location = 'harbour', "
            "B as B.vessel = A.vessel and B.speed > A.speed and B.direction = A.direction, "
            "C as C.vessel = A.vessel and C.speed = 0 and C.location = 'fishingarea' "
            "and Boats[C.vessel] is not null)")


def esper_query5(window: int) -> str:
    """Query 5 in EPL: the three streams merged into one, ordered by time and then by
    stream (S1, S2, S3). B & C (S2's and S3's events at one time, 002 Def. 8, joined on
    ?traffic and ?p1, C's FILTER reading B's ?v2) is a first statement inserting a Pair per
    S2 event and the S3 event after it (one event per stream and time: the same time).
    SEQ (A; (B&C)) is then a pattern ``every a -> p=Pair(...)``: without ``every`` on p, a's
    sub-pattern takes the first pair after a that joins it, which is skip-till-next
    (Def. 11: the first later time with a joining match), and every A has its own
    sub-pattern. Two shorter forms do not give SPASEQ's matches, both tried:
    ``match_recognize`` PATTERN (A X*? B C) AFTER MATCH SKIP TO NEXT ROW loses an A's match
    when a later A's match ends first while the earlier A's run is open (skip to next row
    resumes after the first row of the match found: 1 of 31 at 5,000 events); and in a pattern ``a -> (b and c)``
    b and c each take the first event of their own filter, independently, and c's filter
    cannot read its sibling b's ?v2. ``timer:within`` (Esper's clock is the stream's) ends an
    A's sub-pattern once its match could no longer lie in one SPASEQ tumbling window (the
    harness keeps only those), so that an A without a match does not live to the end."""
    return ("insert into Pair select b.t as t, b.obs as obs, b.property as property, "
            "b.value as v2, c.value as v3 from pattern [every b=Obs(s = 2) -> "
            "c=Obs(s = 3, t = b.t, obs = b.obs, property = b.property, value >= b.value)];\n"
            "@name('bench') select a.t as t1, p.t as t2, p.t as t3 from pattern "
            "[every a=Obs(s = 1, value > 3) -> (p=Pair(t > a.t, obs = a.obs, "
            f"property = a.property, v2 >= a.value) where timer:within({window + 1} msec))]")


def spaseq_query3(window: int) -> str:
    """002 Query 3 (head and shoulders) as printed, WITHIN in stream units."""
    text = (Path(__file__).resolve().parents[2] / "tests" / "data" / "spaseq" / "query3.rq")
    if text.is_file():
        return text.read_text(encoding="utf-8").replace("WITHIN 60 MINUTES", f"WITHIN {window}")
    return spaseq_zigzag(7, window)


def spaseq_query5(window: int) -> str:
    """002 Query 5 (traffic, conjunction over three streams), SELECT corrected."""
    s = [w.TRAFFIC + i for i in w.TRAFFIC_IDS]
    return f"""PREFIX ssn: <{w.SSN}>
PREFIX sao: <{w.SAO}>
SELECT ?p1 ?v1 ?v2 ?v3
WITHIN {window}
FROM STREAM S1 <{s[0]}>
FROM STREAM S2 <{s[1]}>
FROM STREAM S3 <{s[2]}>
WHERE {{
  SEQ (A; (B&C))
  DEFINE GPM A ON S1 {{ ?traffic ssn:observedProperty ?p1. ?traffic sao:hasValue ?v1. FILTER (?v1 > 3) }}
  DEFINE GPM B ON S2 {{ ?traffic ssn:observedProperty ?p1. ?traffic sao:hasValue ?v2. FILTER (?v2 >= ?v1) }}
  DEFINE GPM C ON S3 {{ ?traffic ssn:observedProperty ?p1. ?traffic sao:hasValue ?v3. FILTER (?v3 >= ?v2) }}
}}
"""


def spaseq_query6(window: int) -> str:
    """002 Query 6 (trajectory classification, KB) as printed, ':' declared."""
    return f"""PREFIX pred: <{w.PRED}>
PREFIX : <{w.HARBOUR}>
SELECT ?vessel ?n ?cname
WITHIN {window}
FROM STREAM S1 <{w.BOATS}>
WHERE {{
  SEQ (A, B+, C)
  DEFINE GPM A ON S1 {{ ?vessel pred:speed ?s1. ?vessel pred:location "harbour". ?vessel pred:direction ?dir1. FILTER (?s1 > 0) }}
  DEFINE GPM B ON S1 {{ ?vessel pred:speed ?s2. ?vessel pred:location ?l. ?vessel pred:direction ?dir1. FILTER (?s2 > ?s1) }}
  DEFINE GPM C ON S1 {{
    ?vessel pred:speed 0. ?vessel pred:location "fishingarea". ?vessel pred:direction ?dir3.
    GRAPH <{w.HARBOUR_DB}> {{ ?vessel :name ?n. ?vessel :operatedBy ?company. ?company :name ?cname. }}
  }}
}}
"""


def cqels_coupons(coupon_range: int, location_range: int) -> str:
    """001 Example 5's notification query (CQELS), ranges in stream units."""
    return f"""PREFIX : <{w.EXORG}>
SELECT ?shop ?product ?percent
FROM <{w.PRODUCTS}>
WHERE {{
  STREAM <{w.COUPONS}> [RANGE {coupon_range}] {{
    ?shop :offers ?coupon . ?coupon :reduce ?percent . ?coupon :on ?product . }}
  STREAM <{w.LOCATIONS}> [RANGE {location_range}] {{ ?user :isNear ?shop . }}
  ?product :g_classify ?gender .
  FILTER (?percent >= 50 && ?gender != 1)
}}
"""
