"""``rsep bench``: the comparisons and sweeps, their runs, agreement checks, CSV and plots."""

from __future__ import annotations

import csv
import json
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rsep.bench import agree, peers, queries, workloads
from rsep.bench.plots import plot_all

WINDOW = 10_000  # SPASEQ tumbling window (002 Query 3/4 targets: 10^4 events)


@dataclass
class Case:
    """One configuration: a workload and what each engine runs on it."""

    comparison: str
    workload: str
    size: int
    options: dict
    build: Callable[[workloads.Generated, str], dict]  # (generated, peer) -> worker spec
    peers: tuple[str, ...]
    kind: str  # "cep": matches; "window": per-window rows
    what: str  # what exactly is compared
    param: str = ""
    value: object = ""
    window: int | None = None
    caps: dict[str, int] = field(default_factory=dict)  # peer -> largest size it is run on
    master: str = ""  # rsep on the Spark pipeline with this master ("in-process": not)


def _on_spark(case: Case, peer: str, engine: str) -> bool:
    """Whether this peer's runs are rsep on the Spark pipeline."""
    return peer == "rsep" and (engine == "spark" or case.master.startswith("local"))


def _streams(g: workloads.Generated) -> list[list[str]]:
    return [[s.iri, s.trig] for s in g.streams.values()]


def _graphs(g: workloads.Generated) -> list[list[str]]:
    return [[iri, p] for iri, p in g.graphs.items()]


STOCK_COLS = [["t", "BIGINT"], ["company", "STRING"], ["sector", "STRING"], ["price", "BIGINT"],
              ["volume", "BIGINT"], ["txid", "BIGINT"], ["type", "STRING"]]
# Esper's object-array event type for the same CSV columns
ESPER_TYPES = {"BIGINT": "long", "STRING": "string", "DOUBLE": "double"}


def _esper(g: workloads.Generated, epl: str, length: int) -> dict:
    s = g.streams["stocks"]
    return {"epl": epl, "csv": s.csv, "event_type": "Stock",
            "times": [f"t{i + 1}" for i in range(length)],
            "columns": [[c, ESPER_TYPES[t]] for c, t in STOCK_COLS]}


def _holders_csv(g: workloads.Generated) -> str:
    """credit's card-holder KB flattened for Esper: one row per card id with both a holder
    and an address (what Query 2's GRAPH pattern joins), as the stream's CSV flattens the
    events; made once beside the KB, outside the timed run."""
    nt = g.graphs[workloads.CARD_DB]
    out = nt[:-3] + ".esper.csv"
    if not Path(out).is_file() or os.path.getmtime(out) < os.path.getmtime(nt):
        from pyoxigraph import RdfFormat, parse

        rows: dict[str, dict[str, str]] = {}
        for q in parse(path=nt, format=RdfFormat.N_TRIPLES):
            rows.setdefault(agree.local(q.subject.value), {})[q.predicate.value] = q.object.value
        name, address = workloads.CARD_DB + "#cardHolder", workloads.CARD_DB + "#holderAddress"
        with open(out + ".part", "w", encoding="utf-8", newline="") as f:
            wr = csv.writer(f, lineterminator="\n")
            wr.writerow(["id", "name", "address"])
            for k, r in rows.items():
                if name in r and address in r:
                    wr.writerow([k, r[name], r[address]])
        os.replace(out + ".part", out)
    return out


def _boats_csv(g: workloads.Generated) -> str:
    """vessels' harbour KB flattened for Esper: one row per boat with its name and its
    operator's name (what Query 6's GRAPH pattern joins), made once beside the KB, outside
    the timed run."""
    nt = g.graphs[workloads.HARBOUR_DB]
    out = nt[:-3] + ".esper.csv"
    if not Path(out).is_file() or os.path.getmtime(out) < os.path.getmtime(nt):
        from pyoxigraph import RdfFormat, parse

        name, by = workloads.HARBOUR + "name", workloads.HARBOUR + "operatedBy"
        names: dict[str, str] = {}
        ops: dict[str, str] = {}
        for q in parse(path=nt, format=RdfFormat.N_TRIPLES):
            if q.predicate.value == name:
                names[q.subject.value] = q.object.value
            elif q.predicate.value == by:
                ops[q.subject.value] = q.object.value
        with open(out + ".part", "w", encoding="utf-8", newline="") as f:
            wr = csv.writer(f, lineterminator="\n")
            wr.writerow(["vessel", "name", "cname"])
            for v, co in ops.items():
                if v in names and co in names:
                    wr.writerow([agree.local(v), names[v], names[co]])
        os.replace(out + ".part", out)
    return out


