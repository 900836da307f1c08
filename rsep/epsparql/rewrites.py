"""What the evaluators derive from an EP-SPARQL pattern before running it (003 Sec. 5): the
duration bounds of its FILTERs, each node's horizon, FILTERs pushed down, the variables
every solution binds."""

from __future__ import annotations

import re

from rsep.algebra import expression
from rsep.algebra.epsparql import (
    BGP,
    INF,
    XSD,
    Background,
    Binary,
    EqJoin,
    EqLeftJoin,
    Expr,
    Extend,
    Filter,
    Join,
    LeftJoin,
    Minus,
    Node,
    OrderBy,
    Path,
    Project,
    SeqJoin,
    SeqRightJoin,
    Union,
    Unit,
    Values,
    Var,
    conjoin,
    nodes,
)
from rsep.algebra.expression import (
    Arithmetic,
    Compare,
    Expression,
    Iri,
    PrefixedName,
    Variable,
    signed_literal,
)
from rsep.epsparql.expr import tree_of
from rsep.sparql.filters import NotCompiled, prefixes_of
from rsep.stream.time import TimeKind

# ---------------------------------------------------------------- time horizons (003 Sec. 5)


_DUR_RX = re.compile(r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$")
_NUMBER = re.compile(r"^[+]?\d+(?:\.\d+)?$")  # a non-negative integer or decimal as written
_DURATION = re.compile(r"^-?P")
_NUMBER_TYPES = frozenset(XSD + t for t in ("integer", "decimal", "int", "long"))
_DURATION_TYPES = frozenset(XSD + t for t in ("duration", "dayTimeDuration"))
_BOUNDING = {"<": True, "<=": False}  # getDURATION() OP c: strict?
_MIRRORED = {">": "<", ">=": "<="}  # c OP getDURATION()


def conjuncts(e: Expr) -> list[Expr]:
    """The top-level ``&&`` operands of an expression, each an expression of its own."""
    tree = tree_of(e)
    if tree is None:
        return [e]
    parts = expression.conjuncts(tree)
    if len(parts) == 1:
        return [e if e.tree is not None else Expr(e.text, e.variables, e.prologue, tree)]
    return [Expr.of(p, e.prologue) for p in parts]


def _is_span(x: Expression) -> bool:
    """getDURATION(), or getENDTIME() - getSTARTTIME()."""
    return x == _D or isinstance(x, Arithmetic) and x.op == "-" and x.left == _E \
        and x.right == _S


_D, _S, _E = Variable("__d"), Variable("__s"), Variable("__e")


def _span_literal(c: Expression, prefixes: dict[str, str]) -> tuple[str, bool, str] | None:
    """(op, is_duration, lexical) when c is ``span < / <= v`` or ``v > / >= span`` (span:
    getDURATION() or getENDTIME() - getSTARTTIME(), v a non-negative number or a duration),
    op as if the span were on the left."""
    if not isinstance(c, Compare):
        return None
    if c.op in _BOUNDING and _is_span(c.left):
        op, v = c.op, c.right
    elif c.op in _MIRRORED and _is_span(c.right):
        op, v = _MIRRORED[c.op], c.left
    else:
        return None
    lit = signed_literal(v)
    if lit is None or lit.datatype is None:
        return None
    dt = _resolve(lit.datatype, prefixes)
    if dt in _NUMBER_TYPES and _NUMBER.match(lit.lexical):
        return op, False, lit.lexical
    if dt in _DURATION_TYPES and _DURATION.match(lit.lexical):
        return op, True, lit.lexical
    return None


def _bound_of(c: Expression, prefixes: dict[str, str], kind: TimeKind | None
              ) -> tuple[float, bool] | None:
    """(H, strict) when c is a span comparison (:func:`_span_literal`); H is +inf when its
    value cannot bound a duration on this kind of stream."""
    got = _span_literal(c, prefixes)
    if got is None:
        return None
    op, is_duration, lexical = got
    if is_duration:
        span = _duration_span(lexical, kind)
    else:
        span = INF if kind is TimeKind.DATETIME else float(lexical)
    return span, _BOUNDING[op]


def _resolve(dt: Iri | PrefixedName, prefixes: dict[str, str]) -> str | None:
    if isinstance(dt, Iri):
        return dt.value
    base = prefixes.get(dt.prefix)
    return None if base is None else base + dt.local


def _duration_span(lexical: str, kind: TimeKind | None) -> float:
    """A duration in ms on a dateTime stream; +inf elsewhere, and for a duration with years
    or months (no fixed length) or a negative one."""
    return _duration_ms(lexical) if kind is TimeKind.DATETIME else INF


def _duration_ms(lexical: str) -> float:
    """A day-time duration's length in ms; +inf for one with years or months (no fixed
    length) or a negative one."""
    m = _DUR_RX.match(lexical)
    if not m or not any(m.groups()):
        return INF
    d, h, mi, s = (float(x) if x else 0.0 for x in m.groups())
    return ((d * 24 + h) * 60 + mi) * 60_000 + s * 1000


def mismatched_bounds(root: Node, kind: TimeKind, time_unit_ms: int | None = None) -> str | None:
    """Why no solution could pass a time-function FILTER conjunct of ``root`` on this kind
    of stream, or None: ``getDURATION()`` is an ``xsd:integer`` on an abstract timeline and
    an ``xsd:dayTimeDuration`` on a dateTime one, so comparing it with the other kind of
    literal is a type error, false for every solution (a query that silently never
    answers)."""
    for n in nodes(root):
        if not isinstance(n, Filter):
            continue
        tree = tree_of(n.cond)
        if tree is None:
            continue
        prefixes = _prefixes(n.cond.prologue)
        for c in expression.conjuncts(tree):
            got = _span_literal(c, prefixes)
            if got is None:
                continue
            _, is_duration, lexical = got
            if kind is TimeKind.DATETIME and not is_duration:
                return (f"FILTER ({_sigma_text(c)}): on a dateTime stream getDURATION() is an "
                        f"xsd:dayTimeDuration; compare it with one, e.g. \"PT30S\"^^xsd:dayTimeDuration")
            if kind is not TimeKind.DATETIME and is_duration:
                ms = _duration_ms(lexical)
                hint = ""
                if ms != INF and time_unit_ms:
                    hint = f" (\"{lexical}\" is {ms / time_unit_ms:g} of this run's time units)"
                return (f"FILTER ({_sigma_text(c)}): on an abstract timeline getDURATION() is an "
                        f"xsd:integer of time units; compare it with a number{hint}")
    return None


def _sigma_text(c: Expression) -> str:
    """A conjunct as SPARQL with sigma's variables back to the time functions."""
    text = c.to_sparql()
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1]
    return (text.replace("?__d", "getDURATION()").replace("?__s", "getSTARTTIME()")
            .replace("?__e", "getENDTIME()"))


