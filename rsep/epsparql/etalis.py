"""EP-SPARQL as ETALIS runs it: ``--policy etalis-chronological`` / ``etalis-recent``.

rsep's ``chronological`` and ``recent`` are RSEP-QL's Eq. (10) / (11) over the whole
pattern, with consumption on output (000, Appendix A): the formal reading. ETALIS, the
engine EP-SPARQL was built on (003 Sec. 5), does something else: it binarises the
pattern into rules over intermediate events and, at every binary step, as each event
arrives, selects one waiting goal and consumes it. This module reproduces that, step by
step, as ETALIS's own source does it (github sspider/etalis, src/): the query is
translated into an ETALIS rule, binarised and compiled into event-driven clauses
(:mod:`rsep.epsparql.etalis_rules`), and those clauses are run by
:class:`Machine` with the goal store of ``storage.P`` and the executor of
``executor.P``. Comments name the ETALIS predicates each piece stands for.

What ETALIS does that the formal reading does not (each one shown by the recorded
corpus in tests/data/etalis):

* a sequence step selects the first goal of its store whose waiting pattern the new
  event matches: chronological stores append goals, recent ones put them first, so the
  order is the order of arrival, not of the intervals (``etr_insf``);
* the goal is deleted before the step's tests (``etr_delf`` before ``less``); when a
  test fails the goal is put back, at the end of the store (chronological) or at its
  front (recent), which reorders the store, and the next goal is tried;
* a FILTER is a separate ``where`` rule over the sequence's result: the goal that the
  sequence consumed stays consumed when the FILTER rejects the combination;
* a duration bound (``getDURATION() < c``) is the rule's ``event_rule_window``, tested at
  every step (``check_event_rule_conditions``), after ``less``;
* only the left event of a step is consumed: an event can complete one sequence and
  start the next;
* a new goal replaces the goals of its store made from an event with the same content
  (``retractall`` in ``etr_insf``);
* times are (second, counter): every input item is labelled with a counter per distinct
  time, so simultaneous items are ordered by arrival (``less_datime``); EQUALS asks for
  identical labels, which the triples of one item share.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rsep.algebra.epsparql import (
    INF,
    EtalisPolicy,
    TriplePattern,
    Var,
)
from rsep.algebra.output import EngineError
from rsep.epsparql import native as native_module
from rsep.epsparql.etalis_rules import (
    HEAD,
    Atom,
    Clause,
    Program,
    Ref,
    Rule,
    Temp,
    Unsupported,
    binarise,
    compile_query,
    tr_clauses,
)
from rsep.epsparql.matcher import Solution, strings
from rsep.epsparql.operators import ExprEvaluator
from rsep.epsparql.rewrites import mismatched_bounds
from rsep.epsparql.runtime import EpOutput
from rsep.lang.errors import QueryError
from rsep.stream.time import TimeKind

if TYPE_CHECKING:
    from pyoxigraph import Triple

    from rsep.algebra.epsparql import EpSparqlQuery
    from rsep.algebra.output import Output
    from rsep.algebra.runtime import Host
    from rsep.stream.event import Event


# ---------------------------------------------------------------- execution (executor.P, storage.P)


Stamp = tuple[int, int]  # datime: (time, counter); less_datime compares both


@dataclass(slots=True)
class Occurred:
    """event(E, [T1, T2]): ``content`` is E without variables (what identifies it for
    etr_insf), ``mu`` its variables' values."""

    ref: Ref
    content: tuple
    mu: dict[str, str]
    t1: Stamp
    t2: Stamp


@dataclass(slots=True)
class Goal:
    """etr_db(T2, T1, B, A, C): B occurred at [T1, T2] and waits for the rule's other
    operand."""

    content: tuple
    mu: dict[str, str]
    t1: Stamp
    t2: Stamp


def _match(tp: TriplePattern, triple: tuple[str, str, str]) -> dict[str, str] | None:
    mu: dict[str, str] = {}
    for t, v in zip(tp, triple, strict=True):
        if isinstance(t, Var):
            w = mu.get(t.name)
            if w is None:
                mu[t.name] = v
            elif w != v:
                return None
        elif t != v:
            return None
    return mu


