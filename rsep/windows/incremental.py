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

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import cast

import pyoxigraph as ox
from lark import Token, Tree

from rsep.algebra.expression import Constraint
from rsep.algebra.query import ContinuousQuery
from rsep.lang.errors import QueryError
from rsep.lang.expression import RSP_EXTENSIONS, ExpressionReader
from rsep.lang.parser import parse_tree
from rsep.lang.syntax import Syntax, end_of, nodes_in, start_of
from rsep.sparql.matcher import Canon, Fallback, Indexed, compile_pattern
from rsep.sparql.rows import stored_form
from rsep.stream.event import Event

INCREMENTAL = "incremental"
SNAPSHOT = "snapshot"

_VAR = "urn:rsep:var:"
_EVENT = "urn:rsep:event:"
# Functions whose value changes from one evaluation to the next: an event's solutions
# computed on arrival could differ from the snapshot's.
_VOLATILE = re.compile(r"\b(NOW|RAND|UUID|STRUUID|BNODE)\s*\(", re.I)

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
    """One ``GRAPH <w> { P }`` of the query: P's text, its patterns, and the FILTERs of the
    enclosing group that only P's variables decide (pushed down: see :func:`analyse`)."""

    text: str
    patterns: list[Pattern]
    pushed: list[str] = field(default_factory=list)
    # the FILTERs of ``text`` then of ``pushed``, in the order of the text
    filters: list[Constraint] = field(default_factory=list)


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


def read_windows(query: ContinuousQuery) -> set[str]:
    """The windows whose triples the query's graph patterns read (through GRAPH <w> or
    GRAPH ?g, or merged into the default graph); a window read only by EVENT declarations
    (MATCH) reaches the engine as items."""
    windows = {w.iri for w in query.dataset.windows}
    read = {w.iri for w in query.dataset.windows if w.in_default}
    try:
        tree = parse_tree(query.sparql)
        syn = Syntax.of(query.sparql, tree)
    except QueryError:  # (the registered text always parses; kept safe)
        return windows
    for g in nodes_in(tree, "graph_graph_pattern"):
        if syn.is_var(g.children[1]):
            return windows
        read.add(syn.iri(g.children[1]))
    return read & windows


def analyse(query: ContinuousQuery) -> Analysis | str:
    """The windows' graph patterns, or why the query must take the snapshot path."""
    if query.matches:
        return "the query has MATCH event patterns"
    if query.uses_timestamp:
        return "timestamp() reads the time of every triple in the window"
    if query.form == "DESCRIBE":
        return "DESCRIBE reads every triple about a resource"
    if not query.dataset.windows:
        return "the query reads no window"
    if any(w.in_default for w in query.dataset.windows):
        return "a window is merged into the default graph (FROM STREAM): its patterns are not isolated"
    try:
        tree = parse_tree(query.sparql)
        syn = Syntax.of(query.sparql, tree)
    except QueryError as e:  # (the registered text always parses; kept safe)
        return f"the query text does not parse here: {e}"
    windows = {w.iri for w in query.dataset.windows}
    blocks: dict[str, list[Block]] = {w: [] for w in windows}
    reader = ExpressionReader(syn.text, RSP_EXTENSIONS)
    for g in nodes_in(tree, "graph_graph_pattern"):
        if syn.is_var(g.children[1]):
            return "GRAPH ?var reads every named graph, the windows' included"
        iri = syn.iri(g.children[1])
        if iri not in windows:
            continue
        b = _block(syn, g, reader)
        if isinstance(b, str):
            return f"window <{iri}>: {b}"
        _push_filters(syn, tree, g, b, reader)
        blocks[iri].append(b)
    return Analysis(syn.prologue_text(), blocks)


