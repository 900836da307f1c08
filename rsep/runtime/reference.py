"""The reference evaluator: a continuous query computed from the definitions, instant by instant.

No incremental state: at every time instant of the timeline it decides from the
report policy whether the query is evaluated, computes each window's content
with ``rsep.windows.reference`` (Def. 3), loads a fresh pyoxigraph store with
the background and the snapshots, and applies the R2S operator. Slow and
obviously right; property tests hold the incremental runtime equal to it.

One thing is carried from one evaluation to the next: where each window triple was first
created. SPARQL leaves the order of a group's solutions open (GROUP_CONCAT, SAMPLE) and
the rows' order without ORDER BY; rsep's reading (docs/semantics.md, "Row order of the
store paths") is pyoxigraph's over a store that lived through the stream, where a triple
takes its place when the first event holding it enters the window and keeps it after it
left, taking it again when it comes back. A store made afresh at each evaluation would put
a triple that came back, or whose first event left while a later one holding it stayed,
after the triples created since, and so fold GROUP_CONCAT in another order than the
snapshot path does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence

import pyoxigraph as ox

from rsep.algebra.dataset import DEFAULT, TimeVaryingGraph
from rsep.algebra.output import Output
from rsep.algebra.pattern import written
from rsep.algebra.query import CSPARQL_TIMESTAMP, ContinuousQuery
from rsep.algebra.window import NamedWindow, WindowKind
from rsep.events import reference as events_reference
from rsep.events.solver import solve_item
from rsep.runtime.common import (
    XSD_INTEGER,
    Template,
    fill_template,
    match_template,
    match_values,
    outputs,
    unskolemize,
)
from rsep.runtime.r2s import R2SOperator, Row
from rsep.sparql.store import quads
from rsep.sparql.update import graph_at
from rsep.stream.event import Event
from rsep.stream.time import TimeKind
from rsep.windows import reference
from rsep.windows.reference import Content
from rsep.windows.resolved import Window, resolve


def evaluate(query: ContinuousQuery, events: Sequence[Event], *, name: str = "q",
             graphs: dict[str, list[ox.Triple]] | None = None, until: int | None = None,
             time_unit_ms: int | None = None,
             varying: Sequence[TimeVaryingGraph] = ()) -> list[Output]:
    """``varying``: time-varying graphs (000 Def. 2), each read as G(t) by the evaluation
    at t (in place of the graph of that IRI in ``graphs``)."""
    static = graphs or {}
    if not events:
        return []
    # Items are numbered in arrival order, as the engine numbers them.
    events = [dataclasses.replace(e, seq=i) for i, e in enumerate(events, 1)]
    kind: TimeKind = events[0].kind
    ds = query.dataset
    windows = [(w, resolve(w.spec, kind, time_unit_ms)) for w in ds.windows]
    streams = {w.stream for w in ds.windows}
    mine = [e for e in events if e.stream in streams]
    by_stream = {s: [e for e in events if e.stream == s] for s in streams}
    arrivals = {e.time for e in mine}
    start = events[0].time
    end = max(events[-1].time, until if until is not None else events[-1].time)
    rp = query.report
    period = rp.periodic.units(kind, time_unit_ms) if rp.periodic else None
    r2s = R2SOperator(query.r2s)
    consumed: set[int] = set()
    places: dict[ox.Quad, int] = {}  # a window graph's quad -> the order it was created in
    out: list[Output] = []
    last_contents: tuple | None = None
    # pyoxigraph is given the query's tree written once, as the runtime gives it (the text
    # for a query the tree does not hold); with MATCH, that text cut at its slots
    text = written(query.pattern, query.sparql)
    template = match_template(query) if query.matches else None
    for t in range(start, end + 1):
        contents = [reference.content(rw, by_stream[w.stream], t) for w, rw in windows]
        ident = tuple(tuple((id(e), len(tr)) for e, tr in c) for c in contents)
        due = (
            (t in rp.at)
            or (rp.on_arrival and t in arrivals)
            or (rp.content_change and ident != last_contents)
            or (period is not None and t % period == 0)
            or (rp.window_close and any(
                (rw.kind is WindowKind.TIME or (rw.kind is WindowKind.LANDMARK and rw.stepped))
                and rw.is_close(t) for _, rw in windows))
        )
        if not due:
            continue
        if rp.non_empty and not any(tr for c in contents for _, tr in c):
            continue
        last_contents = ident
        sparql = text
        if query.matches:
            sparql = _matches(query, template, windows, contents, consumed)
        graphs = {**static, **{g.iri: sorted(graph_at(g, t), key=str) for g in varying}}
        rows = _run(query, sparql, windows, contents, graphs, places)
        out.extend(outputs(name, t, kind, query.form, r2s.apply(rows)))
    return out


def _matches(query: ContinuousQuery, template: Template | None,
             windows: list[tuple[NamedWindow, Window]], contents: list[Content],
             consumed: set[int]) -> str:
    """Eq. (8) for each MATCH, from the definitions, with P^c / P^r consumption: each
    MATCH's VALUES block where the tree's text had its slot (``template``); None: each
    slot of the query's text replaced."""
    by_iri = {w.iri: c for (w, _), c in zip(windows, contents, strict=True)}
    text = query.sparql
    filled: dict[int, str] = {}
    ctx = events_reference.Context(by_iri, lambda bep, item, trs: solve_item(bep, trs), frozenset(consumed))
    for i, m in enumerate(query.matches):
        found = events_reference.evaluate(m.expr, m.selection, ctx)
        if template is None:
            text = text.replace(m.slot, match_values(m, found))
        else:
            filled[i] = match_values(m, found)
        if m.selection.consumes:
            consumed |= events_reference.justification(found)
    return text if template is None else fill_template(template, filled)


