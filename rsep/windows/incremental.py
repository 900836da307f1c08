"""Event-local windows: each event's part of a window query decided once, on arrival.

A window's graph patterns (every ``GRAPH <w> { P }`` of the query, P a basic graph pattern
with FILTERs) are *event-local* on a window's content when every solution of P over the
window's graph comes from the triples of one event. Then only the triples of events that
have a solution of some P can take part in a solution, and the snapshot store needs to hold
those alone: a subgraph G' of the window's graph G that holds every solution's triples gives
P the same solutions as G (a BGP is monotone, and G' holds all of them). The query itself is
still evaluated by pyoxigraph, on the same text, so aggregates, ORDER BY, HAVING, GROUP_CONCAT
and the rest are pyoxigraph's own and the output is the snapshot path's.

Whether a window is event-local is a checked property, per evaluation: P is connected by its
variables (static, or the query takes the snapshot path), and no term bound by a variable
P uses twice (its *join* variables) occurs in two live events (counted here as events enter
and leave). A solution's triples then all hold its join terms, so they all come from the one
event where those terms occur. When the check fails (a term shared by events), the window's
store graph holds every live triple that matches a pattern of P, as the snapshot path's
would, until the check holds again.

Whether an event has a solution is decided once: on arrival by the compiled matcher
(rsep.sparql.matcher) when it takes every block, otherwise (or when a FILTER is beyond it)
for a batch of events at an evaluation, in one pyoxigraph query over a scratch store
holding each event as a named graph.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import cast

import pyoxigraph as ox

from rsep.algebra import pattern as pt
from rsep.algebra.expression import Constraint, Exists, Expression, FunctionCall, Variable, walk
from rsep.algebra.query import ContinuousQuery
from rsep.sparql.filters import NotCompiled, prefixes_of
from rsep.sparql.matcher import Canon, Fallback, Indexed, compile_pattern
from rsep.sparql.pattern import Triple, triple_patterns
from rsep.sparql.rows import stored_form
from rsep.stream.event import Event

INCREMENTAL = "incremental"
SNAPSHOT = "snapshot"

_EVENT = "urn:rsep:event:"
# Functions whose value changes from one evaluation to the next: an event's solutions
# computed on arrival could differ from the snapshot's.
_VOLATILE = frozenset({"NOW", "RAND", "UUID", "STRUUID", "BNODE"})
# the top group's elements (rsep.algebra.pattern's Query.elements) under which a FILTER that
# only a block's variables decide is pushed into the block
_CONJUNCTION = frozenset({"triples", "FILTER", "GRAPH", "WINDOW", "STREAM"})

EARLY_MAX = 100_000  # entries of arrived events kept for their entry into the window
_BORN_MIN = 4_096  # places of triples kept (gone ones forgotten past this, or twice the kept)
Term = ox.NamedNode | ox.BlankNode | ox.Literal
Position = int  # 0 subject, 1 predicate, 2 object
_Check = tuple[int, int, ox.NamedNode | None, ox.NamedNode | None, tuple[Position, ...]]


@dataclass(frozen=True)
class Pattern:
    """One triple pattern: per position an IRI the triple must carry, or None (a variable,
    a blank node or a literal: literals are compared by value in the store, so here they
    match anything), and the positions whose terms the locality check counts (none: the
    whole triple, for a block of one pattern)."""

    consts: tuple[ox.NamedNode | None, ox.NamedNode | None, ox.NamedNode | None]
    tracked: tuple[Position, ...]


@dataclass
class Block:
    """One ``GRAPH <w> { P }`` of the query (its tree's :class:`~rsep.algebra.pattern.Graph`
    or :class:`~rsep.algebra.pattern.WindowGraph`): P's triples, its patterns, and its
    FILTERs then those of the enclosing group that only P's variables decide (the last
    ``pushed`` of ``filters``: see :func:`analyse`)."""

    triples: tuple[pt.Triple, ...]
    patterns: list[Pattern]
    filters: list[Constraint] = field(default_factory=list)
    pushed: int = 0

    def group(self) -> str:
        """The block's group with every FILTER it holds, as SPARQL text for pyoxigraph."""
        bgp = pt.BGP(self.triples)
        conds = tuple(c.expr for c in self.filters)
        return pt.to_sparql(pt.Filter(conds, bgp) if conds else bgp)

    def matcher_triples(self, prologue: str) -> list[Triple] | None:
        """The triples in the compiled matcher's form (None: a term it does not read)."""
        try:
            return triple_patterns(self.triples, prefixes_of(prologue))
        except NotCompiled:
            return None


