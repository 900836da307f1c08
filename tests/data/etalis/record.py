"""Record ETALIS's own outputs on the corpus of EP-SPARQL cases below (recorded.json).

    python tests/data/etalis/record.py [ETALIS_SRC]
    python tests/data/etalis/record.py bench [ETALIS_SRC]
    python tests/data/etalis/record.py bench10k [ETALIS_SRC]

ETALIS_SRC is ETALIS's src/ folder (a clone of github sspider/etalis, its etalis/src; default
$RSEP_ETALIS_SRC); SWI-Prolog runs it (Debian's swi-prolog-nox, `swipl --traditional`).
Neither is needed by the tests, which read recorded.json and bench-300.json.

``bench`` records instead ETALIS's complex events on `rsep bench epsparql-etalis`'s own
300-event stream, for the cases tests/bench/test_bench_etalis.py runs rsep on (bench-300.json);
``bench10k`` on its 10^4-event stream for pattern (b) under chronological and recent
(bench-10000.json), where RSEP-QL's formal chronological policy and ETALIS part (issue 51).

Each case is an EP-SPARQL SELECT query and a stream of items (start, end, triples). For
each policy the query is translated into an ETALIS event rule as rsep's ETALIS mode reads
it (rsep.epsparql.etalis_rules.compile_query, rendered by rsep.bench.etalis.rules: docs/semantics.md,
"EP-SPARQL as ETALIS runs it"), the stream into input/4 facts, and driver.pl runs them under ETALIS's
event_consumption_policy. recorded.json keeps, per case and policy, the query, the rules
and the stream ETALIS ran, and every complex event it fired: its values, its interval as
ETALIS labelled it ([second, counter] at each end) and the item whose arrival fired it
(the detection time is that item's end).
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))

from rsep.bench.etalis import NUMBERS, XSD_INTEGER, facts, rules  # noqa: E402
from rsep.epsparql.etalis_rules import compile_query  # noqa: E402
from rsep.lang.epsparql import parse_epsparql  # noqa: E402

EX = "http://ex.org/"
PREFIX = f"PREFIX : <{EX}>\n"
BOTH = ("chronological", "recent")


# ---------------------------------------------------------------- the corpus


def iri(x: str) -> str:
    return f"<{EX}{x}>"


def num(n: int) -> str:
    return f'"{n}"^^<{XSD_INTEGER}>'


def t(k: str, p: str, v: int | str) -> list[str]:
    return [iri(k), iri(p), num(v) if isinstance(v, int) else iri(v)]


def pt(time: int, *triples: list[str]) -> list:
    """A point item at ``time``."""
    return [time, time, list(triples)]


def iv(start: int, end: int, *triples: list[str]) -> list:
    return [start, end, list(triples)]


SEQ3 = "SELECT ?a ?b ?c WHERE { {?k :a ?a} SEQ {?k :b ?b} SEQ {?k :c ?c} }"
SEQ2 = "SELECT ?k ?a ?b WHERE { {?k :a ?a} SEQ {?k :b ?b} }"


def random_stream(seed: int, n: int, keys: int, preds: str, pairs: float = 0.25,
                  intervals: float = 0.15) -> list:
    """n items, times going up by 0-3, on ``keys`` keys; an item holds one triple, or two
    (with probability ``pairs``, of the same key), and is an interval with probability
    ``intervals``."""
    r = random.Random(seed)
    out, now = [], 0
    for _ in range(n):
        now += r.choice((0, 1, 1, 2, 3))
        k = f"k{r.randrange(keys)}"
        trs = [t(k, p, r.randrange(50, 100))
               for p in (r.sample(preds, 2) if r.random() < pairs else [r.choice(preds)])]
        if r.random() < intervals:
            out.append(iv(max(0, now - r.randrange(1, 4)), now, *trs))
        else:
            out.append(pt(now, *trs))
    return out


def observations(seed: int, n: int, sensors: int) -> list:
    """SRBench-like items: each holds a few observations of sensors, four triples each
    (observation, property, sensor, result, value), in a shuffled order, some of another
    property."""
    r = random.Random(seed)
    out = []
    for i in range(n):
        trs = []
        for j in range(r.randrange(1, 4)):
            o, m, s = f"obs{i}_{j}", f"m{i}_{j}", f"s{r.randrange(sensors)}"
            prop = "temp" if r.random() < 0.8 else "hum"
            trs += [t(o, "prop", prop), t(o, "sensor", s), t(o, "result", m), t(m, "value", r.randrange(50, 60))]
        r.shuffle(trs)
        out.append(pt(i * 3, *trs))
    return out


OBSERVATIONS = ("SELECT ?s ?before ?after WHERE { "
                "{ ?o1 :prop :temp ; :sensor ?s ; :result ?r1 . ?r1 :value ?before } SEQ "
                "{ ?o2 :prop :temp ; :sensor ?s ; :result ?r2 . ?r2 :value ?after } "
                "FILTER (?after >= ?before + 2 && getDURATION() <= 10) }")


CASES: list[dict] = [
    {"name": "seq3_recent_issue",
     "note": "issue 21: three-step SEQ, a@1 b@2 b@3 c@4 (formal recent: b@3)",
     "query": SEQ3, "policies": BOTH,
     "stream": [pt(1, t("k", "a", 1)), pt(2, t("k", "b", 2)), pt(3, t("k", "b", 3)), pt(4, t("k", "c", 4))]},
    {"name": "duration_window_issue",
     "note": "issue 21: getDURATION() <= 4, a@0 a@1 b@2 b@3 c@5 (formal chronological: b@2)",
     "query": "SELECT ?a ?b ?c WHERE { {?k :a ?a} SEQ {?k :b ?b} SEQ {?k :c ?c} FILTER (getDURATION() <= 4) }",
     "policies": BOTH,
     "stream": [pt(0, t("k", "a", 0)), pt(1, t("k", "a", 1)), pt(2, t("k", "b", 2)),
                pt(3, t("k", "b", 3)), pt(5, t("k", "c", 5))]},
    {"name": "filter_rejects_selected_issue",
     "note": "issue 21: the FILTER rejects the selected goal, which stays consumed (formal: 70 -> 60)",
     "query": "SELECT ?a ?b WHERE { {?k :a ?a} SEQ {?k :b ?b} FILTER (?b < ?a) }", "policies": BOTH,
     "stream": [pt(0, t("k", "a", 70)), pt(5, t("k", "a", 80)), pt(10, t("k", "b", 75)),
                pt(20, t("k", "b", 60))]},
    {"name": "same_pattern_twice_issue",
     "note": "issue 21: {?k :p ?a} SEQ {?k :p ?b}: only the left event is consumed",
     "query": "SELECT ?a ?b WHERE { {?k :p ?a} SEQ {?k :p ?b} }", "policies": BOTH,
     "stream": [pt(1, t("k", "p", 1)), pt(2, t("k", "p", 2)), pt(3, t("k", "p", 3))]},
    {"name": "equal_ends_issue",
     "note": "issue 21: a[1,3] arrives before a[0,3]: selection by arrival",
     "query": SEQ2, "policies": BOTH,
     "stream": [iv(1, 3, t("k", "a", 1)), iv(0, 3, t("k", "a", 0)), pt(5, t("k", "b", 5))]},
    {"name": "lost_at_end_issue",
     "note": "issue 21 part 1's stream: 80 -> 75 is output at 10",
     "query": "SELECT ?c ?p1 ?p2 WHERE { {?c :pr ?p1} SEQ {?c :pr ?p2} FILTER (?p2 < ?p1 && getDURATION() < 30) }",
     "policies": BOTH,
     "stream": [pt(0, t("c", "pr", 70)), pt(5, t("c", "pr", 80)), pt(10, t("c", "pr", 75))]},
    {"name": "seq2_consumption",
     "note": "a a b b: chronological takes the oldest a, recent the newest",
     "query": SEQ2, "policies": BOTH,
     "stream": [pt(1, t("k", "a", 1)), pt(2, t("k", "a", 2)), pt(3, t("k", "b", 3)), pt(4, t("k", "b", 4)),
                pt(5, t("k", "a", 5)), pt(6, t("k", "b", 6)), pt(7, t("k", "b", 7))]},
    {"name": "seq2_same_content",
     "note": "a new goal replaces one made from an identical triple (retractall in etr_insf)",
     "query": SEQ2, "policies": BOTH,
     "stream": [pt(0, t("k", "a", 70)), pt(5, t("k", "a", 70)), pt(7, t("k", "a", 71)),
                pt(10, t("k", "b", 1)), pt(11, t("k", "b", 2)), pt(12, t("k", "b", 3))]},
    {"name": "seq3_interleaved",
     "note": "three steps, each step selecting and consuming as events arrive",
     "query": SEQ3, "policies": BOTH,
     "stream": [pt(1, t("k", "a", 1)), pt(2, t("k", "a", 2)), pt(3, t("k", "b", 3)), pt(4, t("k", "a", 4)),
                pt(5, t("k", "b", 5)), pt(6, t("k", "c", 6)), pt(7, t("k", "b", 7)), pt(8, t("k", "c", 8)),
                pt(9, t("k", "c", 9)), pt(10, t("k", "c", 10))]},
    {"name": "several_keys",
     "note": "goals of different keys never meet",
     "query": "SELECT ?k ?a ?b ?c WHERE { {?k :a ?a} SEQ {?k :b ?b} SEQ {?k :c ?c} }", "policies": BOTH,
     "stream": [pt(1, t("k1", "a", 1)), pt(2, t("k2", "a", 2)), pt(3, t("k1", "a", 3)), pt(4, t("k2", "b", 4)),
                pt(5, t("k1", "b", 5)), pt(6, t("k1", "b", 6)), pt(7, t("k2", "c", 7)), pt(8, t("k1", "c", 8)),
                pt(9, t("k2", "a", 9)), pt(10, t("k1", "c", 10)), pt(11, t("k2", "b", 11)), pt(12, t("k2", "c", 12))]},
    {"name": "simultaneous_items",
     "note": "items at the same time are ordered by arrival (counters); the triples of one item share a label",
     "query": SEQ2, "policies": BOTH,
     "stream": [pt(1, t("k", "a", 1)), pt(1, t("k", "b", 1)), pt(2, t("k", "b", 2), t("k", "a", 2)),
                pt(2, t("k", "a", 3), t("k", "b", 3)), pt(3, t("k", "b", 4))]},
    {"name": "simultaneous_reorder",
     "note": "goals failing less() are put back (recent: at the front, reordering the store)",
     "query": SEQ2, "policies": BOTH,
     "stream": [pt(3, t("k", "a", 3)), pt(5, t("k", "a", 50), t("k", "a", 51), t("k", "b", 5)),
                pt(6, t("k", "b", 6)), pt(7, t("k", "b", 7)), pt(8, t("k", "b", 8))]},
    {"name": "intervals_overlap",
     "note": "interval events: SEQ needs the left one to end before the right one starts",
     "query": SEQ2, "policies": BOTH,
     "stream": [iv(0, 4, t("k", "a", 1)), iv(2, 6, t("k", "b", 2)), iv(3, 6, t("k", "a", 3)),
                iv(5, 7, t("k", "b", 4)), iv(6, 9, t("k", "b", 5)), pt(10, t("k", "b", 6))]},
    {"name": "equals_one_item",
     "note": "EQUALS: triples of one item share their label; separate items never do",
     "query": "SELECT ?x ?y WHERE { {?k :a ?x} EQUALS {?k :b ?y} }", "policies": BOTH,
     "stream": [pt(1, t("k", "a", 1), t("k", "b", 1)), pt(2, t("k", "a", 2)), pt(2, t("k", "b", 2)),
                iv(1, 3, t("k", "a", 3), t("k", "b", 3)), pt(4, t("k", "b", 4), t("k", "a", 4)),
                pt(5, t("k", "a", 5), t("k", "a", 6), t("k", "b", 5))]},
    {"name": "equals_then_seq",
     "note": "(A EQUALS B) SEQ C: an intermediate event from EQUALS",
     "query": "SELECT ?x ?y ?z WHERE { {?k :a ?x} EQUALS {?k :b ?y} SEQ {?k :c ?z} }", "policies": BOTH,
     "stream": [pt(1, t("k", "a", 1), t("k", "b", 1)), pt(2, t("k", "a", 2), t("k", "b", 2)),
                pt(3, t("k", "c", 3)), pt(4, t("k", "c", 4)), pt(5, t("k", "c", 5))]},
    {"name": "duration_strict_bound",
     "note": "getDURATION() < 3 against <= 3 (the window is tested after less, at every step)",
     "query": "SELECT ?a ?b WHERE { {?k :a ?a} SEQ {?k :b ?b} FILTER (getDURATION() < 3) }", "policies": BOTH,
     "stream": [pt(0, t("k", "a", 0)), pt(1, t("k", "a", 1)), pt(3, t("k", "b", 3)), pt(4, t("k", "b", 4)),
                pt(5, t("k", "a", 5)), pt(8, t("k", "b", 8)), pt(9, t("k", "a", 9)), pt(11, t("k", "b", 11))]},
    {"name": "duration_window_recent_reorder",
     "note": "recent, three steps, window 4: an intermediate that starts too early is put back",
     "query": "SELECT ?a ?b ?c WHERE { {?k :a ?a} SEQ {?k :b ?b} SEQ {?k :c ?c} FILTER (getDURATION() <= 4) }",
     "policies": BOTH,
     "stream": [pt(0, t("k", "a", 0)), pt(1, t("k", "a", 1)), pt(2, t("k", "b", 2)), pt(3, t("k", "b", 3)),
                pt(5, t("k", "c", 5)), pt(6, t("k", "c", 6)), pt(7, t("k", "c", 7))]},
    {"name": "stock_query1",
     "note": "003 query (1): values and duration in one FILTER, several companies",
     "query": "SELECT ?c ?p1 ?p2 ?p3 WHERE { {?c :price ?p1} SEQ {?c :price ?p2} SEQ {?c :price ?p3} "
              "FILTER (?p2 < ?p1 * 0.7 && ?p3 > ?p1 * 1.05 && getDURATION() < 30) }",
     "policies": BOTH,
     "stream": [pt(0, t("acme", "price", 100)), pt(2, t("beta", "price", 50)), pt(5, t("acme", "price", 60)),
                pt(8, t("beta", "price", 30)), pt(9, t("acme", "price", 110)), pt(12, t("beta", "price", 56)),
                pt(15, t("acme", "price", 50)), pt(20, t("acme", "price", 120)), pt(40, t("beta", "price", 20)),
                pt(45, t("beta", "price", 60)), pt(50, t("acme", "price", 130))]},
    {"name": "nested_filter",
     "note": "a FILTER inside the left group: a where rule of its own, before the sequence",
     "query": "SELECT ?x ?y WHERE { { {?k :a ?x} FILTER (?x > 3) } SEQ {?k :b ?y} }", "policies": BOTH,
     "stream": [pt(1, t("k", "a", 5)), pt(2, t("k", "a", 2)), pt(3, t("k", "b", 1)), pt(4, t("k", "a", 7)),
                pt(5, t("k", "a", 1)), pt(6, t("k", "b", 2)), pt(7, t("k", "b", 3))]},
    {"name": "filter_or_not",
     "note": "FILTER with || and !",
     "query": "SELECT ?a ?b WHERE { {?k :a ?a} SEQ {?k :b ?b} FILTER (?b > ?a + 10 || !(?b > 5)) }",
     "policies": BOTH,
     "stream": [pt(1, t("k", "a", 1)), pt(2, t("k", "b", 4)), pt(3, t("k", "a", 2)), pt(4, t("k", "b", 9)),
                pt(5, t("k", "a", 3)), pt(6, t("k", "b", 20)), pt(7, t("k", "b", 30))]},
    {"name": "bgp_and",
     "note": "two triple patterns in one group: ETALIS's and (classical conjunction)",
     "query": "SELECT ?x ?y ?z WHERE { {?k :a ?x . ?k :b ?y} SEQ {?k :c ?z} }", "policies": BOTH,
     "stream": [pt(1, t("k", "a", 1)), pt(2, t("k", "a", 2)), pt(3, t("k", "b", 3)), pt(4, t("k", "c", 4)),
                pt(5, t("k", "b", 5)), pt(6, t("k", "a", 6), t("k", "b", 6)), pt(7, t("k", "c", 7)),
                pt(8, t("k", "c", 8))]},
    {"name": "observations_warming",
     "note": "docs/examples/epsparql.rq's shape (four-triple groups: and), generated observations",
     "query": OBSERVATIONS, "policies": BOTH, "stream": observations(13, 40, 3)},
    {"name": "random_seq3_window",
     "note": "a generated stream (seed 7): three steps, a value FILTER and a window",
     "query": "SELECT ?k ?a ?b ?c WHERE { {?k :a ?a} SEQ {?k :b ?b} SEQ {?k :c ?c} "
              "FILTER (?b > ?a && getDURATION() <= 10) }",
     "policies": BOTH, "stream": random_stream(7, 120, 3, "abc")},
    {"name": "random_same_pattern",
     "note": "a generated stream (seed 11): {?k :p ?x} SEQ {?k :p ?y} SEQ {?k :q ?z}, FILTER ?y < ?x",
     "query": "SELECT ?k ?x ?y ?z WHERE { {?k :p ?x} SEQ {?k :p ?y} SEQ {?k :q ?z} FILTER (?y < ?x) }",
     "policies": BOTH, "stream": random_stream(11, 80, 2, "ppq")},
    {"name": "random_seq2_intervals",
     "note": "a generated stream (seed 3): SEQ over many interval items, two keys",
     "query": SEQ2, "policies": BOTH, "stream": random_stream(3, 100, 2, "ab", intervals=0.4)},
    {"name": "random_equals",
     "note": "a generated stream (seed 5): (A EQUALS B) SEQ C with a window",
     "query": "SELECT ?k ?x ?y ?z WHERE { {?k :a ?x} EQUALS {?k :b ?y} SEQ {?k :c ?z} FILTER (getDURATION() < 8) }",
     "policies": BOTH, "stream": random_stream(5, 100, 2, "abc", pairs=0.6)},
    {"name": "random_bgp_and",
     "note": "a generated stream (seed 9): a two-pattern group (and) SEQ C with a window",
     "query": "SELECT ?k ?x ?y ?z WHERE { {?k :a ?x . ?k :b ?y} SEQ {?k :c ?z} FILTER (getDURATION() <= 8) }",
     "policies": BOTH, "stream": random_stream(9, 100, 2, "abc", pairs=0.3)},
]


# ---------------------------------------------------------------- running ETALIS


def nt(v: object) -> str | None:
    if v is None:
        return None
    if isinstance(v, int):
        return num(v)
    if isinstance(v, float):
        return NUMBERS[v]
    return str(v)


def run(src: Path, policy: str, rule_text: str, stream: list, work: Path) -> list[dict]:
    (work / "rules.event").write_text(rule_text)
    (work / "stream.pl").write_text(facts(stream))
    res = subprocess.run(["swipl", "--traditional", "-q", str(HERE / "driver.pl"), "--", str(src),
                          policy, str(work / "rules.event"), str(work / "stream.pl")],
                         capture_output=True, text=True, timeout=300, check=True)
    out = []
    for line in res.stdout.splitlines():
        if line.startswith("{"):
            d = json.loads(line)
            out.append(d)
    return out


def etalis_source(args: list[str]) -> Path:
    import os

    src = Path(args[0]) if args else Path(os.environ.get("RSEP_ETALIS_SRC", ""))
    if not (src / "etalis.P").is_file():
        sys.exit("record.py: needs ETALIS's src/ folder (a clone of github sspider/etalis, its "
                 "etalis/src) as its argument or in $RSEP_ETALIS_SRC")
    return src


def source_label(src: Path) -> str:
    rev = re.search(r"\$Rev: (\d+) \$.*\n.*\n% \$Date: ([^$]*)\$", (src / "etalis.P").read_text())
    return ("github sspider/etalis, src/ (ETALIS "
            f"$Rev {rev.group(1) if rev else '?'}, {rev.group(2).strip() if rev else '?'})")


BENCH_CASES = "a-unrestricted,b,c-recent"


def bench(src: Path, size: int = 300, selection: str = BENCH_CASES) -> None:
    """bench-SIZE.json: ETALIS's complex events (values, from, to) per bench case, on the
    bench's stream of that size, run by `rsep bench epsparql-etalis` itself."""
    import os
    import tempfile

    from rsep.bench import epsparql_etalis as ee
    from rsep.cli.main import main as cli

    os.environ["RSEP_ETALIS_SRC"] = str(src)
    swipl = subprocess.run(["swipl", "--version"], capture_output=True, text=True).stdout.strip()
    cases: dict[str, list] = {}
    with tempfile.TemporaryDirectory() as tmp:
        rc = cli(["bench", "epsparql-etalis", "--size", str(size), "--runs", "1", "--cases", selection,
                  "--peers", "etalis", "--out", tmp, "--no-plots", "--timeout", "300"])
        assert rc == 0, rc
        for pattern, policy in ee.cases(selection):
            path = Path(tmp) / "runs" / "epsparql-etalis" / f"{pattern}-{policy}-{size}" / "etalis"
            with open(path / "matches.jsonl", encoding="utf-8") as f:
                cases[f"{pattern}-{policy}"] = [json.loads(line) for line in f if line.strip()]
    doc = {"etalis": {"source": source_label(src), "prolog": swipl,
                      "recorded_by": "tests/data/etalis/record.py bench"},
           "size": size, "cases": cases}
    body = ",\n".join(f"  {json.dumps(k)}: [\n" + ",\n".join(f"   {json.dumps(e)}" for e in v) + "]"
                      for k, v in cases.items())
    head = json.dumps({k: doc[k] for k in ("etalis", "size")})[1:-1]
    (HERE / f"bench-{size}.json").write_text(f"{{{head},\n \"cases\": {{\n{body}}}}}\n", encoding="utf-8")


