"""What the evaluators derive from an EP-SPARQL pattern before running it (003 Sec. 5): the
duration bounds of its FILTERs, each node's horizon, FILTERs pushed down, the variables
every solution binds."""

from __future__ import annotations

import re

from rsep.algebra.epsparql import (
    BGP,
    INF,
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
    nodes,
)
from rsep.stream.time import TimeKind

# ---------------------------------------------------------------- time horizons (003 Sec. 5)


_NUM = r"[+]?\d+(?:\.\d+)?|\"[+]?\d+(?:\.\d+)?\"\^\^(?:xsd:(?:integer|decimal|int|long)|<http://www\.w3\.org/2001/XMLSchema#(?:integer|decimal|int|long)>)"
_DUR = r"\"-?P[^\"]*\"\^\^(?:xsd:(?:duration|dayTimeDuration)|<http://www\.w3\.org/2001/XMLSchema#(?:duration|dayTimeDuration)>)"
_SPAN = r"(?:\?__d|\?__e\s*-\s*\?__s|\(\s*\?__e\s*-\s*\?__s\s*\))"
_BOUND_RX = [re.compile(rf"^{_SPAN}\s*(?P<op><=|<)\s*(?P<v>{_NUM}|{_DUR})$"),
             re.compile(rf"^(?P<v>{_NUM}|{_DUR})\s*(?P<op>>=|>)\s*{_SPAN}$")]
_DUR_RX = re.compile(r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$")


def conjuncts(text: str) -> list[str]:
    """The top-level ``&&`` operands of an expression (outer parentheses removed)."""
    text = text.strip()
    while text.startswith("(") and _closing(text, 0) == len(text) - 1:
        text = text[1:-1].strip()
    out, depth, quote, start, i = [], 0, False, 0, 0
    while i < len(text):
        c = text[i]
        if c == '"':
            quote = not quote
        elif not quote and c == "(":
            depth += 1
        elif not quote and c == ")":
            depth -= 1
        elif not quote and depth == 0 and text.startswith("||", i):
            return [text]  # || binds looser than &&: one conjunct
        elif not quote and depth == 0 and text.startswith("&&", i):
            out.append(text[start:i])
            start = i + 2
            i += 1
        i += 1
    out.append(text[start:])
    if len(out) == 1:
        return [out[0].strip()]
    return [x for part in out for x in conjuncts(part)]


def _closing(text: str, i: int) -> int:
    depth, quote = 0, False
    for j in range(i, len(text)):
        c = text[j]
        if c == '"':
            quote = not quote
        elif not quote and c == "(":
            depth += 1
        elif not quote and c == ")":
            depth -= 1
            if depth == 0:
                return j
    return -1


def _literal_span(v: str, kind: TimeKind | None) -> float:
    """A bound's value in the stream's time unit (ms for dateTime streams), or +inf when it
    cannot bound a duration on this kind of stream (a number on a dateTime stream, a
    duration with years or months)."""
    if v.startswith('"') and "P" in v.split("^^")[0]:
        if kind is not TimeKind.DATETIME:
            return INF
        m = _DUR_RX.match(v[1:v.index('"', 1)])
        if not m or not any(m.groups()):
            return INF
        d, h, mi, s = (float(x) if x else 0.0 for x in m.groups())
        return ((d * 24 + h) * 60 + mi) * 60_000 + s * 1000
    if kind is TimeKind.DATETIME:
        return INF
    return float(v.split("^^")[0].strip('"'))


def mismatched_bounds(root: Node, kind: TimeKind, time_unit_ms: int | None = None) -> str | None:
    """Why no solution could pass a time-function FILTER conjunct of ``root`` on this kind
    of stream, or None: ``getDURATION()`` is an ``xsd:integer`` on an abstract timeline and
    an ``xsd:dayTimeDuration`` on a dateTime one, so comparing it with the other kind of
    literal is a type error, false for every solution (a query that silently never
    answers)."""
    for n in nodes(root):
        if not isinstance(n, Filter):
            continue
        for c in conjuncts(n.cond.text):
            m = next((m for rx in _BOUND_RX if (m := rx.match(c))), None)
            if m is None:
                continue
            v = m.group("v")
            is_duration = v.startswith('"') and "P" in v.split("^^")[0]
            if kind is TimeKind.DATETIME and not is_duration:
                return (f"FILTER ({_sigma_text(c)}): on a dateTime stream getDURATION() is an "
                        f"xsd:dayTimeDuration; compare it with one, e.g. \"PT30S\"^^xsd:dayTimeDuration")
            if kind is not TimeKind.DATETIME and is_duration:
                dm = _DUR_RX.match(v[1:v.index('"', 1)])
                hint = ""
                if dm and any(dm.groups()) and time_unit_ms:
                    d, h, mi, sec = (float(x) if x else 0.0 for x in dm.groups())
                    units = (((d * 24 + h) * 60 + mi) * 60_000 + sec * 1000) / time_unit_ms
                    hint = f" ({v.split('^^')[0]} is {units:g} of this run's time units)"
                return (f"FILTER ({_sigma_text(c)}): on an abstract timeline getDURATION() is an "
                        f"xsd:integer of time units; compare it with a number{hint}")
    return None


def _sigma_text(c: str) -> str:
    """A conjunct as the user wrote it (sigma's variables back to the time functions)."""
    return (c.replace("?__d", "getDURATION()").replace("?__s", "getSTARTTIME()")
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
    for c in conjuncts(e.text):
        for rx in _BOUND_RX:
            m = rx.match(c)
            if m:
                v = _literal_span(m.group("v"), kind)
                st = m.group("op") in ("<", ">")
                if v < h or (v == h and st):
                    h, strict = v, st
    return h, strict


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


def _is_bound(c: str) -> bool:
    return any(rx.match(c) for rx in _BOUND_RX)


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
            exprs = [Expr(c, frozenset(v for v in re.findall(r"[?$](\w+)", c) if not v.startswith("__")),
                          n.cond.prologue) for c in conjuncts(n.cond.text)]
            return rebuild(n.arg, pending + exprs)
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
                        if _is_bound(c.text) and timed(kid) and not isinstance(kid, BGP):
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
    if not conds:
        return n
    text = " && ".join(f"({c.text})" for c in conds) if len(conds) > 1 else conds[0].text
    return Filter(Expr(text, frozenset().union(*(c.variables for c in conds)), conds[0].prologue), n)


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