def _traffic_csv(g: workloads.Generated) -> str:
    """traffic's three streams as one CSV for Esper (a column s: the stream, 1-3), in time
    order and, within a time, in stream order: Esper reads one stream of events, and Query
    5's B & C become adjacent rows. Made once beside the streams, outside the timed run."""
    srcs = [g.streams[f"traffic{i + 1}"].csv for i in range(3)]
    out = str(Path(srcs[0]).with_name("traffic.esper.csv"))
    if not Path(out).is_file() or any(os.path.getmtime(out) < os.path.getmtime(p) for p in srcs):
        rows: list[tuple[int, int, list[str]]] = []
        for k, p in enumerate(srcs):
            with open(p, encoding="utf-8", newline="") as f:
                rd = csv.reader(f)
                head = next(rd)
                for r in rd:
                    rows.append((int(r[head.index("t")]), k + 1, r))
        rows.sort(key=lambda x: (x[0], x[1]))
        with open(out + ".part", "w", encoding="utf-8", newline="") as f:
            wr = csv.writer(f, lineterminator="\n")
            wr.writerow(["s", *head])
            for _, k, r in rows:
                wr.writerow([k, *r])
        os.replace(out + ".part", out)
    return out


def _csv_no_header(path: str) -> str:
    out = path[:-4] + ".noheader.csv"
    if not Path(out).is_file() or os.path.getmtime(out) < os.path.getmtime(path):
        with open(path, encoding="utf-8") as f, open(out + ".part", "w", encoding="utf-8") as g:
            next(f)
            for line in f:
                g.write(line)
        os.replace(out + ".part", out)
    return out


def zigzag_case(size: int, length: int = 3, window: int = WINDOW, comparison: str = "stock-vshape",
                param: str = "",
                peers_: tuple[str, ...] = ("rsep", "reference", "flink", "esper")) -> Case:
    def build(g: workloads.Generated, peer: str) -> dict:
        s = g.streams["stocks"]
        if peer == "esper":
            return _esper(g, queries.esper_zigzag(length), length)
        if peer == "flink":
            return {"query": queries.flink_zigzag(length), "csv": _csv_no_header(s.csv),
                    "flink_columns": STOCK_COLS, "length": length, "events": s.events}
        return {"kind": "cep", "query": queries.spaseq_zigzag(length, window), "window": window,
                "streams": _streams(g)}

    what = (f"SPASEQ Query 4 (V-shape) generalised to {length} GPMs, strict contiguity ',' over "
            f"the stream, WITHIN {window}; Flink: MATCH_RECOGNIZE PATTERN ({length} vars) without "
            "PARTITION BY, company equality and price comparisons in DEFINE, AFTER MATCH SKIP TO "
            "NEXT ROW; Esper: EPL match_recognize, the same pattern, DEFINE and SKIP TO NEXT ROW; "
            "same matches (event-time tuples), Flink's and Esper's kept when inside one SPASEQ "
            "tumbling window")
    return Case(comparison, "stock", size, {"companies": 2}, build, peers_, "cep", what,
                param, length if param else "", window, {"reference": 20_000})


def bands_case(size: int, length: int = 3, window: int = WINDOW, strategy: str = "any",
               comparison: str = "stock-core", param: str = "",
               peers_: tuple[str, ...] = ("rsep", "reference", "core", "esper")) -> Case:
    def build(g: workloads.Generated, peer: str) -> dict:
        s = g.streams["stocks"]
        if peer == "esper":
            return _esper(g, queries.esper_bands(length, window), length)
        if peer == "core":
            decl, q = queries.core_bands(length, window)
            return {"declare": decl, "query": q, "csv": s.csv,
                    "columns": [["t", "int"], ["company", "string"], ["sector", "string"],
                                ["price", "int"], ["volume", "int"]]}
        return {"kind": "cep", "query": queries.spaseq_bands(length, window, strategy),
                "window": window, "streams": _streams(g)}

    what = (f"SEQ of {length} GPMs with one per-event FILTER each (volume bands, ~1% of events), "
            f"joined on ?company, selection '{queries.STRATEGY[strategy]}' ({strategy}), WITHIN "
            f"{window}; CORE: the same sequence (skip-till-any, its only strategy), PARTITION BY "
            "[company], WITHIN window+1 EVENTS (sliding); Esper: an EPL pattern with every on each "
            "step (skip-till-any), the company joined with the first event's, a span of at most "
            "window units; same matches, CORE's and Esper's kept when inside one SPASEQ tumbling "
            "window")
    return Case(comparison, "stock", size, {"companies": 10}, build, peers_, "cep", what,
                param, (strategy if param == "strategy" else length) if param else "", window,
                {"reference": 5_000})