def main() -> None:
    import tempfile

    if sys.argv[1:2] == ["bench"]:
        bench(etalis_source(sys.argv[2:]))
        return
    if sys.argv[1:2] == ["bench10k"]:
        bench(etalis_source(sys.argv[2:]), 10_000, "b-chronological,b-recent")
        return
    src = etalis_source(sys.argv[1:])
    swipl = subprocess.run(["swipl", "--version"], capture_output=True, text=True).stdout.strip()
    cases = []
    with tempfile.TemporaryDirectory() as tmp:
        for c in CASES:
            for pol in c["policies"]:
                q = parse_epsparql(PREFIX + c["query"], policy="etalis-" + pol)
                prog = compile_query(q)
                rule_text = rules(prog)
                got = run(src, pol, rule_text, c["stream"], Path(tmp))
                outputs = []
                for d in got:
                    vals = dict(zip(prog.head, (nt(v) for v in d["values"]), strict=True))
                    outputs.append({"time": d["time"], "item": d["item"], "triple": d["triple"],
                                    "bindings": {k: v for k, v in vals.items() if v is not None},
                                    "from": d["from"], "to": d["to"]})
                cases.append({"name": c["name"], "policy": pol, "note": c["note"],
                              "query": PREFIX + c["query"], "rules": rule_text,
                              "stream": c["stream"], "outputs": outputs})
                print(f"{c['name']:34} {pol:14} {len(outputs)} complex events", file=sys.stderr)
    doc = {"etalis": {"source": source_label(src),
                      "prolog": swipl, "driver": "tests/data/etalis/driver.pl",
                      "recorded_by": "tests/data/etalis/record.py"},
           "cases": cases}
    (HERE / "recorded.json").write_text(dump(doc))


def dump(doc: dict) -> str:
    """recorded.json: one stream item or complex event a line."""
    def js(x: object) -> str:
        return json.dumps(x, ensure_ascii=False)

    parts = []
    for c in doc["cases"]:
        head = ",\n   ".join(f"{js(k)}: {js(c[k])}" for k in ("name", "policy", "note", "query", "rules"))
        stream = ",\n    ".join(js(x) for x in c["stream"])
        outs = ",\n    ".join(js(x) for x in c["outputs"])
        parts.append(f"  {{{head},\n   \"stream\": [\n    {stream}],\n   \"outputs\": [\n    {outs}]}}")
    return f'{{"etalis": {js(doc["etalis"])},\n "cases": [\n' + ",\n".join(parts) + "]}\n"


if __name__ == "__main__":
    main()
