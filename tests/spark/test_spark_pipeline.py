"""The Spark pipeline gives the in-process engine's results, evaluation time by evaluation time."""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from rsep.runtime.engine import Engine
from rsep.spark import parse
from rsep.spark.pipeline import SparkPipeline, collect_outputs, collect_rejected, run_files
from rsep.spark.plan import partitioning
from rsep.spark.state import whole_texts
from rsep.stream.files import StreamFile
from rsep.stream.jsonl import JsonlStreamFile
from rsep.stream.source import DeadLetter, OrderingPolicy, merge_streams
from rsep.testing.snippets import ROOT

SRBENCH = ROOT.parent / "shared" / "data" / "srbench-weather" / "weather-stream.trig"
SR = "http://example.org/srbench"
COUPON = ROOT / "examples" / "coupon"
SPASEQ = ROOT / "tests" / "data" / "spaseq"
SG = "http://smartgrid.org/"

def inprocess(queries: list[Path | str], streams: list[tuple[str, str]], graphs=(),
              time_unit_ms=None, allowed_lateness=0) -> dict[str, list[dict]]:
    """Each query alone in the in-process engine, as the CLI runs it."""
    out: dict[str, list[dict]] = {}
    for q in queries:
        eng = Engine(time_unit_ms=time_unit_ms)
        for iri, path in graphs:
            eng.add_graph(iri, path)
        text, source = (q if isinstance(q, tuple) else (Path(q).read_text(), str(q)))
        rt = eng.register(text, source=source, default_name=Path(source).stem)
        files = [JsonlStreamFile(p, iri) if str(p).endswith(".jsonl") else StreamFile(p, iri)
                 for iri, p in streams]
        dead = DeadLetter()
        out[rt.name] = [o.to_json() for o in
                        eng.run(merge_streams(files, dead, OrderingPolicy(allowed_lateness)))]
    return out


def on_spark(spark, tmp_path, queries, streams, graphs=(), batch=False, files_per_batch=None,
             **kw):
    pipe = SparkPipeline(spark, queries, streams=streams, graphs=graphs, **kw)
    got: dict[str, list[dict]] = defaultdict(list)
    rejected: list[dict] = []

    def on_batch(df, batch_id):
        for o in collect_outputs(df):
            got[o.query].append(o.to_json())
        rejected.extend(json.loads(r) for r in collect_rejected(df))

    run_files(pipe, on_batch, checkpoint=str(tmp_path / "ck"), batch=batch,
              max_files_per_trigger=files_per_batch)
    return dict(got), rejected, pipe


def by_time(outs: list[dict]) -> list[tuple[object, Counter[str]]]:
    """Evaluation time by evaluation time, in output order; within one evaluation, the
    multiset of its lines (SPARQL gives no order across buckets; a line output twice
    counts twice)."""
    groups: dict = defaultdict(Counter)
    for o in outs:
        groups[o["time"]][json.dumps(o, sort_keys=True)] += 1
    return list(groups.items())


def assert_same(spark_out: dict, ref: dict) -> None:
    for name, outs in ref.items():
        assert by_time(spark_out.get(name, [])) == by_time(outs), name
    assert set(spark_out) <= set(ref)


def test_srbench_queries_of_every_dialect(spark, tmp_path):
    # every example over the SRBench stream: RSP-QL, C-SPARQL, CQELS, SPASEQ, EP-SPARQL...
    queries = [ROOT / "examples" / "srbench-hot.rq"] + [
        q for q in sorted((ROOT / "docs" / "examples").glob("*.rq"))
        if "http://example.org/srbench" in q.read_text() or "epsparql" in q.name]
    assert len(queries) >= 6
    streams = [(SR, str(SRBENCH))]
    ref = inprocess(queries, streams)
    assert all(ref.values())  # every query has results to compare
    # two shuffle partitions, as --master 'local[2]' has: an SRBench event holds many
    # sensors' readings, and spaseq.rq's matches came out once per bucket (issue 45)
    session = spark.newSession()
    session.conf.set("spark.sql.shuffle.partitions", "2")
    got, rejected, _ = on_spark(session, tmp_path, queries, streams)
    assert rejected == []
    assert_same(got, ref)