def _block(syn: Syntax, g: Tree, reader: ExpressionReader) -> Block | str:
    group = g.children[2]
    sub = group.children[0]
    if not isinstance(sub, Tree) or sub.data != "group_graph_pattern_sub":
        return "its pattern is a subquery"
    triples: list[Tree] = []
    filters: list[Constraint] = []
    for c in sub.children:
        if not isinstance(c, Tree):
            continue
        if c.data == "triples_block":
            triples.append(c)
            continue
        for d in c.children:  # group_graph_pattern_sub_other
            if not isinstance(d, Tree):
                continue
            if d.data == "triples_block":
                triples.append(d)
            elif d.data == "graph_pattern_not_triples" and d.children[0].data == "filter":
                f = d.children[0]
                if nodes_in(f, "exists_func") or nodes_in(f, "not_exists_func"):
                    return "a FILTER (NOT) EXISTS reads other triples of the window"
                if _VOLATILE.search(syn.text[start_of(f):end_of(f)]):
                    return "a FILTER calls NOW, RAND, UUID, STRUUID or BNODE"
                filters.append(reader.constraint(f, syn.prologue_text()))
            else:
                return "its pattern is more than triples and FILTERs (OPTIONAL, UNION, MINUS, " \
                       "BIND, VALUES, subgroups)"
    if not triples:
        return "its pattern has no triples"
    patterns = _patterns(syn, triples)
    if isinstance(patterns, str):
        return patterns
    text = syn.text[start_of(sub):end_of(sub)]
    return Block(text, patterns, filters=filters)


def _patterns(syn: Syntax, blocks: list[Tree]) -> list[Pattern] | str:
    """The triple patterns, read by the Turtle parser with variables as IRIs (a property
    path is not Turtle: refused)."""
    body = []
    for tb in blocks:
        text = syn.text[start_of(tb):end_of(tb)]
        edits = sorted(((start_of(v) - start_of(tb), end_of(v) - start_of(tb), v)
                        for v in nodes_in(tb, "var")), key=lambda e: e[0], reverse=True)
        for s, e, v in edits:
            name = str(v.children[0])[1:] if isinstance(v.children[0], Token) else ""
            text = text[:s] + f"<{_VAR}{name}>" + text[e:]
        body.append(text.rstrip().rstrip(".") + " .")
    try:
        parsed = [q.triple for q in ox.parse(syn.prologue_text() + "\n".join(body),
                                             format=ox.RdfFormat.TURTLE)]
    except SyntaxError:
        return "a triple pattern uses a property path (or a form Turtle cannot read)"
    raw: list[tuple[Term | ox.Triple, ...]] = [(t.subject, t.predicate, t.object) for t in parsed]
    if any(isinstance(x, ox.Triple) for r in raw for x in r):
        return "a triple pattern holds a quoted triple"

    def var(x: object) -> str | None:
        if isinstance(x, ox.BlankNode):
            return "_:" + x.value  # a blank node in a pattern is a variable
        if isinstance(x, ox.NamedNode) and x.value.startswith(_VAR):
            return x.value
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
        consts = tuple(x if v is None and isinstance(x, ox.NamedNode) else None
                       for x, v in zip(r, vs, strict=True))
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


def _push_filters(syn: Syntax, tree: Tree, g: Tree, b: Block, reader: ExpressionReader) -> None:
    """FILTERs of the WHERE clause's top group that only the block's variables decide,
    when that group is a plain conjunction (triples, GRAPH blocks, FILTERs): a solution of
    the block they reject is in no solution of the query, so its event need not be kept."""
    where = nodes_in(tree, "where_clause")
    if not where:
        return
    sub = where[0].children[-1].children[0]
    if not isinstance(sub, Tree) or sub.data != "group_graph_pattern_sub":
        return
    filters: list[Tree] = []
    top = False
    for c in sub.children:
        if not isinstance(c, Tree) or c.data == "triples_block":
            continue
        for d in c.children:
            if not isinstance(d, Tree) or d.data == "triples_block":
                continue
            kind = d.children[0]
            if kind is g:
                top = True
            elif kind.data == "filter":
                filters.append(kind)
            elif kind.data != "graph_graph_pattern":
                return
    if not top:
        return
    inner = {str(v.children[0])[1:] for v in nodes_in(g, "var")}
    for f in filters:
        text = syn.text[start_of(f):end_of(f)]
        names = {str(v.children[0])[1:] for v in nodes_in(f, "var")}
        if names and names <= inner and not nodes_in(f, "exists_func") \
                and not nodes_in(f, "not_exists_func") and not _VOLATILE.search(text):
            b.pushed.append(text)
            b.filters.append(reader.constraint(f, syn.prologue_text()))


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
        self.queries = [
            f"{prologue}SELECT DISTINCT ?__g WHERE {{ GRAPH ?__g {{ {b.text}\n"
            + "\n".join(b.pushed) + " } }" for b in self.blocks]
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
        compiled = [compile_pattern(prologue, "{ " + b.text + "\n" + "\n".join(b.pushed) + " }",
                                    self._canon, b.filters) for b in self.blocks]
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
