"""The SPASEQ reference evaluator: Definitions 7-16 of 002 transcribed, for small inputs.

Every set of the definitions is computed as written, over a finite streamset:
``[[(u, P)]]`` evaluates P on each event of stream u in the window (Def. 7),
with ``GRAPH <kb>`` reading the background graphs (Def. 15); conjunction pairs
results of equal timestamps (Def. 8), disjunction unites them (Def. 9); the
three selection strategies quantify over the events in between exactly as
Defs. 10-12 do; Kleene+ is the union of its powers (Defs. 13, 14); a query is
the union over its tumbling windows, projected (Def. 16). Nothing is
incremental: this is the oracle the NFA_scep engine is tested against.

Where the definitions leave a choice, the reading taken is the one documented
in docs/semantics.md ("SPASEQ"): FILTERs over earlier GPMs' variables are
evaluated on the joined mapping; Kleene+ iterations rebind the GPM's own
variables; optional and negation follow Appendix B as stated there.

Results carry the events they were built from (``Match.steps``); ``answers``
gives Definition 16's set of ``(tau, pi_V(Omega))`` pairs itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import pyoxigraph as ox

from rsep.algebra.pattern import written
from rsep.algebra.spaseq import (
    GPM,
    UNIT,
    And,
    Atom,
    AtomKind,
    BopNode,
    Leaf,
    Mapping,
    Omega,
    Or,
    Sequence,
    SpaseqQuery,
    Strategy,
    drop,
    join,
    mapping,
    project,
)
from rsep.spaseq.streamset import Match, SEvent, Step, Streamset, merge_events, steps_of
from rsep.stream.event import Event


@dataclass(frozen=True)
class _Variant:
    """A sequence without optional or negated atoms, plus the negations of each gap."""

    atoms: tuple[Atom, ...]
    ops: tuple[Strategy, ...]
    gaps: tuple[tuple[Leaf, ...], ...]  # forbidden GPMs between atoms i and i+1


def variants(seq: Sequence) -> Iterator[_Variant]:
    """``sigma . B? o psi`` is ``(sigma . B o psi) U (sigma * psi)`` and ``sigma . B! o psi`` is
    ``sigma * psi`` with no B in between, where ``*`` is the weaker of ``.`` and ``o``."""
    optional = [i for i, a in enumerate(seq.atoms) if a.kind is AtomKind.OPTIONAL]
    for mask in range(1 << len(optional)):
        dropped = {i for j, i in enumerate(optional) if not mask >> j & 1}
        atoms: list[Atom] = []
        ops: list[Strategy] = []
        gaps: list[tuple[Leaf, ...]] = []
        link: Strategy | None = None
        negs: list[Leaf] = []
        for i, a in enumerate(seq.atoms):
            op_in = seq.ops[i - 1] if i else None
            cur = op_in if link is None or op_in is None else Strategy.weaker(link, op_in)
            if a.kind is AtomKind.NEGATION or i in dropped:
                if a.kind is AtomKind.NEGATION:
                    negs.append(a.leaf)
                link = cur if atoms else None
                continue
            if atoms:
                assert cur is not None
                ops.append(cur)
                gaps.append(tuple(negs))
            kind = AtomKind.BOP if a.kind is AtomKind.OPTIONAL else a.kind
            atoms.append(Atom(kind, a.body, a.index, a.local_vars))
            negs = []
            link = None
        if atoms:
            yield _Variant(tuple(atoms), tuple(ops), tuple(gaps))


class ReferenceEvaluator:
    """Evaluates a SPASEQ query (or its sub-expressions) over a finite streamset."""

    def __init__(self, query: SpaseqQuery, events: Iterable[Event] | Streamset,
                 graphs: dict[str, list[ox.Triple]] | None = None) -> None:
        self.query = query
        streams = set(query.streams.values())
        self.sigma = events if isinstance(events, Streamset) else \
            Streamset(merge_events(events, streams))
        self.store = ox.Store()
        self._node: dict[tuple[str, int], ox.NamedNode] = {}
        for i, e in enumerate(self.sigma.events):
            node = ox.NamedNode(f"urn:rsep:reference:event:{i}")
            self._node[(e.stream, e.time)] = node
            self.store.extend(ox.Quad(t.subject, t.predicate, t.object, node) for t in e.triples)
        self.kb: dict[str, ox.NamedNode] = {}
        for iri, triples in (graphs or {}).items():
            if iri == "default":
                continue
            node = ox.NamedNode(iri)
            self.kb[iri] = node
            self.store.extend(ox.Quad(t.subject, t.predicate, t.object, node) for t in triples)
        self._local: dict[tuple[str, str, int], Omega] = {}
        self._holds: dict[tuple[str, str, Mapping], bool] = {}
        self._text: dict[str, str] = {}  # GPM name -> its local pattern as pyoxigraph is given it

    # ------------------------------------------------------------ GPMs (Defs. 6, 7, 15)

    def local(self, gpm: GPM, e: SEvent) -> Omega:
        """``[[P]]_G`` for the event's graph G, background graphs visible through GRAPH <kb>."""
        key = (gpm.name, e.stream, e.time)
        if key not in self._local:
            res = self.store.query(
                gpm.prologue + "SELECT * WHERE " + self._written(gpm),
                default_graph=self._node[(e.stream, e.time)],
                named_graphs=[self.kb[b] for b in gpm.background if b in self.kb])
            assert isinstance(res, ox.QuerySolutions)
            names = [v.value for v in res.variables]
            self._local[key] = frozenset(
                mapping({n: sol[n] for n in names if sol[n] is not None}) for sol in res)
        return self._local[key]

    def _written(self, gpm: GPM) -> str:
        """The local pattern as pyoxigraph is given it: its tree written once (the text
        where rsep.lang could not build the tree, or to_sparql refuses it)."""
        text = self._text.get(gpm.name)
        if text is None:
            text = self._text[gpm.name] = written(gpm.local_tree, gpm.local_pattern)
        return text

    def holds(self, gpm: GPM, expr: str, mu: Mapping) -> bool:
        """``mu(R)`` is true (Def. 6): R with mu's values substituted; an error is false."""
        key = (gpm.name, expr, mu)
        if key not in self._holds:
            subs = {ox.Variable(k): v for k, v in mu if k in gpm.filter_variables}
            head = " ".join(f"?{k}" for k in sorted(gpm.filter_variables)) or "*"
            q = f"{gpm.prologue}SELECT {head} WHERE {{ FILTER {expr} }}"
            try:
                res = self.store.query(q, substitutions=subs)
                assert isinstance(res, ox.QuerySolutions)
                self._holds[key] = any(True for _ in res)
            except (SyntaxError, RuntimeError, OSError) as err:
                raise RuntimeError(f"GPM {gpm.name}: FILTER {expr}: {err}") from None
        return self._holds[key]

    def gpm(self, gpm: GPM, e: SEvent | None, x: Omega = UNIT) -> Omega:
        """``X join [[P]]_G`` with P's FILTERs on earlier GPMs' variables applied to the join."""
        if e is None:
            return frozenset()
        joined = join(x, self.local(gpm, e))
        if not gpm.stateful_filters:
            return joined
        return frozenset(mu for mu in joined
                         if all(self.holds(gpm, f, mu) for f in gpm.stateful_filters))

    def gpm_expression(self, gpm: GPM, tb: int, te: int) -> set[tuple[int, Omega]]:
        """Definition 7 (with Def. 15): ``{(tau, [[P]]_G) | (tau, G) in Sigma(u), tb <= tau <= te,
        [[P]]_G != {}}``."""
        out = set()
        for t in self.sigma.times_between(tb, te):
            om = self.gpm(gpm, self.sigma.event(gpm.stream, t))
            if om:
                out.add((t, om))
        return out

    # ------------------------------------------------------------ binary operators (Defs. 8, 9)

    def bop_at(self, node: BopNode, x: Omega, t: int) -> list[tuple[Omega, tuple[Step, ...]]]:
        """The pairs ``(t, Omega)`` of a binary-operator expression at time t, joined with X."""
        if isinstance(node, Leaf):
            om = self.gpm(node.gpm, self.sigma.event(node.stream, t), x)
            return [(om, ((t, node.key),))] if om else []
        if isinstance(node, And):
            acc: list[tuple[Omega, tuple[Step, ...]]] = [(x, ())]
            for item in node.items:
                acc = [(om2, steps_of(st, st2)) for om, st in acc
                       for om2, st2 in self.bop_at(item, om, t)]
            return acc
        assert isinstance(node, Or)
        return [r for item in node.items for r in self.bop_at(item, x, t)]

    # ------------------------------------------------------------ sequences (Defs. 10-14)

    def expression(self, seq: Sequence, tb: int, te: int | None) -> list[Match]:
        """``[[SeqExp]]^[tb, te]`` as matches (te None: unbounded)."""
        out: dict[tuple, Match] = {}
        for v in variants(seq):
            ms = self._first(v.atoms[0], tb, te)
            for op, atom, gap in zip(v.ops, v.atoms[1:], v.gaps, strict=True):
                ms = self._extend(ms, op, atom, gap, tb, te)
            for m in ms:
                out.setdefault(m.key, m)
        return sorted(out.values(), key=lambda m: (m.time, m.steps))

    def _first(self, atom: Atom, tb: int, te: int | None) -> list[Match]:
        if atom.kind is AtomKind.KLEENE:
            # Def. 13: P^1 = P, P^(k+1) = P^k ; P (skip-till-next between iterations).
            power = self._first(Atom(AtomKind.BOP, atom.body, atom.index), tb, te)
            total = list(power)
            while power:
                power = [m2 for m in power
                         for m2 in self._step(m, Strategy.NEXT, atom.body, atom.local_vars, (), tb, te)]
                total.extend(power)
            return total
        return [Match(t, om, st) for t in self.sigma.times_between(tb, te)
                for om, st in self.bop_at(atom.body, UNIT, t)]

    def _extend(self, ms: list[Match], op: Strategy, atom: Atom, gap: tuple[Leaf, ...],
                tb: int, te: int | None) -> list[Match]:
        power = [m2 for m in ms for m2 in self._step(m, op, atom.body, frozenset(), gap, tb, te)]
        if atom.kind is not AtomKind.KLEENE:
            return power
        # Def. 14: sigma . P^(k+1) = (sigma . P^k) , P (strict contiguity between iterations).
        total = list(power)
        while power:
            power = [m2 for m in power
                     for m2 in self._step(m, Strategy.STRICT, atom.body, atom.local_vars, (), tb, te)]
            total.extend(power)
        return total

    def _step(self, m: Match, op: Strategy, node: BopNode, rebind: frozenset[str],
              gap: tuple[Leaf, ...], tb: int, te: int | None) -> list[Match]:
        """``(tau', X) in [[sigma]]`` extended by ``Psi`` under one strategy (Defs. 10-12)."""
        x = drop(m.omega, rebind)
        cache: dict[int, list[tuple[Omega, tuple[Step, ...]]]] = {}

        def at(t: int) -> list[tuple[Omega, tuple[Step, ...]]]:
            if t not in cache:
                cache[t] = self.bop_at(node, x, t)
            return cache[t]

        later = [t for t in self.sigma.times_between(tb, te) if t > m.time]
        if op is Strategy.ANY:
            # Def. 10: every tau > tau' with X join Y non-empty.
            chosen = later
        elif op is Strategy.NEXT:
            # Def. 11: ... and no (tau'', Z) with tau' < tau'' < tau and X join Z non-empty.
            chosen = next(([t] for t in later if at(t)), [])
        else:
            # Def. 12: ... and no event of any stream of Sigma with tau' < tau'' < tau.
            nt = self.sigma.next_time(m.time)
            chosen = [nt] if nt is not None and nt in later else []
        out = []
        for t in chosen:
            if gap and self._negated(m, gap, t):
                continue
            for om, st in at(t):
                out.append(Match(t, om, steps_of(m.steps, st)))
        return out

    def _negated(self, m: Match, gap: tuple[Leaf, ...], t: int) -> bool:
        """A forbidden GPM matches (joined with X) an event strictly between tau' and tau."""
        return any(self.gpm(leaf.gpm, e, m.omega)
                   for leaf in gap for e in self.sigma.stream_events(leaf.stream, m.time, t))

    # ------------------------------------------------------------ queries (Def. 16)

    def windows(self, t: int, omega: int | None) -> list[tuple[int, int | None]]:
        """``[t + k*omega, t + (k+1)*omega]`` for every k that reaches an event."""
        last = self.sigma.times[-1] if self.sigma.times else t
        if omega is None:
            return [(t, None)]
        out: list[tuple[int, int | None]] = []
        k = 0
        while t + k * omega <= last:
            out.append((t + k * omega, t + (k + 1) * omega))
            k += 1
        return out

    def evaluate(self, t: int, omega: int | None) -> list[Match]:
        """The matches of the query issued at t, window length omega (in timeline units)."""
        out: dict[tuple, Match] = {}
        for tb, te in self.windows(t, omega):
            for m in self.expression(self.query.seq, tb, te):
                out.setdefault(m.key, m)
        return sorted(out.values(), key=lambda m: (m.time, m.steps))

    def answers(self, t: int, omega: int | None) -> set[tuple[int, Omega]]:
        """Definition 16 itself: ``U_k {(tau, pi_V(Omega))}``."""
        v = self.query.variables
        return {(m.time, project(m.omega, v)) for m in self.evaluate(t, omega)}
