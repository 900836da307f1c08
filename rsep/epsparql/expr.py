"""EP-SPARQL's FILTERs on the one FILTER compiler (rsep.sparql.filters).

One pyoxigraph call costs ~40 us, which dominated the per-event cost: a FILTER is compiled
to Python (comparisons, arithmetic, &&, ||, !, BOUND, effective boolean values, over
numbers, strings, IRIs and day-time durations) and evaluated on the solutions' values as
EP-SPARQL holds them, N-Triples strings, read by :func:`rsep.sparql.filters.nt_value`.
The time functions (sigma, Sec. 4.2: ?__s, ?__e, ?__d) are given as values; on a dateTime
stream getSTARTTIME() and getENDTIME() are dateTimes, which are not compiled. What is not
compiled, or a value met at run time that is not mirrored exactly (:class:`Fallback`),
goes to pyoxigraph: compiled and uncompiled evaluation give the same answers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from rsep.algebra.epsparql import TIME_VARIABLES, Expr
from rsep.algebra.expression import Expression
from rsep.lang.errors import QueryError
from rsep.lang.expression import parse_expression
from rsep.sparql.filters import Fallback, NotCompiled, compile_expression, nt_value, prefixes_of

__all__ = ["Fallback", "Fn", "compile_filter", "holds", "tree_of"]

INF = float("inf")
_DATETIMES = frozenset(("__s", "__e"))  # dateTimes on a dateTime stream

# A compiled FILTER: the row (variable -> N-Triples term; the time functions given) ->
# True, False or an error
Fn = Callable[[dict], object]


def _same(t: object) -> object:
    return t


def compile_filter(expr: Expression | str, prologue: str, datetime: bool) -> Fn | None:
    """The expression (its tree, or text read into one) compiled, or None when it is not.
    ``datetime``: the time functions give a dateTime stream's values."""
    if isinstance(expr, str):
        try:
            expr = parse_expression(expr, prologue)
        except QueryError:
            return None  # pyoxigraph says what is wrong with it
    if datetime and not _DATETIMES.isdisjoint(expr.variables()):
        return None
    try:
        return compile_expression(expr, prefixes_of(prologue), _same, nt_value, TIME_VARIABLES)
    except (NotCompiled, Fallback):
        return None


def tree_of(e: Expr) -> Expression | None:
    """e's tree; one made from text alone is read from it (None when it does not parse:
    pyoxigraph says what is wrong with it)."""
    if e.tree is not None:
        return e.tree
    try:
        return parse_expression(e.text, e.prologue)
    except QueryError:
        return None


def holds(f: Fn, rows: Iterable[tuple[tuple[tuple[str, str], ...], float, float]],
          datetime: bool) -> list[bool]:
    """f's effective boolean value for each (mu, ta, tw), sigma's values given (a duration
    in ms on a dateTime stream, an integer otherwise); Fallback: ask pyoxigraph."""
    out = []
    for mu, ta, tw in rows:
        env: dict[str, object] = dict(mu)
        if ta != INF and tw != -INF:
            d = int(tw - ta)
            if datetime:
                env["__d"] = ("u", d)
            else:
                env["__d"] = ("n", d)
                env["__s"], env["__e"] = ("n", int(ta)), ("n", int(tw))
        out.append(f(env) is True)
    return out
