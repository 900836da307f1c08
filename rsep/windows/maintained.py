"""Maintained window results: a windowed query answered from a result kept up to date as
events enter and leave its windows, with no pyoxigraph call per evaluation.

For a query whose window blocks are event-local (rsep.windows.incremental's analysis and
its per-evaluation locality check), the window's solutions are the union of each live
event's own solutions. So each event's solutions of each window block are computed once,
on arrival, by the compiled matcher (rsep.sparql.matcher, proven equal to pyoxigraph; a
BGP over a graph is a set, so an event's solutions are de-duplicated); the WHERE clause's
solutions are maintained from them (rsep.windows.joins: joins with the background's
default graph by index, between windows and blocks by a symmetric hash join, top-level
FILTERs by the FILTER compiler); GROUP BY and the aggregates are maintained from those
under insertion and retraction, and HAVING, ORDER BY, projection, DISTINCT and LIMIT /
OFFSET apply to the few rows (rsep.windows.groups). RStream, IStream and DStream read the
rows as they read pyoxigraph's.

pyoxigraph still decides, batched, what the Python mirrors cannot: a FILTER the compiler
does not take or cannot decide for a row, an aggregate over values the numeric mirror does
not cover (rsep.sparql.aggregates), an ORDER BY over such values. When the locality check
fails (a join term in two live events) the evaluation is pyoxigraph's over a store of the
live events' matching triples, as the event-local store path's; the maintained state is
kept all the while, for when the check holds again.

Rows come out in a defined order where SPARQL leaves it open (docs/semantics.md, "Row
order of maintained results").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from operator import itemgetter
from typing import Any

import pyoxigraph as ox

from rsep.algebra.expression import Constraint, Expression
from rsep.sparql import aggregates as ag
from rsep.sparql.aggregates import Undecided
from rsep.sparql.filters import Fallback, NotCompiled, compile_expression, prefixes_of
from rsep.sparql.matcher import Canon, Indexed, compile_bgp, match_plan
from rsep.stream.event import Event
from rsep.windows.groups import Aggregate, Group, Grouping, Modifiers, Oxigraph, Row
from rsep.windows.incremental import EARLY_MAX, Block, Entry, LocalWindow
from rsep.windows.joins import Join, Relation, background_relation
from rsep.windows.plan import EVENT_LOCAL as EVENT_LOCAL
from rsep.windows.plan import FACTORISED as FACTORISED
from rsep.windows.plan import MAINTAINED as MAINTAINED
from rsep.windows.plan import SNAPSHOT as SNAPSHOT
from rsep.windows.plan import Factors, Plan
from rsep.windows.plan import compile_plan as compile_plan
from rsep.windows.plan import path as path

# ---------------------------------------------------------------- FILTERs


class Filters:
    """A conjunction of FILTERs over solutions: compiled (rsep.sparql.filters) where the
    compiler takes them, their verdicts memoised by the values they read; the rest, and a
    row the compiled form cannot decide, decided by pyoxigraph in a batch."""

    MEMO = 65_536

    def __init__(self, prologue: str, constraints: Sequence[Constraint], canon: Canon) -> None:
        prefixes = prefixes_of(prologue)
        self.texts = [c.text for c in constraints]
        self.fns: list[Any] = []
        self.opaque = False  # some FILTER is not compiled: pyoxigraph decides every row
        for c in constraints:
            try:
                self.fns.append(compile_expression(c.expr, prefixes, canon.term))
            except (NotCompiled, Fallback):
                self.opaque = True
        self.vars = tuple(sorted(set().union(*(c.variables() for c in constraints))))
        self._key = eval("lambda mu: (" + "".join(f"mu.get({v!r}), " for v in self.vars) + ")")
        self.memo: dict[tuple, bool] = {}

    def __bool__(self) -> bool:
        return bool(self.texts)

    def verdict(self, mu: dict) -> bool | None:
        """True, False, or None: pyoxigraph decides (:meth:`decide`)."""
        key = self._key(mu)
        got = self.memo.get(key)
        if got is not None:
            return got
        undecided = self.opaque
        for f in self.fns:
            try:
                r = f(mu)
            except Fallback:
                undecided = True
                continue
            if r is not True:
                self._remember(key, False)
                return False
        if undecided:
            return None
        self._remember(key, True)
        return True

    def _remember(self, key: tuple, ok: bool) -> None:
        if len(self.memo) >= self.MEMO:
            self.memo.clear()
        self.memo[key] = ok

    def decide(self, mus: Sequence[dict], oxigraph: Oxigraph) -> list[bool]:
        rows = [{v: mu.get(v) for v in self.vars} for mu in mus]
        got = oxigraph.accepted(self.texts, rows)
        for mu, ok in zip(mus, got, strict=True):
            self._remember(self._key(mu), ok)
        return got


# ---------------------------------------------------------------- the runtime


class _Solver:
    """One window block's solutions over an event (relation ``r``)."""

    def __init__(self, prologue: str, block: Block, canon: Canon, r: int) -> None:
        triples = block.matcher_triples(prologue)
        gpm = None if triples is None else compile_bgp(prologue, triples, canon)
        if gpm is None:
            raise NotCompiled("a window block the compiled matcher does not take")
        self.r = r
        self.plan = gpm.plan
        keep = [i for i, n in enumerate(gpm.names) if not n.startswith("_:")]
        self.vars = tuple(gpm.names[i] for i in keep)
        # a solution's mapping by one generated expression (names come in through env)
        env = {f"_n{k}": n for k, n in enumerate(self.vars)}
        self._build = eval("lambda v: {" + "".join(f"_n{k}: v[{i}], " for k, i in enumerate(keep))
                           + "}", env)
        self.filters = Filters(prologue, block.filters, canon)

    def solutions(self, ev: Indexed) -> list[tuple[dict, bool | None]]:
        """The block's solutions over one event, in the matcher's order, de-duplicated (a
        solution differing only in a blank node's binding is another solution), each
        with its FILTERs' verdict (None: pyoxigraph decides at the next evaluation)."""
        sols = match_plan(self.plan, ev)
        if not sols:
            return []
        if len(sols) > 1:
            sols = list(dict.fromkeys(sols))
        out: list[tuple[dict, bool | None]] = []
        build, filters = self._build, self.filters
        for vals in sols:
            mu = build(vals)
            if filters:
                ok = filters.verdict(mu)
                if ok is False:
                    continue
                out.append((mu, ok))
            else:
                out.append((mu, True))
        return out


