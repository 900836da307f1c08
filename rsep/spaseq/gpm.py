"""GPM(G_e, P_theta, H) for the NFA_scep engine: graph patterns over the events of an instant.

One pyoxigraph store holds the background graphs (loaded once) and, while an
instant is processed, that instant's events as named graphs. A GPM's pattern
without its stateful FILTERs is evaluated once per event and cached for the
instant, whatever the number of runs waiting for it; each run then joins it
with its own mappings (the history H), and the FILTERs on earlier GPMs'
variables are evaluated for all the joined rows of a call in one query (a
VALUES block), cached per row for the instant.
"""

from __future__ import annotations

import collections.abc as abc
from collections.abc import Callable, Iterable, Sequence

import pyoxigraph as ox

from rsep.algebra.pattern import written
from rsep.algebra.spaseq import GPM, Mapping, Omega, join, mapping
from rsep.sparql.matcher import Canon, CompiledGPM, Fallback, Indexed, compile_gpm
from rsep.spaseq.streamset import SEvent

_PLAIN = (ox.NamedNode, ox.Literal)
_NONE: Omega = frozenset()


class GPMEvaluator:
    """``compiled``: match simple GPMs in Python (rsep.sparql.matcher), pyoxigraph otherwise;
    ``shared``: evaluate a GPM's event-local part once per event for all runs (Sec. 7.2.1's
    predicate pushing); off, every run evaluates the whole GPM against the event itself.
    ``partition``: ``(variable, owns)``, the query's partition key (rsep.spaseq.partition)
    and which of its values this evaluator answers for: a solution binding it to a value
    ``owns`` refuses is not one of this evaluator's, so no run starts, goes on or dies by
    it (one engine per group of values, as Spark's buckets are)."""

    def __init__(self, gpms: Iterable[GPM], graphs: abc.Mapping[str, Sequence[ox.Triple]], *,
                 compiled: bool = True, shared: bool = True,
                 partition: tuple[str, Callable[[object], bool]] | None = None) -> None:
        self.gpms = list(gpms)
        self._pvar: str | None = partition[0] if partition is not None else None
        self._owns: Callable[[object], bool] | None = \
            partition[1] if partition is not None else None
        # per compiled GPM, where its value tuples (rows) hold the partition key
        self._pat: dict[str, int] = {}
        self.store = ox.Store()
        self.kb: dict[str, ox.NamedNode] = {}
        for g in self.gpms:
            for iri in g.background:
                if iri in graphs and iri not in self.kb:
                    node = ox.NamedNode(iri)
                    self.kb[iri] = node
                    self.store.extend(ox.Quad(t.subject, t.predicate, t.object, node)
                                      for t in graphs[iri])
        # pyoxigraph is given each local pattern's tree written once (its text where rsep.lang
        # could not build the tree, or to_sparql refuses it)
        self._query = {g.name: g.prologue + "SELECT * WHERE " + written(g.local_tree, g.local_pattern)
                       for g in self.gpms}
        # (the store's named_graphs parameter: a list of graph names)
        self._kb_of: dict[str, list[ox.NamedNode | ox.BlankNode]] = {
            g.name: [self.kb[b] for b in g.background if b in self.kb] for g in self.gpms}
        self.canon = Canon()
        self.compiled: dict[str, CompiledGPM] = {}
        if compiled:
            for g in self.gpms:
                c = compile_gpm(g, self.canon)
                if c is not None:
                    self.compiled[g.name] = c
        self.shared = shared
        # The predicates the compiled patterns name, when none is a variable: an event's
        # other triples can match nothing, so they are not indexed.
        preds = {tp[1] for c in self.compiled.values() for tp in c.shape}
        self._preds = frozenset(preds) if preds and all(type(p) is not int for p in preds) \
            else None
        self._pending: dict[str, SEvent] = {}  # the instant's events, not yet in the store
        self._canon: dict[str, Indexed] = {}
        self._events: dict[str, ox.NamedNode] = {}
        self._local: dict[tuple[str, str], Omega] = {}
        self._holds: dict[tuple[str, Mapping], bool] = {}
        self._n = 0
        self.evaluations = 0  # pattern evaluations by pyoxigraph (one per GPM and event at most)
        self.compiled_evaluations = 0
        self.filter_queries = 0
        self.fallbacks = 0  # rows or events the compiled form left to pyoxigraph

    def graph_changed(self, iri: str, old: frozenset[ox.Triple], new: frozenset[ox.Triple]) -> None:
        """A background graph changed between two instants (rsep.runtime.background): the
        GPMs of the next instants read it as it is now."""
        node = self.kb.get(iri)
        if node is None:
            return
        for t in old - new:
            self.store.remove(ox.Quad(t.subject, t.predicate, t.object, node))
        self.store.extend(ox.Quad(t.subject, t.predicate, t.object, node) for t in new - old)

    # ------------------------------------------------------------ instants

    def begin(self, events: Iterable[SEvent]) -> None:
        for e in events:
            self._pending[e.stream] = e

    def _node(self, stream: str) -> ox.NamedNode | None:
        node = self._events.get(stream)
        if node is None:
            e = self._pending.get(stream)
            if e is None:
                return None
            self._n += 1
            node = ox.NamedNode(f"urn:rsep:spaseq:event:{self._n}")
            self._events[stream] = node
            self.store.extend(ox.Quad(t.subject, t.predicate, t.object, node) for t in e.triples)
        return node

    def end(self) -> None:
        if self._events:
            for node in self._events.values():
                self.store.remove_graph(node)
            self._events.clear()
        self._pending.clear()
        self._canon.clear()
        if self._local:
            self._local.clear()
        if self._holds:
            self._holds.clear()

    # ------------------------------------------------------------ evaluation

    def local(self, gpm: GPM, stream: str) -> Omega:
        """[[P]]_G of the pattern without stateful FILTERs, for the instant's event of ``stream``."""
        key = (gpm.name, stream)
        got = self._local.get(key) if self.shared else None
        if got is None:
            got = self._evaluate(gpm, stream)
            if self._owns is not None and got:
                got = self._own(got)
            if self.shared:
                self._local[key] = got
        return got

    def _indexed(self, stream: str) -> Indexed | None:
        """The instant's event of ``stream`` as canonical triples by predicate (once)."""
        got = self._canon.get(stream)
        if got is None:
            e = self._pending.get(stream)
            if e is None:
                return None
            got = self._canon[stream] = self.canon.indexed(e.triples, self._preds)
        return got

    def _evaluate(self, gpm: GPM, stream: str) -> Omega:
        c = self.compiled.get(gpm.name)
        if c is not None:
            indexed = self._indexed(stream)
            if indexed is None:
                return frozenset()
            try:
                sols = c.match(indexed)
                self.compiled_evaluations += 1
                if not sols:
                    return frozenset()
                return frozenset(sols)
            except Fallback:
                self.fallbacks += 1
        node = self._node(stream)
        if node is None:
            return frozenset()
        self.evaluations += 1
        res = self.store.query(self._query[gpm.name], default_graph=node,
                               named_graphs=self._kb_of[gpm.name])
        assert isinstance(res, ox.QuerySolutions)
        names = [v.value for v in res.variables]
        return frozenset(mapping({n: t for n in names if (t := sol[n]) is not None})
                         for sol in res)

    def rows(self, gpm: GPM, stream: str) -> list[tuple]:
        """:meth:`local` for a compiled GPM as tuples of its ``bound`` variables' values (no
        mappings built): what the chain engine joins, asking once per GPM shape and instant."""
        c = self.compiled[gpm.name]
        indexed = self._indexed(stream)
        if indexed is None:
            got = []
        else:
            try:
                got = c.values(indexed)
                self.compiled_evaluations += 1
            except Fallback:
                self.fallbacks += 1
                names = c.bound
                got = [tuple(d.get(n) for n in names)
                       for d in map(dict, self.local(gpm, stream))]
                return got  # (local() kept this evaluator's own values only)
        if self._owns is not None and got:
            got = self._own_rows(gpm.name, got)
        return got

    def _own(self, sols: Omega) -> Omega:
        """The solutions this evaluator answers for (``partition``). A solution binding no
        value of the key (which rsep.spaseq.partition's key never allows) is kept: it may
        join the runs of any value, and the Router sends its event to every bucket."""
        pvar, owns = self._pvar, self._owns
        assert owns is not None  # (asked only with a partition)
        out = []
        for mu in sols:
            v = None
            for k, x in mu:
                if k == pvar:
                    v = x
                    break
            if v is None or owns(v):
                out.append(mu)
        return frozenset(out) if len(out) != len(sols) else sols

    def _own_rows(self, name: str, rows: list[tuple]) -> list[tuple]:
        """:meth:`_own` of a compiled GPM's value tuples (its ``bound`` variables)."""
        at = self._pat.get(name)
        if at is None:
            bound = self.compiled[name].bound
            at = self._pat[name] = bound.index(self._pvar) if self._pvar in bound else -1
        if at < 0:
            return rows
        owns = self._owns
        assert owns is not None  # (asked only with a partition)
        return [r for r in rows if r[at] is None or owns(r[at])]

    def holds(self, gpm: GPM, d: dict) -> bool:
        """The stateful FILTERs of a compiled GPM on one merged mapping."""
        try:
            return self.compiled[gpm.name].holds(d)
        except Fallback:
            self.fallbacks += 1
            return bool(self._filter_ox(gpm, [mapping(d)]))

    def match(self, gpm: GPM, stream: str, x: Omega) -> Omega:
        """The run's mappings X joined with the event's, the stateful FILTERs applied."""
        local = self.local(gpm, stream)
        if not local:
            return frozenset()
        joined = join(x, local)
        if not gpm.stateful_filters or not joined:
            return joined
        return frozenset(self._filter(gpm, list(joined)))

    def extend(self, gpm: GPM, x: Omega, local: Omega) -> Omega:
        """X joined with an event's mappings for the GPM, the stateful FILTERs applied."""
        if len(x) == 1 and len(local) == 1:
            c = self.compiled.get(gpm.name)
            if c is not None:
                # The common case (one mapping each side), without intermediate sets.
                (a,) = x
                (b,) = local
                if not a and not c.stateful:
                    return local  # a run's first event: nothing to join, nothing to test
                d = dict(a)
                get = d.get
                added = False
                for k, v in b:
                    w = get(k)
                    if w is None:
                        d[k] = v
                        added = True
                    elif w != v:
                        return _NONE
                try:
                    if c.stateful and not c.holds(d):
                        return _NONE
                    if not added:
                        return x
                    return frozenset((tuple(sorted(d.items())),))
                except Fallback:
                    pass
        joined = join(x, local)
        if not gpm.stateful_filters or not joined:
            return joined
        return frozenset(self._filter(gpm, list(joined)))

    def rejoin(self, gpm: GPM, x: Omega, local: Omega) -> Omega:
        """:meth:`extend` along a path a run has already taken, rebuilding its full mappings.
        With one mapping on each side the stateful FILTERs are not tested again: that one
        pair passed them when the run took the step, on the same values (a run keeps every
        variable a later FILTER or join reads). With more, the run only knew that some pair
        passed, so they are tested."""
        if len(x) == 1 and len(local) == 1:
            (a,) = x
            (b,) = local
            if not a:
                return local
            d = dict(a)
            get = d.get
            for k, v in b:
                w = get(k)
                if w is None:
                    d[k] = v
                elif w != v:
                    return _NONE
            return frozenset((tuple(sorted(d.items())),))
        return self.extend(gpm, x, local)

    def prefetch(self, gpm: GPM, stream: str, xs: Iterable[Omega]) -> None:
        """Evaluate the stateful FILTERs for every run about to be matched, in one query."""
        if not gpm.stateful_filters or gpm.name in self.compiled:
            return
        local = self.local(gpm, stream)
        if not local:
            return
        rows = [mu for x in xs for mu in join(x, local)]
        if rows:
            self._filter(gpm, rows)

    def _row(self, gpm: GPM, mu: Mapping) -> Mapping:
        return tuple(kv for kv in mu if kv[0] in gpm.filter_variables)

    def _filter(self, gpm: GPM, rows: list[Mapping]) -> list[Mapping]:
        c = self.compiled.get(gpm.name)
        if c is not None:
            out = []
            rest = []
            for mu in rows:
                try:
                    if c.holds(mu):
                        out.append(mu)
                except Fallback:
                    rest.append(mu)
            if not rest:
                return out
            self.fallbacks += len(rest)
            return out + self._filter_ox(gpm, rest)
        return self._filter_ox(gpm, rows)

    def _filter_ox(self, gpm: GPM, rows: list[Mapping]) -> list[Mapping]:
        todo: dict[Mapping, None] = {}
        for mu in rows:
            r = self._row(gpm, mu)
            if (gpm.name, r) not in self._holds:
                todo[r] = None
        batch = [r for r in todo if all(isinstance(v, _PLAIN) for _, v in r)]
        if batch:
            self._batch(gpm, batch)
        for r in todo:
            if (gpm.name, r) not in self._holds:
                self._single(gpm, r)
        return [mu for mu in rows if self._holds[(gpm.name, self._row(gpm, mu))]]

    def _batch(self, gpm: GPM, rows: list[Mapping]) -> None:
        fv = sorted(gpm.filter_variables)
        lines = []
        for i, r in enumerate(rows):
            d = dict(r)
            lines.append(f"({i} " + " ".join(str(d[v]) if v in d else "UNDEF" for v in fv) + ")")
        head = " ".join(f"?{v}" for v in fv)
        filters = " ".join(f"FILTER {f}" for f in gpm.stateful_filters)
        q = (f"{gpm.prologue}SELECT ?__rsep_row WHERE {{ VALUES (?__rsep_row {head}) "
             f"{{ {' '.join(lines)} }} {filters} }}")
        self.filter_queries += 1
        res = self.store.query(q)
        assert isinstance(res, ox.QuerySolutions)
        passed = {int(sol["__rsep_row"].value) for sol in res}
        for i, r in enumerate(rows):
            self._holds[(gpm.name, r)] = i in passed

    def _single(self, gpm: GPM, r: Mapping) -> None:
        # VALUES cannot carry blank nodes: substitute them instead.
        fv = sorted(gpm.filter_variables)
        filters = " ".join(f"FILTER {f}" for f in gpm.stateful_filters)
        q = f"{gpm.prologue}SELECT {' '.join('?' + v for v in fv)} WHERE {{ {filters} }}"
        self.filter_queries += 1
        res = self.store.query(q, substitutions={ox.Variable(k): v for k, v in r})
        assert isinstance(res, ox.QuerySolutions)
        self._holds[(gpm.name, r)] = any(True for _ in res)
