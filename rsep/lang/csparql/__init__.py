"""C-SPARQL (Barbieri et al. 2010), as its engine runs it.

- FROM STREAM <s> [RANGE d STEP d]: the window's content is merged into the
  default graph together with the FROM graphs (001's strategy B1).
- Windows are [o, c), closing at every multiple of STEP aligned to time 0; the
  query is evaluated at each close when some window holds data (window close +
  non-empty content, as CSRBench observed). RStream.
- [RANGE d] without STEP slides by one time unit (001 reads Q1 so); TUMBLING
  slides by the range; [RANGE TRIPLES n] keeps the last n triples and reports
  on every arrival.
- timestamp(?s, ?p, ?o) (or f:timestamp with the engine's namespace): the time
  of the most recent occurrence of that triple in the windows.
"""

from __future__ import annotations

from rsep.algebra.dataset import StreamingDataset
from rsep.algebra.policy import R2S, ReportPolicy
from rsep.algebra.query import ContinuousQuery
from rsep.algebra.window import Boundary, NamedWindow, WindowKind
from rsep.lang.common import (
    plain_dataset,
    register_name,
    remove_register,
    rewrite_timestamp_calls,
    service_position,
)
from rsep.lang.pattern import with_pattern
from rsep.lang.syntax import Syntax


def build(syn: Syntax) -> ContinuousQuery:
    reg = remove_register(syn)
    ds = StreamingDataset()
    windowed: set[int] = set()
    n = 0
    for clause in syn.dataset_clauses():
        if clause.data not in ("from_stream", "from_named_stream"):
            continue
        windowed.add(id(clause))
        iri = next(c for c in clause.children if getattr(c, "data", None) == "iri")
        spec_node = next(c for c in clause.children if getattr(c, "data", None) == "window_spec")
        s = syn.iri(iri)
        spec = syn.window_spec(spec_node, Boundary.LEFT_CLOSED)
        if clause.data == "from_named_stream":
            if ds.window(s):
                raise syn.error(f"FROM NAMED STREAM <{s}> is given twice", clause)
            ds.windows.append(NamedWindow(s, s, spec))
        else:
            n += 1
            ds.windows.append(NamedWindow(f"urn:rsep:csparql:window:{n}", s, spec, in_default=True))
    plain_dataset(syn, ds, windowed)
    every = None
    if reg is not None:
        ce = [c for c in reg.children if getattr(c, "data", None) == "computed_every"]
        if ce:
            every = syn.duration(ce[0].children[2])
    uses_ts = rewrite_timestamp_calls(syn)
    timed = any(w.spec.kind is WindowKind.TIME for w in ds.windows)
    if every is not None:
        report = ReportPolicy(periodic=every, non_empty=True)
    elif timed:
        report = ReportPolicy(window_close=True, non_empty=True)
    else:
        report = ReportPolicy(on_arrival=True, non_empty=True)
    q = ContinuousQuery(
        name=register_name(syn, reg), dialect="csparql", form=syn.form, dataset=ds,
        sparql=syn.rewritten(), r2s=R2S.RSTREAM, report=report, text=syn.text,
        uses_timestamp=uses_ts, service_at=service_position(syn),
    )
    return with_pattern(q, syn)
