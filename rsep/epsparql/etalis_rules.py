"""The ETALIS rule of an EP-SPARQL query (rsep.epsparql.etalis runs it): the query
translated into an ETALIS rule as ETALIS's ``ep_sparql.P`` reads it (:func:`compile_query`;
docs/semantics.md, "EP-SPARQL as ETALIS runs it"), binarised as ``binarizer.P`` does
(:func:`binarise`), and compiled into the event-driven clauses ``compiler.P`` writes
(:func:`tr_clauses`). Comments name the ETALIS predicates each piece stands for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rsep.algebra.epsparql import (
    BGP,
    INF,
    EqJoin,
    Expr,
    Filter,
    Join,
    Project,
    SeqJoin,
    TriplePattern,
)
from rsep.epsparql.rewrites import bound_exact, conjuncts
from rsep.stream.time import TimeKind

if TYPE_CHECKING:
    from rsep.algebra.epsparql import EpSparqlQuery, Node


class Unsupported(ValueError):
    """A query the ETALIS mode cannot run: the message says what and why."""


# ---------------------------------------------------------------- the ETALIS rule


@dataclass(frozen=True)
class Atom:
    """rdf(S, P, O): one triple pattern, an event of the stream."""

    pattern: TriplePattern


@dataclass(frozen=True)
class Op:
    """L seq R, L equals R, L and R (parser.P's seqf, equalsf, andf)."""

    op: str
    left: Formula
    right: Formula


@dataclass(frozen=True)
class Where:
    """F where C: C holds for F's values (wheref)."""

    arg: Formula
    conds: tuple[Expr, ...]


Formula = Atom | Op | Where


@dataclass(frozen=True)
class Program:
    """``select_event([V1, ...]) <- Body``, with the rule's window (event_rule_window)
    given by the duration bounds of the query's outermost FILTER."""

    head: tuple[str, ...]
    body: Formula
    bounds: tuple[Expr, ...] = ()

    def window(self, kind: TimeKind | None) -> tuple[float, bool]:
        """(H, strict): a complex event may last at most H (less than H when strict)."""
        h, strict = INF, False
        for e in self.bounds:
            v, st = bound_exact(e, kind)
            if v == INF:
                raise Unsupported(f"the time bound ({e.text.replace('?__d', 'getDURATION()')}) "
                                  "does not apply to this stream's timestamps")
            if v < h or (v == h and st):
                h, strict = v, st
        return h, strict


def _is_bound(e: Expr) -> bool:
    return any(bound_exact(e, k)[0] < INF for k in (TimeKind.ABSTRACT, TimeKind.DATETIME))


def compile_query(q: EpSparqlQuery) -> Program:
    """The ETALIS rule of an EP-SPARQL SELECT query (docs/semantics.md, "EP-SPARQL as
    ETALIS runs it"): a triple pattern is an rdf/3 event, several in one group are joined
    with ``and``; SEQ is ``seq`` and EQUALS ``equals``, left-associative (003 rule (9));
    a FILTER is ``where`` on its group; the duration bounds among the top-level conjuncts
    of the outermost FILTER are the rule's window. Anything else has no ETALIS
    counterpart here and is refused."""
    if q.construct:
        raise Unsupported("the ETALIS policies run SELECT queries (a CONSTRUCT rule's "
                          "triples would have to re-enter ETALIS as events)")
    root = q.pattern
    if not isinstance(root, Project) or root.distinct:
        raise Unsupported("SELECT DISTINCT has no ETALIS counterpart (every detection is an event)")
    if root.items is not None and any(e is not None for _, e in root.items):
        raise Unsupported("SELECT expressions (... AS ?v) have no ETALIS counterpart here")
    n: Node = root.arg
    bounds: list[Expr] = []
    conds: list[Expr] = []
    while isinstance(n, Filter):  # the outermost group's FILTERs: window and conditions
        for e in conjuncts(n.cond):
            if _is_bound(e):
                bounds.append(e)
            elif e.timed:
                raise Unsupported("a time function other than an upper bound on the duration "
                                  "(getDURATION() < c or <= c, a conjunct of the outermost "
                                  "FILTER: ETALIS's window) has no ETALIS counterpart here")
            else:
                conds.append(e)
        n = n.arg
    body = _formula(n)
    if conds:
        body = Where(body, tuple(conds))
    return Program(tuple(q.select), body, tuple(bounds))


def _formula(n: Node) -> Formula:
    if isinstance(n, BGP):
        atoms: list[Formula] = [Atom(tp) for tp in n.patterns]
        out = atoms[0]
        for a in atoms[1:]:
            out = Op("and", out, a)
        return out
    if isinstance(n, SeqJoin):
        return Op("seq", _formula(n.left), _formula(n.right))
    if isinstance(n, EqJoin):
        return Op("equals", _formula(n.left), _formula(n.right))
    if type(n) is Join:
        return Op("and", _formula(n.left), _formula(n.right))
    if isinstance(n, Filter):
        if n.cond.timed:
            raise Unsupported("a time function in a nested FILTER: ETALIS has one window per "
                              "rule (put the duration bound in the outermost FILTER)")
        return Where(_formula(n.arg), (n.cond,))
    what = type(n).__name__
    names = {"SeqRightJoin": "OPTIONALSEQ", "EqLeftJoin": "EQUALSOPTIONAL", "LeftJoin": "OPTIONAL",
             "Union": "UNION", "Minus": "MINUS", "Background": "GRAPH", "Unit": "an empty group",
             "Extend": "BIND", "Project": "a sub-SELECT", "Values": "VALUES", "Path": "a property path"}
    raise Unsupported(f"{names.get(what, what)} has no counterpart among ETALIS's operators "
                      "(seq, equals, and, where): use the unrestricted, chronological or "
                      "recent policy")


# ---------------------------------------------------------------- binarisation (binarizer.P)


@dataclass(frozen=True)
class Temp:
    """temp_e_N: the intermediate event of a binarised sub-formula."""

    n: int


HEAD = Temp(0)  # select_event/1
Ref = Atom | Temp


@dataclass(frozen=True)
class Rule:
    """eventClause(Label, Head, Body) after binarisation: Body is one operator over atoms
    and intermediate events (or a single event: ``Head <- temp_e_N``)."""

    head: Temp
    op: str  # seq, equals, and, where, event
    left: Ref
    right: Ref | None = None
    conds: tuple[Expr, ...] = ()


def binarise(p: Program) -> list[Rule]:
    """binarization/3: every operand that is not an event becomes an intermediate event
    with a rule of its own, numbered as they are made (left operand first); the rules come
    out inner first, the rule of the head last. A body that is a sequence of two events is
    kept as it is; any other body becomes an intermediate event that the head's rule
    (``Head <- temp_e_N``) passes on."""
    rules: list[Rule] = []
    count = [0]

    def formula(f: Formula) -> Ref:  # binarization_formula/5
        if isinstance(f, Atom):
            return f
        left = formula(f.arg if isinstance(f, Where) else f.left)
        right = None if isinstance(f, Where) else formula(f.right)
        count[0] += 1
        t = Temp(count[0])
        if isinstance(f, Where):
            rules.append(Rule(t, "where", left, conds=f.conds))
        else:
            rules.append(Rule(t, f.op, left, right))
        return t

    b = p.body
    if isinstance(b, Op) and b.op == "seq" and isinstance(b.left, Atom) and isinstance(b.right, Atom):
        rules.append(Rule(HEAD, "seq", b.left, b.right))  # "sequence no sharing"
    else:
        rules.append(Rule(HEAD, "event", formula(b)))
    return rules


@dataclass(frozen=True)
class Clause:
    """trClause(Label, event(Trigger, [T1, T2]), Body): what happens when Trigger occurs.
    ``action``: insert (etr_insf of a goal waiting for the other operand), check (find a
    goal waiting for this event, etr_dbf + etr_delf, and fire the rule's head), guard (and:
    insert only when no goal waits for this event, not_etr_dbf), where, event."""

    trigger: Ref
    action: str
    rule: Rule
    side: int = 0  # and: which operand the trigger is (0 left, 1 right)


def tr_clauses(rules: list[Rule]) -> list[Clause]:
    """event2tr_transformation/2, in its order: a sequence or equals rule gives its
    checking clause (on the right operand) before its goal-inserting one (on the left);
    ``and`` gives insert-left, insert-right, check-left, check-right."""
    out: list[Clause] = []
    for r in rules:
        if r.op in ("seq", "equals"):
            assert r.right is not None
            out += [Clause(r.right, "check", r), Clause(r.left, "insert", r)]
        elif r.op == "and":
            assert r.right is not None
            out += [Clause(r.left, "guard", r, 0), Clause(r.right, "guard", r, 1),
                    Clause(r.left, "check", r, 0), Clause(r.right, "check", r, 1)]
        else:
            out.append(Clause(r.left, r.op, r))
    return out
