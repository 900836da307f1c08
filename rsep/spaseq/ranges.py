"""Pushed stateful FILTERs as a range index (002 Sec. 7.2.1's predicate pushing, refined).

When a GPM's stateful FILTER is, or begins with, ``?event_var OP ?run_var`` over numbers,
the runs waiting for that GPM are kept sorted by their ``?run_var`` and an event finds
the runs it can extend by bisection instead of testing each. Both SPASEQ engines use it
(:mod:`rsep.spaseq.nfa`, :mod:`rsep.spaseq.chain`).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any

import pyoxigraph as ox

from rsep.algebra.expression import And, Compare, Constraint, Or, Variable, conjuncts, walk
from rsep.algebra.spaseq import GPM, Mapping
from rsep.sparql.matcher import Fallback, value_of


# The index key of a run that any partition value may extend.
class _Any:
    __slots__ = ()

    def __repr__(self) -> str:
        return "ANY"


ANY = _Any()


_FLIP = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "=": "="}


def _leading_comparison(c: Constraint) -> tuple[str, str, str] | None:
    """``(a, op, b)`` when the FILTER is, or begins a ``&&`` chain with, ``?a OP ?b`` (OP
    not ``!=``) and holds no ``||``."""
    if any(isinstance(n, Or) for n in walk(c.expr)):
        return None
    first = conjuncts(c.expr)[0]
    if isinstance(first, Compare) and first.op in _FLIP and isinstance(first.left, Variable) \
            and isinstance(first.right, Variable):
        return first.left.name, first.op, first.right.name
    return None


def range_filter(g: GPM) -> tuple[str, str, str] | None:
    """``(event variable, op, run variable)`` if a stateful FILTER of g is, or begins a
    ``&&`` chain with, a comparison of a variable g binds with one an earlier GPM binds: a
    run can only match events for which that comparison holds."""
    for f in g.stateful:
        cmp = _leading_comparison(f)
        if cmp is None:
            continue
        a, op, b = cmp
        if a in g.required_variables and b not in g.variables:
            return a, op, b
        if b in g.required_variables and a not in g.variables:
            return b, _FLIP[op], a
    return None


def range_is_whole(g: GPM) -> bool:
    """Whether :func:`range_filter`'s comparison is all of g's stateful FILTERs: then a run
    found by its value (both numbers) passes them, and they need not be tested again."""
    if len(g.stateful) != 1:
        return False
    c = g.stateful[0]
    return _leading_comparison(c) is not None and not isinstance(c.expr, And)


_NUMBERS: dict[object, Any] = {}


def number(t: object) -> Any:
    """An integer or decimal literal's value (exact, comparable across both), else None."""
    if type(t) is not ox.Literal:
        return None
    got = _NUMBERS.get(t, _NUMBERS)  # the dict itself marks "not cached" (None is a value)
    if got is not _NUMBERS:
        return got
    try:
        k, v = value_of(t)  # not _value: its cache is for FILTERs, this one is their own
        got = v if k in ("n", "d") else None
    except Fallback:
        got = None
    if len(_NUMBERS) > 100_000:  # distinct values of a long stream: stay bounded
        _NUMBERS.clear()
    _NUMBERS[t] = got
    return got


_TOP = float("inf")


def select(lst: list[tuple[Any, int]], op: str, ev: Any) -> list[tuple[Any, int]]:
    """The runs (sorted by run value y) for which ``ev op y`` can hold."""
    if ev is None:
        return lst
    if op == ">":
        return lst[:bisect_left(lst, (ev,))]
    if op == ">=":
        return lst[:bisect_right(lst, (ev, _TOP))]
    if op == "<":
        return lst[bisect_right(lst, (ev, _TOP)):]
    if op == "<=":
        return lst[bisect_left(lst, (ev,)):]
    return lst[bisect_left(lst, (ev,)):bisect_right(lst, (ev, _TOP))]


def binding(mu: Mapping, var: str | None) -> object:
    for k, v in mu:
        if k == var:
            return v
    return None
