"""What the windowed runtime and its reference evaluator share: limits (defined with the
runtime protocol, rsep.algebra.runtime), outputs from what an R2S operator emitted, MATCH
solutions as VALUES and the query's tree written with them, and the relaxed cyclic
collector."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import cast

import pyoxigraph as ox

from rsep.algebra.events import MatchPattern
from rsep.algebra.output import Output
from rsep.algebra.pattern import slot_template
from rsep.algebra.query import ContinuousQuery
from rsep.algebra.runtime import Limits as Limits
from rsep.events.mappings import EventMapping
from rsep.runtime.r2s import Payload, Selected
from rsep.stream.time import TimeKind

XSD_INTEGER = ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer")


def outputs(name: str, tau: int, kind: TimeKind | None, form: str,
            stream: list[tuple[str, Payload]]) -> list[Output]:
    """Stream elements from what an R2S operator emitted for one evaluation."""
    outs = []
    for op, payload in stream:
        o = Output(name, tau, kind, op)
        # the query's form decides what its rows carry (QueryRuntime._run)
        if form == "SELECT":
            o.variables, o.bindings = cast(Selected, payload)
        elif form == "ASK":
            o.boolean = cast(bool, payload)
        else:
            o.triple = cast(str, payload)
        outs.append(o)
    return outs


_BNODE = "urn:rsep:bnode:"


def skolemize(v: str) -> str:
    """An N-Triples term for a VALUES block: blank nodes travel as IRIs (VALUES cannot
    hold them) and come back with :func:`unskolemize`."""
    return f"<{_BNODE}{v[2:]}>" if v.startswith("_:") else v


def time_literal(t: int) -> str:
    # Interval bounds in timeline units (epoch ms for dateTime streams): arithmetic works.
    return f'"{t}"^^<http://www.w3.org/2001/XMLSchema#integer>'


def match_values(m: MatchPattern, found: list[EventMapping]) -> str:
    names = list(m.expr.variables)
    rows = []
    for em in found:
        d = em.as_dict()
        vals = [skolemize(d[n]) if n in d else "UNDEF" for n in names]
        if m.expose_interval:
            vals += [time_literal(em.t1), time_literal(em.t2)]
        rows.append("(" + " ".join(vals) + ")")
    head = m.slot.split("{", 1)[0]
    return head + "{ " + " ".join(rows) + " }\n"


Template = tuple[tuple[str, ...], tuple[int, ...]]


def match_template(query: ContinuousQuery) -> Template | None:
    """The query's tree written once, cut at its MatchSlots (slot_template), when its
    MATCH solutions can enter through it; None: the text path, for a query the tree
    could not hold (each slot of the text replaced, as before the tree)."""
    tree = query.pattern
    if tree is None:
        return None
    got = slot_template(tree)
    return got if got is not None and len(got[1]) == len(query.matches) else None


def fill_template(template: Template, filled: dict[int, str]) -> str:
    """The tree's text with each MATCH's VALUES block (``filled``, by MATCH index) where its
    slot was written: the tree is not written again at each evaluation (~5x the cost of
    the blocks alone)."""
    parts, order = template
    out = [parts[0]]
    for k, i in enumerate(order):
        out.append(filled[i])
        out.append(parts[k + 1])
    return "".join(out)


def unskolemize(v: str) -> str:
    return "_:" + v[len(_BNODE) + 1:-1] if v.startswith("<" + _BNODE) else v


# CPython's cyclic collector runs every 700 container allocations and then rescans the
# young runs, windows and matches: a third of a SPASEQ run's time. The engine's objects
# form no reference cycles (they are freed by reference counting), so while a stream is
# pushed the collector runs every GC_GEN0 allocations instead; memory stays bounded.
GC_GEN0 = 50_000
_depth = 0  # of nested relaxed_collector()s
_saved = (0, 0, 0)  # the thresholds to restore


@contextmanager
def relaxed_collector() -> Iterator[None]:
    global _depth, _saved
    if _depth == 0:
        _saved = old = gc.get_threshold()
        if 0 < old[0] < GC_GEN0:
            gc.set_threshold(GC_GEN0, *old[1:])
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            gc.set_threshold(*_saved)
