"""RSP-QL (W3C RSP CG draft, as in RSEP-QL 000): named windows, WINDOW patterns, REGISTER,
and RSEP-QL's event patterns (EVENT declarations, MATCH).

Defaults: RStream; evaluation when a time window closes (every multiple of its
STEP, aligned to time 0, Def. 3); queries with no stepped time window (ROWS,
NOW, LANDMARK without STEP, UNBOUNDED) are evaluated on every arrival.
"""

from __future__ import annotations

from rsep.algebra.dataset import StreamingDataset
from rsep.algebra.policy import R2S, ReportPolicy
from rsep.algebra.query import ContinuousQuery
from rsep.algebra.window import NamedWindow, WindowKind
from rsep.lang.common import (
    plain_dataset,
    register_name,
    remove_register,
    rewrite_timestamp_calls,
    service_position,
)
from rsep.lang.pattern import match_slots, with_pattern
from rsep.lang.rspql import events
from rsep.lang.syntax import Syntax


def build(syn: Syntax) -> ContinuousQuery:
    reg = remove_register(syn)
    r2s = R2S.RSTREAM
    if reg is not None:
        r2s = R2S(str(reg.children[1]).upper())
    ds = StreamingDataset()
    windowed: set[int] = set()
    for clause in syn.dataset_clauses():
        if clause.data == "from_named_window":
            iris = [c for c in clause.children if getattr(c, "data", None) == "iri"]
            spec_node = next(c for c in clause.children if getattr(c, "data", None) == "window_spec")
            w, s = syn.iri(iris[0]), syn.iri(iris[1])
        elif clause.data == "from_named_win_as":
            src = next(c for c in clause.children if getattr(c, "data", None) == "source_selector")
            iri = next(c for c in clause.children if getattr(c, "data", None) == "iri")
            spec_node = next(c for c in clause.children if getattr(c, "data", None) == "window_spec")
            w, s = syn.iri(iri), syn.iri(src)
        else:
            continue
        windowed.add(id(clause))
        if ds.window(w):
            raise syn.error(f"window <{w}> is declared twice", clause)
        ds.windows.append(NamedWindow(w, s, syn.window_spec(spec_node)))
    plain_dataset(syn, ds, windowed)
    for g in ds.named_graphs:
        if ds.window(g):
            raise syn.error(f"<{g}> names both a window and a background graph")
    for node in syn.nodes("window_graph_pattern"):
        target = node.children[1]
        if not syn.is_var(target):
            iri = syn.iri(target)
            if not ds.window(iri):
                declared = ", ".join(f"<{w.iri}>" for w in ds.windows) or "none"
                raise syn.error(f"WINDOW <{iri}>: no window of that name is declared "
                                f"(declared: {declared})", target)
        syn.replace(node.children[0], "GRAPH")
    beps = events.declarations(syn, ds)
    direct = events.match_only_projection(syn)
    empty = events.empty_without_match(syn)
    matches = events.matches(syn, beps)
    uses_ts = rewrite_timestamp_calls(syn)
    stepped = any(w.spec.kind is WindowKind.TIME or (w.spec.kind is WindowKind.LANDMARK and w.spec.step)
                  for w in ds.windows)
    # A query with MATCH is evaluated on every arrival, as EP-SPARQL and CQELS are.
    report = ReportPolicy(window_close=True) if stepped and not matches else ReportPolicy(on_arrival=True)
    q = ContinuousQuery(
        name=register_name(syn, reg), dialect="rspql", form=syn.form, dataset=ds,
        sparql=syn.rewritten(), r2s=r2s, report=report, text=syn.text, uses_timestamp=uses_ts,
        service_at=service_position(syn), matches=matches, match_projection=direct,
        empty_without_match=empty,
    )
    return with_pattern(q, syn, slots=match_slots(syn, matches))
