"""rsep bench: generators, flattening, agreement checks, the runner with rsep's own engines.

No peer (CORE, Flink, RSP-JS) runs here: they live in their own environments
(benchmarks/peers/setup_*.sh) and are exercised by `rsep bench`, not by CI.
"""

from __future__ import annotations

import csv
import hashlib
import importlib.util
import json
from pathlib import Path

import pytest

from rsep.bench import agree, queries, report, runner
from rsep.bench import workloads as w
from rsep.lang import parse_query
from rsep.stream.event import Event
from rsep.stream.files import StreamFile
from rsep.stream.source import DeadLetter, merge_streams

ROOT = Path(__file__).resolve().parents[2]


def digest(d: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())
            if p.suffix in (".trig", ".csv", ".nt")}


@pytest.mark.parametrize("name", sorted(w.GENERATORS))
def test_generators_are_deterministic_and_seeded(tmp_path, name):
    a = w.generate(name, tmp_path / "a", 500, seed=7)
    b = w.generate(name, tmp_path / "b", 500, seed=7)
    w.generate(name, tmp_path / "c", 500, seed=8)
    assert digest(tmp_path / "a") == digest(tmp_path / "b")
    assert digest(tmp_path / "a") != digest(tmp_path / "c")
    assert a.events == b.events == 500


@pytest.mark.parametrize("name", sorted(w.GENERATORS))
def test_trig_and_csv_hold_the_same_events(tmp_path, name):
    g = w.generate(name, tmp_path, 600, seed=3)
    total = 0
    for s in g.streams.values():
        events = [e for e in StreamFile(s.trig, s.iri) if isinstance(e, Event)]
        with open(s.csv, encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f))
        assert len(events) == len(rows) == s.events
        assert [e.start for e in events] == [int(r["t"]) for r in rows]
        assert sum(len(e.triples) for e in events) == s.triples
        total += s.events
    assert total == 600


@pytest.mark.parametrize("name", sorted(w.GENERATORS))
def test_background_graphs_are_valid_ntriples(tmp_path, name):
    import inspect

    from pyoxigraph import RdfFormat, parse

    takes_kb = "kb" in inspect.signature(w.GENERATORS[name]).parameters
    g = w.generate(name, tmp_path, 200, seed=3, **({"kb": 300} if takes_kb else {}))
    # N-Triples, not Turtle: bare numbers are a syntax error there
    parsed = sum(sum(1 for _ in parse(path=p, format=RdfFormat.N_TRIPLES))
                 for p in g.graphs.values())
    assert parsed == g.kb_triples