def sensors_case(size: int, range_: int = 1667, step: int = 500, comparison: str = "sensors-window",
                 param: str = "",
                 peers_: tuple[str, ...] = ("rsep", "naive", "rspjs", "rsprs")) -> Case:
    def build(g: workloads.Generated, peer: str) -> dict:
        s = g.streams["sensors"]
        if peer == "rsprs":
            # rsp-rs reads the same RSP-QL shape as RSP-JS (one clause a line, ON STREAM)
            return {"query": queries.rspjs_sensors(range_, step), "trig": s.trig,
                    "stream": s.iri, "range": range_, "step": step}
        if peer == "naive":
            return {"query": queries.sparql_sensors(), "trig": s.trig, "range": range_,
                    "step": step}
        if peer == "rspjs":
            return {"query": queries.rspjs_sensors(range_, step), "trig": s.trig,
                    "stream": s.iri, "step": step, "shift": step - 1}
        return {"kind": "window", "query": queries.rspql_sensors(range_, step),
                "streams": _streams(g)}

    what = (f"RSP-QL windowed aggregate (GROUP BY sensor, MAX, COUNT, FILTER) over [RANGE "
            f"{range_} STEP {step}] (time units = events; {range_ * 6} triples a window), RSTREAM; "
            "same rows per window (numbers by value). RSP-JS's windows are [o, c) evaluated at the "
            "next event; it is fed times t + step - 1 so that its windows hold rsep's (c - range, "
            "c]; rsp-rs's are [o, c) on a grid from its first timestamp, which the harness anchors "
            "so that they hold rsep's; windows evaluated by both are compared")
    return Case(comparison, "sensors", size, {}, build, peers_, "window", what, param,
                range_ if param else "", None, {"rspjs": 4_000})


def select_all_case(size: int, range_: int = 5000, step: int = 1000) -> Case:
    """rsp-rs's own benchmark shape: SELECT * over [RANGE 5000 STEP 1000], one triple an
    event (every window's triples come out as rows)."""
    def build(g: workloads.Generated, peer: str) -> dict:
        s = g.streams["triples"]
        if peer == "rsprs":
            return {"query": queries.rsprs_select_all(range_, step), "trig": s.trig,
                    "stream": s.iri, "range": range_, "step": step}
        return {"kind": "window", "query": queries.rspql_select_all(range_, step),
                "streams": _streams(g)}

    what = (f"rsp-rs's benchmark query: SELECT * (?s ?p ?o) over [RANGE {range_} STEP {step}], "
            "RSTREAM, one triple an event (one time unit), each object new: every window's "
            f"{range_} triples as rows; rsp-rs's windows anchored by the harness so that they "
            "hold rsep's (c - range, c]; same rows per window, windows evaluated by both")
    return Case("rsprs-select", "triples", size, {}, build, ("rsep", "rsprs"), "window", what)


def citybench_case(size: int, range_: int = 50, step: int = 10) -> Case:
    def build(g: workloads.Generated, peer: str) -> dict:
        ws = [[f"http://example.org/bench/w{i + 1}", g.streams[k].trig]
              for i, k in enumerate(("speed", "count"))]
        if peer == "naive":
            return {"query": queries.sparql_citybench(), "windows": ws, "graphs": _graphs(g),
                    "range": range_, "step": step}
        return {"kind": "window", "query": queries.rspql_citybench(range_, step),
                "streams": _streams(g), "graphs": _graphs(g)}

    what = (f"CityBench-style RSP-QL join: two windowed streams (average speed, vehicle "
            f"count; [RANGE {range_} STEP {step}] time units, one event per stream and unit) "
            "joined through the sensors' roads in a 10^4-triple background KB, GROUP BY road "
            "(COUNT, MIN, MAX), RSTREAM; same rows per window (numbers by value); the naive "
            "baseline reloads both windows into pyoxigraph for every evaluation, the KB loaded "
            "once")
    return Case("citybench-join", "citybench", size, {}, build, ("rsep", "naive"), "window",
                what)


