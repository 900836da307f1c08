"""The NFA_scep engine finds exactly the reference evaluator's matches (002 Defs. 7-16).

For every selection strategy and every operator (GPM, Kleene+, conjunction,
disjunction, optional, negation), random sequence expressions containing both
are run over random small streamsets with random tumbling windows; the two
evaluators must return the same matches: same completion time, same events
for the same GPM occurrences, same mappings.
"""

from __future__ import annotations

import os
import random
import warnings

import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from rsep import Engine, QueryError
from rsep.lang.spaseq import parse_spaseq
from rsep.spaseq.automaton import compile_query
from rsep.spaseq.chain import ChainEngine, chain_eligible
from rsep.spaseq.gpm import GPMEvaluator
from rsep.spaseq.matches import SpaseqCutWarning
from rsep.spaseq.nfa import NFAEngine
from rsep.spaseq.options import NFAOptions
from rsep.spaseq.reference import ReferenceEvaluator
from rsep.spaseq.streamset import merge_events
from rsep.testing.snippets import EX, ev

STREAMS = {"S1": EX + "s1", "S2": EX + "s2", "S3": EX + "s3"}
# ?x joins A, B, D and G; C and F bind other variables; E's FILTER reads A's ?a.
DEFS = {
    "A": ("S1", "{ ?x :p ?a }"),
    "B": ("S2", "{ ?x :p ?b }"),
    "C": ("S1", "{ ?y :q ?c }"),
    "D": ("S3", "{ ?x :p ?d FILTER(?d >= 2) }"),
    "E": ("S2", "{ ?z :p ?e FILTER(?e > ?a) }"),
    "F": ("S3", "{ ?w :p ?f }"),
    "G": ("S2", "{ ?x :q ?g }"),
}
OPS = [",", ";", ":"]
KINDS = ["gpm", "+", "&", "|", "?", "!"]

# Scenarios are drawn with a Hypothesis-controlled Random: its draws are recorded, so
# failures shrink, and the scenarios are as dense as plain random ones (strategies built
# from lists and integers start from minimal, mostly match-free, streams).


def atom(rnd: random.Random, kind: str) -> str:
    n = rnd.choice("AABBCDEFG")
    if kind == "gpm":
        return n
    if kind in "+?!":
        return n + kind
    return f"({n} {kind} {rnd.choice('AABBCDEFG')})"


def sequence(rnd: random.Random, op: str, kind: str) -> str:
    """A sequence with at least one atom of ``kind`` and one ``op``."""
    plain = ["gpm", "gpm", "+", "&", "|"]
    other = plain + ["?"]
    left = [rnd.choice(other) for _ in range(rnd.randint(0, 1))]
    right = [rnd.choice(other) for _ in range(rnd.randint(0, 2))]
    if kind == "!":  # between two elements neither optional nor negated
        left.append(rnd.choice(plain))
        right.insert(0, rnd.choice(plain))
    parts = [atom(rnd, k) for k in left + [kind] + right]
    if len(parts) == 1:
        parts.append(atom(rnd, "gpm"))
    ops = [rnd.choice(OPS) for _ in parts[1:]]
    ops[rnd.randrange(len(ops))] = op
    return parts[0] + "".join(f"{o} {a}" for o, a in zip(ops, parts[1:], strict=True))


def streamset(rnd: random.Random) -> list:
    """Events over 3 streams at times 0-10 (one graph per stream and time, Def. 2): mostly a
    :p fact (A, B, D-G), sometimes a :q one (C, G), ?x is x1 or x2, values 1-3."""
    out = []
    for t in range(11):
        for iri in STREAMS.values():
            if rnd.random() < 0.45:
                facts = []
                for _ in range(rnd.randint(1, 2)):
                    p = "p" if rnd.random() < 0.7 else "q"
                    facts.append(f":{rnd.choice(['x1', 'x2'])} :{p} {rnd.randint(1, 3)} .")
                out.append(ev(iri, t, " ".join(facts), graph=f"{iri}/{t}"))
    return out


def query_text(seq: str, within: int | None) -> str:
    used = sorted({c for c in seq if c in DEFS})
    streams = " ".join(f"FROM STREAM {s} <{i}>" for s, i in STREAMS.items())
    defs = " ".join(f"DEFINE GPM {g} ON {DEFS[g][0]} {DEFS[g][1]}" for g in used)
    w = f"WITHIN {within}" if within else ""
    return f"PREFIX : <{EX}> SELECT * {w} {streams} WHERE {{ SEQ ({seq}) {defs} }}"


def nfa_matches(q, events, t0: int, window: int | None,
                options: NFAOptions | None = None) -> list:
    options = options or NFAOptions()
    eng = NFAEngine(compile_query(q), GPMEvaluator(q.gpms.values(), {},
                                                   compiled=options.compiled_gpm),
                    t0=t0, window=window, options=options)
    return instants(eng, events)


def instants(eng, events) -> list:
    """The matches of an engine fed the events one instant at a time."""
    sev = merge_events(events, set(STREAMS.values()))
    out = []
    for t in sorted({e.time for e in sev}):
        out.extend(eng.process(t, [e for e in sev if e.time == t]))
    return out


# Every optimisation on (the default), every one off (Sec. 7's, compiled GPMs, shared runs).
OPTIONS = {"all-on": NFAOptions, "all-off": NFAOptions.all_off}


