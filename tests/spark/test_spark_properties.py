"""On random streams cut into random files, the Spark pipeline gives the in-process engine's
results, whether each state key reads the texts itself (one-key queries: whole texts) or the
parse stage ships it packed N-Triples, in one batch job or a micro-batch a file (events then
wait in the state store for the next file's progress)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_spark_pipeline import assert_same, inprocess, on_spark

from rsep.spark import parse
from rsep.spark.state import whole_texts

HEAD = "@prefix : <http://example.org/> .\n@prefix prov: <http://www.w3.org/ns/prov#> .\n"
S = "http://example.org/s"
OBJECTS = [":b", ":c", "1", "2.5", '"x"']

QUERIES = [
    "REGISTER RSTREAM :o AS SELECT ?x ?o FROM NAMED WINDOW :w ON :s [RANGE {r} STEP {s}] "
    "WHERE {{ WINDOW :w {{ ?x :p ?o }} }}",
    "REGISTER ISTREAM :o AS SELECT ?x (COUNT(?o) AS ?n) FROM NAMED WINDOW :w ON :s "
    "[RANGE {r} STEP {s}] WHERE {{ WINDOW :w {{ ?x :p ?o }} }} GROUP BY ?x",
    "REGISTER RSTREAM :o AS SELECT ?x ?y FROM NAMED WINDOW :w ON :s [RANGE {r} STEP {s}] "
    "WHERE {{ WINDOW :w {{ ?x :p ?o . ?o :q ?y }} }}",
]


@st.composite
def streams(draw):
    n = draw(st.integers(1, 25))
    gaps = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    events = []
    t = 0
    for i, gap in enumerate(gaps):
        t += gap
        triples = draw(st.lists(st.tuples(st.sampled_from([":a", ":b", ":c"]),
                                          st.sampled_from([":p", ":q"]),
                                          st.sampled_from(OBJECTS)), min_size=1, max_size=3))
        body = " ".join(f"{s} {p} {o} ." for s, p, o in triples)
        events.append(f":g{i} prov:generatedAtTime {t} . :g{i} {{ {body} }}\n")
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, n - 1)), max_size=3))))
    parts = [events[a:b] for a, b in zip([0, *cuts], [*cuts, n], strict=True) if events[a:b]]
    query = draw(st.sampled_from(QUERIES)).format(r=draw(st.integers(1, 8)),
                                                  s=draw(st.integers(1, 4)))
    return parts, "PREFIX : <http://example.org/>\n" + query


@settings(max_examples=int(os.environ.get("RSEP_EXAMPLES", 6)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=streams(), whole=st.booleans(), batch=st.booleans())
def test_spark_equals_inprocess_on_random_streams(spark, monkeypatch, case, whole, batch):
    parts, text = case
    monkeypatch.setattr(parse, "WHOLE_TEXTS", whole)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "in"
        d.mkdir()
        for i, events in enumerate(parts):
            # names sort in stream order (a batch's order); a micro-batch a file takes them
            # in modification-time order
            f = d / f"part-{i:03d}.trig"
            f.write_text(HEAD + "".join(events), encoding="utf-8")
            os.utime(f, (1_000_000 + i, 1_000_000 + i))
        (Path(tmp) / "all.trig").write_text(HEAD + "".join(e for p in parts for e in p),
                                            encoding="utf-8")
        q = (text, "q.rq")
        ref = inprocess([q], [(S, str(Path(tmp) / "all.trig"))])
        got, rejected, pipe = on_spark(spark, Path(tmp), [q], [(S, str(d))], batch=batch,
                                       files_per_batch=None if batch else 1)
        assert whole_texts(pipe.config)
        assert rejected == []
        assert_same(got, ref)