SPARK_MASTERS = ("in-process", "local[1]", "local[2]")
SPARK_PER_FILE = 2000


def spark_case(size: int, master: str) -> Case:
    """The partitioned SPASEQ query (runs keyed by ?company) in this process and on the
    Spark pipeline: the speed-up from one to two local cores, and per-core throughput."""
    base = bands_case(size, 3, WINDOW, "next", "sweep-spark", "spark_cores", ("rsep",))
    how = ("in this process (rsep run)" if master == "in-process" else
           f"on Spark {master}: rsep.spark's batch replay (rsep run --engine spark --batch) of "
           f"{SPARK_PER_FILE}-event files, parsed in parallel, runs keyed by ?company in "
           f"{master[6:-1]} state partition(s); start-up is the session and a job over the "
           "first file")
    base.what = (f"SEQ of 3 GPMs joined on ?company (10 companies), skip-till-next, WITHIN "
                 f"{WINDOW}, {how}; same matches as in-process")
    base.value = master
    base.master = master
    return base


def spark_window_case(size: int, master: str) -> Case:
    """sensors-window's windowed aggregate in this process and on the Spark pipeline: a
    query with no partition key, so its window state is one key on one core; what more
    cores buy is parallel reading."""
    base = sensors_case(size, comparison="sweep-spark-window", param="spark_window",
                        peers_=("rsep",))
    how = ("in this process (rsep run)" if master == "in-process" else
           f"on Spark {master}: rsep.spark's batch replay (rsep run --engine spark --batch) of "
           f"{SPARK_PER_FILE}-event files, parsed in parallel, the window's state in one "
           "partition (no partition key); start-up is the session and a job over the first file")
    base.what = ("RSP-QL windowed aggregate of sensors-window ([RANGE 1667 STEP 500], GROUP BY "
                 f"sensor, MAX, COUNT, FILTER), {how}; same rows per window as in-process")
    base.value = master
    base.master = master
    return base