def test_rsepql_match_and_coupon_queries(spark, tmp_path):
    queries = [ROOT / "docs/examples/rsepql.rq", COUPON / "q1-csparql.rq",
               COUPON / "q2-cqels.rq"]
    streams = [("http://example.org/S", str(ROOT / "examples/rsepql/figure1.trig")),
               ("http://coupons", str(COUPON / "coupons.trig")),
               ("http://locations", str(COUPON / "locations.trig"))]
    graphs = [("http://products", str(COUPON / "products.ttl"))]
    # The three streams are merged into one timeline in both runs.
    ref = {}
    for q in queries:
        ref.update(inprocess([q], streams, graphs, time_unit_ms=60_000))
    assert len(ref) == 3 and sum(map(len, ref.values())) >= 3
    got, rejected, _ = on_spark(spark, tmp_path, queries, streams, graphs, time_unit_ms=60_000)
    assert rejected == []
    assert_same(got, ref)


def test_spaseq_query1_batch_replay(spark, tmp_path):
    queries = [SPASEQ / "query1.rq"]
    streams = [(SG + "mainSource", str(SPASEQ / "power.trig")),
               (SG + "weather", str(SPASEQ / "weather.trig")),
               (SG + "storageSource", str(SPASEQ / "storage.trig"))]
    graphs = [(SG + "db", str(SPASEQ / "homes.ttl"))]
    ref = inprocess(queries, streams, graphs, time_unit_ms=60_000)
    assert len(ref["query1"]) == 2
    got, rejected, pipe = on_spark(spark, tmp_path, queries, streams, graphs, batch=True,
                                   time_unit_ms=60_000)
    assert pipe.config.queries[0].partitioning.key == ()  # strict contiguity: one key
    assert rejected == []
    assert_same(got, ref)


PARTITIONED = """PREFIX : <http://example.org/>
SELECT ?c ?p1 ?p2
WITHIN 10 MINUTES
FROM STREAM S1 <http://example.org/stocks>
WHERE {
  SEQ (A: B)
  DEFINE GPM A ON S1 { ?c :price ?p1 . FILTER(?p1 > 80) }
  DEFINE GPM B ON S1 { ?c :price ?p2 . FILTER(?p2 < ?p1) }
}
"""


def stock_stream(path: Path, n: int, companies: int = 7, seed: int = 1,
                 fmt: str = "trig", per_event: int = 1) -> Path:
    """``n`` events of 1 to ``per_event`` companies' prices each (an event of several
    companies goes to several buckets of a split query)."""
    rnd = random.Random(seed)
    lines = ["@prefix : <http://example.org/> .",
             "@prefix prov: <http://www.w3.org/ns/prov#> ."] if fmt == "trig" else []
    for i in range(n):
        cs = rnd.sample(range(companies), rnd.randint(1, per_event))
        prices = [(c, rnd.randrange(100)) for c in cs]
        if fmt == "trig":
            body = " ".join(f":c{c} :price {p} ." for c, p in prices)
            lines.append(f":e{i} prov:generatedAtTime {i} . :e{i} {{ {body} }}")
        else:
            lines.append(json.dumps({"graph": f"http://example.org/e{i}", "time": i,
                                     "triples": " ".join(f"<http://example.org/c{c}> "
                                                         f"<http://example.org/price> {p} ."
                                                         for c, p in prices)}))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(("buckets", "partitions"), [(3, 1), (7, 4)])
def test_partitioned_spaseq_equals_unpartitioned(spark, tmp_path, buckets, partitions):
    # events of one to four companies: each goes to the buckets of all of them, and each
    # bucket answers for its own companies only
    q = (PARTITIONED, "partitioned.rq")
    data = stock_stream(tmp_path / "stocks.jsonl", 300, fmt="jsonl", per_event=4)
    streams = [("http://example.org/stocks", str(data))]
    ref = inprocess([q], streams, time_unit_ms=60_000)
    assert len(ref["partitioned"]) == 229
    session = spark.newSession()
    session.conf.set("spark.sql.shuffle.partitions", str(partitions))
    got, rejected, pipe = on_spark(session, tmp_path, [q], streams, time_unit_ms=60_000,
                                   buckets=buckets)
    qp = pipe.config.queries[0]
    assert (qp.partitioning.key, qp.buckets) == (("c",), buckets)
    assert rejected == []
    assert_same(got, ref)


def test_partition_keys_and_reasons():
    from rsep.lang import parse_query

    p = partitioning(parse_query(PARTITIONED))
    assert p.key == ("c",) and p.reason == (
        "every GPM binds ?c and no strategy of the sequence is strict contiguity: an event is "
        "matched only against the runs holding one of its values of ?c, so an event of values "
        "a run does not hold can neither extend nor break it; each bucket answers for its own "
        "values only")
    # skip-till-next: a match of several companies takes the next event of any of them
    p = partitioning(parse_query(PARTITIONED.replace("SEQ (A: B)", "SEQ (A; B)")))
    assert p.key == () and "an event of one value decides the next event of another" in p.reason
    p = partitioning(parse_query((ROOT / "docs/examples/spaseq.rq").read_text()))
    assert p.key == () and "an event may carry several values of ?sensor" in p.reason
    p = partitioning(parse_query((SPASEQ / "query1.rq").read_text()))
    assert p.key == () and "strict contiguity" in p.reason
    p = partitioning(parse_query((ROOT / "docs/examples/rspql.rq").read_text()))
    assert p.key == () and "no split of the events is provably exact" in p.reason