def bound(e: Expr, kind: TimeKind | None) -> float:
    """H such that every solution satisfying ``e`` has t_omega - t_alpha <= H: from the
    top-level conjuncts ``getDURATION() < / <= c`` and ``getENDTIME() - getSTARTTIME()
    < / <= c`` (or mirrored, ``c > getDURATION()``); +inf when there is none."""
    return bound_exact(e, kind)[0]


def bound_exact(e: Expr, kind: TimeKind | None) -> tuple[float, bool]:
    """(H, strict): every solution satisfying ``e`` has t_omega - t_alpha < H (strict) or
    <= H; (+inf, False) when there is no bound."""
    h, strict = INF, False
    tree = tree_of(e)
    if tree is None:
        return h, strict
    prefixes = _prefixes(e.prologue)
    for c in expression.conjuncts(tree):
        got = _bound_of(c, prefixes, kind)
        if got is not None:
            v, st = got
            if v < h or (v == h and st):
                h, strict = v, st
    return h, strict


def _prefixes(prologue: str) -> dict[str, str]:
    try:
        return prefixes_of(prologue)
    except NotCompiled:  # a relative PREFIX IRI: its names bound nothing here
        return {}


def window(root: Node, kind: TimeKind | None) -> tuple[float, bool]:
    """The time window of a chronological / recent query: the duration bound of the
    FILTERs over its whole pattern (ETALIS's window; see docs/semantics.md)."""
    h, strict = INF, False
    n = root
    while isinstance(n, (Project, Extend, Filter)):
        if isinstance(n, Filter):
            v, st = bound_exact(n.cond, kind)
            if v < h or (v == h and st):
                h, strict = v, st
        n = n.kids[0]
    return h, strict


def horizons(root: Node, kind: TimeKind | None) -> dict[int, float]:
    """Per node: how far back (before the current instant) a solution of the node may
    start and still be part of a future solution of the root. A bounded Filter bounds its
    operand; the bound goes down through Join, SeqJoin, EqJoin, Union, Project, Extend
    and the mandatory operand of the optional operators, not into their optional operand
    (an optional solution that could no longer join could still suppress the mandatory
    one alone, so forgetting it would change results)."""
    out: dict[int, float] = {}

    def walk(n: Node, h: float) -> None:
        out[id(n)] = max(out.get(id(n), -INF), h)
        if isinstance(n, Filter):
            walk(n.arg, min(h, bound(n.cond, kind)))
        elif isinstance(n, (LeftJoin, EqLeftJoin, Minus)):
            walk(n.left, h)
            walk(n.right, INF)
        elif isinstance(n, SeqRightJoin):
            walk(n.left, INF)
            walk(n.right, h)
        else:
            for k in n.kids:
                walk(k, h)

    walk(root, INF)
    return out


def timed(n: Node) -> bool:
    """Every solution of n has a finite interval (it reads the stream)."""
    if isinstance(n, (BGP, Path)):
        return True
    if isinstance(n, (Unit, Background, Values)):
        return False
    if isinstance(n, (Filter, Extend, Project, OrderBy)):
        return timed(n.kids[0])
    if isinstance(n, Union):
        return timed(n.left) and timed(n.right)
    if isinstance(n, (LeftJoin, EqLeftJoin, Minus)):
        return timed(n.left)
    if isinstance(n, SeqRightJoin):
        return timed(n.right)
    assert isinstance(n, Binary)
    return timed(n.left) or timed(n.right)


