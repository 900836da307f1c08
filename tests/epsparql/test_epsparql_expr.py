"""EP-SPARQL FILTERs compiled to Python (rsep.sparql.filters, the one FILTER compiler)
give pyoxigraph's answers (SPARQL 17.2/17.3: exact decimals, 64-bit integers, errors
absorbed by || and &&, unbound values), and fall back to it otherwise."""

from __future__ import annotations

import random

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rsep.epsparql import reference as ep
from rsep.epsparql.expr import compile_filter
from rsep.stream.time import TimeKind

XSD = "http://www.w3.org/2001/XMLSchema#"
PRO = "PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\nPREFIX : <http://x/>\n"
VALUES = [f'"{v}"^^<{XSD}integer>' for v in (0, 7, 10, 11, 100, "+7", "007", 9223372036854775807,
                                             -9223372036854775808, 9223372036854775808)] + [
    f'"{v}"^^<{XSD}decimal>' for v in ("7.0", "6.999", "0.5", "0.123456789", "-.5",
                                       "0.1234567890123456789", "99999999999999999.9")] + [
    f'"{v}"^^<{XSD}{t}>' for v, t in (("7", "int"), ("300", "byte"), ("-1", "nonNegativeInteger"),
                                      ("1_0", "int"), (" 5", "long"), ("1e3", "decimal"),
                                      ("7e0", "double"), ("NaN", "double"), ("1.5", "float"),
                                      ("PT7S", "dayTimeDuration"), ("P1D", "duration"),
                                      ("true", "boolean"), ("", "string"))] + [
    '"B"', '"A"', '""', '"a\\"b"', '"B"@en', "<http://x/i>", "<http://x/j>", "_:b", None]
ATOMS = ["?a", "?b", "?c", "?__d", "?__s", "7", "0.7", "10", '"30"^^xsd:integer', '"B"', ":i",
         "<http://x/j>", "1.0e3", '"7"^^xsd:int', '"PT7S"^^xsd:dayTimeDuration', "9223372036854775807"]


def rnd_expr(r: random.Random, depth: int = 0) -> str:
    if depth > 2 or r.random() < 0.3:
        atom = r.choice(ATOMS)
        return r.choice([atom, atom, f"{atom} * {r.choice(['0.7', '1.05', '2', '?b', '0.123456789'])}",
                         f"({atom} + {r.choice(['1', '?c', '-3'])})", f"- {atom}", f"!{atom}"])
    op = r.choice(["<", "<=", ">", ">=", "=", "!=", "&&", "||", "!", "BOUND"])
    if op == "!":
        return f"!({rnd_expr(r, depth + 1)})"
    if op == "BOUND":
        return f"{r.choice(['', '!'])}BOUND(?{r.choice('abc')})"
    return f"({rnd_expr(r, depth + 1)} {op} {rnd_expr(r, depth + 1)})"


def agree(kind: TimeKind, e: ep.Expr, *batches: list) -> None:
    """Each batch of rows: the compiled fast path's answers equal pyoxigraph's. (One pair
    of evaluators for all batches: each new one parses the expression again.)"""
    compiled = ep.ExprEvaluator(kind)
    slow = ep.ExprEvaluator(kind)
    slow._fns[(id(e), kind)] = (e, None)  # force pyoxigraph
    for rows in batches:
        assert compiled.test(e, rows) == slow.test(e, rows), e.text


@settings(max_examples=500, deadline=None)
@given(r=st.randoms(use_true_random=False))
def test_compiled_filters_agree_with_pyoxigraph(r):
    """The compiled fast path, property-tested against pyoxigraph."""
    e = ep.Expr(rnd_expr(r), frozenset("abc"), PRO)
    assume(compile_filter(e.text, e.prologue, False) is not None)
    rows = []
    for _ in range(12):
        mu = tuple((v, x) for v in "abc" if (x := r.choice(VALUES)) is not None)
        ta = r.choice([0, 3, ep.INF])
        rows.append((ep.Solution(mu, ta, 30 if ta != ep.INF else -ep.INF), ta, 30 if ta != ep.INF else -ep.INF))
    # row by row too: a Fallback sends a whole batch to pyoxigraph
    agree(TimeKind.ABSTRACT, e, rows, *([row] for row in rows))


DURATIONS = ['"P1D"^^xsd:duration', '"PT1H"^^xsd:dayTimeDuration', '"PT0.5S"^^xsd:dayTimeDuration',
             '"-PT1S"^^xsd:dayTimeDuration', '"PT1M30.25S"^^xsd:dayTimeDuration', '"P1M"^^xsd:duration',
             '"PT7S"^^xsd:duration', "7", "?a"]