HEAD = "@prefix : <http://example.org/> .\n@prefix prov: <http://www.w3.org/ns/prov#> .\n"


@pytest.mark.parametrize("whole", [True, False])
def test_malformed_and_late_records_go_to_the_dead_letter_output(spark, tmp_path, monkeypatch,
                                                                 whole):
    # whole: each state key reads the texts (one-key queries); else the parse stage does
    import os

    monkeypatch.setattr(parse, "WHOLE_TEXTS", whole)

    d = tmp_path / "in"
    d.mkdir()
    (d / "a.trig").write_text(HEAD + ":g1 prov:generatedAtTime 1 . :g1 { :a :p :b . }\n"
                              ":g2 prov:generatedAtTime 5 . :g2 { :a :p :c . }\n"
                              ":g3 prov:generatedAtTime 6 . :g3 { :a :p  . }\n")  # malformed
    # A later micro-batch: 2 is 3 behind the stream's 5 (late), 4 is within the lateness.
    (d / "b.trig").write_text(HEAD + ":g4 prov:generatedAtTime 2 . :g4 { :a :p :d . }\n"
                              ":g5 prov:generatedAtTime 4 . :g5 { :a :p :e . }\n")
    os.utime(d / "a.trig", (1_000_000, 1_000_000))
    (tmp_path / "ok.trig").write_text(HEAD + ":g1 prov:generatedAtTime 1 . :g1 { :a :p :b . }\n"
                                      ":g2 prov:generatedAtTime 5 . :g2 { :a :p :c . }\n"
                                      ":g5 prov:generatedAtTime 4 . :g5 { :a :p :e . }\n")
    q = ("PREFIX : <http://example.org/>\nREGISTER RSTREAM :o AS SELECT ?o "
         "FROM NAMED WINDOW :w ON :s [RANGE 100 STEP 1] WHERE { WINDOW :w { :a :p ?o } }",
         "late.rq")
    # a second query: a malformed record is still reported once, a late event once a query
    q2 = (q[0].replace(":o AS", ":o2 AS").replace("STEP 1]", "STEP 2]"), "late2.rq")
    s = "http://example.org/s"
    ref = inprocess([q, q2], [(s, str(tmp_path / "ok.trig"))], allowed_lateness=2)
    got, rejected, pipe = on_spark(spark, tmp_path, [q, q2], [(s, str(d))], allowed_lateness=2,
                                   files_per_batch=1)
    assert whole_texts(pipe.config)
    # g3 is malformed, and so its time triple names no graph: two rejections, as in-process.
    assert sorted((Path(r["file"]).name, r["line"]) for r in rejected) == [
        ("a.trig", 5), ("a.trig", 5), ("b.trig", 3), ("b.trig", 3)]
    late = [r for r in rejected if r["file"].endswith("b.trig")][0]
    assert late["reason"] == ("timestamp 2 of <http://example.org/g4> is late: the stream is "
                              "already at 5 (allowed lateness 2)")
    assert_same(got, ref)


def test_cli_engine_spark_equals_inprocess(spark, capsys):
    from rsep.cli.main import main

    args = ["run", str(COUPON / "q2-cqels.rq"), "--stream",
            f"http://coupons={COUPON / 'coupons.trig'}", "--stream",
            f"http://locations={COUPON / 'locations.trig'}", "--graph",
            f"http://products={COUPON / 'products.ttl'}", "--time-unit", "1m"]
    assert main(args) == 0
    ref = capsys.readouterr().out
    assert main(args + ["--engine", "spark"]) == 0
    assert capsys.readouterr().out == ref