def appendix_case(name: str, size: int, kb: int | None = None, param: str = "") -> Case:
    """002 Appendix A queries on their workloads, rsep and its reference evaluator."""
    w = 100
    table = {
        "smartgrid-q1": ("smartgrid", queries.spaseq_query1(w), {"kb": kb or 10_000}),
        "credit-q2": ("credit", queries.spaseq_query2(w), {"kb": kb or 10_000}),
        "stock-q3": ("stock", queries.spaseq_query3(WINDOW), {"companies": 1, "max_step": 8}),
        "traffic-q5": ("traffic", queries.spaseq_query5(w), {}),
        "vessels-q6": ("vessels", queries.spaseq_query6(w), {"kb": kb or 10_000}),
    }
    wl, text, opts = table[name]
    window = WINDOW if name == "stock-q3" else w

    def build(g: workloads.Generated, peer: str) -> dict:
        if peer == "esper" and name == "traffic-q5":
            return {"epl": queries.esper_query5(w), "csv": _traffic_csv(g),
                    "event_type": "Obs", "times": ["t1", "t2", "t3"],
                    "columns": [["t", "long"], ["s", "long"], ["obs", "string"],
                                ["property", "string"], ["value", "long"]]}
        if peer == "esper" and name == "vessels-q6":
            return {"epl": queries.esper_query6(), "csv": g.streams["boats"].csv,
                    "event_type": "Ship", "times": ["t1", "bs", "t3"],
                    "columns": [["t", "long"], ["vessel", "string"], ["speed", "long"],
                                ["location", "string"], ["direction", "string"]],
                    "preload": [{"event_type": "Boat", "csv": _boats_csv(g),
                                 "columns": [["vessel", "string"], ["name", "string"],
                                             ["cname", "string"]]}]}
        if peer == "esper":  # credit-q2
            return {"epl": queries.esper_query2(), "csv": g.streams["cards"].csv,
                    "event_type": "Card", "times": ["t1", "bs"],
                    "columns": [["t", "long"], ["card", "string"], ["id", "string"],
                                ["amount", "long"], ["loc", "string"]],
                    "preload": [{"event_type": "Holder", "csv": _holders_csv(g),
                                 "columns": [["id", "string"], ["name", "string"],
                                             ["address", "string"]]}]}
        return {"kind": "cep", "query": text, "window": window, "streams": _streams(g),
                "graphs": _graphs(g)}

    what = (f"002 Appendix A {name.split('-')[1].upper()} on the {wl} workload; rsep's engine "
            "vs its reference evaluator (Defs. 7-16 transcribed): same matches")
    peers_: tuple[str, ...] = ("rsep", "reference")
    if name == "credit-q2":
        peers_ += ("esper",)
        what += ("; Esper: EPL match_recognize PATTERN (A B+), ALL MATCHES with SKIP TO CURRENT "
                 "ROW (each prefix of a B run, as SPASEQ's B+ outputs), the holder KB as an Esper "
                 "table joined in B's DEFINE; Esper's matches kept when inside one SPASEQ "
                 "tumbling window")
    if name == "traffic-q5":
        peers_ += ("esper",)
        what += ("; Esper: the three streams merged into one (time, then stream order), EPL "
                 "statement inserting a Pair per S2 event and the S3 event at its time (B & C, "
                 "C's FILTER on B's ?v2), then a pattern every a=A -> p=Pair(joining a) "
                 "(without every on p: the first joining pair after a, skip-till-next); "
                 "Esper's matches kept when inside one SPASEQ tumbling window")
    if name == "vessels-q6":
        peers_ += ("esper",)
        what += ("; Esper: EPL match_recognize PATTERN (A B+ C), AFTER MATCH SKIP TO NEXT ROW "
                 "(every start; B and C are disjoint, so one match a start), the harbour KB as "
                 "an Esper table joined in C's DEFINE; Esper's matches kept when inside one "
                 "SPASEQ tumbling window")
    return Case(name, wl, size, opts, build, peers_, "cep", what, param,
                kb if param else "", window, {"reference": 5_000})


def coupons_case(size: int) -> Case:
    def build(g: workloads.Generated, peer: str) -> dict:
        return {"kind": "window", "query": queries.cqels_coupons(300, 30), "streams": _streams(g),
                "graphs": _graphs(g)}

    return Case("coupons-cqels", "coupons", size, {}, build, ("rsep",), "window",
                "001 Example 5's CQELS notification query on the coupon scenario scaled up "
                "(rsep only: no peer runs CQELS here)")


COMPARISONS = ("stock-vshape", "stock-core", "sensors-window", "citybench-join", "rsprs-select")
APPENDIX = ("smartgrid-q1", "credit-q2", "stock-q3", "traffic-q5", "vessels-q6")
SWEEPS = ("sweep-window", "sweep-length", "sweep-strategy", "sweep-kb", "sweep-spark",
          "sweep-spark-window")
NAMES = (*COMPARISONS, *APPENDIX, "coupons-cqels", *SWEEPS, "all")


