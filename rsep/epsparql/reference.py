"""EP-SPARQL (003): the Section 4.2 semantics over interval-timestamped triples, push-based.

A solution is ``(mu, t_alpha, t_omega)``; every triple of an rsep :class:`Event`
is a triple occurrence with the event's ``[start, end]``. Two evaluators:

* :func:`evaluate` transcribes Section 4.2 over a set of occurrences (the
  reference; it also runs the ETALIS chronological / recent settings, with the
  selection of RSEP-QL's Eq. (10) / (11) at every SeqJoin);
* :class:`Delta` is the incremental evaluator the runtime uses in the
  unrestricted setting: at instant tau it derives exactly the solutions with
  ``t_omega == tau`` from the children's earlier solutions (kept per node) and
  their solutions at tau. Every operator's result ends at the end of one of its
  operands and its negative conditions (LeftJoin, SeqRightJoin, EqLeftJoin)
  only look at solutions ending no later, so a solution is final when its end
  is reached: results are output then and never retracted (timewise
  monotonicity).

The operators both evaluators run (World, ExprEvaluator, left_join, project, ...) are
:mod:`rsep.epsparql.operators`'; this module keeps ``evaluate``, Sec. 4.2 as written, the
oracle the differential tests compare the production evaluators with.

Readings of the damaged/ambiguous formulas are listed in docs/semantics.md
("EP-SPARQL").
"""

from __future__ import annotations

from collections.abc import Iterable

from rsep.algebra import selection
from rsep.algebra.epsparql import (  # noqa: F401 - the algebra, read with its evaluator
    BGP,
    DOMAIN,
    INF,
    POLICIES,
    RANGE,
    RDF_TYPE,
    RDFS,
    SUBCLASS,
    SUBPROP,
    XSD,
    Background,
    Binary,
    EpSparqlQuery,
    EqJoin,
    EqLeftJoin,
    EtalisPolicy,
    Expr,
    Extend,
    Filter,
    Join,
    LeftJoin,
    Minus,
    Mu,
    Node,
    OrderBy,
    Path,
    Project,
    SeqJoin,
    SeqRightJoin,
    Term,
    TriplePattern,
    Union,
    Unit,
    Values,
    Var,
    nodes,
    parse_policy,
    reads_history,
    static,
    variables,
)
from rsep.algebra.events import Selection
from rsep.epsparql.matcher import (  # noqa: F401 - Occurrence, OccurrenceStore: read with it
    TIMELESS,
    Occurrence,
    OccurrenceStore,
    Solution,
    Source,
    combine,
    compatible,
    match_bgp,
)

# The operators the production evaluators share (rsep.epsparql.operators): this module
# keeps Sec. 4.2's evaluate, the differential tests compare production with it.
from rsep.epsparql.operators import (  # noqa: F401 - ExprEvaluator: read with the evaluator
    ExprEvaluator,
    World,
    background_source,
    extend_solutions,
    interval,
    left_join,
    no_later,
    path_solutions,
    project,
    removes,
)


def _live(w: World, hi: float) -> Source:
    def src(s: str | None, p: str | None, o: str | None) -> Iterable[Occurrence]:
        lo, consumed = w.lo, w.consumed
        if w.lo_strict:
            return (oc for oc in w.occ.candidates(s, p, o) if oc.tw <= hi and oc.ta > lo
                    and oc.item not in consumed)
        return (oc for oc in w.occ.candidates(s, p, o) if oc.tw <= hi and oc.ta >= lo
                and oc.item not in consumed)
    return src