@settings(max_examples=200, deadline=None)
@given(r=st.randoms(use_true_random=False))
def test_compiled_durations_agree_with_pyoxigraph(r):
    """getDURATION() on a dateTime stream (a day-time duration in ms) against durations."""
    text = " && ".join(f"?__d {r.choice(['<', '<=', '>', '>=', '=', '!='])} {r.choice(DURATIONS)}"
                       for _ in range(r.randint(1, 2)))
    e = ep.Expr(text, frozenset("a"), PRO)
    # years and months are left to pyoxigraph
    assert (compile_filter(e.text, e.prologue, True) is not None) == ("P1M" not in text), text
    rows = []
    for _ in range(8):
        ta = r.choice([0, 1_000, ep.INF])
        tw = -ep.INF if ta == ep.INF else ta + r.choice([0, 500, 7_000, 60_000, 90_250, 3_600_000, 86_400_000])
        mu = (("a", r.choice(VALUES[-8:-1] + [f'"PT7S"^^<{XSD}dayTimeDuration>'])),)
        rows.append((ep.Solution(mu, ta, tw), ta, tw))
    agree(TimeKind.DATETIME, e, rows)


def test_integer_overflow_is_pyoxigraphs_error():
    """9223372036854775807 + 1 overflows xsd:integer's 64 bits: pyoxigraph's error (the FILTER
    is false), not Python's 9223372036854775808 > 0 (which the compiler of EP-SPARQL
    before the one FILTER compiler answered)."""
    big = (ep.Solution((("a", f'"9223372036854775807"^^<{XSD}integer>'),), 1, 1), 1, 1)
    for text in ("?a + 1 > 0", "?a * 2 > 0", "-?a - 2 < 0", "9223372036854775807 + 1 > 0"):
        e = ep.Expr(text, frozenset("a"), PRO)
        assert ep.ExprEvaluator(TimeKind.ABSTRACT).test(e, [big]) == [False], text
        agree(TimeKind.ABSTRACT, e, [big])
    e = ep.Expr("?a > 0", frozenset("a"), PRO)
    assert ep.ExprEvaluator(TimeKind.ABSTRACT).test(e, [big]) == [True]


def test_what_is_not_compiled_falls_back():
    # strings, IRIs and doubles are compiled, with pyoxigraph's answers (no call to it)
    ex = ep.ExprEvaluator(TimeKind.ABSTRACT)
    for text, values, want in (
            ('?a < "B"', ['"A"', '"C"', '"B"'], [True, False, False]),
            ("?a = <http://x>", ["<http://x>", "<http://y>", '"A"', f'"1"^^<{XSD}integer>'],
             [True, False, False, False]),
            ("?a < 1.0e3", [f'"999"^^<{XSD}integer>', f'"1e4"^^<{XSD}double>', f'"999.5"^^<{XSD}decimal>'],
             [True, False, True])):
        e = ep.Expr(text, frozenset("a"), PRO)
        rows = [(ep.Solution((("a", v),), 1, 1), 1, 1) for v in values]
        calls = ex.calls
        assert ex.test(e, rows) == want and ex.calls == calls, text
        agree(TimeKind.ABSTRACT, e, rows)
    for text in ("?a / 2 > 1", "STRLEN(?a) > 1", "BOUND(?a) = true", "!?a < 1"):
        assert compile_filter(text, PRO, False) is None, text
    # a value the compiled form does not cover (an xsd:float) sends the batch to pyoxigraph
    e = ep.Expr("?a < ?b", frozenset("ab"), PRO)
    rows = [(ep.Solution((("a", f'"1.5"^^<{XSD}float>'), ("b", f'"2"^^<{XSD}integer>')), 1, 1), 1, 1),
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
    # getSTARTTIME() on a dateTime stream is a dateTime: not compiled
    assert compile_filter("?__s < ?__e", PRO, True) is None
    assert compile_filter("?__s < ?__e", PRO, False) is not None


def test_unary_plus_of_a_non_number_is_pyoxigraphs_error():
    """``+?a`` is op:numeric-unary-plus: on a string pyoxigraph's error (the FILTER is false),
    not the string, which the compiled form read before (it dropped the ``+``). A number
    is compiled; anything else goes to pyoxigraph."""
    ex = ep.ExprEvaluator(TimeKind.ABSTRACT)
    rows = [(ep.Solution((("a", v),), 1, 1), 1, 1)
            for v in (f'"7"^^<{XSD}int>', f'"7.0"^^<{XSD}decimal>', f'"8"^^<{XSD}integer>', '"A"')]
    number, string = ep.Expr("+?a = 7", frozenset("a"), PRO), ep.Expr('+?a = "A"', frozenset("a"), PRO)
    calls = ex.calls
    assert ex.test(number, rows[:3]) == [True, True, False] and ex.calls == calls
    assert ex.test(string, rows[3:]) == [False] and ex.calls == calls + 1
    agree(TimeKind.ABSTRACT, number, rows)
    agree(TimeKind.ABSTRACT, string, rows)