def cases(name: str, size: int | None) -> list[Case]:
    if name == "all":
        return [c for n in (*COMPARISONS, *APPENDIX, "coupons-cqels", *SWEEPS)
                for c in cases(n, size)]
    n = size or 100_000
    if name == "stock-vshape":
        return [zigzag_case(n)]
    if name == "stock-core":
        return [bands_case(n)]
    if name == "sensors-window":
        return [sensors_case(n)]
    if name == "citybench-join":
        return [citybench_case(n)]
    if name == "rsprs-select":
        return [select_all_case(n)]
    if name in APPENDIX:
        return [appendix_case(name, size or 20_000)]
    if name == "coupons-cqels":
        return [coupons_case(size or 20_000)]
    small = size or 20_000
    if name == "sweep-window":
        # up to RANGE 10^5 (6 * 10^5 triples a window), each stream twice its window, so that
        # the window fills and slides: cost per event against the window's size
        return [sensors_case(max(small, 2 * r), r, max(1, r // 4), "sweep-window", "window_events",
                             ("rsep", "naive"))
                for r in (100, 1000, 10_000, 100_000)]
    if name == "sweep-length":
        return [zigzag_case(small, k, WINDOW, "sweep-length", "pattern_length", ("rsep", "flink"))
                for k in (3, 5, 7)] + \
               [bands_case(small, k, WINDOW, "any", "sweep-length", "pattern_length", ("rsep", "core"))
                for k in (2, 3, 4)]
    if name == "sweep-strategy":
        return [bands_case(small, 3, 1000, s, "sweep-strategy", "strategy", ("rsep",))
                for s in ("strict", "next", "any")]
    if name == "sweep-kb":
        return [appendix_case("smartgrid-q1", small, kb, "kb_triples") for kb in (10_000, 100_000, 1_000_000)]
    if name == "sweep-spark":
        return [spark_case(size or 100_000, m) for m in SPARK_MASTERS]
    if name == "sweep-spark-window":
        return [spark_window_case(size or 100_000, m) for m in SPARK_MASTERS]
    raise ValueError(f"unknown benchmark {name!r}; known: {', '.join(NAMES)}")


FIELDS = ["comparison", "param", "value", "peer", "engine", "workload", "size", "events",
          "triples", "runs", "startup_s", "run_s_median", "run_s_min", "run_s_max",
          "events_per_s", "triples_per_s", "cpu_s_median", "events_per_cpu_s", "latency_p50_ms", "latency_p99_ms", "peak_rss_mb",
          "outputs", "agreement", "stages", "status", "what",
          # on a peer's row: rsep's speed over the peer's, the median of the rounds' ratios
          "paired_x_wall", "paired_x_cpu"]


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def machine() -> dict[str, str]:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=peers.ROOT,
                                capture_output=True, text=True, timeout=10).stdout.strip()
    except OSError:
        commit = "?"
    return {"cpu": cpu, "cpus": str(os.cpu_count()), "python": platform.python_version(),
            "platform": platform.platform(), "commit": commit, "load": _load()}


