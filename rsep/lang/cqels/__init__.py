"""CQELS-QL (Le-Phuoc et al. 2011), as its engine runs it.

- STREAM <s> [window] { P } in WHERE: P sees only that stream's window (001's
  strategy B2); background data is reached by the other patterns.
- Evaluated whenever an item arrives on a stream of the query (push), with
  windows (t - d, t] at the arrival time t; IStream: only new answers are output.
- [RANGE d] slides by one time unit, [RANGE d SLIDE s] by s; [NOW], [ALL] and
  [TRIPLES n] as in CQELS.
"""

from __future__ import annotations

from rsep.algebra.dataset import StreamingDataset
from rsep.algebra.policy import R2S, ReportPolicy
from rsep.algebra.query import ContinuousQuery
from rsep.algebra.window import NamedWindow
from rsep.lang.common import plain_dataset, remove_register, service_position
from rsep.lang.pattern import with_pattern
from rsep.lang.syntax import Syntax, end_of, start_of


def build(syn: Syntax) -> ContinuousQuery:
    remove_register(syn)
    ds = StreamingDataset()
    plain_dataset(syn, ds, set())
    by_key: dict[tuple[str, str], str] = {}
    streams: dict[int, str] = {}  # each stream pattern's window, by the node's id
    for node in syn.nodes("stream_graph_pattern"):
        target = node.children[1]
        if syn.is_var(target):
            raise syn.error("a CQELS STREAM pattern needs a stream IRI, not a variable", target)
        s = syn.iri(target)
        spec_node = node.children[2]
        spec = syn.window_spec(spec_node)
        key = (s, spec.text.replace(" ", ""))
        w = by_key.get(key)
        if w is None:
            w = by_key[key] = f"urn:rsep:cqels:window:{len(by_key) + 1}"
            ds.windows.append(NamedWindow(w, s, spec))
        streams[id(node)] = w
        syn.replace_span(start_of(node), end_of(spec_node), f"GRAPH <{w}>")
    q = ContinuousQuery(
        name="", dialect="cqels", form=syn.form, dataset=ds, sparql=syn.rewritten(),
        r2s=R2S.ISTREAM, report=ReportPolicy(on_arrival=True), text=syn.text,
        service_at=service_position(syn),
    )
    return with_pattern(q, syn, streams)
