"""Skip-till-any without exponential state: shared runs, output limits, partition keys, options.

``SEQ(A1: A2: ...: Ak)`` over n events that all match every GPM has C(n, j)
partial matches of length j: run cloning keeps 2^n - 2 runs alive for k = n.
Shared runs keep one run per state (nothing later reads the earlier
variables), the matches are enumerated from the history DAG when output.
"""

from __future__ import annotations

from math import comb

import pytest

from rsep import Engine, parse_query
from rsep.spaseq.automaton import compile_query
from rsep.spaseq.gpm import GPMEvaluator
from rsep.spaseq.matches import SpaseqCutWarning
from rsep.spaseq.nfa import NFAEngine
from rsep.spaseq.options import NFAOptions
from rsep.spaseq.partition import partition_key
from rsep.spaseq.reference import ReferenceEvaluator
from rsep.spaseq.streamset import merge_events
from rsep.testing.snippets import EX, ev

U = EX + "s"


def chain(k: int, kleene: int | None = None, op: str = ":") -> str:
    """``SEQ(A1 op A2 op ... Ak)``; Ai binds ?xi; A_kleene carries a +."""
    seq = f"{op} ".join(f"A{i}" + ("+" if i == kleene else "") for i in range(1, k + 1))
    defs = " ".join(f"DEFINE GPM A{i} ON S {{ ?e :v ?x{i} }}" for i in range(1, k + 1))
    return f"PREFIX : <{EX}> SELECT * FROM STREAM S <{U}> WHERE {{ SEQ ({seq}) {defs} }}"


def events(n: int) -> list:
    return [ev(U, t, f":e :v {t} .") for t in range(1, n + 1)]


def drive(text: str, evs: list, options: NFAOptions) -> tuple[list, NFAEngine]:
    q = parse_query(text)
    eng = NFAEngine(compile_query(q), GPMEvaluator(q.gpms.values(), {}), options=options)
    out = []
    for e in merge_events(evs, {U}):
        out.extend(eng.process(e.time, [e]))
    return out, eng


def test_naive_cloning_creates_2_to_the_n_runs_where_shared_runs_keep_one_per_state():
    n = 14
    naive, eng_naive = drive(chain(n), events(n), NFAOptions(shared_runs=False))
    shared, eng_shared = drive(chain(n), events(n), NFAOptions())
    # every non-empty proper subset of the 14 events is a partial match at some time
    assert eng_naive.stats.runs_created == 2 ** n - 2
    assert eng_shared.stats.runs_created == n - 1 and eng_shared.stats.max_live == n - 1
    assert [m.key for m in shared] == [m.key for m in naive] and len(shared) == 1


def test_shared_runs_equal_the_reference_with_kleene_plus():
    # Plain: any 4 of 8 events, C(8, 4). With a Kleene+, its iterations are a block of
    # consecutive events (Defs. 13, 14): choosing i <= j < b < c < d is C(9, 5).
    for kleene, count in ((None, comb(8, 4)), (1, comb(9, 5)), (2, comb(9, 5))):
        text = chain(4, kleene)
        evs = events(8)
        ref = ReferenceEvaluator(parse_query(text), evs).evaluate(1, None)
        got, eng = drive(text, evs, NFAOptions())
        naive, eng_naive = drive(text, evs, NFAOptions(shared_runs=False))
        assert sorted(m.key for m in got) == sorted(m.key for m in ref) \
            == sorted(m.key for m in naive)
        assert eng.stats.max_live < eng_naive.stats.max_live
        assert len(ref) == count


def test_state_stays_polynomial_and_the_count_formula_holds_at_larger_n():
    # C(24, 4) = 10,626 matches; run cloning would hold C(24,1)+C(24,2)+C(24,3) = 2,324 runs
    # after 24 events (2^24 for k = 24), shared runs hold k - 1 = 3.
    n, k = 24, 4
    got, eng = drive(chain(k), events(n), NFAOptions())
    assert len(got) == comb(n, k)
    assert eng.stats.max_live == k - 1
    assert len({m.steps for m in got}) == comb(n, k)