@pytest.mark.parametrize("optimisations", list(OPTIONS))
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("op", OPS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.filter_too_much])
@given(rnd=st.randoms(use_true_random=False))
def test_nfa_equals_reference(op, kind, optimisations, rnd):
    within = rnd.choice([None, 3, 5, 8])
    seq = sequence(rnd, op, kind)
    try:
        q = parse_spaseq(query_text(seq, within))
    except QueryError:
        reject()  # e.g. E before any A: its FILTER variable is unbound
    events = streamset(rnd)
    t0 = rnd.randint(0, 2)
    expected = {m.key for m in ReferenceEvaluator(q, events).evaluate(t0, within)}
    got = nfa_matches(q, events, t0, within, OPTIONS[optimisations]())
    assert len({m.key for m in got}) == len(got), "a match was reported twice"
    assert {m.key for m in got} == expected


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(rnd=st.randoms(use_true_random=False))
def test_engine_outputs_are_definition_16(rnd):
    """Through the engine: the outputs are Def. 16's (tau, pi_V(Omega)) pairs, one per match."""
    within = rnd.choice([None, 4])
    try:
        q = parse_spaseq(query_text(sequence(rnd, ";", "+"), within))
    except QueryError:
        reject()
    events = streamset(rnd)
    if not events:
        return
    t0 = events[0].time
    ref = ReferenceEvaluator(q, events)
    eng = Engine()
    eng.register(q)
    outs = list(eng.run(events))
    got = {(o.time, tuple(sorted(o.bindings.items()))) for o in outs}
    want = {(t, tuple(sorted((k, str(v)) for k, v in mu)))
            for t, om in ref.answers(t0, within) for mu in om}
    assert got == want
    assert len(outs) == sum(len(m.rows(q.variables)) for m in ref.evaluate(t0, within))


def chain_sequence(rnd: random.Random) -> str:
    """Plain GPMs under ``,`` and ``;``: the queries rsep.spaseq.chain runs. From A, B, D, G
    only, ?x is common (a partition); E's FILTER on A's ?a is a pushed range."""
    names = "ABDG" if rnd.random() < 0.5 else "AABBCDEFG"
    parts = [rnd.choice(names) for _ in range(rnd.randint(1, 4))]
    ops = [rnd.choice([",", ";"]) for _ in parts[1:]]
    return parts[0] + "".join(f"{o} {a}" for o, a in zip(ops, parts[1:], strict=True))


def chain_matches(q, events, t0: int, window: int | None, options: NFAOptions) -> tuple[list, object]:
    gpm = GPMEvaluator(q.gpms.values(), {})
    nfa = compile_query(q)
    assert chain_eligible(nfa, gpm, options, None)
    eng = ChainEngine(nfa, gpm, t0=t0, window=window, options=options)
    return instants(eng, events), eng.stats


@pytest.mark.parametrize("options", ["", "no-partition-index", "no-predicate-pushing"])
@settings(max_examples=int(os.environ.get("RSEP_EXAMPLES", 60)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(rnd=st.randoms(use_true_random=False))
def test_chain_equals_reference_and_nfa(options, rnd):
    """The chain engine finds the reference's matches, and the general engine's, mappings
    and all; with a small max-runs both drop the same runs."""
    within = rnd.choice([None, 3, 5, 8])
    try:
        q = parse_spaseq(query_text(chain_sequence(rnd), within))
    except QueryError:
        reject()
    events = streamset(rnd)
    t0 = rnd.randint(0, 2)
    opts = NFAOptions.parse(options)
    got, _ = chain_matches(q, events, t0, within, opts)
    assert len({m.key for m in got}) == len(got), "a match was reported twice"
    expected = {m.key for m in ReferenceEvaluator(q, events).evaluate(t0, within)}
    assert {m.key for m in got} == expected
    assert {m.key for m in got} == {m.key for m in nfa_matches(q, events, t0, within, opts)}
    # the safety net: the oldest runs go, in both engines alike (no shared runs in the NFA)
    small = NFAOptions.parse(options + ",no-shared-runs,max-runs=2")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SpaseqCutWarning)
        cut, cstats = chain_matches(q, events, t0, within, small)
        eng = NFAEngine(compile_query(q), GPMEvaluator(q.gpms.values(), {}), t0=t0,
                        window=within, options=small)
        ref = instants(eng, events)
    assert {m.key for m in cut} == {m.key for m in ref}
    assert cstats.runs_cut == eng.stats.runs_cut


def test_chain_runs_the_chain_queries_only():
    """Kleene+, &, |, ?, ! or skip-till-any, a trace or a match limit: the general engine."""
    def runs_on_chain(seq: str, options: str = "", trace: list | None = None) -> bool:
        q = parse_spaseq(query_text(seq, None))
        return chain_eligible(compile_query(q), GPMEvaluator(q.gpms.values(), {}),
                              NFAOptions.parse(options), trace)

    assert runs_on_chain("A; B, D") and runs_on_chain("A")
    assert not any(runs_on_chain(s) for s in ["A: B", "A; B+", "A; (B & D)", "A; (B | D)",
                                              "A; B?; D", "A; B!; D"])
    assert not runs_on_chain("A; B", "no-chain")
    assert not runs_on_chain("A; B", "max-matches=3")
    assert not runs_on_chain("A; B", trace=[])