def _compatible(a: dict[str, str], b: dict[str, str]) -> bool:
    if len(b) < len(a):
        a, b = b, a
    for k, v in a.items():
        if b.get(k, v) != v:
            return False
    return True


def _vars(r: Ref, rules: dict[Temp, Rule]) -> frozenset[str]:
    if isinstance(r, Atom):
        return frozenset(t.name for t in r.pattern if isinstance(t, Var))
    rule = rules[r]
    out = _vars(rule.left, rules)
    return out | _vars(rule.right, rules) if rule.right is not None else out


class Store:
    """One rule's goals waiting for one operand, in the order of the etr_db/5 clauses.
    Goals are bucketed by the values of the variables both operands bind: a waiting goal
    can only match an event with the same values, and the order within a bucket is the
    order of the whole store restricted to it."""

    def __init__(self, shared: tuple[str, ...]) -> None:
        self.shared = shared
        self.buckets: dict[tuple, list[Goal]] = {}

    def bucket(self, mu: dict[str, str]) -> list[Goal]:
        sh = self.shared
        k = (mu.get(sh[0]),) if len(sh) == 1 else tuple([mu.get(v) for v in sh])
        b = self.buckets.get(k)
        if b is None:
            b = self.buckets[k] = []
        return b

    def __len__(self) -> int:
        return sum(len(b) for b in self.buckets.values())

    def goals(self) -> Iterator[Goal]:
        for b in self.buckets.values():
            yield from b