Solutions = Sequence[tuple[int, int, dict, bool | None]]  # (relation, index in the event, mu, verdict)


def _solve(solvers: list[_Solver], canon: Canon, rows: list[tuple[object, object, object]]
           ) -> list[tuple[int, int, dict, bool | None]]:
    """An event's solutions of a window's blocks (:meth:`Maintained.solve`)."""
    ev = Indexed([(x, p, canon.term(o)) for x, p, o in rows])
    out: list[tuple[int, int, dict, bool | None]] = []
    for s in solvers:
        i = 0
        for mu, ok in s.solutions(ev):
            out.append((s.r, i, mu, ok))
            i += 1
    return out


class Maintained:
    """A query's maintained result (see the module's text). Plain data but for the
    compiled functions of its plan."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.canon = Canon()
        self.oxigraph = Oxigraph(plan.prologue)
        self.solvers: list[list[_Solver]] = []
        relations: list[Relation] = []
        for iri in plan.windows:
            solvers = []
            for b in plan.analysis.blocks.get(iri, []):
                s = _Solver(plan.prologue, b, self.canon, len(relations))
                solvers.append(s)
                relations.append(Relation(s.vars, window=True))
            self.solvers.append(solvers)
        self._bg_first = len(relations)
        self._patterns = [(g, tuple(self.canon.term(x) if not isinstance(x, tuple) else x
                                    for x in tp)) for g, tp in plan.background]
        relations += [background_relation(tp, (), self._bg_first + j)
                      for j, (_, tp) in enumerate(self._patterns)]
        # the factorised form (each side's join and summaries) or the whole join
        self.factorised = Factorised(plan, plan.factors, relations, self.canon) \
            if plan.factors is not None else None
        self.join = Join([] if self.factorised is not None else relations)
        self.filters = Filters(plan.prologue, plan.filters if self.factorised is None else [],
                               self.canon)
        self.grouping = Grouping(plan.keys or (), plan.aggregates, plan.implicit) \
            if plan.keys is not None and self.factorised is None else None
        self.rows_in: dict[tuple, dict] = {}  # plain rows (no grouping): jid -> mapping
        self._unsorted = False
        self._last: tuple | None = None
        prefixes = prefixes_of(plan.prologue)
        self.modifiers = Modifiers(
            tuple((_having(e, prefixes, self.canon), e.to_sparql()) for e in plan.having),
            tuple(plan.order), tuple(plan.project), plan.distinct, plan.offset, plan.limit)
        self._pending_block: dict[tuple, tuple[int, dict]] = {}
        self._pending_top: dict[tuple, dict] = {}
        self._template = [tuple(self.canon.term(x) if not isinstance(x, tuple) else x for x in tp)
                          for tp in plan.template]

    # ------------------------------------------------------------ events

    def solve(self, w: int, rows: list[tuple[object, object, object]]) -> Solutions:
        """An event's solutions of window w's blocks, from its matching triples' terms."""
        solvers = self.solvers[w]
        if not solvers:
            return []
        return _solve(solvers, self.canon, rows)

    def enter(self, seq: int, sols: Solutions) -> None:
        for r, i, mu, ok in sols:
            c = (seq, r, i)
            if ok:
                self._add(r, c, mu)
            else:
                self._pending_block[c] = (r, mu)

    def leave(self, seq: int, sols: Solutions) -> None:
        pending = self._pending_block
        factorised = self.factorised
        for r, i, _, ok in sols:
            c = (seq, r, i)
            if not ok and pending.pop(c, None) is not None:
                continue
            if factorised is not None:
                factorised.remove(r, c)
                continue
            for jid in self.join.remove(r, c):
                if self._pending_top.pop(jid, None) is None:
                    self._out_remove(jid)

    def _add(self, r: int, c: tuple, mu: dict) -> None:
        if self.factorised is not None:
            self.factorised.add(r, c, mu)
            return
        for jid, m in self.join.add(r, c, mu):
            self._joined(jid, m)

    def _joined(self, jid: tuple, m: dict) -> None:
        if self.filters:
            ok = self.filters.verdict(m)
            if ok is None:
                self._pending_top[jid] = m
                return
            if not ok:
                return
        self._out_add(jid, m)

    def _out_add(self, jid: tuple, m: dict) -> None:
        if self.grouping is not None:
            self.grouping.add(jid, m)
            return
        self.rows_in[jid] = m
        if self._last is not None and jid < self._last:
            self._unsorted = True
        else:
            self._last = jid

    def _out_remove(self, jid: tuple) -> None:
        if self.grouping is not None:
            self.grouping.remove(jid)
        else:
            self.rows_in.pop(jid, None)

    # ------------------------------------------------------------ background

    @property
    def graphs(self) -> set[str | None]:
        """The background graphs the result reads (None: the default graph)."""
        return {g for g, _ in self._patterns}

    def set_background(self, graphs: Mapping[str | None, Iterable[ox.Triple]]) -> None:
        """The background graphs (each a set; None the default graph) as they now stand:
        their patterns' relations rebuilt, and with them every joined solution."""
        if not self._patterns:
            return
        term = self.canon.term
        rows: dict[str | None, list[tuple[object, object, object]]] = {}
        for g in self.graphs:
            preds = {tp[1] for h, tp in self._patterns if h == g}
            anyp = any(isinstance(p, tuple) for p in preds)
            rows[g] = [(t.subject, t.predicate, term(t.object))
                       for t in dict.fromkeys(graphs.get(g, ())) if anyp or t.predicate in preds]
        if self.factorised is not None:
            self.factorised.set_background(
                {self._bg_first + j: background_relation(tp, rows[g], self._bg_first + j)
                 for j, (g, tp) in enumerate(self._patterns)})
            return
        for j, (g, tp) in enumerate(self._patterns):
            self.join.replace(self._bg_first + j,
                              background_relation(tp, rows[g], self._bg_first + j))
        self._pending_top.clear()
        if self.grouping is not None:
            self.grouping.clear()
        self.rows_in.clear()
        self._last, self._unsorted = None, False
        for jid, m in self.join.rebuild():
            self._joined(jid, m)

    # ------------------------------------------------------------ evaluation

    def rows(self) -> list[Row]:
        """The result's rows now, as QueryRuntime._run gives them."""
        self._decide()
        form = self.plan.form
        if self.factorised is not None:
            return self.modifiers.apply(self.factorised.rows(self.oxigraph), self.oxigraph)
        if form == "ASK":
            found = bool(self.grouping if self.grouping is not None else self.rows_in)
            return [(found, found)]
        if self.grouping is not None:
            got = self.grouping.rows(self.oxigraph, self.join.solutions.__getitem__)
            return self.modifiers.apply(got, self.oxigraph)
        if self._unsorted:
            self.rows_in = dict(sorted(self.rows_in.items()))
            self._unsorted = False
        if form == "CONSTRUCT":
            return self._construct()
        return self.modifiers.apply(list(self.rows_in.items()), self.oxigraph)

    def _decide(self) -> None:
        """Verdicts pyoxigraph gives: FILTERs the compiled forms left open, one query per
        FILTER set; the solutions they accept join in arrival order."""
        if self._pending_block:
            pending, self._pending_block = self._pending_block, {}
            by_rel: dict[int, list[tuple[tuple, dict]]] = {}
            for c, (r, mu) in sorted(pending.items()):
                by_rel.setdefault(r, []).append((c, mu))
            for r, items in by_rel.items():
                solver = next(s for ss in self.solvers for s in ss if s.r == r)
                for c, mu in accepted(solver.filters, items, self.oxigraph):
                    self._add(r, c, mu)
        if self.factorised is not None:
            self.factorised.decide(self.oxigraph)
        if self._pending_top:
            pending_top, self._pending_top = self._pending_top, {}
            for jid, m in accepted(self.filters, sorted(pending_top.items()), self.oxigraph):
                self._out_add(jid, m)

    def live(self) -> list[dict]:
        """The WHERE clause's live solutions (FILTERs decided) in arrival order, enumerated
        in the factorised form too (for tests: the maintained result's input)."""
        self._decide()
        if self.factorised is not None:
            return [m for _, m in self.factorised.joined(self.factorised.groups())]
        if self.grouping is not None:
            jids = sorted(j for g in self.grouping.groups.values() for j in g.sols)
        else:
            jids = sorted(self.rows_in)
        return [self.join.solutions[j] for j in jids]

    def _construct(self) -> list[Row]:
        out: list[Row] = []
        seen: set[str] = set()
        for m in self.rows_in.values():
            for tp in self._template:
                terms = [m.get(x[1]) if isinstance(x, tuple) else x for x in tp]
                s, p, o = terms
                if s is None or p is None or o is None or isinstance(s, ox.Literal) \
                        or not isinstance(p, ox.NamedNode):
                    continue
                text = str(ox.Triple(s, p, o))  # type: ignore[arg-type]
                if text not in seen:
                    seen.add(text)
                    out.append((text, text))
        return out