def run_case(case: Case, out: Path, runs: int, engine: str, wanted: tuple[str, ...] | None,
             log: Callable[[str], None]) -> list[dict]:
    rows: list[dict] = []
    tag = f"{case.comparison}{'-' + str(case.value) if case.param else ''}"
    outputs: dict[tuple[str, int], Path] = {}

    def gen(size: int) -> workloads.Generated:
        d = out / "data" / f"{case.workload}-{size}-{'-'.join(f'{k}{v}' for k, v in sorted(case.options.items()))}"
        return workloads.generate(case.workload, d, size, **case.options)

    # Peers alternate run by run (rsep, peer, rsep, peer, ...): on a shared machine whose
    # speed drifts over minutes, each engine's median then spans the same stretch of time.
    active = [peer for peer in case.peers if wanted is None or peer in wanted]
    sized = {peer: gen(min(case.size, case.caps.get(peer, case.size))) for peer in active}
    results: dict[str, list] = {peer: [] for peer in active}
    failed: dict[str, str] = {}
    # each peer's folder: its matches, and every run's times, not only the medians
    dirs = {peer: out / "runs" / tag / peer for peer in active}
    for d in dirs.values():
        d.mkdir(parents=True, exist_ok=True)
        (d / "rounds.jsonl").write_text("")
    for k in range(runs):
        for peer in active:
            if peer in failed or (peer == "reference" and k):
                continue
            g = sized[peer]
            spec = case.build(g, peer)
            spec["matches"] = str(dirs[peer] / "matches.jsonl")
            if _on_spark(case, peer, engine):
                spec["engine"] = "spark"
                spec["master"] = case.master or "local[2]"
                spec["per_file"] = SPARK_PER_FILE
            log(f"  {tag} {peer} size {g.size} run {k + 1}")
            r = peers.run(peers.PEERS[peer], spec, dirs[peer])
            if not r.ok:
                log(f"    {r.error}")
                failed[peer] = r.error
                continue
            results[peer].append(r)
            with open(dirs[peer] / "rounds.jsonl", "a", encoding="utf-8") as f:
                f.write(json.dumps({"round": k + 1, "events": g.events, "run_s": r.run_s,
                                    "cpu_s": r.cpu_s}) + "\n")
    for peer in active:
        g = sized[peer]
        if peer in failed:
            rows.append(_row(case, peer, engine, g, [], failed[peer], None))
            continue
        matches = dirs[peer] / "matches.jsonl"
        outputs[(peer, g.size)] = matches
        row = _row(case, peer, engine, g, results[peer], "ok", matches)
        if peer != "rsep" and results.get("rsep") and "rsep" not in failed:
            row.update(_paired(sized["rsep"], results["rsep"], g, results[peer],
                               _on_spark(case, "rsep", engine) or _on_spark(case, peer, engine)))
        if peer == "rsep" and not _on_spark(case, peer, engine):
            _stage_run(case, g, row, statistics.median(r.run_s for r in results[peer]),
                       out / "runs" / tag / "rsep-stages", log)
        rows.append(row)
    if case.master.startswith("local") and rows and rows[0]["status"] == "ok":
        # the Spark pipeline's matches against the same query run in this process
        here = out / "runs" / f"{case.comparison}-in-process" / "rsep" / "matches.jsonl"
        if here.is_file():
            a = agree.read_jsonl(here)
            b = agree.read_jsonl(outputs[("rsep", rows[0]["size"])])
            res = (agree.compare_matches(a, b, case.window) if case.kind == "cep"
                   else agree.compare_windows(a, b))
            rows[0]["agreement"] = "vs in-process: " + res.text()
            log(f"    spark vs in-process: {res.text()}")
    # agreement with rsep at the same size (rsep is run once more at a capped peer's size)
    for row in rows:
        if row["peer"] == "rsep" or row["status"] != "ok":
            continue
        size = row["size"]
        if ("rsep", size) not in outputs:
            g = gen(size)
            spec = case.build(g, "rsep")
            m = out / "runs" / tag / f"rsep-{size}" / "matches.jsonl"
            spec["matches"] = str(m)
            log(f"  {tag} rsep size {size} (for agreement)")
            r = peers.run(peers.PEERS["rsep"], spec, m.parent)
            if not r.ok:
                row["agreement"] = f"rsep failed: {r.error}"
                continue
            outputs[("rsep", size)] = m
        a = agree.read_jsonl(outputs[("rsep", size)])
        b = agree.read_jsonl(outputs[(row["peer"], size)])
        if case.kind == "cep":
            res = agree.compare_matches(a, b, case.window)
        else:
            # RSP-JS and rsp-rs evaluate from their first window on and up to the stream's
            # last event; rsep's first and last evaluations differ: compare theirs
            keys = {w["window"] for w in b} if row["peer"] in ("rspjs", "rsprs") else None
            res = agree.compare_windows(a, b, keys)
        row["agreement"] = res.text()
        log(f"    {row['peer']} vs rsep: {res.text()}")
    return rows


def _paired(rg: workloads.Generated, rsep: list, pg: workloads.Generated, peer: list,
            spark: bool) -> dict[str, object]:
    """How many times faster rsep is than a peer, run by run: each round's two runs are
    minutes apart at most (the engines alternate), so a drift of the machine's speed
    cancels in their ratio; the median over rounds (events per second, and per CPU-second)."""
    wall, cpu = [], []
    # rounds in order; a peer that runs once pairs with round 1
    for a, b in zip(rsep, peer, strict=False):
        if a.run_s > 0 and b.run_s > 0:
            wall.append((rg.events / a.run_s) / (pg.events / b.run_s))
        if not spark and a.cpu_s > 0 and b.cpu_s > 0:
            cpu.append((rg.events / a.cpu_s) / (pg.events / b.cpu_s))
    return {"paired_x_wall": round(statistics.median(wall), 3) if wall else "",
            "paired_x_cpu": round(statistics.median(cpu), 3) if cpu else ""}


def _stage_run(case: Case, g: workloads.Generated, row: dict, median_s: float, workdir: Path,
               log: Callable[[str], None]) -> None:
    """One more run of rsep with every stage timed (parse, match, state, output, engine).
    Timing costs a few per cent, so this run is not among the measured ones: its stages
    are scaled to the median run's time."""
    spec = case.build(g, "rsep")
    spec["matches"] = str(workdir / "matches.jsonl")
    spec["stage_times"] = True
    log(f"  {row['comparison']} rsep stage times")
    r = peers.run(peers.PEERS["rsep"], spec, workdir)
    if not r.ok or not r.stages or not r.run_s:
        log(f"    stage times: {r.error or 'none reported'}")
        return
    k = median_s / r.run_s
    row["stages"] = ";".join(f"{s}={v * k:.3f}" for s, v in r.stages.items())