def test_stock_events_have_five_triples_and_flatten_to_their_csv_row(tmp_path):
    g = w.generate("stock", tmp_path, 300, seed=1)
    s = g.streams["stocks"]
    events = [e for e in StreamFile(s.trig, s.iri) if isinstance(e, Event)]
    with open(s.csv, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {len(e.triples) for e in events} == {5}
    for e, r in zip(events, rows, strict=True):
        flat = agree.flatten((t.subject, t.predicate, t.object) for t in e.triples)
        assert flat == {"subject": r["company"], "price": int(r["price"]),
                        "volume": int(r["volume"]), "sector": r["sector"],
                        "txid": int(r["txid"]), "type": r["type"]}


def test_flatten_refuses_a_graph_that_is_not_one_tuple():
    t = [("http://x/a", "http://x/p", 1), ("http://x/a", "http://x/p", 2)]
    with pytest.raises(ValueError, match="'p' occurs twice"):
        agree.flatten(t)


def test_sensor_stream_is_gen_stream_byte_for_byte(tmp_path):
    spec = importlib.util.spec_from_file_location("gen_stream", ROOT / "benchmarks" / "gen_stream.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.generate(tmp_path / "old.trig", 400, seed=5)
    g = w.generate("sensors", tmp_path / "new", 400, seed=5)
    assert Path(g.streams["sensors"].trig).read_bytes() == (tmp_path / "old.trig").read_bytes()


def test_generate_reuses_a_matching_folder_and_rewrites_another(tmp_path):
    a = w.generate("traffic", tmp_path, 100, seed=1)
    mtime = Path(a.streams["traffic1"].trig).stat().st_mtime_ns
    w.generate("traffic", tmp_path, 100, seed=1)
    assert Path(a.streams["traffic1"].trig).stat().st_mtime_ns == mtime
    b = w.generate("traffic", tmp_path, 120, seed=1)
    assert b.events == 120
    # data written by another version of the generators is written anew
    m = tmp_path / "manifest.json"
    m.write_text(m.read_text().replace(b.code, "0" * 16))
    mtime = Path(b.streams["traffic1"].trig).stat().st_mtime_ns
    w.generate("traffic", tmp_path, 120, seed=1)
    assert Path(b.streams["traffic1"].trig).stat().st_mtime_ns != mtime


def test_kb_is_grown_to_the_asked_size(tmp_path):
    g = w.generate("smartgrid", tmp_path, 30, seed=1, kb=5000)
    assert g.kb_triples == 5000
    lines = sum(1 for p in g.graphs.values() for _ in open(p, encoding="utf-8"))
    assert lines == 5000


def test_unknown_workload_and_bad_size():
    with pytest.raises(ValueError, match="unknown workload 'nope'"):
        w.generate("nope", "/tmp/x", 10)
    with pytest.raises(ValueError, match="at least 1"):
        w.generate("stock", "/tmp/x", 0)


def test_every_query_text_parses():
    texts = [queries.spaseq_zigzag(k, 100, s) for k in (3, 5, 7) for s in queries.STRATEGY] + \
        [queries.spaseq_bands(k, 100, "any") for k in (2, 3, 4, 5)] + \
        [queries.spaseq_query1(30), queries.spaseq_query2(30), queries.spaseq_query3(100),
         queries.spaseq_query5(30), queries.spaseq_query6(30), queries.rspql_sensors(1000, 100),
         queries.cqels_coupons(300, 30)]
    for t in texts:
        parse_query(t)
    assert "PATTERN (A B C D E)" in queries.flink_zigzag(5)
    assert "E.price < D.price" in queries.flink_zigzag(5)
    assert "FILTER (?p5 < ?p4)" in queries.spaseq_zigzag(5, 100)
    decl, q = queries.core_bands(3, 100)
    assert q.endswith("PARTITION BY [company] WITHIN 101 EVENTS")
    assert "e2[volume < 10]" in q


def test_in_one_window_is_002_tumbling_windows_closed_at_both_ends():
    assert agree.in_one_window([0, 5, 10], 10)
    assert not agree.in_one_window([5, 11], 10)
    assert agree.in_one_window([10, 20], 10)
    assert not agree.in_one_window([10, 21], 10)
    assert agree.in_one_window([3, 99], None)
    assert agree.in_one_window([13, 22], 10, start=3)


def test_compare_matches_counts_differences_and_drops_peer_matches_across_windows():
    rsep = [{"events": [1, 2, 3]}, {"events": [4, 5, 6]}]
    peer = [{"events": [4, 5, 6]}, {"events": [1, 2, 3]}, {"events": [8, 9, 12]}]
    ok = agree.compare_matches(rsep, peer, window=10)
    assert (ok.agree, ok.common, ok.only_rsep, ok.only_peer) == (True, 2, 0, 0)
    assert ok.text() == "agree (2 matches)"
    bad = agree.compare_matches(rsep + [{"events": [1, 2, 3]}], peer, window=None)
    assert (bad.agree, bad.common, bad.only_rsep, bad.only_peer) == (False, 2, 1, 1)
    assert bad.text().startswith("DISAGREE: 2 common, 1 only in rsep, 1 only in the peer")


def test_compare_windows_reads_numbers_by_value_and_finds_a_changed_row():
    d = "http://www.w3.org/2001/XMLSchema#double"
    i = "http://www.w3.org/2001/XMLSchema#integer"
    rsep = [{"window": 5, "rows": [{"s": "<a>", "m": f'"100.0"^^<{d}>', "n": f'"2"^^<{i}>'}]},
            {"window": 10, "rows": []}]
    peer = [{"window": 5, "rows": [{"s": "<a>", "m": f'"1.0E2"^^<{d}>', "n": f'"2"^^<{i}>'}]}]
    assert agree.compare_windows(rsep, peer).agree
    peer2 = [{"window": 5, "rows": [{"s": "<a>", "m": f'"101"^^<{d}>', "n": f'"2"^^<{i}>'}]}]
    res = agree.compare_windows(rsep, peer2)
    assert (res.agree, res.common, res.only_rsep, res.only_peer) == (False, 1, 1, 1)
    assert agree.compare_windows(rsep, peer2, keys=[10]).agree


def test_bench_runs_rsep_and_its_reference_and_reports_a_missing_peer(tmp_path, monkeypatch):
    monkeypatch.setenv("RSEP_BENCH_PEERS", str(tmp_path / "no-peers"))
    # today's path, whose stages (parse, match, ...) the stage-timed run reports; the native
    # path's (read_s, engine_s) are test_stock_core_worker_takes_the_native_path's
    monkeypatch.setenv("RSEP_NATIVE", "0")
    monkeypatch.chdir(tmp_path)  # a relative --out: the workers run in folders of their own
    logs: list[str] = []
    assert runner.main("stock-core", 400, "local", "rsep,reference,core", 1, "o",
                       plots=False, log=logs.append) == 0
    with open(tmp_path / "o" / "measurements.csv", encoding="utf-8", newline="") as f:
        rows = {r["peer"]: r for r in csv.DictReader(f)}
    assert rows["rsep"]["status"] == "ok" and rows["rsep"]["events"] == "400"
    assert rows["reference"]["agreement"].startswith("agree (")
    assert rows["core"]["status"] == "not installed: run benchmarks/peers/setup_core.sh"
    assert float(rows["rsep"]["events_per_s"]) > 0
    # a separate stage-timed run, scaled to the median run
    stages = dict(kv.split("=") for kv in rows["rsep"]["stages"].split(";"))
    assert list(stages) == ["parse", "match", "state", "output", "engine"]
    assert float(stages["parse"]) > 0 and float(stages["match"]) > 0
    assert abs(sum(map(float, stages.values())) - float(rows["rsep"]["run_s_median"])) < 0.01
    text = "\n".join(report.table(list(rows.values())).splitlines()[2:])
    assert "| stock-core | core | 400 | - |" in text
    assert "not installed: run benchmarks/peers/setup_core.sh |" in text
    t = report.targets(list(rows.values()))
    assert ("| same query both sides: SEQ with per-event filters, rsep >= CORE | not measured "
            "| not measured | - / - |") in t


def test_bench_cli_refuses_unknown_peers(tmp_path, capsys):
    from rsep.cli.main import main

    assert main(["bench", "stock-core", "--peers", "rsep,siddhi", "--out", str(tmp_path)]) == 2
    assert "unknown peer(s) siddhi" in capsys.readouterr().err


def test_esper_and_rsprs_texts_say_what_their_peers_run():
    # skip-till-any: every on each step, the company joined with the first event's, the span
    # a filter on the last step (the timer only bounds the state)
    epl = queries.esper_bands(3, 100)
    assert epl.startswith("select e1.t as t1, e2.t as t2, e3.t as t3 from pattern [every "
                          "e1=Stock(volume > 990) -> (every e2=Stock(company = e1.company, "
                          "volume < 10) -> every e3=Stock(company = e1.company, volume > 990, "
                          "t <= e1.t + 100))")
    assert epl.endswith("where timer:within(101 msec)]")
    zz = queries.esper_zigzag(5)
    assert "after match skip to next row pattern (A B C D E)" in zz
    assert "E as E.company = A.company and E.price < D.price" in zz
    # rsp-rs reads one clause a line: the window clause alone on its line, WINDOW first
    lines = queries.rsprs_select_all(5000, 1000).splitlines()
    assert ("FROM NAMED WINDOW ex:w ON STREAM <http://example.org/stream1> [RANGE 5000 STEP 1000]"
            in lines)
    assert "WINDOW ex:w { ?s ?p ?o }" in lines
    parse_query(queries.rspql_select_all(5000, 1000))


def test_esper_and_rsprs_specs_and_missing_installs(tmp_path, monkeypatch):
    """What the Java and Rust workers are handed (the same CSV and TriG files as CORE, Flink
    and RSP-JS), and a peer not built is a row that says how to build it, not a crash."""
    monkeypatch.setenv("RSEP_BENCH_PEERS", str(tmp_path / "no-peers"))
    g = w.generate("stock", tmp_path / "stock", 50, companies=2)
    spec = runner.zigzag_case(50).build(g, "esper")
    assert spec["csv"] == g.streams["stocks"].csv and spec["times"] == ["t1", "t2", "t3"]
    assert spec["columns"][0] == ["t", "long"] and ["company", "string"] in spec["columns"]
    s = w.generate("sensors", tmp_path / "sensors", 50)
    spec = runner.sensors_case(50).build(s, "rsprs")
    assert (spec["trig"], spec["stream"], spec["range"], spec["step"]) == (
        s.streams["sensors"].trig, w.SRBENCH, 1667, 500)
    assert "esper" in runner.cases("stock-core", 50)[0].peers
    assert "rsprs" in runner.cases("sensors-window", 50)[0].peers
    monkeypatch.chdir(tmp_path)
    logs: list[str] = []
    assert runner.main("rsprs-select", 2500, "local", "rsep,rsprs,esper", 1, "o",
                       plots=False, log=logs.append) == 0
    with open(tmp_path / "o" / "measurements.csv", encoding="utf-8", newline="") as f:
        rows = {r["peer"]: r for r in csv.DictReader(f)}
    assert rows["rsep"]["status"] == "ok" and rows["rsep"]["outputs"] == "3"  # windows 0, 1000, 2000
    assert rows["rsprs"]["status"] == "not installed: run benchmarks/peers/setup_rsprs.sh"
    assert "esper" not in rows  # not a peer of this comparison
    assert "esper" in runner.cases("credit-q2", 50)[0].peers
    assert "all matches after match skip to current row pattern (A B+)" in queries.esper_query2()


def test_esper_specs_of_traffic_and_vessels(tmp_path):
    """Query 5's three streams reach Esper as one CSV in time then stream order (B & C are
    adjacent rows), Query 6's harbour KB as one row per boat with its operator's name."""
    g = w.generate("traffic", tmp_path / "traffic", 30)
    spec = runner.appendix_case("traffic-q5", 30).build(g, "esper")
    with open(spec["csv"], encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(int(r["t"]), int(r["s"])) for r in rows] == [(i // 3, i % 3 + 1) for i in range(30)]
    assert spec["times"] == ["t1", "t2", "t3"] and "every a=Obs(s = 1, value > 3)" in spec["epl"]
    v = w.generate("vessels", tmp_path / "vessels", 50, kb=200)
    spec = runner.appendix_case("vessels-q6", 50, kb=200).build(v, "esper")
    with open(spec["preload"][0]["csv"], encoding="utf-8", newline="") as f:
        boats = {r["vessel"]: r for r in csv.DictReader(f)}
    assert len(boats) == 40 and boats["V7"]["name"] == "Boat 7"
    assert boats["V7"]["cname"] == "Company 2"
    assert "after match skip to next row pattern (A B+ C)" in spec["epl"]
    assert {"esper"} <= set(runner.cases("traffic-q5", 50)[0].peers)
    assert {"esper"} <= set(runner.cases("vessels-q6", 50)[0].peers)


def test_events_read_back_in_time_order_across_streams(tmp_path):
    g = w.generate("smartgrid", tmp_path, 90, seed=2, kb=400)
    files = [StreamFile(s.trig, s.iri) for s in g.streams.values()]
    times = [e.start for e in merge_streams(files, DeadLetter(None))]
    assert times == list(range(90))


def test_stream_cut_into_spark_files_keeps_every_event_whole(tmp_path):
    """The Spark sweep's files: events in order, a time triple with its graph, the
    prefixes in every file."""
    from rsep.bench.workers.rsep_worker import _cut

    g = w.generate("sensors", tmp_path / "g", 250, seed=3)
    s = g.streams["sensors"]
    out = tmp_path / "parts"
    out.mkdir()
    _cut(s.trig, str(out), 100)
    parts = sorted(out.iterdir())
    assert [p.name for p in parts] == ["part-000000.trig", "part-000001.trig",
                                       "part-000002.trig"]

    def read(path: str) -> list:
        dead = DeadLetter(None)
        evs = [(e.graph, e.start, sorted(map(str, e.triples)))
               for e in merge_streams([StreamFile(path, s.iri)], dead)]
        assert dead.count == 0
        return evs

    cut = [read(str(p)) for p in parts]
    assert [len(c) for c in cut] == [100, 100, 50]
    assert [x for c in cut for x in c] == read(s.trig)


def test_spark_sweep_runs_one_query_in_process_and_on_each_master(tmp_path):
    cs = runner.cases("sweep-spark", 300)
    assert [c.master for c in cs] == ["in-process", "local[1]", "local[2]"]
    assert all(c.param == "spark_cores" and c.value == c.master for c in cs)
    g = w.generate("stock", tmp_path, 300, seed=42, **cs[0].options)
    texts = {c.build(g, "rsep")["query"] for c in cs}
    assert texts == {queries.spaseq_bands(3, runner.WINDOW, "next")}
    assert parse_query(texts.pop()) is not None


def test_spark_window_sweep_runs_sensors_window_in_process_and_on_each_master(tmp_path):
    cs = runner.cases("sweep-spark-window", 300)
    assert [c.master for c in cs] == ["in-process", "local[1]", "local[2]"]
    assert all(c.param == "spark_window" and c.value == c.master and c.kind == "window"
               and c.peers == ("rsep",) for c in cs)
    g = w.generate("sensors", tmp_path, 300, seed=42, **cs[0].options)
    texts = {c.build(g, "rsep")["query"] for c in cs}
    assert texts == {queries.rspql_sensors(1667, 500)}
    assert parse_query(texts.pop()) is not None


def test_report_measures_the_spark_targets_and_the_stages():
    def row(value, eps, **kw):
        r = {f: "" for f in runner.FIELDS}
        r.update(comparison="sweep-spark", param="spark_cores", value=value, peer="rsep",
                 status="ok", events="1000", events_per_s=str(eps), **kw)
        return r

    rows = [row("in-process", 40000, stages="parse=0.01;match=0.02;state=0.005;output=0.001;"
                "engine=0.004"),
            row("local[1]", 10000), row("local[2]", 18000)]
    t = report.targets(rows)
    assert ("| Spark pipeline, partitioned query: local[1] -> local[2] >= 1.7x | "
            "10,000 -> 18,000 = 1.80x | - | yes |") in t
    assert ("| Spark pipeline per core within 2x of the single process | local[2]: 40,000 vs "
            "9,000 per core = 4.44x; local[1]: 40,000 vs 10,000 = 4.00x | - | no / no |") in t
    assert report.stages(rows).splitlines()[2] == \
        "| sweep-spark spark_cores=in-process | 10.0 | 20.0 | 5.0 | 1.0 | 4.0 | 40.0 |"
    assert ("| Spark pipeline, windowed query: local[2] per core within 1.5x of the single "
            "process | not measured | - | - |") in t
    win = [dict(r, comparison="sweep-spark-window", param="spark_window") for r in rows]
    win[2]["events_per_s"] = "60000"
    assert ("| Spark pipeline, windowed query: local[2] per core within 1.5x of the single "
            "process | 40,000 vs 30,000 per core = 1.33x | - | yes |") in report.targets(win)


def test_citybench_join_agrees_with_the_naive_baseline(tmp_path, monkeypatch):
    """Two windowed streams joined through the background KB: rsep's rows per window are
    the naive baseline's (a snapshot per window in pyoxigraph)."""
    monkeypatch.chdir(tmp_path)
    logs: list[str] = []
    assert runner.main("citybench-join", 600, "local", None, 2, "o", plots=False,
                       log=logs.append) == 0
    with open(tmp_path / "o" / "measurements.csv", encoding="utf-8", newline="") as f:
        rows = {r["peer"]: r for r in csv.DictReader(f)}
    assert rows["naive"]["agreement"] == "agree (30 windows)"
    # engines alternate run by run, so a drifting machine's speed reaches both medians
    runs = [line.split()[1:] for line in logs if " run " in line]
    assert runs == [["rsep", "size", "600", "run", "1"], ["naive", "size", "600", "run", "1"],
                    ["rsep", "size", "600", "run", "2"], ["naive", "size", "600", "run", "2"]]
    assert rows["rsep"]["runs"] == rows["naive"]["runs"] == "2"
    # rsep's speed over the peer's, round by round: between the two runs' ratios
    res = {peer: [json.loads(line) for line in (tmp_path / "o" / "runs" / "citybench-join" / peer
                                                 / "rounds.jsonl").read_text().splitlines()]
           for peer in ("rsep", "naive")}
    rounds = sorted(n["run_s"] / r["run_s"] for r, n in zip(res["rsep"], res["naive"], strict=True))
    assert float(rows["naive"]["paired_x_wall"]) == pytest.approx(sum(rounds) / 2, rel=1e-3)
    assert rows["rsep"]["paired_x_wall"] == ""
    text = report.paired(list(rows.values()))
    assert "| citybench-join | naive | 2 | " in text and text.count("\n") == 2
    assert rows["rsep"]["outputs"] == rows["naive"]["outputs"]


@pytest.mark.parametrize("switch", ["", "RSEP_NATIVE", "RSEP_PURE"])
def test_sensors_window_worker_takes_the_native_path_as_rsep_run_does(tmp_path, monkeypatch,
                                                                     switch):
    """sensors-window's rsep worker runs the query on the native path (rsep.windows.native),
    as `rsep run` does, and says so; its rows per window are the naive baseline's. With
    RSEP_NATIVE=0 or RSEP_PURE=1 it runs today's path, as `rsep run` then does."""
    if switch:
        monkeypatch.setenv(switch, "0" if switch == "RSEP_NATIVE" else "1")
    monkeypatch.chdir(tmp_path)
    assert runner.main("sensors-window", 3000, "local", "rsep,naive", 1, "o", plots=False,
                       log=lambda s: None) == 0
    with open(tmp_path / "o" / "measurements.csv", encoding="utf-8", newline="") as f:
        rows = {r["peer"]: r for r in csv.DictReader(f)}
    assert rows["rsep"]["status"] == rows["naive"]["status"] == "ok"
    assert rows["naive"]["agreement"].startswith("agree (")
    assert rows["rsep"]["outputs"] == rows["naive"]["outputs"]
    run = tmp_path / "o" / "runs" / "sensors-window" / "rsep"
    note = json.loads((run / "result.json").read_text())["note"]
    if switch:
        assert rows["rsep"]["engine"] == "local"
        assert note.startswith("path: today's (RSEP_")
    else:
        assert rows["rsep"]["engine"] == "local, native path"
        assert note.startswith("path: native (")
        stages = json.loads((run / "result.json").read_text())["stages"]
        assert set(stages) == {"read_s", "engine_s"} and stages["read_s"] > 0
    assert not list(run.glob("*.native.jsonl"))  # (the native run's own output, rewritten)


@pytest.mark.parametrize("switch", ["", "RSEP_NATIVE"])
def test_stock_vshape_worker_takes_the_native_path_as_rsep_run_does(tmp_path, monkeypatch,
                                                                   switch):
    """stock-vshape's rsep worker runs the SPASEQ chain on the native path
    (rsep.spaseq.native), as `rsep run` does, and says so; its matches are the reference
    evaluator's. With RSEP_NATIVE=0 it runs today's path."""
    if switch:
        monkeypatch.setenv(switch, "0")
    monkeypatch.chdir(tmp_path)
    assert runner.main("stock-vshape", 3000, "local", "rsep,reference", 1, "o", plots=False,
                       log=lambda s: None) == 0
    with open(tmp_path / "o" / "measurements.csv", encoding="utf-8", newline="") as f:
        rows = {r["peer"]: r for r in csv.DictReader(f)}
    assert rows["reference"]["agreement"].startswith("agree (")
    assert rows["rsep"]["outputs"] == rows["reference"]["outputs"] != "0"
    note = json.loads((tmp_path / "o" / "runs" / "stock-vshape" / "rsep" / "result.json")
                      .read_text())["note"]
    if switch:
        assert rows["rsep"]["engine"] == "local" and note.startswith("path: today's (RSEP_")
    else:
        assert rows["rsep"]["engine"] == "local, native path"
        assert note.startswith("path: native (")


def test_stock_core_worker_takes_the_native_path(tmp_path, monkeypatch):
    """stock-core's skip-till-any bands run on the native path in the rsep worker; its
    matches are the reference evaluator's."""
    monkeypatch.chdir(tmp_path)
    assert runner.main("stock-core", 3000, "local", "rsep,reference", 1, "o", plots=False,
                       log=lambda s: None) == 0
    with open(tmp_path / "o" / "measurements.csv", encoding="utf-8", newline="") as f:
        rows = {r["peer"]: r for r in csv.DictReader(f)}
    assert rows["reference"]["agreement"].startswith("agree (")
    assert rows["rsep"]["engine"] == "local, native path"
    assert rows["rsep"]["outputs"] == rows["reference"]["outputs"] != "0"
    stages = dict(kv.split("=") for kv in rows["rsep"]["stages"].split(";"))
    assert list(stages) == ["read_s", "engine_s"] and float(stages["read_s"]) > 0
