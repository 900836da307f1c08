"""EP-SPARQL FILTERs compiled to Python give pyoxigraph's answers (SPARQL 17.2/17.3: exact
decimals, errors absorbed by || and &&, unbound values), and fall back to it otherwise."""

from __future__ import annotations

import random

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rsep.epsparql import reference as ep
from rsep.epsparql.expr import compile_filter
from rsep.stream.time import TimeKind

XSD = "http://www.w3.org/2001/XMLSchema#"
PRO = "PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n"
VALUES = [f'"{v}"^^<{XSD}integer>' for v in (0, 7, 10, 11, 100)] + [
    f'"{v}"^^<{XSD}decimal>' for v in ("7.0", "6.999", "0.5")] + [None]


def rnd_expr(r: random.Random, depth: int = 0) -> str:
    if depth > 2 or r.random() < 0.3:
        atom = r.choice(["?a", "?b", "?c", "?__d", "7", "0.7", "10", '"30"^^xsd:integer'])
        return r.choice([atom, atom, f"{atom} * {r.choice(['0.7', '1.05', '2', '?b'])}",
                         f"({atom} + {r.choice(['1', '?c', '-3'])})", f"- {atom}"])
    op = r.choice(["<", "<=", ">", ">=", "=", "!=", "&&", "||", "!", "BOUND"])
    if op == "!":
        return f"!({rnd_expr(r, depth + 1)})"
    if op == "BOUND":
        return f"BOUND(?{r.choice('abc')})"
    return f"({rnd_expr(r, depth + 1)} {op} {rnd_expr(r, depth + 1)})"


@settings(max_examples=400, deadline=None)
@given(r=st.randoms(use_true_random=False))
def test_compiled_filters_agree_with_pyoxigraph(r):
    """The compiled fast path's fragment, property-tested against pyoxigraph."""
    e = ep.Expr(rnd_expr(r), frozenset("abc"), PRO)
    assume(compile_filter(e.text, e.prologue, False) is not None)
    rows = []
    for _ in range(12):
        mu = tuple((v, x) for v in "abc" if (x := r.choice(VALUES)) is not None)
        ta = r.choice([0, 3, ep.INF])
        rows.append((ep.Solution(mu, ta, 30 if ta != ep.INF else -ep.INF), ta, 30 if ta != ep.INF else -ep.INF))
    compiled = ep.ExprEvaluator(TimeKind.ABSTRACT)
    slow = ep.ExprEvaluator(TimeKind.ABSTRACT)
    slow._fns[(id(e), TimeKind.ABSTRACT)] = (e, None)  # force pyoxigraph
    assert compiled.test(e, rows) == slow.test(e, rows), e.text


def test_what_is_not_compiled_falls_back():
    ex = ep.ExprEvaluator(TimeKind.ABSTRACT)
    for text in ('?a < "B"', "?a / 2 > 1", "STRLEN(?a) > 1", "?a = <http://x>", "?a < 1.0e3"):
        assert compile_filter(text, PRO, False) is None
    # a value the compiled form does not cover (a string) sends the batch to pyoxigraph
    e = ep.Expr("?a < ?b", frozenset("ab"), PRO)
    rows = [(ep.Solution((("a", '"A"'), ("b", '"B"')), 1, 1), 1, 1),
            (ep.Solution((("a", f'"1"^^<{XSD}integer>'), ("b", f'"2"^^<{XSD}integer>')), 1, 1), 1, 1)]
    calls = ex.calls
    assert ex.test(e, rows) == [True, True] and ex.calls == calls + 1
    # durations on dateTime streams: getDURATION() against an xsd:duration, in ms
    dt = ep.ExprEvaluator(TimeKind.DATETIME)
    e = ep.Expr('?__d < "P1D"^^xsd:duration && ?__d >= "PT1H"^^xsd:dayTimeDuration', frozenset(), PRO)
    day = 86_400_000
    rows = [(ep.Solution((), 0, t), 0, t) for t in (day - 1, day, 3_600_000, 3_599_999)]
    calls = dt.calls
    assert dt.test(e, rows) == [True, False, True, False] and dt.calls == calls