def _run(query: ContinuousQuery, sparql: str, windows: list[tuple[NamedWindow, Window]],
         contents: list[Content], graphs: dict[str, list[ox.Triple]],
         places: dict[ox.Quad, int]) -> list[Row]:
    """The query over a fresh store of the background and the window contents, each window
    quad created in its place (``places``: the order the first evaluation that held it met
    it, by window, then entry, then the event's triple order; a quad met now for the first
    time is given the next place). The snapshot store also forgets the places of gone quads
    when it rebuilds (more than max(4096, live) of them): not followed here, so a stream that
    lets that many leave can fold in another order than the snapshot path."""
    store = ox.Store()
    ds = query.dataset
    for g in ds.default_graphs or ([DEFAULT] if DEFAULT in graphs else []):
        store.extend(quads(graphs[g], ox.DefaultGraph()))
    named = ds.named_graphs or ([] if ds.default_graphs else [g for g in graphs if g != DEFAULT])
    names: list[ox.NamedNode | ox.BlankNode] = [ox.NamedNode(g) for g in named]
    for g in named:
        store.extend(quads(graphs[g], ox.NamedNode(g)))
    latest: dict[ox.Triple, int] = {}
    live: dict[ox.Quad, None] = {}  # the window quads, as they are met (each once)

    def meet(qs: Iterator[ox.Quad]) -> None:
        for q in qs:
            live[q] = None
            places.setdefault(q, len(places))

    for (w, _), c in zip(windows, contents, strict=True):
        graph: ox.NamedNode | ox.DefaultGraph
        if w.in_default:
            graph = ox.DefaultGraph()
        else:
            graph = ox.NamedNode(w.iri)
            names.append(graph)
        for e, trs in c:
            meet(quads(trs, graph))
            for tr in trs:
                latest[tr] = max(latest.get(tr, e.end), e.end)
            for g, gts in e.graphs:  # an RDF Message's other named graphs, with their event
                node = ox.NamedNode(g)
                if node not in names:
                    names.append(node)
                meet(quads(gts, node))
                for tr in gts:
                    latest[tr] = max(latest.get(tr, e.end), e.end)

    store.extend(sorted(live, key=places.__getitem__))

    def timestamp(s, p, o):
        try:
            t = latest.get(ox.Triple(s, p, o))
        except TypeError:
            return None
        return None if t is None else ox.Literal(str(t), datatype=XSD_INTEGER)

    res = store.query(sparql, named_graphs=names,
                      custom_functions={ox.NamedNode(CSPARQL_TIMESTAMP): timestamp})
    if isinstance(res, ox.QueryBoolean):
        return [(bool(res), bool(res))]
    if isinstance(res, ox.QuerySolutions):
        vs = tuple(v.value for v in res.variables)
        rows: list[Row] = []
        for sol in res:
            values = tuple(None if sol[i] is None else unskolemize(str(sol[i])) for i in range(len(vs)))
            rows.append((values, (vs, {n: v for n, v in zip(vs, values, strict=True) if v is not None})))
        return rows
    seen: dict[str, str] = {}
    for tr in res:
        seen.setdefault(str(tr), str(tr))
    return list(seen.items())