def test_explain_shows_the_spark_partition_key(tmp_path, capsys):
    from rsep.cli.main import main

    q = tmp_path / "p.rq"
    q.write_text(PARTITIONED)
    assert main(["explain", str(q)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "on Spark: partition key: ?c (every GPM binds ?c and no strategy of the sequence is "
        "strict contiguity: an event is matched only against the runs holding one of its "
        "values of ?c, so an event of values a run does not hold can neither extend nor "
        "break it; each bucket answers for its own values only)")


def test_cli_batch_replay_with_parquet_and_jsonl_sinks(spark, tmp_path, capsys):
    from rsep.cli.main import main

    q = tmp_path / "partitioned.rq"
    q.write_text(PARTITIONED)
    data = stock_stream(tmp_path / "stocks.trig", 120)
    args = ["run", str(q), "--stream", f"http://example.org/stocks={data}", "--time-unit", "1m"]
    assert main(args) == 0
    ref = capsys.readouterr().out.splitlines()
    assert len(ref) == 16
    # the sinks land beside the stream file: neither reader may scan their batch=N folders
    for fmt, mode in (("parquet", ["--batch"]), ("jsonl", ["--batch"]), ("jsonl", [])):
        out = tmp_path / (fmt + "-".join(mode))
        assert main(args + ["--engine", "spark", *mode, "--sink-dir", str(out),
                            "--sink-format", fmt]) == 0
        assert capsys.readouterr().out.splitlines() == ref
        if fmt == "parquet":
            rows = spark.read.parquet(str(out / "results" / "batch=0000000000")).collect()
            assert sorted(r.json for r in rows) == sorted(ref)
            assert {r.query for r in rows} == {"partitioned"}
        else:
            from rsep.spark.pipeline import read_sink

            assert read_sink(out) == ref


def test_spark_hash_is_spark_sqls_hash(spark):
    from pyspark.sql import functions as F

    from rsep.spark.plan import spark_hash

    rnd = random.Random(3)
    alphabet = "abcXYZ09#~-_ éü日本\U0001f600"
    texts = ["", "a", "spaseq#0", "spaseq#1"] + [
        "".join(rnd.choice(alphabet) for _ in range(rnd.randrange(1, 20))) for _ in range(300)]
    df = spark.createDataFrame([(t,) for t in texts], "t string")
    got = {r.t: r.h for r in df.select("t", F.hash("t").alias("h")).collect()}
    assert {t: spark_hash(t) for t in texts} == got


def test_buckets_of_a_partitioned_query_run_in_distinct_shuffle_partitions(spark, tmp_path):
    # "spaseq#0" and "spaseq#1" hash to the same partition of 2 (and of 3 with #1 and #3 ...):
    # unsalted, one task ran every bucket and local[2] was no faster than local[1].
    from pyspark.sql import functions as F

    from rsep.spark.parse import events_from_records

    data = stock_stream(tmp_path / "stocks.jsonl", 200, fmt="jsonl")
    for n in (2, 3, 4):
        s = spark.newSession()
        s.conf.set("spark.sql.shuffle.partitions", str(n))
        pipe = SparkPipeline(s, [(PARTITIONED, "spaseq.rq")],
                             streams=[("http://example.org/stocks", str(data))],
                             time_unit_ms=60_000)
        qp = pipe.config.queries[0]
        assert qp.buckets == n and all(k.startswith(f"spaseq#{b}") for b, k in enumerate(qp.keys))
        ev = events_from_records(pipe.file_records(streaming=False), pipe.config)
        placed = (ev.repartition(n, "key").select("key", F.spark_partition_id().alias("p"))
                  .distinct().collect())
        where = {r.key: r.p for r in placed}
        assert sorted(where) == sorted(qp.keys)
        assert sorted(where.values()) == list(range(n))


DROP = """PREFIX : <http://example.org/>
SELECT ?c ?p1 ?p2 WHERE { { ?c :pr ?p1 } SEQ { ?c :pr ?p2 }
FILTER (?p2 < ?p1 && getDURATION() < 30) }"""
ISSUE21 = """@prefix : <http://example.org/> .
@prefix prov: <http://www.w3.org/ns/prov#> .
:g1 { :c :pr 70 . } :g1 prov:generatedAtTime 0 .
:g2 { :c :pr 80 . } :g2 prov:generatedAtTime 5 .
:g3 { :c :pr 75 . } :g3 prov:generatedAtTime 10 .
"""


def test_a_deferred_epsparql_event_at_the_end_of_the_input(spark, tmp_path):
    """Issue 21 on Spark: nothing arrives after 10. Chronological's 70 (at 0) blocks 80 ->
    75 until it leaves the 30-unit window at 30; the stage's engine takes that decision
    when the end of the input closes it (with --until 40, or without --until), as
    in-process. Recent outputs it at 10."""
    data = tmp_path / "s.trig"
    data.write_text(ISSUE21)
    streams = [("http://example.org/S", str(data))]
    for policy, until, time in [("chronological", 40, 30), ("recent", 40, 10),
                                ("chronological", None, 30)]:
        got, rejected, _ = on_spark(spark, tmp_path / f"{policy}-{until}", [(DROP, "drop.rq")],
                                    streams, policy=policy, until=until)
        assert rejected == []
        assert [(o["time"], o["from"], o["to"], o["bindings"]["p1"].split('"')[1],
                 o["bindings"]["p2"].split('"')[1]) for o in got["drop"]] == [
            (time, 5, 10, "80", "75")], (policy, until)


def test_the_frontier_takes_a_deferred_decision_before_the_end(spark, tmp_path):
    """The release frontier is the stage's watermark: a later file moving it to 33 settles
    every key's engine to 33, so the decision due at 30 is output in that micro-batch,
    before the end of the input closes anything."""
    import os

    d = tmp_path / "stream"
    d.mkdir()
    (d / "a.trig").write_text(ISSUE21)
    (d / "b.trig").write_text(ISSUE21.split(":g1")[0] + ":g9 { :d :pr 1 . } :g9 prov:generatedAtTime 33 .\n")
    os.utime(d / "a.trig", (1_000_000, 1_000_000))
    os.utime(d / "b.trig", (2_000_000, 2_000_000))
    pipe = SparkPipeline(spark, [(DROP, "drop.rq")], streams=[("http://example.org/S", str(d))],
                         policy="chronological")
    batches: list[tuple[int, list]] = []

    def on_batch(df, batch_id):
        batches.append((batch_id, [(o.time, o.to_json()["from"]) for o in collect_outputs(df)]))

    run_files(pipe, on_batch, checkpoint=str(tmp_path / "ck"), max_files_per_trigger=1)
    outs = [(b, o) for b, os_ in batches for o in os_]
    assert [o for _, o in outs] == [(30, 5)]
    # the batch that read b.trig (frontier 33), not the end-of-input marker's
    assert outs[0][0] == min(b for b, _ in batches) + 1


def test_a_byte_cap_splits_a_streaming_run_into_micro_batches(spark, tmp_path, capsys):
    """A run over more text than --max-bytes-per-batch takes it in several micro-batches
    (memory bounded by the cap, not the input) and answers as in-process."""
    import os

    from rsep.cli.main import main
    from rsep.spark.pipeline import read_sink

    q = tmp_path / "partitioned.rq"
    q.write_text(PARTITIONED)
    whole = stock_stream(tmp_path / "stocks.trig", 160)
    head, body = whole.read_text().splitlines()[:2], whole.read_text().splitlines()[2:]
    src = tmp_path / "in"
    src.mkdir()
    for i in range(4):  # four files, dated in stream order (Spark's file source takes them so)
        part = src / f"part-{i}.trig"
        part.write_text("\n".join(head + body[i * 40:(i + 1) * 40]) + "\n")
        os.utime(part, (1_700_000_000 + i, 1_700_000_000 + i))
    assert main(["run", str(q), "--stream", f"http://example.org/stocks={whole}",
                 "--time-unit", "1m"]) == 0
    ref = capsys.readouterr().out.splitlines()
    assert len(ref) >= 10
    out = tmp_path / "out"
    assert main(["run", str(q), "--stream", f"http://example.org/stocks={src}", "--time-unit",
                 "1m", "--engine", "spark", "--max-bytes-per-batch", "2K",
                 "--sink-dir", str(out)]) == 0
    assert capsys.readouterr().out.splitlines() == ref
    assert read_sink(out) == ref
    # each ~2.3 KiB file is a micro-batch of its own, then the end of the input
    assert len(list((out / "results").glob("batch=*"))) >= 4


def test_byte_and_file_caps_are_refused_together(capsys):
    from rsep.cli.main import main
    from rsep.cli.run import _size_arg

    assert [_size_arg(t) for t in ("65536", "16M", "2k", "1GB", "0")] == [
        65536, 16 << 20, 2048, 1 << 30, 0]
    q = COUPON / "q2-cqels.rq"
    stream = f"http://coupons={COUPON / 'coupons.trig'}"
    for other in (["--max-files-per-batch", "1"], ["--batch"]):
        assert main(["run", str(q), "--stream", stream, "--engine", "spark",
                     "--max-bytes-per-batch", "1M", *other]) == 2  # as every refused option
        assert "--max-bytes-per-batch caps a streaming run's micro-batches" in \
            capsys.readouterr().err
    assert main(["run", str(q), "--stream", stream, "--max-bytes-per-batch", "1M"]) == 2
    assert "--max-bytes-per-batch applies to --engine spark runs" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["run", str(q), "--stream", stream, "--engine", "spark",
              "--max-bytes-per-batch", "lots"])
    assert "must be a size such as 65536, 16M or 1G" in capsys.readouterr().err