@dataclass
class Analysis:
    prologue: str
    blocks: dict[str, list[Block]]  # window IRI -> its GRAPH blocks


def plan(query: ContinuousQuery) -> tuple[str, str]:
    """Which path the runtime takes for the query: (INCREMENTAL | SNAPSHOT, why)."""
    a = analyse(query)
    if isinstance(a, str):
        return SNAPSHOT, a
    when = "on arrival, by the compiled matcher" if all(
        LocalWindow(a.prologue, bs).on_arrival for bs in a.blocks.values()) else \
        "in one pyoxigraph query per evaluation's arrivals (a pattern or FILTER the compiled " \
        "matcher does not take)"
    return INCREMENTAL, ("every window's graph patterns are basic graph patterns connected by "
                         f"their variables: whether an event has solutions is decided once, {when}, "
                         "and only the triples of events with solutions enter the snapshot store "
                         "(checked per evaluation: no join term in two live events)")


def _graphs(tree: pt.Query) -> Iterator[pt.Graph | pt.WindowGraph]:
    """The query's GRAPH patterns (a window's, RSP-QL's WINDOW and CQELS's STREAM, included),
    wherever they stand: under OPTIONAL, in a sub-query, in an EXISTS."""
    for n in pt.every_pattern(tree):
        if isinstance(n, (pt.Graph, pt.WindowGraph)):
            yield n


def _graph_name(g: pt.Graph | pt.WindowGraph, tree: pt.Query) -> str | None:
    """The graph's IRI, absolute; None for a variable."""
    name = g.name if isinstance(g, pt.Graph) else g.window
    return None if isinstance(name, Variable) else pt.absolute(name, tree.prologue)


def read_windows(query: ContinuousQuery) -> set[str]:
    """The windows whose triples the query's graph patterns read (through GRAPH <w> or
    GRAPH ?g, or merged into the default graph); a window read only by EVENT declarations
    (MATCH) reaches the engine as items."""
    windows = {w.iri for w in query.dataset.windows}
    read = {w.iri for w in query.dataset.windows if w.in_default}
    tree = query.pattern
    if tree is None:  # (no tree, no proof of what it reads: every window)
        return windows
    for g in _graphs(tree):
        iri = _graph_name(g, tree)
        if iri is None:
            return windows
        read.add(iri)
    return read & windows


def analyse(query: ContinuousQuery) -> Analysis | str:
    """The windows' graph patterns, or why the query must take the snapshot path."""
    if query.matches:
        return "the query has MATCH event patterns"
    if query.calls_timestamp:
        return "timestamp() reads the time of every triple in the window"
    if query.form == "DESCRIBE":
        return "DESCRIBE reads every triple about a resource"
    if not query.dataset.windows:
        return "the query reads no window"
    if any(w.in_default for w in query.dataset.windows):
        return "a window is merged into the default graph (FROM STREAM): its patterns are not isolated"
    tree = query.pattern
    if tree is None:
        return f"the query has no pattern tree ({query.pattern_refused})"
    prologue = pt.prologue_text(tree.prologue)
    windows = {w.iri for w in query.dataset.windows}
    blocks: dict[str, list[Block]] = {w: [] for w in windows}
    top, top_filters = _top_conjunction(tree)
    for g in _graphs(tree):
        iri = _graph_name(g, tree)
        if iri is None:
            return "GRAPH ?var reads every named graph, the windows' included"
        if iri not in windows:
            continue
        b = _block(g.arg, tree, prologue)
        if isinstance(b, str):
            return f"window <{iri}>: {b}"
        if any(g is t for t in top):
            _push_filters(g.arg, b, top_filters, prologue)
        blocks[iri].append(b)
    return Analysis(prologue, blocks)


def _refusal(e: Expression) -> str | None:
    """Why a FILTER cannot be decided per event, if it cannot."""
    for x in walk(e):
        if isinstance(x, Exists):
            return "a FILTER (NOT) EXISTS reads other triples of the window"
    for x in walk(e):
        if isinstance(x, FunctionCall) and x.function in _VOLATILE:
            return "a FILTER calls NOW, RAND, UUID, STRUUID or BNODE"
    return None