def accepted(filters: Filters, items: list[tuple[tuple, dict]], oxigraph: Oxigraph
             ) -> list[tuple[tuple, dict]]:
    """The items whose solution the FILTERs accept (pyoxigraph asked, once, for those the
    compiled forms leave open), in their order."""
    verdicts = [filters.verdict(mu) for _, mu in items]
    todo = [i for i, ok in enumerate(verdicts) if ok is None]
    if todo:
        got = filters.decide([items[i][1] for i in todo], oxigraph)
        for i, ok in zip(todo, got, strict=True):
            verdicts[i] = ok
    return [item for item, ok in zip(items, verdicts, strict=True) if ok]


# ---------------------------------------------------------------- factorised aggregates


class _Side:
    """One side of a factorised query (:class:`Factors`): its relations' join (relations
    numbered locally, components globally), its FILTERs, and its solutions grouped by the
    keys with the states of the aggregates it gives (rsep.windows.groups)."""

    __slots__ = ("local", "join", "windows", "background", "filters", "grouping", "pending")

    def __init__(self, rels: Sequence[int], relations: Sequence[Relation], keys: Sequence[str],
                 aggregates: Sequence[Aggregate], filters: Filters) -> None:
        self.local = {r: k for k, r in enumerate(rels)}  # (window relations come first)
        self.join = Join([relations[r] for r in rels])
        self.windows = self.join.windows  # a side solution's id: its window components first
        self.background = len(rels) > self.windows
        self.filters = filters
        self.grouping = Grouping(keys, aggregates, False)
        self.pending: dict[tuple, dict] = {}  # solutions whose FILTERs pyoxigraph decides

    def joined(self, sid: tuple, m: dict) -> None:
        ok = self.filters.verdict(m) if self.filters else True
        if ok:
            self.grouping.add(sid, m)
        elif ok is None:
            self.pending[sid] = m