def evaluate(n: Node, w: World, sel: Selection = Selection.UNRESTRICTED, hi: float = INF,
             subst: Mu = ()) -> list[Solution]:
    """The solutions of n over the live occurrences ending at or before ``hi``, compatible
    with ``subst`` (Sec. 4.2; SeqJoin with Eq. (10)/(11) of 000 under a policy)."""
    if subst:  # only n's variables matter (its solutions bind no others)
        vs = n.__dict__.get("_vars")
        if vs is None:
            vs = n.__dict__["_vars"] = frozenset(variables(n))
        subst = tuple(kv for kv in subst if kv[0] in vs)
    memo, key = w.memo, (id(n), sel, hi, subst)
    if memo is not None and key in memo:
        return memo[key]
    out = _eval(n, w, sel, hi, subst)
    out = [s for s in out if compatible(s.mu, subst)] if subst else out
    if memo is not None:
        memo[key] = out
    return out


def _eval(n: Node, w: World, sel: Selection, hi: float, subst: Mu) -> list[Solution]:
    ex = w.exprs
    if isinstance(n, Unit):
        return [TIMELESS]
    if isinstance(n, BGP):
        names = {t.name for tp in n.patterns for t in tp if isinstance(t, Var)}
        given = {k: v for k, v in subst if k in names}  # the BGP under mu2 (000 Eq. (7))
        return match_bgp(n.patterns, [_live(w, hi)] * len(n.patterns), given)
    if isinstance(n, Background):
        return match_bgp(n.patterns, [background_source(w, n.iri)] * len(n.patterns))
    if isinstance(n, Values):
        return [Solution(row, INF, -INF) for row in n.rows]
    if isinstance(n, Path):
        d = w.needs_data()
        return path_solutions(n, d, [i for i, (ta, tw, _) in d.items.items() if tw <= hi and w.visible(ta, i)])
    if isinstance(n, Filter):
        return ex.filter(n.cond, evaluate(n.arg, w, sel, hi, subst))
    if isinstance(n, Extend):
        return extend_solutions(n, evaluate(n.arg, w, sel, hi), ex)
    if isinstance(n, OrderBy):
        return ex.order(n.keys, evaluate(n.arg, w, sel, hi, subst))
    if isinstance(n, Project):
        return project(n, evaluate(n.arg, w, sel, hi), ex)
    assert isinstance(n, Binary)
    if isinstance(n, Union):
        return evaluate(n.left, w, sel, hi, subst) + evaluate(n.right, w, sel, hi, subst)
    if isinstance(n, Join):
        a = evaluate(n.left, w, sel, hi, subst)
        b = evaluate(n.right, w, sel, hi, subst)
        return [combine(x, y) for x in a for y in b if compatible(x.mu, y.mu)]
    if isinstance(n, EqJoin):
        a = evaluate(n.left, w, sel, hi, subst)
        b = evaluate(n.right, w, sel, hi, subst)
        return [combine(x, y) for x in a for y in b
                if x.ta == y.ta and x.tw == y.tw and compatible(x.mu, y.mu)]
    if isinstance(n, SeqJoin):
        return _seq(n, w, sel, hi, subst)
    if isinstance(n, LeftJoin):
        a = evaluate(n.left, w, sel, hi, subst)
        b = evaluate(n.right, w, sel, hi)
        return left_join(a, b, n.cond, ex, no_later)
    if isinstance(n, Minus):
        a = evaluate(n.left, w, sel, hi, subst)
        b = evaluate(n.right, w, sel, hi)
        return [x for x in a if not any(removes(x, y) for y in b)]
    if isinstance(n, EqLeftJoin):
        a = evaluate(n.left, w, sel, hi, subst)
        b = evaluate(n.right, w, sel, hi)
        return left_join(a, b, n.cond, ex, lambda x, y: x.ta == y.ta and x.tw == y.tw)
    if isinstance(n, SeqRightJoin):
        a = evaluate(n.left, w, sel, hi)
        b = evaluate(n.right, w, sel, hi, subst)
        return left_join(b, a, n.cond, ex, lambda x, y: y.tw < x.ta, mandatory_right=True)
    raise TypeError(f"not an EP-SPARQL pattern: {n!r}")