def constraint(e: Expression, prologue: str) -> Constraint:
    """A FILTER's constraint with its text: a call, or an expression in brackets."""
    text = e.to_sparql()
    if not (isinstance(e, FunctionCall) or text.startswith("(") and text.endswith(")")):
        text = f"({text})"
    return Constraint(e, text, prologue)


def _block(p: pt.Pattern, tree: pt.Query, prologue: str) -> Block | str:
    if isinstance(p, pt.SubSelect):
        return "its pattern is a subquery"
    conds = p.conditions if isinstance(p, pt.Filter) else ()
    bgp = p.arg if isinstance(p, pt.Filter) else p
    if not isinstance(bgp, pt.BGP):
        return "its pattern is more than triples and FILTERs (OPTIONAL, UNION, MINUS, " \
               "BIND, VALUES, subgroups)"
    for c in conds:
        why = _refusal(c)
        if why is not None:
            return why
    if not bgp.triples:
        return "its pattern has no triples"
    patterns = _patterns(bgp.triples, tree)
    if isinstance(patterns, str):
        return patterns
    return Block(bgp.triples, patterns, [constraint(c, prologue) for c in conds])


def _patterns(triples: tuple[pt.Triple, ...], tree: pt.Query) -> list[Pattern] | str:
    """The triple patterns' constant IRIs and join positions (a property path, or a literal
    as a subject, is refused: the patterns were read as Turtle, which has neither)."""
    raw: list[tuple[object, object, object]] = []
    for t in triples:
        if not isinstance(t.predicate, (Variable, pt.Iri, pt.PrefixedName)) \
                or isinstance(t.subject, pt.Literal):
            return "a triple pattern uses a property path (or a form Turtle cannot read)"
        raw.append((t.subject, t.predicate, t.object))

    def var(x: object) -> str | None:
        if isinstance(x, pt.BlankNode):
            return "_:" + x.label  # a blank node in a pattern is a variable
        if isinstance(x, Variable):
            return "?" + x.name
        return None

    names = [{n for x in r if (n := var(x)) is not None} for r in raw]
    uses: dict[str, int] = {}
    for ns in names:
        for n in ns:
            uses[n] = uses.get(n, 0) + 1
    if len(raw) > 1 and not _connected(names):
        return "its triple patterns are not connected by variables (a cross product of events)"
    out = []
    for r in raw:
        vs = [var(x) for x in r]
        # a lone pattern has no join: its solutions repeat only when a triple is in two
        # events, so the triple itself is counted (tracked == ())
        tracked = () if len(raw) == 1 else tuple(
            i for i, v in enumerate(vs) if v is not None and uses[v] > 1)
        consts = tuple(ox.NamedNode(pt.absolute(x, tree.prologue))
                       if isinstance(x, (pt.Iri, pt.PrefixedName)) else None for x in r)
        out.append(Pattern(consts, tracked))  # type: ignore[arg-type]
    return out


def _connected(sets: list[set[str]]) -> bool:
    seen = {0}
    vs = set(sets[0])
    grew = True
    while grew:
        grew = False
        for i, s in enumerate(sets):
            if i not in seen and s & vs:
                seen.add(i)
                vs |= s
                grew = True
    return len(seen) == len(sets)


def _top_conjunction(tree: pt.Query) -> tuple[list[pt.Pattern], tuple[Expression, ...]]:
    """The WHERE clause's top group's patterns and FILTERs, when that group is a plain
    conjunction (triples, GRAPH blocks, FILTERs, as written); else nothing."""
    p = tree.pattern
    if p is None or isinstance(p, pt.SubSelect) or not set(tree.elements) <= _CONJUNCTION:
        return [], ()
    conds = p.conditions if isinstance(p, pt.Filter) else ()
    out: list[pt.Pattern] = []
    todo = [p.arg if isinstance(p, pt.Filter) else p]
    while todo:
        x = todo.pop()
        if isinstance(x, pt.Join):
            todo += [x.right, x.left]
        else:
            out.append(x)
    return out, conds