class Machine:
    """The compiled clauses of one query, run event by event as executor.P runs them."""

    def __init__(self, program: Program, policy: EtalisPolicy,
                 exprs: ExprEvaluator | None = None) -> None:
        self.program = program
        self.policy = policy
        self.recent = policy.recent
        self.exprs = exprs or ExprEvaluator()
        self.rules = binarise(program)
        self.clauses = tr_clauses(self.rules)
        by_head = {r.head: r for r in self.rules}
        self.stores: dict[tuple[int, int], Store] = {}
        for r in self.rules:
            if r.right is not None:
                shared = tuple(sorted(_vars(r.left, by_head) & _vars(r.right, by_head)))
                for side in (0, 1):  # goals made from the left operand (0) or the right one (1)
                    self.stores[(id(r), side)] = Store(shared)
        self.window: tuple[float, bool] = (INF, False)
        self.counters: dict[int, int] = {}
        self._counted = 0  # counters kept by the last _forget_counters
        self._span = 0  # the longest item so far (end - start)
        self.fired: list[Occurred] = []
        self.and_rules = any(r.op == "and" for r in self.rules)
        self._size = 0
        self._kept = 0
        # event_trigger's clause lookup, by what triggers them (each list in clause order):
        # an intermediate event's number, a triple's predicate (clauses whose atom has a
        # variable predicate are in every predicate's list), made on first use
        self._by_temp: dict[int, list[tuple[Clause, Callable[[Clause, Occurred], None]]]] = {}
        for c in self.clauses:
            if isinstance(c.trigger, Temp):
                self._by_temp.setdefault(c.trigger.n, []).append((c, getattr(self, "_" + c.action)))
        self._by_pred: dict[str, list[tuple[Clause, TriplePattern,
                                            Callable[[Clause, Occurred], None]]]] = {}

    # ------------------------------------------------------------ input

    def stamp(self, t: int) -> Stamp:
        """label_time_stamp / event/2: the counter of time t, incremented."""
        c = self.counters.get(t, 0) + 1
        self.counters[t] = c
        return (t, c)

    def item(self, start: int, end: int, triples: list[tuple[str, str, str]]) -> list[Occurred]:
        """One stream item: its interval labelled as event/2 labels [datime, datime] (one
        counter for a point, one per end otherwise), then each triple an rdf/3 event with
        that label, in order. Returns the complex events detected."""
        t1 = self.stamp(start)
        t2 = t1 if end == start else self.stamp(end)
        if end - start > self._span:
            self._span = end - start
        self.fired = []
        for tr in triples:
            self._triple(tr, t1, t2)
        if self.window[0] != INF and not self.and_rules:
            self._forget(end)
        if len(self.counters) >= 2 * self._counted + 64:
            self._forget_counters(end)
        return self.fired

    # ------------------------------------------------------------ event_trigger

    def event(self, e: Occurred) -> None:
        """event_trigger(event(E, [T1, T2])): every clause whose trigger unifies with E,
        found first, then fired in order (fireAllTRFormulas); a failing body leaves
        nothing but the goals it put back (fire_event/1 always succeeds)."""
        ref = e.ref
        if isinstance(ref, Atom):
            self._triple(e.content, e.t1, e.t2)
            return
        clauses = self._by_temp.get(ref.n)
        if clauses is None:
            if ref.n == HEAD.n:
                self.fired.append(e)
            return
        for c, act in clauses:
            act(c, Occurred(ref, e.content, e.mu, e.t1, e.t2))

    def _triple(self, tr: tuple[str, str, str], t1: Stamp, t2: Stamp) -> None:
        """event_trigger of an rdf/3 event (the clauses' actions read its content, values
        and interval; the clause's own atom stands for the event)."""
        found = []
        for c, tp, act in self._atom_clauses(tr[1]):
            mu = _match(tp, tr)
            if mu is not None:
                found.append((c, act, mu))
        for c, act, mu in found:
            act(c, Occurred(c.trigger, tr, mu, t1, t2))

    def _atom_clauses(self, p: str) -> list[tuple[Clause, TriplePattern, Callable[[Clause, Occurred], None]]]:
        got = self._by_pred.get(p)
        if got is None:
            got = self._by_pred[p] = [
                (c, c.trigger.pattern, getattr(self, "_" + c.action)) for c in self.clauses
                if isinstance(c.trigger, Atom) and (isinstance(c.trigger.pattern[1], Var)
                                                    or c.trigger.pattern[1] == p)]
        return got

    def _fire(self, r: Rule, content: tuple, mu: dict[str, str], t1: Stamp, t2: Stamp) -> bool:
        """check_event_rule_conditions (the window), then event(Head, [T1, T2])."""
        h, strict = self.window
        d = t2[0] - t1[0]
        if d > h or (strict and d >= h):
            return False
        self.event(Occurred(r.head, (r.head.n, content), mu, t1, t2))
        return True

    # ------------------------------------------------------------ the clauses

    def _insert(self, c: Clause, e: Occurred) -> None:
        """etr_insf(goal(event(I2), event(I1, [T1, T2]), event(Head))): fails if the very
        goal is stored; otherwise removes the goals made from an event with the same
        content (retractall) and stores it, first (recent) or last (chronological)."""
        side = 0 if c.action == "insert" else c.side
        b = self.stores[(id(c.rule), side)].bucket(e.mu)
        content, same = e.content, False
        for g in b:
            if g.content == content:
                if g.t1 == e.t1 and g.t2 == e.t2:
                    return
                same = True
        if same:
            b[:] = [g for g in b if g.content != content]
        g = Goal(content, e.mu, e.t1, e.t2)
        if self.recent:
            b.insert(0, g)
        else:
            b.append(g)
        self._size += 1

    def _guard(self, c: Clause, e: Occurred) -> None:
        """and: not_etr_dbf(goal(event(this), event(other, _), Head)), then etr_insf."""
        waiting = self.stores[(id(c.rule), 1 - c.side)].bucket(e.mu)
        if any(_compatible(g.mu, e.mu) for g in waiting):
            return
        self._insert(c, e)

    def _check(self, c: Clause, e: Occurred) -> None:
        """The checking clause: etr_dbf enumerates the stored goals compatible with this
        event (the store as it was when it was called); for each, etr_delf deletes it, then
        the rule's test (seq: less(T2, T3); equals: the same [T1, T2]; and: none) and the
        window; the first goal that passes fires the head, ending the clause. A goal that
        fails is put back by backtracking (asserta under recent, assertz under
        chronological: at the front, or at the end) and the next one is tried."""
        r = c.rule
        # seq / equals: the goals the left operand made; and: those of the other operand
        side = 0 if r.op in ("seq", "equals") else 1 - c.side
        b = self.stores[(id(r), side)].bucket(e.mu)
        for g in list(b):
            if not _compatible(g.mu, e.mu):
                continue
            if r.op == "equals" and (g.t1 != e.t1 or g.t2 != e.t2):
                continue  # the goal's [T1, T2] must unify with the event's
            for i, x in enumerate(b):  # etr_delf
                if x is g:
                    del b[i]
                    break
            self._size -= 1
            if r.op == "seq":
                ok = g.t2 < e.t1  # less(T2, T3)
                t1, t2 = g.t1, e.t2
                content = (g.content, e.content)
            elif r.op == "equals":
                ok, t1, t2, content = True, e.t1, e.t2, (g.content, e.content)
            else:  # and: min / max of the two intervals
                ok = True
                t1, t2 = min(g.t1, e.t1), max(g.t2, e.t2)
                content = (g.content, e.content) if c.side == 1 else (e.content, g.content)
            if ok:
                if self._fire(r, content, {**g.mu, **e.mu}, t1, t2):
                    return
                if r.op == "seq":
                    # the window failed on the goal's own start: it fails for every later
                    # event too (ends only grow), so putting it back changes nothing but
                    # what later checks would try again (_forget drops it the same way)
                    continue
            if self.recent:  # backtracking into etr_delf puts the goal back
                b.insert(0, g)
            else:
                b.append(g)
            self._size += 1

    def _where(self, c: Clause, e: Occurred) -> None:
        """seqf(I1, prolog(C)): the where rule tests its condition on I1's values."""
        r = c.rule
        s = Solution(tuple(sorted(e.mu.items())), e.t1[0], e.t2[0])
        for cond in r.conds:
            if not self.exprs.test(cond, [(s, s.ta, s.tw)])[0]:
                return
        self._fire(r, (e.content,), e.mu, e.t1, e.t2)

    def _event(self, c: Clause, e: Occurred) -> None:
        """Head <- temp_e_N: the head, with the same interval."""
        self._fire(c.rule, (e.content,), e.mu, e.t1, e.t2)

    # ------------------------------------------------------------ memory

    def _forget(self, now: int) -> None:
        """Drop the goals no later event can use: every step that could take one would
        fail the window (its start is too old), and a goal that cannot be taken changes
        nothing else for seq and equals rules (ETALIS keeps them, with its garbage
        collection off). Amortised: done when the stores have doubled."""
        if self._size < 2 * self._kept + 64:
            return
        h, strict = self.window
        for s in self.stores.values():
            for k, b in list(s.buckets.items()):
                b[:] = [g for g in b if not (now - g.t1[0] > h or (strict and now - g.t1[0] >= h))]
                if not b:
                    del s.buckets[k]
        self._size = sum(len(s) for s in self.stores.values())
        self._kept = self._size

    def _forget_counters(self, now: int) -> None:
        """ETALIS never retracts a second's counter, so its memory grows with the stream's
        seconds. A counter only orders labels within its second, and labels live on only in
        stored goals: a second no goal holds a label of, and that no later item can start
        at if no item is longer than the longest so far, is dropped. Should a longer item
        come and start there, its labels count from 1 again: ordered among themselves as
        ETALIS orders them and compared with no older label of that second (none is held),
        so the complex events and their seconds are ETALIS's; only the counter part of
        such a label differs. Amortised: done when the counters have doubled."""
        held = {now}
        for st in self.stores.values():
            for g in st.goals():
                held.add(g.t1[0])
                held.add(g.t2[0])
        low = now - self._span
        self.counters = {t: c for t, c in self.counters.items() if t >= low or t in held}
        self._counted = len(self.counters)