class Factorised:
    """A grouped result from per-side summaries (:class:`Factors`; docs/semantics.md,
    "Maintained window results"). A group is there when every side has a live solution
    with its key. Its arrival (the earliest joined solution) is the merge of each side's
    earliest: a joined solution's id is its window components latest first, then its
    background components, and the sides' components are disjoint, so comparing two ids
    that differ in one side's solution compares that side's ids (largest window component
    in the difference, then smallest background one): the minimum over the cross product
    is at each side's minimum. For the same reason a MIN / MAX tie between equal values of
    different terms goes to the same term as over the joined solutions."""

    def __init__(self, plan: Plan, factors: Factors, relations: Sequence[Relation],
                 canon: Canon) -> None:
        self.keys = plan.keys or ()
        self.aggregates = plan.aggregates
        self.of: dict[int, _Side] = {}
        self.sides: list[_Side] = []
        # per aggregate: (side, its index among that side's aggregates), side -1: COUNT(*)
        self.reads: list[tuple[int, int, bool]] = []
        mine: list[list[Aggregate]] = [[] for _ in factors.sides]
        for a, k in zip(plan.aggregates, factors.reads, strict=True):
            if k < 0:
                self.reads.append((-1, 0, True))
            else:
                self.reads.append((k, len(mine[k]), a.name == "COUNT"))
                mine[k].append(a)
        for k, rels in enumerate(factors.sides):
            conds = [c for c, at in zip(plan.filters, factors.filters, strict=True) if at == k]
            side = _Side(rels, relations, self.keys, mine[k],
                         Filters(plan.prologue, conds, canon))
            self.sides.append(side)
            for r in rels:
                self.of[r] = side
        # group key -> (its sides' groups, the aggregates' values) while none of them changed
        self._values: dict[tuple, tuple[list[Group], list]] = {}

    def add(self, r: int, c: tuple, mu: dict) -> None:
        side = self.of[r]
        for sid, m in side.join.add(side.local[r], c, mu):
            side.joined(sid, m)

    def remove(self, r: int, c: tuple) -> None:
        side = self.of[r]
        for sid in side.join.remove(side.local[r], c):
            if side.pending.pop(sid, None) is None:
                side.grouping.remove(sid)

    def set_background(self, relations: Mapping[int, Relation]) -> None:
        """Background relations anew: the sides that read them rebuilt."""
        for r, rel in relations.items():
            side = self.of[r]
            side.join.replace(side.local[r], rel)
        for side in self.sides:
            if side.background:  # (a side of one window relation keeps no relation contents)
                side.pending.clear()
                side.grouping.clear()
                for sid, m in side.join.rebuild():
                    side.joined(sid, m)

    def decide(self, oxigraph: Oxigraph) -> None:
        for side in self.sides:
            if side.pending:
                pending, side.pending = side.pending, {}
                for sid, m in accepted(side.filters, sorted(pending.items()), oxigraph):
                    side.grouping.add(sid, m)

    def groups(self) -> list[tuple[tuple, list[Group]]]:
        """The groups there now: each key with its sides' groups."""
        first, rest = self.sides[0].grouping.groups, [s.grouping.groups for s in self.sides[1:]]
        out = []
        for key, g in first.items():
            gs = [g]
            for other in rest:
                h = other.get(key)
                if h is None:
                    break
                gs.append(h)
            else:
                out.append((key, gs))
        return out

    def _arrival(self, ids: Sequence[tuple]) -> tuple:
        """The id of the joined solution made of these side solutions."""
        win: list = []
        bg: list = []
        for side, sid in zip(self.sides, ids, strict=True):
            w = side.windows
            win.extend(sid[:w])
            bg.extend(sid[w:])
        win.sort(reverse=True)
        bg.sort()
        return (*win, *bg)

    def joined(self, groups: Sequence[tuple[tuple, list[Group]]]) -> list[tuple[tuple, dict]]:
        """The groups' joined solutions (id, mapping) in arrival order: their cross products."""
        out: list[tuple[tuple, dict]] = []
        for _, gs in groups:
            combos: list[tuple[list[tuple], dict]] = [([], {})]
            for side, g in zip(self.sides, gs, strict=True):
                sols = side.join.solutions
                combos = [([*ids, sid], {**m, **sols[sid]}) for ids, m in combos for sid in g.sols]
            out.extend((self._arrival(ids), m) for ids, m in combos)
        out.sort(key=itemgetter(0))
        return out

    def rows(self, oxigraph: Oxigraph) -> list[tuple[tuple, dict]]:
        """Each group's row, as :meth:`Grouping.rows` gives it over the joined solutions."""
        cache = self._values
        live = self.groups()
        undecided: list[tuple[tuple, list[Group]]] = []
        for key, gs in live:
            got = cache.get(key)
            if got is not None and all(a is b and not a.dirty
                                       for a, b in zip(gs, got[0], strict=True)):
                continue
            vals = self._values_of(gs)
            for g in gs:
                g.dirty = False
            if vals is None:
                undecided.append((key, gs))
            else:
                cache[key] = (gs, vals)
        if undecided:  # pyoxigraph, over the joined solutions of those groups, at once
            sols = [dict(self.joined([item])) for item in undecided]
            every = {jid: m for d in sols for jid, m in d.items()}
            got_all = oxigraph.aggregates(self.aggregates, sols, every.__getitem__)
            for (key, gs), vals in zip(undecided, got_all, strict=True):
                cache[key] = (gs, vals)  # (right while the groups do not change)
        if len(cache) > 2 * len(live) + 32:
            keep = {key for key, _ in live}
            self._values = cache = {k: v for k, v in cache.items() if k in keep}
        out: list[tuple[tuple, dict]] = []
        for key, gs in live:
            row = dict(zip(self.keys, key, strict=True))
            for i, v in enumerate(cache[key][1]):
                row[f"__a{i}"] = v
            out.append((self._arrival([g.first() for g in gs]), row))
        out.sort(key=itemgetter(0))
        return out

    def _values_of(self, gs: list[Group]) -> list | None:
        """The aggregates' values from the sides' summaries; None: the mirror cannot decide."""
        n = 1
        for g in gs:
            n *= len(g.sols)
        vals: list[Any] = []
        for k, j, count in self.reads:
            if k < 0:
                vals.append(ag.term_of((ag.INT, n)))
                continue
            g = gs[k]
            st = g.states[j]
            if count:
                vals.append(None if st.err else ag.term_of((ag.INT, n)))
                continue
            try:
                vals.append(st.value(g, j))
            except Undecided:
                return None
        return vals