def _row(case: Case, peer: str, engine: str, g: workloads.Generated, results: list,
         status: str, matches: Path | None) -> dict:
    row: dict[str, object] = {f: "" for f in FIELDS}
    row.update(comparison=case.comparison, param=case.param, value=case.value, peer=peer,
               engine=(case.master or engine) if peer == "rsep" else "", workload=case.workload, size=g.size,
               events=g.events, triples=g.triples, runs=len(results), status=status,
               what=case.what)
    if peer == "rsep" and results and all(r.note.startswith("path: native") for r in results):
        # (rsep's worker took the native path, rsep.windows.native or rsep.spaseq.native, as
        # rsep run would)
        row["engine"] = f"{row['engine']}, native path"
    if results:
        run_s = [r.run_s for r in results]
        med = statistics.median(run_s)
        row.update(startup_s=round(statistics.median(r.startup_s for r in results), 3),
                   run_s_median=round(med, 3), run_s_min=round(min(run_s), 3),
                   run_s_max=round(max(run_s), 3),
                   events_per_s=round(g.events / med, 1) if med else "",
                   triples_per_s=round(g.triples / med, 1) if med else "",
                   peak_rss_mb=round(max(r.peak_rss_mb for r in results), 1))
        cpu = statistics.median(r.cpu_s for r in results)
        # Spark's Python workers come and go inside the JVM's tree: sampling misses them
        if cpu > 0 and not _on_spark(case, peer, engine):
            row.update(cpu_s_median=round(cpu, 3), events_per_cpu_s=round(g.events / cpu, 1))
        lat = [r.latency_ms for r in results if r.latency_ms]
        if lat:
            row["latency_p50_ms"] = round(statistics.median(x["p50"] for x in lat), 3)
            row["latency_p99_ms"] = round(statistics.median(x["p99"] for x in lat), 3)
        st = results[len(results) // 2].stages
        if st:
            row["stages"] = ";".join(f"{k}={v:.3f}" for k, v in st.items())
        if matches is not None and matches.is_file():
            with open(matches, encoding="utf-8") as f:
                row["outputs"] = sum(1 for _ in f)
    return row


def main(name: str, size: int | None, engine: str, peer_list: str | None, runs: int,
         out: str, plots: bool = True, log: Callable[[str], None] = print) -> int:
    wanted = tuple(p.strip() for p in peer_list.split(",")) if peer_list else None
    if wanted:
        unknown = [p for p in wanted if p not in peers.PEERS]
        if unknown:
            raise ValueError(f"unknown peer(s) {', '.join(unknown)}; known: "
                             f"{', '.join(peers.PEERS)}")
    outdir = Path(out).resolve()
    outdir.mkdir(parents=True, exist_ok=True)
    m = machine()
    log(f"rsep bench {name}: {m['cpu']}, {m['cpus']} CPUs, load {m['load']}, commit {m['commit']}")
    rows: list[dict] = []
    t0 = time.time()
    for case in cases(name, size):
        log(f"{case.comparison} {case.param} {case.value}".rstrip())
        rows.extend(run_case(case, outdir, runs, engine, wanted, log))
    path = outdir / "measurements.csv"
    # rows of other benchmarks already in the folder stay: one table for several commands
    # (sweep-kb's rows share smartgrid-q1's comparison name, not its parameter)
    done = {(r["comparison"], r["param"]) for r in rows}
    if path.is_file():
        with open(path, encoding="utf-8", newline="") as f:
            old = [r for r in csv.DictReader(f)
                   if (r.get("comparison"), r.get("param", "")) not in done]
        rows = [{k: r.get(k, "") for k in FIELDS} for r in old] + rows
    with open(path, "w", encoding="utf-8", newline="") as f:
        wr = csv.DictWriter(f, FIELDS)
        wr.writeheader()
        wr.writerows(rows)
    with open(outdir / "machine.txt", "a", encoding="utf-8") as f:
        f.write(f"[{name}] " + ", ".join(f"{k}: {v}" for k, v in {
            **m, "load_after": _load(), "took_s": f"{time.time() - t0:.0f}"}.items()) + "\n")
    log(f"wrote {path}")
    if plots:
        for p in plot_all(rows, outdir):
            log(f"wrote {p}")
    return 0
