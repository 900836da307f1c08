"""The WHERE clause of a maintained window query: its solutions kept up to date as window
solutions come and go (rsep.windows.maintained).

The clause is a conjunction of relations: each window block's solutions (one set per live
event, computed on arrival) and each triple pattern over the background's default graph
(its matching triples, indexed once and again when the graph changes). A solution of the
clause is one solution of each relation, compatible on their shared variables. When a
window solution enters, it is joined with the other relations' current contents in a fixed
order per relation, each step a hash lookup on the variables shared with what is bound so
far (a symmetric hash join, DBToaster's delta rule); when it leaves, every joined solution
it is part of leaves with it. Each joined solution is produced once, by its last component
to enter.

A joined solution is identified by its components, and ordered by them (its *arrival*):
its window solutions from the latest to the earliest, each ``(event seq, relation, index of
the solution in its event)``, then its background triples ``(relation, position)``. The
arrival order of the result's rows follows (docs/semantics.md, "Row order of maintained
results").

All state is plain data (dicts, tuples, pyoxigraph terms): no store, nothing compiled.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from operator import itemgetter

Term = object
Mapping = dict[str, Term]
Comp = tuple  # a component's identity: (seq, relation, i) or (relation, position)
Jid = tuple  # a joined solution's identity and arrival: its components


class Relation:
    """One relation's current contents, indexed by the variable sets the join plans look
    it up by."""

    __slots__ = ("vars", "window", "live", "indexes", "getters")

    def __init__(self, variables: Sequence[str], window: bool) -> None:
        self.vars = tuple(variables)
        self.window = window
        self.live: dict[Comp, Mapping] = {}
        # key variables -> key values -> {component: its mapping}
        self.indexes: dict[tuple[str, ...], dict[object, dict[Comp, Mapping]]] = {}
        self.getters: dict[tuple[str, ...], Callable[[Mapping], object]] = {}

    def index(self, keys: tuple[str, ...]) -> dict[object, dict[Comp, Mapping]]:
        idx = self.indexes.get(keys)
        if idx is None:
            idx = self.indexes[keys] = {}
            get = self.getters[keys] = key_getter(keys)
            for c, mu in self.live.items():
                idx.setdefault(get(mu), {})[c] = mu
        return idx

    def add(self, c: Comp, mu: Mapping) -> None:
        self.live[c] = mu
        getters = self.getters
        for keys, idx in self.indexes.items():
            k = getters[keys](mu)
            bucket = idx.get(k)
            if bucket is None:
                idx[k] = {c: mu}
            else:
                bucket[c] = mu

    def remove(self, c: Comp) -> None:
        mu = self.live.pop(c, None)
        if mu is None:
            return
        getters = self.getters
        for keys, idx in self.indexes.items():
            k = getters[keys](mu)
            bucket = idx[k]
            del bucket[c]
            if not bucket:
                del idx[k]

    def clear(self) -> None:
        self.live.clear()
        self.indexes = {k: {} for k in self.indexes}


def _no_key(mu: Mapping) -> tuple:
    return ()


def key_getter(keys: tuple[str, ...]) -> Callable[[Mapping], object]:
    """A mapping's key by these variables: the term itself for one (no tuple to build and
    hash per lookup), a tuple for several, () for none (a cross product)."""
    return itemgetter(*keys) if keys else _no_key


def plans(relations: Sequence[Relation]) -> list[list[tuple[int, tuple[str, ...]]]]:
    """Per relation, the order in which a new solution of it is joined with the others:
    greedily the one sharing most variables with what is bound (a cross product last),
    with the variables to look it up by."""
    out = []
    for r, rel in enumerate(relations):
        bound = set(rel.vars)
        todo = [s for s in range(len(relations)) if s != r]
        steps = []
        while todo:
            s = max(todo, key=lambda i: (len(bound & set(relations[i].vars)),
                                         not relations[i].window, -i))
            todo.remove(s)
            keys = tuple(v for v in relations[s].vars if v in bound)
            steps.append((s, keys))
            bound |= set(relations[s].vars)
        out.append(steps)
    return out


class Join:
    """The joined solutions of the relations (window relations first), as window solutions
    come and go. ``added`` and ``removed``: what changed since the caller last took them."""

    def __init__(self, relations: Sequence[Relation]) -> None:
        self.relations = list(relations)
        self.windows = sum(1 for r in relations if r.window)
        self.plans = plans(self.relations)
        # only window solutions enter (rebuild too starts from one), so only their plans'
        # lookups need an index: a background pattern's plan is never run
        for r in range(self.windows):
            for s, keys in self.plans[r]:
                self.relations[s].index(keys)
        # per relation, its plan's steps with their key getters
        self._steps = [[(s, keys, key_getter(keys)) for s, keys in steps] for steps in self.plans]
        self.solutions: dict[Jid, Mapping] = {}
        self._by_comp: dict[Comp, dict[Jid, None]] = {}  # a window solution -> its joins
        # one window relation and nothing else (SRBench's shape): a solution is its own join
        self.single = len(self.relations) == 1 and self.windows == 1

    def extend(self, r: int, c: Comp, mu: Mapping) -> list[tuple[Jid, Mapping]]:
        """The joined solutions a solution of relation r takes part in, with the other
        relations' current contents."""
        rels = self.relations
        partial: list[tuple[Mapping, list[Comp], list[Comp]]] = \
            [(mu, [c], [])] if rels[r].window else [(mu, [], [c])]
        for s, keys, get in self._steps[r]:
            rel = rels[s]
            idx = rel.indexes[keys]
            nxt = []
            for m, wc, bc in partial:
                bucket = idx.get(get(m))
                if not bucket:
                    continue
                for c2, m2 in bucket.items():
                    merged = m.copy()
                    merged.update(m2)
                    if rel.window:
                        nxt.append((merged, [*wc, c2], bc))
                    else:
                        nxt.append((merged, wc, [*bc, c2]))
            if not nxt:
                return []
            partial = nxt
        out = []
        for m, wc, bc in partial:
            if len(wc) > 1:
                wc.sort(reverse=True)
            if len(bc) > 1:
                bc.sort()
            out.append(((*wc, *bc), m))
        return out

    def add(self, r: int, c: Comp, mu: Mapping) -> list[tuple[Jid, Mapping]]:
        """A window solution enters: the joined solutions it completes (recorded)."""
        if self.single:
            jid = (c,)
            self.solutions[jid] = mu
            return [(jid, mu)]
        got = self.extend(r, c, mu)
        self.relations[r].add(c, mu)
        by_comp = self._by_comp
        sols = self.solutions
        for jid, m in got:
            sols[jid] = m
            for wc in jid[:self.windows]:
                d = by_comp.get(wc)
                if d is None:
                    by_comp[wc] = {jid: None}
                else:
                    d[jid] = None
        return got

    def remove(self, r: int, c: Comp) -> list[Jid]:
        """A window solution leaves: the joined solutions that leave with it."""
        if self.single:
            jid = (c,)
            return [jid] if self.solutions.pop(jid, None) is not None else []
        self.relations[r].remove(c)
        jids = self._by_comp.pop(c, None)
        if not jids:
            return []
        by_comp = self._by_comp
        sols = self.solutions
        for jid in jids:
            del sols[jid]
            for wc in jid[:self.windows]:
                if wc != c:
                    d = by_comp.get(wc)
                    if d is not None:
                        d.pop(jid, None)
                        if not d:
                            del by_comp[wc]
        return list(jids)

    def replace(self, s: int, rel: Relation) -> None:
        """Relation s's contents anew (a background pattern's, after the graph changed);
        :meth:`rebuild` then gives the joined solutions."""
        self.relations[s] = rel
        for r in range(self.windows):
            for t, keys in self.plans[r]:
                if t == s:
                    rel.index(keys)

    def rebuild(self) -> list[tuple[Jid, Mapping]]:
        """Every joined solution from the relations' contents (after a background change)."""
        self.solutions.clear()
        self._by_comp.clear()
        if not self.windows:
            return []
        first = self.relations[0]
        out = []
        for c, mu in sorted(first.live.items()):
            out.extend(self.extend(0, c, mu))
        out.sort()
        for jid, m in out:
            self.solutions[jid] = m
            for wc in jid[:self.windows]:
                self._by_comp.setdefault(wc, {})[jid] = None
        return out


def background_relation(pattern: tuple, triples: Iterable[tuple[Term, Term, Term]],
                        index: int) -> Relation:
    """A triple pattern's matches in the background: ``pattern`` holds a term or
    ``("var", name)`` per position (a blank node's name starts with ``_:``)."""
    names = []
    for x in pattern:
        if isinstance(x, tuple) and x[1] not in names:
            names.append(x[1])
    rel = Relation(names, window=False)
    for pos, tr in enumerate(triples):
        mu: Mapping = {}
        for x, t in zip(pattern, tr, strict=True):
            if isinstance(x, tuple):
                got = mu.get(x[1])
                if got is None:
                    mu[x[1]] = t
                elif got != t:
                    break
            elif x != t:
                break
        else:
            rel.live[(index, pos)] = mu
    return rel