def test_output_limit_per_match_group_counts_what_it_does_not_enumerate():
    n = 30  # SEQ(A1: ... : A15) over 30 events: C(30, 15) = 155,117,520 matches
    with pytest.warns(SpaseqCutWarning, match="beyond max-matches=100"):
        got, eng = drive(chain(15), events(n), NFAOptions(max_matches=100))
    groups = {m.time for m in got}
    # the group completing at t has C(t-1, 14) matches; each is cut to 100
    assert len(got) == sum(min(100, comb(t - 1, 14)) for t in range(15, n + 1))
    assert eng.stats.matches_cut == comb(n, 15) - len(got)
    assert eng.stats.max_live == 14 and groups == set(range(15, n + 1))


def test_engine_options_from_text_and_errors():
    o = NFAOptions.parse("no-stream-index,max-matches=5")
    assert (o.stream_index, o.partition_index, o.max_matches) == (False, True, 5)
    off = NFAOptions.parse("all-off,max-runs=7")
    assert not any(getattr(off, s) for s in NFAOptions.SWITCHES) and off.max_runs == 7
    with pytest.raises(ValueError, match="unknown SPASEQ engine option 'no-such'"):
        NFAOptions.parse("no-such")


def test_engine_option_through_the_api_and_the_environment(monkeypatch):
    q = parse_query(chain(3))
    q.options["engine"] = "max-matches=1"
    eng = Engine()
    eng.register(q)
    with pytest.warns(SpaseqCutWarning):
        outs = list(eng.run(events(5)))
    assert [o.time for o in outs] == [3, 4, 5]
    monkeypatch.setenv("RSEP_SPASEQ_OPTIONS", "no-shared-runs")
    eng = Engine()
    eng.register(chain(3))
    assert [o.time for o in eng.run(events(5))] == [3, 4, 4, 4, 5, 5, 5, 5, 5, 5]
    assert eng.queries[0].stats.runs_merged == 0 and not eng.queries[0].options.shared_runs


# ---------------------------------------------------------------- partition keys

STOCK = "http://stockmarket.org/stocks/google"


def stock(seq: str, filters: tuple[str, ...] = ("", "FILTER(?p2 > ?p1)", "FILTER(?p3 < ?p2)"),
          head: str = "") -> str:
    names = "ABC"
    defs = " ".join(
        f"DEFINE GPM {n} ON S1 {{ ?company :price ?p{i + 1} . ?company :volume ?vol{i + 1} "
        f"{filters[i]} }}" for i, n in enumerate(names))
    return (f"PREFIX : <{EX}> SELECT ?company ?p1 ?p2 ?p3 WITHIN 60 {head} "
            f"FROM STREAM S1 <{STOCK}> WHERE {{ SEQ ({seq}) {defs} }}")


def test_partition_key_of_query4_like_patterns():
    assert partition_key(parse_query(stock("A; B; C")))[0] == "company"
    assert partition_key(parse_query(stock("A: B; C")))[0] == "company"
    key, why = partition_key(parse_query(stock("A, B, C")))
    assert key is None and "strict contiguity" in why
    key, why = partition_key(parse_query(stock("A; B+; C")))
    assert key is None and "strictly contiguous (Def. 14)" in why
    key, why = partition_key(parse_query(stock("A+; B; C")))
    assert key is None and "PARTITION BY" in why
    assert partition_key(parse_query(stock("A+; B; C", head="PARTITION BY (?company)")))[0] \
        == "company"


def test_partition_index_touches_only_the_runs_of_the_events_company():
    # Two companies interleaved: each event only reaches the runs of its own company.
    evs = []
    prices = {"c1": [10, 20, 15, 30, 25], "c2": [50, 40, 60, 55, 70]}
    t = 0
    for i in range(5):
        for c in ("c1", "c2"):
            t += 1
            evs.append(ev(STOCK, t, f":{c} :price {prices[c][i]} ; :volume {t} ."))
    text = stock("A; B; C")
    ref = sorted(m.key for m in ReferenceEvaluator(parse_query(text), evs).evaluate(1, 60))
    touched = []
    for opts in (NFAOptions(), NFAOptions(partition_index=False), NFAOptions.all_off()):
        q = parse_query(text)
        eng = NFAEngine(compile_query(q), GPMEvaluator(q.gpms.values(), {},
                                                       compiled=opts.compiled_gpm),
                        window=60, t0=1, options=opts)
        got = []
        for e in merge_events(evs, {STOCK}):
            got.extend(eng.process(e.time, [e]))
        assert sorted(m.key for m in got) == ref
        touched.append(eng.stats.runs_touched)
    assert len(ref) == 5
    assert touched[0] < touched[1] <= touched[2]
    assert eng.nfa.partition_key == ("company",)