def _seq(n: SeqJoin, w: World, sel: Selection, hi: float, subst: Mu) -> list[Solution]:
    rights = evaluate(n.right, w, sel, hi, subst)
    out: list[Solution] = []
    if sel is Selection.UNRESTRICTED:
        lefts_all = evaluate(n.left, w, sel, hi, subst)
        for m2 in rights:
            out.extend(combine(m1, m2) for m1 in lefts_all
                       if m1.tw < m2.ta and compatible(m1.mu, m2.mu))
        return out
    # 000 Eq. (10) / (11), with the readings of docs/semantics.md (RSEP-QL event patterns)
    lefts = (_lefts_indexed(n, w, sel, hi, subst, rights) if INDEXED_LEFTS and
             _per_solution(n.left) else _lefts(n, w, sel, hi, subst, rights))
    usable = [m2 for m2 in rights if lefts[id(m2)]]
    for m2 in selection.select(sel, usable, interval, _compatible):
        out.extend(combine(m1, m2) for m1 in selection.pick(sel, lefts[id(m2)], interval))
    return out


def _lefts(n: SeqJoin, w: World, sel: Selection, hi: float, subst: Mu,
           rights: list[Solution]) -> dict[int, list[Solution]]:
    """Each right operand's left candidates, as Eq. (10) / (11) write them: the left side
    under mu2, over what ended before m2 started."""
    lefts = {}
    for m2 in rights:
        sub = tuple(sorted({**dict(subst), **dict(m2.mu)}.items()))
        lefts[id(m2)] = [m1 for m1 in evaluate(n.left, w, sel, min(hi, m2.ta - 1), sub)
                         if m1.tw < m2.ta]
    return lefts


# _lefts_indexed in place of _lefts where _per_solution allows (a switch for the test that
# keeps the two equal)
INDEXED_LEFTS = True


def _per_solution(n: Node) -> bool:
    """Whether n's solutions under a substitution, up to hi, are its solutions up to any
    later hi compatible with the substitution and ending by hi, in the same order: a BGP
    (one occurrence per pattern, each ending by the solution's end; a bound variable only
    narrows the occurrences each pattern reads, in the order they were added), and FILTERs
    over one (each solution tested on its own: EXISTS reads what ended by the solution's
    end). Not so under a nested SEQ of a policy, whose selection depends on the rivals."""
    while isinstance(n, Filter):
        n = n.arg
    return isinstance(n, BGP)


def _lefts_indexed(n: SeqJoin, w: World, sel: Selection, hi: float, subst: Mu,
                   rights: list[Solution]) -> dict[int, list[Solution]]:
    """:func:`_lefts` with the left side evaluated once, its solutions grouped by the
    variables it shares with the right side: one evaluation per instant instead of one
    per right operand (SRBench's events hold hundreds of readings each)."""
    if not rights:
        return {}
    top = min(hi, max(m2.ta for m2 in rights) - 1)
    all_lefts = evaluate(n.left, w, sel, top, subst)
    shared = sorted(frozenset(variables(n.left)) & frozenset(variables(n.right)))
    groups: dict[tuple, list[Solution]] = {}
    for m1 in all_lefts:
        mu = dict(m1.mu)
        groups.setdefault(tuple(mu.get(v) for v in shared), []).append(m1)
    lefts = {}
    for m2 in rights:
        mu2 = dict(m2.mu)
        if all(v in mu2 for v in shared):
            cands = groups.get(tuple(mu2[v] for v in shared), [])
        else:  # an unbound shared variable (OPTIONAL on the right): compatibility decides
            cands = [m1 for m1 in all_lefts if compatible(m1.mu, m2.mu)]
        bound = min(hi, m2.ta - 1)  # (so m1.tw < m2.ta)
        lefts[id(m2)] = [m1 for m1 in cands if m1.tw <= bound]
    return lefts


def _compatible(a: Solution, b: Solution) -> bool:
    return compatible(a.mu, b.mu)