def _push_filters(p: pt.Pattern, b: Block, filters: tuple[Expression, ...],
                  prologue: str) -> None:
    """FILTERs of the WHERE clause's top group that only the block's variables decide,
    when that group is a plain conjunction (triples, GRAPH blocks, FILTERs): a solution of
    the block they reject is in no solution of the query, so its event need not be kept."""
    inner = {x.name for t in b.triples for x in (t.subject, t.predicate, t.object)
             if isinstance(x, Variable)}
    for c in b.filters:
        inner |= c.variables()
    for f in filters:
        names = f.variables()
        if names and names <= inner and _refusal(f) is None:
            b.filters.append(constraint(f, prologue))
            b.pushed += 1


# ------------------------------------------------------------------ runtime


@dataclass(slots=True)
class Entry:
    matching: tuple[ox.Triple, ...]  # the event's triples that some pattern's IRIs match
    terms: frozenset[object]  # its join terms (locality check)
    relevant: bool | None = None  # has a solution of some block (None: not decided yet)
    stored: tuple[ox.Triple, ...] = ()  # what it has in the store graph
    sols: Sequence[tuple] = ()  # a maintained window's: the event's solutions (maintained.py)


_NAMED, _BLANK, _LITERAL = ox.NamedNode, ox.BlankNode, ox.Literal


def _key(x: object) -> str:
    """A term as the locality check counts it: a str, whose hash Python keeps (a pyoxigraph
    term's is worked out again at each of the term's four or more dict and set operations).
    One to one: an IRI starts with its scheme's letter, a blank node's key with "_:", a
    literal's form with a quote, a triple term's with "<"."""
    t = type(x)
    if t is _NAMED:
        return x.value  # type: ignore[attr-defined]
    if t is _BLANK:
        return "_:" + x.value  # type: ignore[attr-defined]
    if t is _LITERAL:
        return stored_form(str(x))
    return str(x)


def _bit(k: object) -> int:
    """``1 << k`` as a Python int. Written inline in a compiled module with a C-typed
    ``k``, the shift is C's on an ``int``: a block of 32 or more patterns wrapped its
    bits round and matched nothing (and 64 overflowed)."""
    one: object = 1
    return cast(int, one) << cast(int, k)