# ---------------------------------------------------------------- the engine's runtime


class EtalisRuntime:
    """A registered EP-SPARQL SELECT query under an ETALIS policy, driven by
    :class:`rsep.runtime.engine.Engine`: each item is taken in at its end, in arrival
    order, and what it completes is output then."""

    def __init__(self, query: EpSparqlQuery, engine: Host, name: str,
                 callback: Callable[[Output], None] | None = None) -> None:
        assert isinstance(query.policy, EtalisPolicy)
        self.query = query
        self.engine = engine
        self.name = name
        self.callback = callback
        self.streams: set[str] = set()  # EP-SPARQL reads every input event
        self.last_tick: int | None = None
        self.kind: TimeKind | None = None
        try:
            self.program = compile_query(query)
        except Unsupported as e:
            raise QueryError(f"--policy {query.policy.value}: {e}", source=query.source) from None
        # not ``machine``: the Spark stage reads ``machine.window`` as a SPASEQ automaton's span
        self.rules_run = Machine(self.program, query.policy)
        self.pending: dict[int, list[Event]] = {}
        # the native path (rsep.epsparql.native), which rsep run takes when it can (rsep.cli.run
        # reads the runtime's), and its plan, or why the query does not take it
        self.native_path = native_module
        self.native: native_module.NativePlan | str = native_module.native_plan(query)

    def bind(self, kind: TimeKind, time_unit_ms: int | None, start: int) -> None:
        why = mismatched_bounds(self.query.pattern, kind, time_unit_ms)
        if why:  # known once the first event tells the kind of time
            raise EngineError(f"query {self.name}: {why}")
        self.kind = kind
        self.rules_run.exprs.kind = kind
        try:
            self.rules_run.window = self.program.window(kind)
        except Unsupported as e:
            raise QueryError(f"--policy {self.query.policy.value}: {e}",
                             source=self.query.source) from None

    def graph_changed(self, iri: str, old: frozenset[Triple], new: frozenset[Triple]) -> None:
        """ETALIS's rules read no background graph (compile_query refuses GRAPH)."""

    def insert(self, e: Event) -> None:
        self.pending.setdefault(e.end, []).append(e)

    def next_tick(self, bound: int) -> int | None:
        lt, best = self.last_tick, None
        for t in self.pending:
            if (lt is None or t > lt) and t < bound and (best is None or t < best):
                best = t
        return best

    def evaluate(self, tau: int) -> list[Output]:
        self.last_tick = tau
        out: list[Output] = []
        for e in self.pending.pop(tau, []):
            triples = [strings(t) for t in e.triples]
            for o in self.rules_run.item(e.start, e.end, triples):
                b = {v: o.mu[v] for v in self.query.select if v in o.mu}
                out.append(EpOutput(self.name, tau, self.kind, bindings=b,
                                    variables=self.query.select, start=o.t1[0], end=o.t2[0]))
        return out

    def idle(self) -> bool:
        return not self.pending


def run(query: EpSparqlQuery, items: list[tuple[int, int, list[tuple[str, str, str]]]],
        kind: TimeKind = TimeKind.ABSTRACT) -> list[tuple[int, dict[str, str], Stamp, Stamp]]:
    """The query over (start, end, triples) items, without an engine: (detection time,
    values, [T1, T2] as (time, counter) labels) of each complex event, in firing order."""
    assert isinstance(query.policy, EtalisPolicy)
    m = Machine(compile_query(query), query.policy, ExprEvaluator(kind))
    m.window = m.program.window(kind)
    out = []
    for start, end, triples in items:
        for o in m.item(start, end, triples):
            out.append((end, {v: o.mu[v] for v in query.select if v in o.mu}, o.t1, o.t2))
    return out


__all__ = ["EtalisPolicy", "EtalisRuntime", "Machine", "Program", "compile_query", "binarise",
           "tr_clauses", "run", "Unsupported"]