def is_bound(c: Expr) -> bool:
    """Whether c is one duration bound (``getDURATION() < c`` ...), of any length."""
    tree = tree_of(c)
    return tree is not None and _bound_of(tree, _prefixes(c.prologue), TimeKind.ABSTRACT) is not None


def push_filters(root: Node) -> Node:
    """An equivalent pattern (for the unrestricted setting) with FILTER conjuncts moved down
    to the operands that bind all their variables, and duration bounds copied down to the
    timed operands, so partial solutions are cut early (003 Sec. 5's binarised conditions).
    A conjunct C of Filter(C && D, P) moves into a mandatory operand P1 of P when its
    variables are all always bound by P1 and it reads no time function: its value on a
    solution of P is its value on the P1 part. ``getDURATION() < c`` also holds for every
    part of a Join / SeqJoin / EqJoin / Union solution and for the mandatory part of the
    optional operators (their intervals contain the part's), so it is copied there. Not for
    the chronological / recent settings: their selection precedes the FILTER."""

    def rebuild(n: Node, pending: list[Expr]) -> Node:
        if isinstance(n, Filter):
            return rebuild(n.arg, pending + conjuncts(n.cond))
        if isinstance(n, Binary) and not isinstance(n, Union):
            mand = {Join: ("left", "right"), SeqJoin: ("left", "right"), EqJoin: ("left", "right"),
                    LeftJoin: ("left",), EqLeftJoin: ("left",), SeqRightJoin: ("right",),
                    Minus: ("left",)}[type(n)]
            down: dict[str, list[Expr]] = {"left": [], "right": []}
            stay: list[Expr] = []
            for c in pending:
                placed = False
                for side in mand:
                    kid = getattr(n, side)
                    if c.timed:
                        if is_bound(c) and timed(kid) and not isinstance(kid, BGP):
                            down[side].append(c)
                    elif c.variables <= certain(kid) and not placed:
                        down[side].append(c)
                        placed = True
                if c.timed or not placed:
                    stay.append(c)
            m = type(n)(rebuild(n.left, down["left"]), rebuild(n.right, down["right"]), n.cond)
            return _wrap(m, stay)
        if isinstance(n, Union):
            return _wrap(Union(rebuild(n.left, []), rebuild(n.right, []), n.cond), pending)
        if isinstance(n, Project):
            return _wrap(Project(rebuild(n.arg, []), n.items, n.distinct), pending)
        if isinstance(n, Extend):
            return _wrap(Extend(rebuild(n.arg, []), n.var, n.expr), pending)
        return _wrap(n, pending)

    return rebuild(root, [])


def _wrap(n: Node, conds: list[Expr]) -> Node:
    return Filter(conjoin(conds), n) if conds else n


def leaf_horizon(root: Node, hs: dict[int, float]) -> float:
    """The largest horizon of the query's stream BGPs: how long it needs an occurrence."""
    out = -INF

    def walk(n: Node) -> None:
        nonlocal out
        if isinstance(n, BGP):
            out = max(out, hs.get(id(n), INF))
        for k in n.kids:
            walk(k)

    walk(root)
    return out


def occurrence_horizon(root: Node, hs: dict[int, float]) -> float:
    """How long :class:`Delta` needs an occurrence: a one-pattern BGP reads only the
    occurrences of the current instant (its earlier solutions are kept by its parent), a
    larger one also earlier ones, over its horizon."""
    out = 0.0

    def walk(n: Node) -> None:
        nonlocal out
        if isinstance(n, BGP) and len(n.patterns) > 1:
            out = max(out, hs.get(id(n), INF))
        for k in n.kids:
            walk(k)

    walk(root)
    return out


# ---------------------------------------------------------------- incremental evaluator


def certain(n: Node) -> frozenset[str]:
    """The variables every solution of n binds (join keys may use them)."""
    if isinstance(n, (BGP, Background)):
        return frozenset(t.name for tp in n.patterns for t in tp
                         if isinstance(t, Var) and not t.name.startswith("_b"))
    if isinstance(n, (Filter, Extend, OrderBy)):
        return certain(n.kids[0])
    if isinstance(n, Project):
        inner = certain(n.arg)
        return inner if n.items is None else frozenset(v for v, e in n.items if e is None and v in inner)
    if isinstance(n, Union):
        return certain(n.left) & certain(n.right)
    if isinstance(n, (Join, SeqJoin, EqJoin)):
        return certain(n.left) | certain(n.right)
    if isinstance(n, (LeftJoin, EqLeftJoin, Minus)):
        return certain(n.left)
    if isinstance(n, SeqRightJoin):
        return certain(n.right)
    if isinstance(n, Path):
        return frozenset(n.names)
    if isinstance(n, Values):
        return frozenset(v for v in n.names if all(any(k == v for k, _ in r) for r in n.rows))
    return frozenset()