class LocalWindow:
    """A window's store graph under the event-local plan (see the module's text)."""

    def __init__(self, prologue: str, blocks: Sequence[Block]) -> None:
        self.blocks = list(blocks)
        self.queries = [f"{prologue}SELECT DISTINCT ?__g WHERE {{ GRAPH ?__g {b.group()} }}"
                        for b in self.blocks]
        # per pattern: (block, bit of the pattern in its block, subject IRI, object IRI,
        # tracked positions), by predicate IRI (None: any predicate)
        self._by_pred: dict[ox.NamedNode | None, list[_Check]] = {}
        for bi, b in enumerate(self.blocks):
            for k, p in enumerate(b.patterns):
                self._by_pred.setdefault(p.consts[1], []).append(
                    (bi, _bit(k), p.consts[0], p.consts[2], p.tracked))
        self._any_pred = self._by_pred.pop(None, [])
        self._full_mask = [_bit(len(b.patterns)) - 1 for b in self.blocks]
        self.live: dict[int, Entry] = {}
        self._entered: list[int] = []  # since the last sync
        self._counts: dict[object, int] = {}
        self.conflicts = 0  # join terms in two or more live events
        self.full = False  # the store graph holds every matching triple (check failed)
        self.batches = 0
        self._removed: list[ox.Triple] = []
        # each block compiled to Python (rsep.sparql.matcher, proven equal to pyoxigraph),
        # or None: then events are decided in batches by pyoxigraph, at evaluations
        self._canon = Canon()
        triples = [b.matcher_triples(prologue) for b in self.blocks]
        compiled = [None if ts is None else compile_pattern(prologue, ts, self._canon, b.filters)
                    for ts, b in zip(triples, self.blocks, strict=True)]
        self._compiled = None if any(c is None for c in compiled) else \
            [c for c in compiled if c is not None]
        self._early: dict[int, tuple[tuple[ox.Triple, ...], Entry]] = {}
        # Row order: pyoxigraph answers in the order its quads were created (a removed quad
        # keeps its place), so the store graph's quads are created in the order the snapshot
        # path's store creates them: by the entry of the first event that brought the triple
        # in (``_born``, kept for gone triples too, as pyoxigraph keeps their places), even
        # when an earlier event's triples are stored after a later one's (the locality check
        # fails, or fails again). When the store cannot append them in that order, it is
        # rebuilt in it (``reorder``; ``_created``: the stamps the store holds quads with).
        self._born: dict[ox.Triple, int] = {}
        self._clock = 0
        self._born_cap = _BORN_MIN
        self._created: dict[ox.Triple, int] = {}
        self._top = -1
        self.reorder = False
        self.epoch = 0  # the store's rebuilds that ``_created`` follows

    @property
    def unsynced(self) -> int:
        """Events that entered since the last sync."""
        return len(self._entered)

    @property
    def on_arrival(self) -> bool:
        """Are events decided as they arrive (every block compiled)?"""
        return self._compiled is not None

    # ---------------------------------------------------------------- changes

    def change(self, changes: Iterable[tuple[bool, Event, tuple[ox.Triple, ...]]]) -> None:
        """Events entering and leaving the window, in order (WindowOperator's item changes)."""
        for entered, e, triples in changes:
            if entered:
                self._enter(e.seq, triples)
            else:
                self._leave(e.seq)

    def arrive(self, e: Event) -> None:
        """An event arrived on the window's stream: its entry is worked out now, its
        relevance by the compiled matcher (pyoxigraph at the next sync when it cannot say),
        so that an evaluation has little left to do."""
        if self._compiled is None:
            return
        entry, rows = self._entry(e.triples, True)
        if entry.relevant is None:
            self._judge(entry, rows)
        if len(self._early) > EARLY_MAX:  # events that never entered: a cache, so clear it
            self._early.clear()
        self._early[e.seq] = (e.triples, entry)

    def _judge(self, entry: Entry, rows: list[tuple[object, object, object]]) -> None:
        """Decide an entry by the compiled blocks, from its matching triples' terms."""
        compiled = self._compiled
        assert compiled is not None
        term = self._canon.term  # literals as the store gives them back, as canon.indexed does
        ev = Indexed([(s, p, term(o)) for s, p, o in rows])
        try:
            entry.relevant = any(c.values(ev) for c in compiled)
        except Fallback:
            entry.relevant = None  # a FILTER the compiled matcher cannot decide

    def _entry(self, triples: tuple[ox.Triple, ...], keep_rows: bool = False
               ) -> tuple[Entry, list[tuple[object, object, object]]]:
        """An event's entry, and (``keep_rows``) its matching triples' terms: reading a
        term off a pyoxigraph triple builds a new object, so each is read once."""
        matching = []
        rows: list[tuple[object, object, object]] = []
        terms: set[object] = set()
        hit = [0] * len(self.blocks)
        by_pred, any_pred = self._by_pred, self._any_pred
        for t in triples:
            p = t.predicate  # (each attribute read builds a new Python object: once each)
            checks = by_pred.get(p)
            if any_pred:
                checks = (checks or []) + any_pred
            if checks is None:
                continue
            subj, obj = t.subject, t.object
            matched = False
            for bi, bit, s, o, tracked in checks:
                if (s is not None and s != subj) or (o is not None and o != obj):
                    continue
                matched = True
                hit[bi] |= bit
                if not tracked:
                    terms.add((_key(subj), p.value, _key(obj)))
                for pos in tracked:
                    terms.add(_key(subj if pos == 0 else obj if pos == 2 else p))
            if matched:
                matching.append(t)
                if keep_rows:
                    rows.append((subj, p, obj))
        entry = Entry(tuple(matching), frozenset(terms))
        full = self._full_mask
        if hit != full:
            for bi in range(len(hit)):
                if hit[bi] == full[bi]:
                    break
            else:
                entry.relevant = False  # each block has a pattern none of its triples matches
        return entry, rows

    def _enter(self, seq: int, triples: tuple[ox.Triple, ...]) -> None:
        early = self._early.pop(seq, None)
        # (an item re-entering a count window with fewer triples is worked out again)
        entry = early[1] if early is not None and early[0] is triples else self._entry(triples)[0]
        if self.live.get(seq) is not None:
            self._leave(seq)
        self._entered.append(seq)
        self._count_in(entry)
        self.live[seq] = entry
        born = self._born
        for t in entry.matching:
            if t not in born:
                born[t] = self._clock
                self._clock += 1
        if len(born) > self._born_cap:
            self._forget()

    def _count_in(self, entry: Entry) -> None:
        """The locality check counts an entering event's join terms."""
        counts = self._counts
        for term in entry.terms:
            c = counts.get(term, 0) + 1
            counts[term] = c
            if c == 2:
                self.conflicts += 1

    def _count_out(self, entry: Entry) -> None:
        counts = self._counts
        for x in entry.terms:
            c = counts[x] - 1
            if c:
                counts[x] = c
                if c == 1:
                    self.conflicts -= 1
            else:
                del counts[x]

    def _leave(self, seq: int) -> None:
        self._early.pop(seq, None)
        entry = self.live.pop(seq, None)
        if entry is None:
            return
        self._count_out(entry)
        self._removed.extend(entry.stored)

    def _forget(self) -> None:
        """Forget the places of gone triples the store holds no quad for (the snapshot
        store forgets them at its rebuilds: a triple coming back after both may take
        another place in the two, see docs/semantics.md)."""
        created = self._created
        live = {t for e in self.live.values() for t in e.matching}
        self._born = {t: c for t, c in self._born.items() if t in live or t in created}
        self._born_cap = max(_BORN_MIN, 2 * len(self._born))

    # ---------------------------------------------------------------- store

    def sync(self) -> tuple[list[ox.Triple], list[ox.Triple]]:
        """What the store graph gains and loses so that it holds, for the live events, every
        triple a solution can use: (added, removed). Only the events that entered since the
        last call are looked at, unless the locality check changed its verdict."""
        removed, self._removed = self._removed, []
        live = self.live
        if self.conflicts and not self.full or not self.conflicts and self.full:
            targets = list(live.values())  # the verdict changed: every live event
            self.full = bool(self.conflicts)
        else:
            targets = [e for s in self._entered if (e := live.get(s)) is not None]
        self._entered = []
        if not self.full:
            self._decide([e for e in targets if e.relevant is None])
        added: list[ox.Triple] = []
        for e in targets:
            want = e.matching if self.full or e.relevant else ()
            if want is e.stored:
                continue
            if e.stored:
                removed.extend(e.stored)
            added.extend(want)
            e.stored = want
        if added:
            added = self._place(added)
        return added, removed

    def _place(self, added: list[ox.Triple]) -> list[ox.Triple]:
        """The added triples in their creation order; ``reorder`` when the store, which
        appends a new quad after all it created, cannot hold them in it."""
        born, created = self._born, self._created
        added.sort(key=born.__getitem__)  # (mostly sorted already: one pass)
        top = self._top
        for t in added:
            if t not in created:  # (one it holds, removed or not, comes back in its place)
                b = created[t] = born[t]
                if b < top:
                    self.reorder = True
                else:
                    top = b
        self._top = top
        return added

    def rebased(self, epoch: int) -> None:
        """The store was rebuilt (``epoch``: its rebuild count) and forgot where the gone
        triples were: so does the window (:meth:`_forget`)."""
        born = self._born
        self._created = {t: born[t] for t in self._removed}  # (in the store until the sync)
        self._created.update((t, born[t]) for e in self.live.values() for t in e.stored)
        self._top = max(self._created.values(), default=-1)
        self._forget()
        self.epoch = epoch  # (a pending ``reorder`` stays: the rebuild kept the order)

    def reordered(self, epoch: int) -> None:
        """The store was rebuilt with this window's graph in creation order, its removed
        quads kept in their places (SnapshotStore.rebuild with :meth:`order`)."""
        self.reorder = False
        self.epoch = epoch

    def order(self, t: ox.Triple) -> int:
        """A stored triple's place in the store graph's creation order."""
        return self._born[t]

    def _decide(self, entries: list[Entry]) -> None:
        """Which of the events have a solution of some block: one query per block over a
        scratch store holding each event as a named graph."""
        if not entries:
            return
        st = ox.Store()
        st.extend([ox.Quad(t.subject, t.predicate, t.object, ox.NamedNode(f"{_EVENT}{i}"))
                   for i, e in enumerate(entries) for t in e.matching])
        found: set[str] = set()
        for q in self.queries:
            res = st.query(q)
            assert isinstance(res, ox.QuerySolutions)
            found.update(str(sol[0]) for sol in res)
        self.batches += 1
        for i, e in enumerate(entries):
            e.relevant = f"<{_EVENT}{i}>" in found