def _having(e: Expression, prefixes: dict[str, str], canon: Canon) -> Any:
    try:
        return compile_expression(e, prefixes, canon.term)
    except (NotCompiled, Fallback):
        return None


# ---------------------------------------------------------------- a window


class MaintainedWindow(LocalWindow):
    """A window of a maintained query: the event-local plan's entries and locality check
    (LocalWindow), and each event's solutions, computed on arrival and fed to the result
    as the event enters and leaves. Nothing goes to a store while the check holds; while
    it fails, the store graph follows the live events' matching triples (:meth:`delta`)."""

    def __init__(self, prologue: str, blocks: Sequence[Block], result: Maintained, w: int) -> None:
        super().__init__(prologue, blocks)
        self.result = result
        self.w = w
        self.loaded = False  # the store graph holds the live matching triples
        self._moves: list[tuple[bool, tuple[ox.Triple, ...]]] = []  # since, while loaded

    @property
    def on_arrival(self) -> bool:
        return True

    @property
    def unsynced(self) -> int:
        return 0

    def _solved(self, triples: tuple[ox.Triple, ...]) -> Entry:
        """An event's entry, with its solutions of the window's blocks."""
        entry, rows = self._entry(triples, True)
        entry.sols = [] if entry.relevant is False else self.result.solve(self.w, rows)
        return entry

    def arrive(self, e: Event) -> None:
        early = self._early
        if len(early) > EARLY_MAX:  # events that never entered: a cache, so clear it
            early.clear()
        early[e.seq] = (e.triples, self._solved(e.triples))

    def _enter(self, seq: int, triples: tuple[ox.Triple, ...]) -> None:
        early = self._early.pop(seq, None)
        entry = early[1] if early is not None and early[0] is triples else self._solved(triples)
        if seq in self.live:
            self._leave(seq)
        self._count_in(entry)
        self.live[seq] = entry
        if self.loaded and entry.matching:
            self._moves.append((True, entry.matching))
        self.result.enter(seq, entry.sols)

    def _leave(self, seq: int) -> None:
        self._early.pop(seq, None)
        entry = self.live.pop(seq, None)
        if entry is None:
            return
        self._count_out(entry)
        if self.loaded and entry.matching:
            self._moves.append((False, entry.matching))
        self.result.leave(seq, entry.sols)

    def sync(self) -> tuple[list[ox.Triple], list[ox.Triple]]:
        return [], []

    def delta(self, load: bool) -> tuple[list[ox.Triple], list[ox.Triple]]:
        """What the store graph gains and loses (a multiset: the snapshot store counts) so
        that it holds the live events' matching triples (``load``), or nothing."""
        if load and not self.loaded:
            self.loaded = True
            return [t for e in self.live.values() for t in e.matching], []
        moves, self._moves = self._moves, []
        added: list[ox.Triple] = []
        removed: list[ox.Triple] = []
        for entered, ts in moves:
            (added if entered else removed).extend(ts)
        if not load and self.loaded:  # the moves since the last load, then every live one
            self.loaded = False
            removed.extend(t for e in self.live.values() for t in e.matching)
        return added, removed
